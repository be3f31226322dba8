//! The run's `tracing` spans, named and attributed per the OpenTelemetry GenAI semantic
//! conventions (v1.37): a run is `invoke_agent`, a model call `chat {model}`, a tool call
//! `execute_tool {name}`. A `tracing-opentelemetry` layer exports them as they are; `otel.name`
//! sets the exported span's name, `otel.kind` its kind and `otel.status_code` its status.
//! Without a subscriber they cost a disabled-span check each. Numbers are recorded as `i64`,
//! which `tracing-opentelemetry` exports as integers (a `u64` would become a string).

use tracing::Span;
use tracing::field::Empty;

use serde_json::{Value, json};

use crate::message::{Message, Role, ToolCall};
use crate::model::{ModelError, ModelReply, Usage};
use crate::tool::ToolOutcome;

/// The provider and model a model's name (`openai:gpt-4o`, `local:qwen2.5-coder-1.5b`) stands
/// for, with the conventions' provider names where one exists (`openai`, `anthropic`,
/// `gcp.gemini`); a name without a provider prefix is `corrigible`'s own (replay, scripts).
pub fn provider_and_model(name: &str) -> (&str, &str) {
    match name.split_once(':') {
        Some(("openai", model)) => ("openai", model),
        Some(("anthropic", model)) => ("anthropic", model),
        Some(("gemini", model)) => ("gcp.gemini", model),
        Some(("local", model)) => ("corrigible.local", model),
        Some((_, model)) => ("corrigible", model),
        None => ("corrigible", name),
    }
}

/// A counter as the integer an exporter keeps.
pub(crate) fn int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The span of one run of the agent.
pub(crate) fn invoke_agent(run_id: &str, model: &str) -> Span {
    let (provider, model) = provider_and_model(model);
    tracing::info_span!(
        "invoke_agent",
        otel.name = "invoke_agent corrigible",
        otel.kind = "internal",
        otel.status_code = Empty,
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = "corrigible",
        gen_ai.conversation.id = run_id,
        gen_ai.provider.name = provider,
        gen_ai.request.model = model,
        run_id,
    )
}

/// The span of one model call, `stage` naming the slot and correction round it answers; the
/// gateway opens one for each call it makes upstream.
pub fn chat(model: &str, stage: &str) -> Span {
    let (provider, model) = provider_and_model(model);
    tracing::info_span!(
        "chat",
        otel.name = format!("chat {model}"),
        otel.kind = "client",
        otel.status_code = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider,
        gen_ai.request.model = model,
        gen_ai.response.model = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        error.type = Empty,
        corrigible.stage = stage,
        corrigible.transport_retries = Empty,
        gen_ai.input.messages = Empty,
        gen_ai.output.messages = Empty,
    )
}

/// Records the messages a model call saw and the reply it gave, in the conventions' JSON form
/// (`[{"role", "parts": [{"type": "text", "content"}]}]`, tool calls as `tool_call` parts, tool
/// results as `tool_call_response` parts): only for an agent that captures content.
pub(crate) fn content(span: &Span, messages: &[Message], reply: &ModelReply) {
    let input: Vec<Value> = messages.iter().map(message).collect();
    span.record("gen_ai.input.messages", Value::Array(input).to_string());
    let mut parts: Vec<Value> = reply
        .text
        .iter()
        .map(|text| json!({"type": "text", "content": text}))
        .collect();
    parts.extend(reply.tool_calls.iter().map(call));
    let output = json!([{"role": "assistant", "parts": parts}]);
    span.record("gen_ai.output.messages", output.to_string());
}

fn message(message: &Message) -> Value {
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut parts = Vec::new();
    if message.role == Role::Tool {
        parts.push(json!({
            "type": "tool_call_response",
            "id": message.tool_call_id,
            "response": message.content,
        }));
    } else if !message.content.is_empty() {
        parts.push(json!({"type": "text", "content": message.content}));
    }
    parts.extend(message.tool_calls.iter().map(call));
    json!({"role": role, "parts": parts})
}

