//! The malformations themselves, applied to a reply.

use corrigible::ModelReply;
use serde_json::Value;

use super::{FaultKind, UNKNOWN_TOOL};

/// The kinds that can be applied to `reply`: on text, all of them when it is a JSON object
/// (only the textual ones otherwise); on native tool calls, the ones that make sense for
/// call arguments.
pub fn applicable(reply: &ModelReply) -> Vec<FaultKind> {
    if let Some(call) = reply.tool_calls.first() {
        let mut kinds = vec![
            FaultKind::UnknownTool,
            FaultKind::Truncated,
            FaultKind::Empty,
        ];
        if matches!(serde_json::from_str::<Value>(&call.arguments), Ok(Value::Object(ref o)) if !o.is_empty())
        {
            kinds.extend([FaultKind::TrailingComma, FaultKind::WrongField]);
        }
        kinds.sort();
        return kinds;
    }
    let text = reply.text.as_deref().unwrap_or("").trim();
    if text.is_empty() {
        return Vec::new();
    }
    if matches!(serde_json::from_str::<Value>(text), Ok(Value::Object(_))) {
        FaultKind::ALL.to_vec()
    } else {
        vec![
            FaultKind::CodeFence,
            FaultKind::SurroundingProse,
            FaultKind::Truncated,
            FaultKind::Empty,
        ]
    }
}

/// Applies `kind` to `reply` (usage and metadata are kept: the tokens were spent).
pub fn corrupt(mut reply: ModelReply, kind: FaultKind) -> ModelReply {
    if kind == FaultKind::Empty {
        reply.text = None;
        reply.tool_calls.clear();
        return reply;
    }
    if let Some(call) = reply.tool_calls.first_mut() {
        match kind {
            FaultKind::UnknownTool => call.name = UNKNOWN_TOOL.to_string(),
            FaultKind::Truncated => call.arguments = truncate(&call.arguments),
            FaultKind::TrailingComma => call.arguments = trailing_comma(&call.arguments),
            FaultKind::WrongField => {
                if let Ok(Value::Object(mut args)) = serde_json::from_str::<Value>(&call.arguments)
                    && let Some(key) = args.keys().next().cloned()
                    && let Some(value) = args.remove(&key)
                {
                    args.insert(format!("{key}_value"), value);
                    call.arguments = Value::Object(args).to_string();
                }
            }
            _ => {}
        }
        return reply;
    }
    let text = reply.text.take().unwrap_or_default();
    let trimmed = text.trim();
    let corrupted = match kind {
        FaultKind::CodeFence => format!("```json\n{trimmed}\n```"),
        FaultKind::SurroundingProse => {
            format!("Sure, here is my decision:\n{trimmed}\nLet me know if you need anything else.")
        }
        FaultKind::TrailingComma => trailing_comma(trimmed),
        FaultKind::Truncated => truncate(trimmed),
        FaultKind::WrongField => wrong_field(trimmed),
        FaultKind::UnknownTool => unknown_tool(trimmed),
        FaultKind::Empty => String::new(),
    };
    reply.text = Some(corrupted);
    reply
}

fn trailing_comma(json: &str) -> String {
    let json = json.trim_end();
    match json.strip_suffix('}') {
        Some(body) => format!("{},}}", body.trim_end()),
        None => json.to_string(),
    }
}

fn truncate(text: &str) -> String {
    let keep = text.chars().count() * 3 / 5;
    text.chars().take(keep.max(1)).collect()
}

fn wrong_field(text: &str) -> String {
    let Ok(Value::Object(mut obj)) = serde_json::from_str::<Value>(text) else {
        return text.to_string();
    };
    for (from, to) in [("tool_input", "arguments"), ("final_summary", "answer")] {
        if let Some(value) = obj.remove(from) {
            obj.insert(to.to_string(), value);
            return Value::Object(obj).to_string();
        }
    }
    // Neither field: drop the state, the one field every decision has.
    obj.remove("state");
    obj.insert("status".into(), Value::String("unknown".into()));
    Value::Object(obj).to_string()
}

fn unknown_tool(text: &str) -> String {
    let Ok(Value::Object(mut obj)) = serde_json::from_str::<Value>(text) else {
        return text.to_string();
    };
    let query = obj
        .get("final_summary")
        .cloned()
        .unwrap_or(Value::String(String::new()));
    if !obj.contains_key("tool") {
        obj.clear();
        obj.insert("state".into(), Value::String("action".into()));
        obj.insert(
            "reason".into(),
            Value::String("look it up to be sure".into()),
        );
        obj.insert("tool_input".into(), serde_json::json!({ "query": query }));
    }
    obj.insert("tool".into(), Value::String(UNKNOWN_TOOL.into()));
    Value::Object(obj).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use corrigible::ToolCall;

    fn text(t: &str) -> ModelReply {
        ModelReply {
            text: Some(t.into()),
            ..Default::default()
        }
    }

    const ACTION: &str =
        r#"{"state":"action","reason":"r","tool":"calculator","tool_input":{"expression":"1+1"}}"#;

    #[test]
    fn each_kind_changes_a_json_reply() {
        for kind in FaultKind::ALL {
            let out = corrupt(text(ACTION), kind);
            assert_ne!(out.text.as_deref(), Some(ACTION), "{kind}");
        }
        assert_eq!(
            corrupt(text(ACTION), FaultKind::TrailingComma)
                .text
                .unwrap(),
            r#"{"state":"action","reason":"r","tool":"calculator","tool_input":{"expression":"1+1"},}"#
        );
    }

    #[test]
    fn native_calls_get_argument_faults() {
        let reply = ModelReply {
            tool_calls: vec![ToolCall {
                id: "1".into(),
                name: "calculator".into(),
                arguments: r#"{"expression":"1+1"}"#.into(),
            }],
            ..Default::default()
        };
        assert_eq!(
            corrupt(reply.clone(), FaultKind::WrongField).tool_calls[0].arguments,
            r#"{"expression_value":"1+1"}"#
        );
        assert_eq!(
            corrupt(reply.clone(), FaultKind::UnknownTool).tool_calls[0].name,
            UNKNOWN_TOOL
        );
        assert!(!applicable(&reply).contains(&FaultKind::CodeFence));
    }
}
