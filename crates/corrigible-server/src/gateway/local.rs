//! A Chat Completions request as a json-protocol [`ModelRequest`], and the model's decision as
//! a completion: how a model without native tool calling (the embedded one) answers through
//! the gateway.

use std::collections::HashMap;

use corrigible::decision::parse_text;
use corrigible::prompt::SystemPrompt;
use corrigible::{
    Decision, Message, MessageKind, ModelReply, ModelRequest, Protocol, Stage, ToolSpec,
};
use serde_json::{Map, Value, json};

use super::correct::UpstreamError;
use super::wire::{Completion, NotACompletion, RAW_TURN, text_of};

/// The client's functions as tool specs.
fn tools(body: &Map<String, Value>) -> Vec<ToolSpec> {
    body.get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|tool| {
            let function = tool.get("function")?;
            Some(ToolSpec {
                name: function.get("name")?.as_str()?.to_string(),
                description: function
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                parameters: function
                    .get("parameters")
                    .cloned()
                    .unwrap_or_else(|| json!({"type": "object"})),
                grounded: Vec::new(),
                computes: false,
            })
        })
        .collect()
}

/// The request as the json protocol states it: our system prompt for the client's tools (the
/// client's own system messages after it), each earlier call as a decision, each tool message
/// as a tagged result.
pub fn request(body: &Map<String, Value>, thinks: bool) -> Result<ModelRequest, UpstreamError> {
    let tools = tools(body);
    let output_schema = body
        .get("response_format")
        .and_then(|f| f.pointer("/json_schema/schema"))
        .cloned();
    let mut system = SystemPrompt::default()
        .render_for(Protocol::Json, &tools, output_schema.as_ref(), thinks)
        .map_err(|e| NotACompletion(format!("the system prompt: {e}")))?;
    let empty = Vec::new();
    let turns = body
        .get("messages")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let mut messages = Vec::new();
    let mut names: HashMap<String, String> = HashMap::new();
    let last_user = turns
        .iter()
        .rposition(|m| m.get("role").and_then(Value::as_str) == Some("user"));
    for (i, turn) in turns.iter().enumerate() {
        let content = text_of(turn.get("content"));
        match turn.get("role").and_then(Value::as_str).unwrap_or("user") {
            "system" | "developer" => {
                system.push_str("\n\nInstructions from the application:\n");
                system.push_str(&content);
            }
            "assistant" => {
                let calls = turn
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                if turn.get(RAW_TURN) == Some(&Value::Bool(true)) {
                    messages.push(Message::assistant(MessageKind::Reply, content, Vec::new()));
                } else if calls.is_empty() {
                    let decision =
                        json!({"state": "final", "satisfied": true, "final_summary": content});
                    messages.push(Message::assistant(
                        MessageKind::Reply,
                        decision.to_string(),
                        Vec::new(),
                    ));
                }
                for call in calls {
                    let name = call
                        .pointer("/function/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let arguments = call
                        .pointer("/function/arguments")
                        .and_then(Value::as_str)
                        .unwrap_or("{}");
                    if let Some(id) = call.get("id").and_then(Value::as_str) {
                        names.insert(id.to_string(), name.to_string());
                    }
                    let input: Value = serde_json::from_str(arguments)
                        .unwrap_or(Value::String(arguments.to_string()));
                    let decision =
                        json!({"state": "action", "reason": "", "tool": name, "tool_input": input});
                    messages.push(Message::assistant(
                        MessageKind::Reply,
                        decision.to_string(),
                        Vec::new(),
                    ));
                }
            }
            "tool" => {
                let id = turn
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let name = names.get(id).map(String::as_str).unwrap_or("tool");
                let tagged = format!(
                    "<tool_result tool=\"{}\">{}</tool_result>",
                    corrigible::correction::feedback::xml_escape(name),
                    corrigible::correction::feedback::xml_text_escape(&content)
                );
                messages.push(Message::user(MessageKind::ToolResult, tagged));
            }
            _ if Some(i) == last_user => messages.push(Message::request(content)),
            _ => messages.push(Message::user(MessageKind::Feedback, content)),
        }
    }
    messages.insert(0, Message::system(system));
    Ok(ModelRequest {
        stage: Stage::new(1, 0),
        messages,
        tools,
        protocol: Protocol::Json,
        correction: None,
        grounds: Default::default(),
    })
}

/// The model's reply as a completion: an action becomes a tool call, a final answer the text.
/// A reply that is no decision is returned as its text, for the checks to judge.
pub fn completion(model: &str, reply: &ModelReply) -> Result<Completion, NotACompletion> {
    let text = reply.text.clone().unwrap_or_default();
    let message = match parse_text(&text, true).decision {
        Ok(Decision::Action(action)) => json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [{
                "id": format!("call_{}", uuid::Uuid::now_v7().simple()),
                "type": "function",
                "function": {"name": action.tool, "arguments": action.input.to_string()},
            }],
        }),
        Ok(Decision::Final(answer)) => json!({"role": "assistant", "content": answer.summary}),
        Err(_) => json!({"role": "assistant", "content": text}),
    };
    let unreadable = parse_text(&text, true)
        .decision
        .err()
        .map(|rejection| (rejection.category, rejection.message));
    let finish = if message.get("tool_calls").is_some() {
        "tool_calls"
    } else {
        "stop"
    };
    let body = json!({
        "id": format!("chatcmpl-{}", uuid::Uuid::now_v7().simple()),
        "object": "chat.completion",
        "created": crate::store::now_ms() / 1000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": reply.usage.input_tokens,
            "completion_tokens": reply.usage.output_tokens,
            "total_tokens": reply.usage.total(),
        },
    });
    let mut completion = Completion::parse(body.to_string().as_bytes())?;
    completion.unreadable = unreadable;
    Ok(completion)
}
