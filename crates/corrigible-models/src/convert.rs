//! Conversions shared by the providers.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};

use corrigible::tool::FINAL_ANSWER;
use corrigible::{Allowed, Message, MessageKind, ModelRequest, Protocol, Role, ToolSpec};
use serde_json::{Map, Value, json};

/// The content of the result added for a tool call the conversation never answered.
pub(crate) const UNANSWERED: &str = "(no result: this call was not executed)";

/// Raw argument text as a JSON object, for providers that want objects: empty text is `{}`,
/// anything that is not a JSON object is kept as `{"_raw": text}`.
pub(crate) fn arguments_object(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(Map::new());
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({ "_raw": raw }),
    }
}

/// A tool result's content as JSON when it is JSON, else as a string.
pub(crate) fn content_value(content: &str) -> Value {
    serde_json::from_str(content).unwrap_or_else(|_| Value::String(content.to_string()))
}

/// The messages with every native tool call answered and every tool result tied to a call:
/// an error result is added after each assistant tool call that no tool message answers, and
/// a tool message that answers no call just before it (its call was trimmed) becomes a user
/// message, since all three APIs refuse either.
pub(crate) fn answer_every_call(messages: &[Message]) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len());
    let mut i = 0;
    while i < messages.len() {
        let message = &messages[i];
        i += 1;
        if message.role == Role::Tool {
            out.push(orphan(message));
            continue;
        }
        out.push(message.clone());
        if message.role != Role::Assistant || message.tool_calls.is_empty() {
            continue;
        }
        let mut answered = HashSet::new();
        let mut orphans = Vec::new();
        while i < messages.len() && messages[i].role == Role::Tool {
            let result = &messages[i];
            i += 1;
            match &result.tool_call_id {
                Some(id)
                    if message.tool_calls.iter().any(|c| &c.id == id)
                        && answered.insert(id.clone()) =>
                {
                    out.push(result.clone());
                }
                _ => orphans.push(orphan(result)),
            }
        }
        for call in &message.tool_calls {
            if !answered.contains(&call.id) {
                tracing::debug!(call = %call.id, "adding a result for an unanswered tool call");
                out.push(Message::tool_result(
                    call.id.clone(),
                    call.name.clone(),
                    UNANSWERED,
                    true,
                    MessageKind::ToolResult,
                ));
            }
        }
        out.extend(orphans);
    }
    out
}

fn orphan(result: &Message) -> Message {
    let tool = result.tool_name.as_deref().unwrap_or("a tool");
    let what = if result.is_error {
        "Error from"
    } else {
        "Result of"
    };
    Message::user(result.kind, format!("{what} `{tool}`: {}", result.content))
}

/// What a native correction round makes the provider call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Forced<'a> {
    /// This one tool.
    Tool(&'a str),
    /// Some tool other than `final_answer`, which the round does not declare.
    AnyAction,
}

/// What a correction round is narrowed to under the native protocol, from what the correction
/// still allows ([`corrigible::Allowed`]): the tool whose input was rejected, `final_answer`
/// when only a final answer is left (after two repeated failed actions), or any other tool
/// when only an action is (after an `ungrounded_argument`); `final_answer` in every round once
/// the run's action budget is spent.
pub(crate) fn forced(request: &ModelRequest) -> Option<Forced<'_>> {
    let correction = request.correction.as_ref()?;
    if request.protocol != Protocol::Native {
        return None;
    }
    let declared = |name: &str| request.tools.iter().any(|t| t.name == name);
    if correction.budget_spent {
        return declared(FINAL_ANSWER).then_some(Forced::Tool(FINAL_ANSWER));
    }
    let allowed = correction.allowed();
    let forced = match &allowed {
        Allowed::FinalOnly => FINAL_ANSWER,
        Allowed::ToolOrFinal { tool } => correction.tool.as_deref().filter(|t| t == tool)?,
        Allowed::Cover { tools, .. }
            if let [only] = tools.as_slice()
                && let Some(spec) = request.tools.iter().find(|t| &t.name == only) =>
        {
            return Some(Forced::Tool(spec.name.as_str()));
        }
        Allowed::ActionOnly | Allowed::Cover { .. } | Allowed::ActionOnOtherTools { .. } => {
            let left_out = left_out(&allowed);
            let actions = request
                .tools
                .iter()
                .any(|t| t.name != FINAL_ANSWER && !left_out.contains(&t.name));
            return actions.then_some(Forced::AnyAction);
        }
        _ => return None,
    };
    declared(forced).then_some(Forced::Tool(forced))
}

/// The tools an action-only round leaves out besides `final_answer`.
fn left_out(allowed: &Allowed) -> &[String] {
    match allowed {
        Allowed::ActionOnOtherTools { tools } => tools,
        _ => &[],
    }
}