fn call(call: &ToolCall) -> Value {
    let arguments = serde_json::from_str::<Value>(&call.arguments)
        .unwrap_or_else(|_| Value::String(call.arguments.clone()));
    json!({"type": "tool_call", "id": call.id, "name": call.name, "arguments": arguments})
}

/// Records a tool call's arguments and result: only for an agent that captures content.
pub(crate) fn tool_content(span: &Span, arguments: &Value, outcome: &ToolOutcome) {
    span.record("gen_ai.tool.call.arguments", arguments.to_string());
    let result = match outcome {
        ToolOutcome::Ok(value) => value.to_string(),
        ToolOutcome::Retry(text) | ToolOutcome::Failed(text) | ToolOutcome::Fatal(text) => {
            text.clone()
        }
    };
    span.record("gen_ai.tool.call.result", result);
}

/// Records what a model call answered on its span: the tokens, the transport retries it took
/// (attempts under the one operation), and why it stopped (`tool_calls` or `stop`).
pub(crate) fn answered(span: &Span, model: &str, reply: &ModelReply) {
    let finish = if reply.tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    let (_, model) = provider_and_model(model);
    completed(span, model, reply.usage, finish, reply.transport_retries);
}

/// Records an answered call on a [`chat`] span: the model that answered (as the provider
/// names it), its tokens, why it stopped, and the transport retries it took.
pub fn completed(span: &Span, model: &str, usage: Usage, finish_reason: &str, retries: u32) {
    span.record("gen_ai.response.model", model);
    span.record("gen_ai.usage.input_tokens", int(usage.input_tokens));
    span.record("gen_ai.usage.output_tokens", int(usage.output_tokens));
    span.record("corrigible.transport_retries", i64::from(retries));
    span.record("gen_ai.response.finish_reasons", finish_reason);
}

/// Records a failed call on a [`chat`] span: `kind` is its `error.type`.
pub fn failed_with(span: &Span, kind: &str) {
    span.record("error.type", kind);
    span.record("otel.status_code", "ERROR");
}

/// Records a failed model call on its span.
pub(crate) fn failed(span: &Span, error: &ModelError) {
    let kind = match error {
        ModelError::Transport(_) => "transport",
        _ => "model",
    };
    failed_with(span, kind);
}

/// The span of one tool call, every attempt of it included.
pub(crate) fn execute_tool(name: &str, call_id: Option<&str>, step: u32) -> Span {
    tracing::info_span!(
        "execute_tool",
        otel.name = format!("execute_tool {name}"),
        otel.kind = "internal",
        otel.status_code = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = name,
        gen_ai.tool.call.id = call_id,
        gen_ai.tool.type = "function",
        error.type = Empty,
        corrigible.step = i64::from(step),
        corrigible.attempts = Empty,
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
    )
}

/// Records how a tool call ended on its span: its attempts, and the error's kind on failure.
pub(crate) fn tool_ended(span: &Span, outcome: &ToolOutcome, attempts: u32) {
    span.record("corrigible.attempts", i64::from(attempts));
    let kind = match outcome {
        ToolOutcome::Ok(_) => return,
        ToolOutcome::Retry(_) => "rejected_input",
        ToolOutcome::Failed(_) => "tool_failed",
        ToolOutcome::Fatal(_) => "tool_fatal",
    };
    span.record("error.type", kind);
    span.record("otel.status_code", "ERROR");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_take_the_conventions_names() {
        assert_eq!(provider_and_model("openai:gpt-4o"), ("openai", "gpt-4o"));
        assert_eq!(
            provider_and_model("gemini:gemini-2.5-flash"),
            ("gcp.gemini", "gemini-2.5-flash")
        );
        assert_eq!(
            provider_and_model("local:qwen2.5-coder-1.5b"),
            ("corrigible.local", "qwen2.5-coder-1.5b")
        );
        assert_eq!(provider_and_model("replay"), ("corrigible", "replay"));
    }
}
