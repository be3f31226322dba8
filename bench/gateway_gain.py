"""What changing `base_url` gains an agent framework: the OpenAI Agents SDK runs the tools
suite's tasks once straight to an OpenAI-compatible server and once through corrigible's
gateway in front of the same server, task by task, with the suite's own tools served over MCP
by `corrigible-bench-tools` (`cargo build -p corrigible-bench --features fixtures --bin
corrigible-bench-tools`).

    python bench/gateway_gain.py --tools target/debug/corrigible-bench-tools \
        --arm straight=http://127.0.0.1:8611/v1 --arm gateway=http://127.0.0.1:8612/v1 \
        --json bench/results/gateway-gain.json

A task passes when the final output states an accepted answer and, for the time and weather
tasks, the tool answered for every expected zone or city: the grading of the built-in tools
suite (`crates/corrigible-bench/src/tools_suite.rs`), read from the agent's own items. Tasks
whose right outcome is an honest "cannot be done" (`"satisfied": false`) are left out: the
suite grades them by the engine's `satisfied` flag, which a framework's text answer lacks.
"""

import argparse
import asyncio
import json
import re
import sys
import time
import unicodedata

import openai
from agents import (
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    Runner,
    set_tracing_disabled,
)
from agents.items import ToolCallItem, ToolCallOutputItem
from agents.mcp import MCPServerStdio

set_tracing_disabled(True)

INSTRUCTIONS = (
    "You are a helpful assistant. Use the tools for arithmetic, the current time and the "
    "weather; answer other questions directly."
)

NUMBER = re.compile(r"(?<![0-9])([-−])?(\d{1,3}(?:,\d{3})+(?![0-9])|\d+)(\.\d+)?")


def numbers_in(text):
    out = []
    for m in NUMBER.finditer(text):
        start = m.start()
        sign = m.group(1)
        if sign and start > 0 and (text[start - 1].isdigit() or text[start - 1].isalpha()):
            sign = None
        value = float(m.group(2).replace(",", "") + (m.group(3) or ""))
        out.append(-value if sign else value)
    return out


def answer_contains(text, expected):
    if isinstance(expected, (int, float)):
        return any(abs(got - expected) <= 1e-6 * max(abs(expected), 1.0) for got in numbers_in(text))
    hay, needle = text.lower(), str(expected).lower()
    return bool(needle) and any(
        i == 0 or not hay[i - 1].isdigit() for i in (m.start() for m in re.finditer(re.escape(needle), hay))
    )


def fold(text):
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).lower()


def answered_for(tool, output, arg):
    try:
        value = json.loads(output)
    except (TypeError, ValueError):
        return False
    if not isinstance(value, dict):
        return False
    if tool == "time":
        return str(value.get("timezone", "")).lower() == arg.lower()
    if tool == "weather":
        return fold(str(value.get("city", ""))) == fold(arg)
    return False


def output_text(output):
    """A tool output as the framework holds it: a string, or a list of content parts."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(p.get("text", "") if isinstance(p, dict) else str(getattr(p, "text", "")) for p in output)
    if isinstance(output, dict):
        return output.get("text") or json.dumps(output)
    return str(output)


def grade(task, final, steps):
    if not any(answer_contains(final, a) for a in task["answer"]):
        return f"the answer lacks {' | '.join(json.dumps(a) for a in task['answer'])}"
    tool = task.get("tool")
    if tool in ("time", "weather"):
        for arg in task.get("args", []):
            if not any(s["tool"] == tool and answered_for(tool, s["output"], arg) for s in steps):
                return f"{tool} was not called for {arg}"
    return None


class Counter:
    """Upstream calls and corrections of one task, read from every response's headers."""

    def __init__(self):
        self.responses = 0
        self.upstream_calls = 0
        self.corrections = 0
        self.repairs = 0

    async def hook(self, response):
        self.responses += 1
        self.upstream_calls += int(response.headers.get("x-corrigible-upstream-calls", "1"))
        sent_back = response.headers.get("x-corrigible-corrections", "")
        self.corrections += len([c for c in sent_back.split(",") if c.strip()])
        repaired = response.headers.get("x-corrigible-repairs", "")
        self.repairs += len([r for r in repaired.split(",") if r.strip()])


