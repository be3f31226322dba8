//! An MCP server over stdio whose tools misbehave on purpose, for the client's fault tests:
//!
//! - `echo {text}`: returns `{"echo": text}` as structured content and as its JSON text
//!   (read-only);
//! - `pid {}`: the server's process id (read-only), to tell a restarted server;
//! - `fail {reason}`: answers `isError: true` with the reason;
//! - `crash {}`: the process exits in the middle of the call (destructive);
//! - `slow {ms}`: answers after `ms` milliseconds (idempotent);
//! - `broken {x}`: declares an input schema that does not compile.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{Value, json};

struct FaultServer;

fn tool(name: &'static str, description: &'static str, schema: Value) -> Tool {
    let schema = match schema {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    Tool::new(name, description, Arc::new(schema))
}

fn tools() -> Vec<Tool> {
    let read_only = ToolAnnotations::new().read_only(true);
    vec![
        tool(
            "echo",
            "Returns the text it is given.",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        )
        .annotate(read_only.clone()),
        tool("pid", "The server's process id.", json!({"type": "object", "properties": {}}))
            .annotate(read_only),
        tool(
            "fail",
            "Always reports an error.",
            json!({"type": "object", "properties": {"reason": {"type": "string"}}, "required": ["reason"]}),
        ),
        tool("crash", "Exits in the middle of the call.", json!({"type": "object", "properties": {}}))
            .annotate(ToolAnnotations::from_raw(None, Some(false), Some(true), None, None)),
        tool(
            "slow",
            "Answers after a delay.",
            json!({"type": "object", "properties": {"ms": {"type": "integer", "minimum": 0}}, "required": ["ms"]}),
        )
        .annotate(ToolAnnotations::from_raw(None, Some(false), Some(false), Some(true), None)),
        tool(
            "broken",
            "Declares a schema that does not compile.",
            json!({"type": "object", "properties": {"x": {"type": 12}}}),
        ),
    ]
}

fn text(value: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(value.into())]).into()
}

impl ServerHandler for FaultServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        match request.name.as_ref() {
            "echo" => {
                let structured = json!({"echo": args.get("text").cloned().unwrap_or(Value::Null)});
                let mut result =
                    CallToolResult::success(vec![ContentBlock::text(structured.to_string())]);
                result.structured_content = Some(structured);
                Ok(result.into())
            }
            "pid" => Ok(text(std::process::id().to_string())),
            "fail" => {
                let reason = args
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or("no reason");
                Ok(
                    CallToolResult::error(vec![ContentBlock::text(format!("refused: {reason}"))])
                        .into(),
                )
            }
            "crash" => std::process::exit(3),
            "slow" => {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                Ok(text(format!("slept {ms} ms")))
            }
            other => Err(ErrorData::invalid_params(
                format!("unknown tool `{other}`"),
                None,
            )),
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let service = match FaultServer.serve(rmcp::transport::stdio()).await {
        Ok(service) => service,
        Err(e) => {
            eprintln!("fault server: {e}");
            std::process::exit(1);
        }
    };
    let _ = service.waiting().await;
}
