use serde_json::Value;

use super::unique_keys::{self, UniqueKeysError};
use super::{Action, Decision, Final, normalize};
use crate::correction::rejection::{Category, Rejection};
use crate::decision::repair::{RepairKind, repair};
use crate::message::ToolCall;
use crate::model::ModelReply;
use crate::tool::FINAL_ANSWER;

/// The outcome of parsing one decision: the decision or its rejection, plus any repairs made.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// The decision, or why there is none.
    pub decision: Result<Decision, Rejection>,
    /// Local repairs applied to get there.
    pub repairs: Vec<RepairKind>,
    /// The native call this decision came from, if any: its result must answer this id.
    pub call_id: Option<String>,
}

impl Parsed {
    fn rejected(rejection: Rejection) -> Self {
        Self {
            decision: Err(rejection),
            repairs: Vec::new(),
            call_id: None,
        }
    }
}

/// Parses JSON text, repairing it locally when `allow_repair` is set. An object that names a
/// key twice is refused, never repaired: which value was meant is ambiguous.
fn parse_json(text: &str, allow_repair: bool) -> (Result<Value, Rejection>, Vec<RepairKind>) {
    let first = match unique_keys::from_str(text.trim()) {
        Ok(v) => return (Ok(v), Vec::new()),
        Err(UniqueKeysError::DuplicateKey { key }) => return (Err(duplicate(&key)), Vec::new()),
        Err(UniqueKeysError::Syntax(e)) => e,
    };
    let invalid = |e: &serde_json::Error| {
        let message = if super::is_html_escaped(text) {
            format!(
                "not valid JSON: your reply is HTML-escaped JSON (`&#34;` or `&quot;` \
                 where `\"` belongs): write plain JSON with real double quotes ({e})"
            )
        } else {
            format!("not valid JSON: {e}")
        };
        Rejection::new(Category::InvalidJson, message)
    };
    if !allow_repair {
        return (Err(invalid(&first)), Vec::new());
    }
    match repair(text) {
        Some((candidate, kinds)) => match unique_keys::from_str(&candidate) {
            Ok(v) => (Ok(v), kinds),
            Err(UniqueKeysError::DuplicateKey { key }) => (Err(duplicate(&key)), Vec::new()),
            Err(UniqueKeysError::Syntax(_)) => (Err(invalid(&first)), Vec::new()),
        },
        None => (Err(invalid(&first)), Vec::new()),
    }
}

/// The rejection of an object that names `key` twice.
fn duplicate(key: &str) -> Rejection {
    Rejection::new(
        Category::InvalidJson,
        format!(
            "not valid JSON for a decision: the key \"{key}\" appears twice in one object, so \
             which value you meant is ambiguous; send each key once"
        ),
    )
}

/// Parses a JSON-protocol decision from reply text.
pub fn parse_text(text: &str, allow_repair: bool) -> Parsed {
    if text.trim().is_empty() {
        return Parsed::rejected(Rejection::new(
            Category::EmptyResponse,
            "the reply was empty: answer with one JSON decision",
        ));
    }
    let (value, repairs) = parse_json(text, allow_repair);
    Parsed {
        decision: value.and_then(normalize),
        repairs,
        call_id: None,
    }
}

/// Parses a native-protocol reply: one decision per tool call, or a plain text reply taken as a
/// satisfied final answer.
pub fn parse_native(reply: &ModelReply, allow_repair: bool) -> Vec<Parsed> {
    let text = reply.text.as_deref().unwrap_or("").trim();
    if reply.tool_calls.is_empty() {
        if text.is_empty() {
            return vec![Parsed::rejected(Rejection::new(
                Category::EmptyResponse,
                "the reply had no text and no tool call: call a tool or `final_answer`",
            ))];
        }
        return vec![Parsed {
            decision: Ok(Decision::Final(Final {
                satisfied: true,
                summary: text.to_string(),
                call_id: None,
            })),
            repairs: Vec::new(),
            call_id: None,
        }];
    }
    reply
        .tool_calls
        .iter()
        .map(|call| parse_call(call, text, allow_repair))
        .collect()
}

pub(super) fn parse_call(call: &ToolCall, reason: &str, allow_repair: bool) -> Parsed {
    let raw = if call.arguments.trim().is_empty() {
        "{}"
    } else {
        call.arguments.as_str()
    };
    let (value, repairs) = parse_json(raw, allow_repair);
    let decision = value
        .and_then(|v| {
            if call.name == FINAL_ANSWER {
                let mut v = v;
                if let Some(obj) = v.as_object_mut() {
                    obj.insert("state".into(), Value::String("final".into()));
                }
                normalize(v).and_then(|d| match d {
                    Decision::Final(f) => Ok(Decision::Final(Final {
                        call_id: Some(call.id.clone()),
                        ..f
                    })),
                    Decision::Action(_) => Err(Rejection::new(
                        Category::DecisionSchema,
                        "final_answer: expected {satisfied, final_summary}",
                    )),
                })
            } else if v.is_object() {
                Ok(Decision::Action(Action {
                    reason: reason.to_string(),
                    tool: call.name.clone(),
                    input: v,
                    call_id: Some(call.id.clone()),
                }))
            } else {
                Err(
                    Rejection::new(Category::InvalidToolInput, "tool_input: expected an object")
                        .with_tool(call.name.clone()),
                )
            }
        })
        .map_err(|r| {
            if r.tool.is_none() {
                r.with_tool(call.name.clone())
            } else {
                r
            }
        });
    Parsed {
        decision,
        repairs,
        call_id: Some(call.id.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_text_is_empty_response() {
        let p = parse_text("  \n", true);
        assert_eq!(p.decision.unwrap_err().category, Category::EmptyResponse);
    }

    #[test]
    fn repaired_fence_is_recorded() {
        let p = parse_text(
            "```json\n{\"state\":\"final\",\"satisfied\":true,\"final_summary\":\"ok\",}\n```",
            true,
        );
        assert!(p.decision.is_ok());
        assert_eq!(
            p.repairs,
            vec![RepairKind::CodeFence, RepairKind::TrailingComma]
        );
    }

    #[test]
    fn no_repair_when_disabled() {
        let p = parse_text(
            "```json\n{\"state\":\"final\",\"satisfied\":true,\"final_summary\":\"ok\"}\n```",
            false,
        );
        assert_eq!(p.decision.unwrap_err().category, Category::InvalidJson);
    }

    #[test]
    fn html_escaped_json_is_named_and_repaired() {
        let escaped = "{&#34;state&#34;: &#34;final&#34;, &#34;satisfied&#34;: true, \
                       &#34;final_summary&#34;: &#34;ok&#34;}";
        let rejected = parse_text(escaped, false).decision.unwrap_err();
        assert_eq!(rejected.category, Category::InvalidJson);
        assert!(
            rejected.message.contains("your reply is HTML-escaped JSON"),
            "{}",
            rejected.message
        );
        let repaired = parse_text(escaped, true);
        assert!(repaired.decision.is_ok());
        assert_eq!(repaired.repairs, vec![RepairKind::HtmlEscaped]);
    }

    #[test]
    fn native_broken_arguments_are_invalid_json() {
        let reply = ModelReply {
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "weather".into(),
                arguments: "{\"city\": ".into(),
            }],
            ..Default::default()
        };
        let parsed = parse_native(&reply, true);
        assert_eq!(
            parsed[0].decision.as_ref().unwrap_err().category,
            Category::InvalidJson
        );
    }
}
