//! The conversation as Gemini `contents`: roles `user` and `model`, consecutive turns of one
//! role merged, system messages moved to `systemInstruction`.

use std::collections::HashMap;

use corrigible::{Message, Role};
use serde_json::json;

use super::wire::{Content, FunctionCallOut, FunctionResponseOut, Part};
use crate::convert::{answer_every_call, arguments_object, content_value};

/// `contents` and `systemInstruction` for `messages`; `signature` gives the thought signature
/// recorded for a call id, if any.
pub(crate) fn contents(
    messages: &[Message],
    signature: impl Fn(&str) -> Option<String>,
) -> (Vec<Content>, Option<Content>) {
    let messages = answer_every_call(messages);
    let call_names: HashMap<&str, &str> = messages
        .iter()
        .flat_map(|m| m.tool_calls.iter())
        .map(|c| (c.id.as_str(), c.name.as_str()))
        .collect();
    let mut system = Vec::new();
    let mut turns: Vec<Content> = Vec::new();
    for message in &messages {
        let (role, parts) = match message.role {
            Role::System => {
                if !message.content.is_empty() {
                    system.push(text(&message.content));
                }
                continue;
            }
            Role::User => ("user", text_parts(&message.content)),
            Role::Tool => {
                let name = message
                    .tool_name
                    .clone()
                    .or_else(|| {
                        let id = message.tool_call_id.as_deref()?;
                        call_names.get(id).map(|n| n.to_string())
                    })
                    .unwrap_or_default();
                let value = content_value(&message.content);
                let response = if message.is_error {
                    json!({ "error": value })
                } else {
                    json!({ "result": value })
                };
                let part = Part {
                    function_response: Some(FunctionResponseOut { name, response }),
                    ..Part::default()
                };
                ("user", vec![part])
            }
            Role::Assistant => {
                let mut parts = text_parts(&message.content);
                parts.extend(message.tool_calls.iter().map(|call| Part {
                    function_call: Some(FunctionCallOut {
                        name: call.name.clone(),
                        args: arguments_object(&call.arguments),
                    }),
                    thought_signature: signature(&call.id),
                    ..Part::default()
                }));
                ("model", parts)
            }
        };
        if parts.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some(last) if last.role == Some(role) => last.parts.extend(parts),
            _ => turns.push(Content {
                role: Some(role),
                parts,
            }),
        }
    }
    for turn in &mut turns {
        turn.parts.sort_by_key(|p| p.function_response.is_none());
    }
    let system = (!system.is_empty()).then_some(Content {
        role: None,
        parts: system,
    });
    (turns, system)
}

fn text(content: &str) -> Part {
    Part {
        text: Some(content.to_string()),
        ..Part::default()
    }
}

fn text_parts(content: &str) -> Vec<Part> {
    if content.is_empty() {
        Vec::new()
    } else {
        vec![text(content)]
    }
}

#[cfg(test)]
mod tests {
    use corrigible::{MessageKind, ToolCall};

    use super::*;

    #[test]
    fn calls_and_responses_are_objects_and_roles_alternate() {
        let call = ToolCall {
            id: "call_1".into(),
            name: "calculator".into(),
            arguments: "7".into(),
        };
        let messages = vec![
            Message::system("s"),
            Message::request("q"),
            Message::assistant(MessageKind::Reply, "", vec![call]),
            Message::tool_result(
                "call_1",
                "calculator",
                "oops",
                true,
                MessageKind::ToolResult,
            ),
        ];
        let (turns, system) = contents(&messages, |_| None);
        assert_eq!(
            serde_json::to_value(system).unwrap_or_default(),
            json!({"parts": [{"text": "s"}]})
        );
        assert_eq!(
            serde_json::to_value(&turns).unwrap_or_default(),
            json!([
                {"role": "user", "parts": [{"text": "q"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "calculator",
                    "args": {"_raw": "7"}}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "calculator",
                    "response": {"error": "oops"}}}]}
            ])
        );
    }
}