async def run_task(task, base_url, model, tools, max_turns):
    counter = Counter()
    http = openai.DefaultAsyncHttpxClient(event_hooks={"response": [counter.hook]}, timeout=600)
    client = openai.AsyncOpenAI(base_url=base_url, api_key="none", max_retries=0, http_client=http)
    agent = Agent(
        name="assistant",
        instructions=INSTRUCTIONS,
        mcp_servers=[tools],
        model=OpenAIChatCompletionsModel(model=model, openai_client=client),
        model_settings=ModelSettings(temperature=0),
    )
    started = time.monotonic()
    final, failure, steps, usage, raised = "", None, [], None, False
    try:
        result = await Runner.run(agent, task["prompt"], max_turns=max_turns)
        final = str(result.final_output or "")
        usage = result.context_wrapper.usage
        calls = {}
        for item in result.new_items:
            if isinstance(item, ToolCallItem):
                raw = item.raw_item
                calls[getattr(raw, "call_id", None)] = getattr(raw, "name", "?")
            elif isinstance(item, ToolCallOutputItem):
                raw = item.raw_item
                call_id = raw.get("call_id") if isinstance(raw, dict) else getattr(raw, "call_id", None)
                steps.append({"tool": calls.get(call_id, "?"), "output": output_text(item.output)})
    except Exception as e:  # the framework's own failures (max turns, bad model output) are results
        failure, raised = f"{type(e).__name__}: {str(e)[:300]}", True
    finally:
        await http.aclose()
    if failure is None:
        failure = grade(task, final, steps)
    return {
        "id": task["id"],
        "passed": failure is None,
        "failure": failure,
        "framework_error": raised,
        "final": final[:500],
        "steps": steps,
        "tool_calls": len(steps),
        "requests": counter.responses,
        "upstream_calls": counter.upstream_calls,
        "corrections": counter.corrections,
        "repairs": counter.repairs,
        "input_tokens": usage.input_tokens if usage else 0,
        "output_tokens": usage.output_tokens if usage else 0,
        "seconds": round(time.monotonic() - started, 1),
    }


def summary(rows):
    n = max(len(rows), 1)
    return {
        "tasks": len(rows),
        "passed": sum(r["passed"] for r in rows),
        "upstream_calls_per_task": round(sum(r["upstream_calls"] for r in rows) / n, 2),
        "input_tokens_per_task": round(sum(r["input_tokens"] for r in rows) / n),
        "output_tokens_per_task": round(sum(r["output_tokens"] for r in rows) / n),
        "corrections": sum(r["corrections"] for r in rows),
        "repairs": sum(r["repairs"] for r in rows),
        "framework_errors": sum(r["framework_error"] for r in rows),
    }


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", required=True, help="the corrigible-bench-tools binary")
    parser.add_argument("--arm", action="append", required=True, help="NAME=BASE_URL, repeatable")
    parser.add_argument("--tasks", default="crates/corrigible-bench/data/tools-heldout.jsonl")
    parser.add_argument("--model", default="qwen")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--max-turns", type=int, default=10)
    parser.add_argument("--json", help="write every row and the summaries here")
    args = parser.parse_args()
    arms = [a.split("=", 1) for a in args.arm]
    with open(args.tasks) as f:
        tasks = [json.loads(line) for line in f if line.strip()]
    tasks = [t for t in tasks if t.get("satisfied", True)][: args.limit]
    rows = {name: [] for name, _ in arms}
    async with MCPServerStdio(
        params={"command": args.tools, "args": []}, cache_tools_list=True, client_session_timeout_seconds=30
    ) as tools:
        for task in tasks:
            for name, url in arms:
                row = await run_task(task, url, args.model, tools, args.max_turns)
                rows[name].append(row)
                mark = "pass" if row["passed"] else f"FAIL ({row['failure']})"
                print(f"{task['id']:<14} {name:<9} {mark}  calls {row['upstream_calls']}  {row['seconds']} s", file=sys.stderr, flush=True)
    report = {"tasks": args.tasks, "model": args.model, "arms": {name: {"summary": summary(r), "rows": r} for name, r in rows.items()}}
    for name, _ in arms:
        print(name, json.dumps(report["arms"][name]["summary"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


asyncio.run(main())