/// The tool a correction round forces, when it forces one.
pub(crate) fn forced_tool(request: &ModelRequest) -> Option<&str> {
    match forced(request)? {
        Forced::Tool(name) => Some(name),
        Forced::AnyAction => None,
    }
}

/// The tools a native request declares: all of them, but `final_answer` when only an action
/// is allowed, and but the excluded tools when only an action on other tools is.
pub(crate) fn declared_tools(request: &ModelRequest) -> impl Iterator<Item = &ToolSpec> {
    let action_only = forced(request) == Some(Forced::AnyAction);
    let excluded = match &request.correction {
        Some(c) if action_only => left_out(&c.allowed()).to_vec(),
        _ => Vec::new(),
    };
    request
        .tools
        .iter()
        .filter(move |t| !(excluded.contains(&t.name) || action_only && t.name == FINAL_ANSWER))
}

/// Whether `schema` meets OpenAI's strict mode: every object lists its properties, requires all
/// of them and allows no others, at every depth. A forced correction round then declares the
/// tool `strict`, so the provider itself holds the arguments to the schema.
pub(crate) fn strict_compatible(schema: &Value) -> bool {
    let Some(map) = schema.as_object() else {
        return true;
    };
    let is_object = map.get("type").and_then(Value::as_str) == Some("object");
    if is_object {
        let Some(props) = map.get("properties").and_then(Value::as_object) else {
            return false;
        };
        let required: HashSet<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if map.get("additionalProperties") != Some(&Value::Bool(false))
            || props.keys().any(|k| !required.contains(k.as_str()))
        {
            return false;
        }
    }
    map.iter()
        .filter(|(k, _)| !matches!(k.as_str(), "const" | "enum" | "default" | "examples"))
        .all(|(_, v)| match v {
            Value::Object(_) => strict_compatible(v),
            Value::Array(items) => items.iter().all(strict_compatible),
            _ => true,
        })
}

/// Ids for tool calls that arrive without one: `call_1`, `call_2`, … per model.
#[derive(Debug, Default)]
pub(crate) struct CallIds(AtomicU64);

impl CallIds {
    pub fn next(&self) -> String {
        format!("call_{}", self.0.fetch_add(1, Ordering::Relaxed) + 1)
    }
}

#[cfg(test)]
mod tests {
    use corrigible::ToolCall;

    use super::*;

    #[test]
    fn strict_mode_needs_closed_objects_that_require_everything() {
        let closed = json!({
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": false
        });
        assert!(strict_compatible(&closed));
        let mut optional = closed.clone();
        optional["required"] = json!([]);
        assert!(!strict_compatible(&optional));
        let mut open = closed.clone();
        open.as_object_mut()
            .map(|m| m.remove("additionalProperties"));
        assert!(!strict_compatible(&open));
        let nested = json!({
            "type": "object",
            "properties": {"inner": {"type": "object", "properties": {}}},
            "required": ["inner"],
            "additionalProperties": false
        });
        assert!(!strict_compatible(&nested));
    }

    #[test]
    fn arguments_become_objects() {
        assert_eq!(arguments_object(""), json!({}));
        assert_eq!(arguments_object(r#"{"a":1}"#), json!({"a": 1}));
        assert_eq!(arguments_object(r#"{"a":"#), json!({"_raw": r#"{"a":"#}));
        assert_eq!(arguments_object("[1]"), json!({"_raw": "[1]"}));
    }

    #[test]
    fn unanswered_calls_get_an_error_result() {
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "t".into(),
            arguments: "{}".into(),
        };
        let messages = vec![
            Message::request("q"),
            Message::assistant(MessageKind::Reply, "", vec![call("a"), call("b")]),
            Message::tool_result("a", "t", "1", false, MessageKind::ToolResult),
            Message::user(MessageKind::Feedback, "next"),
        ];
        let fixed = answer_every_call(&messages);
        assert_eq!(fixed.len(), 5);
        assert_eq!(fixed[3].tool_call_id.as_deref(), Some("b"));
        assert!(fixed[3].is_error);
        assert_eq!(fixed[4].content, "next");
    }

    #[test]
    fn results_without_their_call_become_user_messages() {
        let messages = vec![
            Message::request("q"),
            Message::tool_result("gone", "t", "42", false, MessageKind::ToolResult),
            Message::user(MessageKind::Feedback, "next"),
        ];
        let fixed = answer_every_call(&messages);
        assert_eq!(fixed.len(), 3);
        assert_eq!(fixed[1].role, Role::User);
        assert_eq!(fixed[1].content, "Result of `t`: 42");
    }
}
