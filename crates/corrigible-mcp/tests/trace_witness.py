"""An MCP server on the official Python SDK whose one tool answers with the W3C trace context
its request carried in `_meta` (SEP-414): the witness of the propagation tests.

Usage: trace_witness.py stdio | trace_witness.py http PORT
"""

import json
import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("trace-witness")


@server.tool()
def trace_context(ctx: Context) -> str:
    """The trace context this call was made in."""
    meta = ctx.request_context.meta or {}
    return json.dumps({key: meta.get(key) for key in ("traceparent", "tracestate")})


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
