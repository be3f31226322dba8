use serde_json::Value;

use super::unique_keys::{self, UniqueKeysError};
use super::{Action, Decision, Final, normalize};
use crate::correction::rejection::{Category, Rejection};
use crate::decision::repair::{RepairKind, Unrepairable, repair_value};
use crate::evidence::declined::declines;
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

/// Reads JSON text (a decision, or a native call's arguments), repairing it locally when
/// `allow_repair` is set; returns the value or its rejection, with the repairs made. An object
/// that names a key twice is refused at once: no repair can tell which value was meant.
pub fn read_json(text: &str, allow_repair: bool) -> (Result<Value, Rejection>, Vec<RepairKind>) {
    let first = match unique_keys::from_str(text.trim()) {
        Ok(Value::String(inner)) if allow_repair => {
            return match unique_keys::from_str(inner.trim()) {
                Ok(object @ Value::Object(_)) => (Ok(object), vec![RepairKind::OverEscaped]),
                Err(UniqueKeysError::DuplicateKey { key }) => (Err(duplicate(&key)), Vec::new()),
                _ => (Ok(Value::String(inner)), Vec::new()),
            };
        }
        Ok(v) => return (Ok(v), Vec::new()),
        Err(UniqueKeysError::DuplicateKey { key }) => return (Err(duplicate(&key)), Vec::new()),
        Err(UniqueKeysError::Syntax(e)) => e,
    };
    let invalid = |why: Option<&Unrepairable>| {
        let why = why.map(|w| format!("; {w}")).unwrap_or_default();
        let message = if super::is_html_escaped(text) {
            format!(
                "not valid JSON: your reply is HTML-escaped JSON (`&#34;` or `&quot;` \
                 where `\"` belongs): write plain JSON with real double quotes ({first}){why}"
            )
        } else {
            format!("not valid JSON: {first}{why}")
        };
        Rejection::new(Category::InvalidJson, message)
    };
    if !allow_repair {
        return (Err(invalid(None)), Vec::new());
    }
    match repair_value(text) {
        Ok((v, kinds)) if !kinds.is_empty() => (Ok(v), kinds),
        Ok(_) => (Err(invalid(None)), Vec::new()),
        Err(Unrepairable::DuplicateKey(key)) => (Err(duplicate(&key)), Vec::new()),
        Err(why) => (Err(invalid(Some(&why))), Vec::new()),
    }
}

/// `tool_input` given as a string that holds exactly one JSON object: that object.
fn unescape_tool_input(value: &mut Value) -> bool {
    let Some(slot) = value.get_mut("tool_input") else {
        return false;
    };
    let Value::String(text) = slot else {
        return false;
    };
    match unique_keys::from_str(text.trim()) {
        Ok(inner @ Value::Object(_)) => {
            *slot = inner;
            true
        }
        _ => false,
    }
}

/// Reads the JSON of a JSON-protocol decision: [`read_json`], and with `allow_repair` a
/// `tool_input` string holding one object read as that object. This is the value
/// [`parse_text`] normalizes.
pub fn read_decision_json(
    text: &str,
    allow_repair: bool,
) -> (Result<Value, Rejection>, Vec<RepairKind>) {
    let (mut value, mut repairs) = read_json(text, allow_repair);
    if allow_repair
        && let Ok(v) = &mut value
        && unescape_tool_input(v)
        && !repairs.contains(&RepairKind::OverEscaped)
    {
        repairs.push(RepairKind::OverEscaped);
    }
    (value, repairs)
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
    let (value, repairs) = read_decision_json(text, allow_repair);
    Parsed {
        decision: value.and_then(normalize),
        repairs,
        call_id: None,
    }
}

/// Parses a native-protocol reply: one decision per tool call, or a plain text reply taken as
/// the final answer: satisfied unless it opens by declining the request
/// ([`crate::evidence::declined`]).
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
                satisfied: !declines(text),
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

/// The text of a native call's arguments: empty arguments stand for `{}`.
pub fn call_arguments(call: &ToolCall) -> &str {
    if call.arguments.trim().is_empty() {
        "{}"
    } else {
        call.arguments.as_str()
    }
}

pub(super) fn parse_call(call: &ToolCall, reason: &str, allow_repair: bool) -> Parsed {
    let (value, repairs) = read_json(call_arguments(call), allow_repair);
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

    #[test]
    fn duplicate_keys_are_a_correction_at_every_depth() {
        for text in [
            r#"{"state":"action","reason":"r","tool":"calc","tool_input":{"x":"1"},"tool_input":{"x":"2"}}"#,
            r#"{"state":"action","reason":"r","tool":"calc","tool_input":{"x":"1","x":"2"}}"#,
            r#"{"state":"action","reason":"r","tool":"calc","tool_input":{"a":[{"b":1,"b":2}]}}"#,
            r#"{"state":"final","satisfied":true,"satisfied":false,"final_summary":"s"}"#,
            "```json\n{'state':'final','satisfied':true,'final_summary':'a','final_summary':'b'}\n```",
        ] {
            let strict = serde_json::from_str::<Value>(text).is_ok();
            for allow in [true, false].into_iter().filter(|&a| a || strict) {
                let r = parse_text(text, allow).decision.unwrap_err();
                assert_eq!(r.category, Category::InvalidJson, "{text}");
                assert!(r.message.contains("appears twice"), "{text}: {}", r.message);
            }
        }
    }

    #[test]
    fn native_duplicate_arguments_are_a_correction() {
        for arguments in [
            r#"{"city": "Paris", "city": "Rome"}"#,
            "{'city': 'Paris', city: 'Rome'}",
        ] {
            let reply = ModelReply {
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "weather".into(),
                    arguments: arguments.into(),
                }],
                ..Default::default()
            };
            let r = parse_native(&reply, true)[0].decision.clone().unwrap_err();
            assert_eq!(r.category, Category::InvalidJson);
            assert!(
                r.message.contains("\"city\" appears twice"),
                "{}",
                r.message
            );
            assert_eq!(r.tool.as_deref(), Some("weather"));
        }
    }

    #[test]
    fn tool_input_as_a_json_string_is_unescaped() {
        let p = parse_text(
            r#"{"state":"action","reason":"r","tool":"calc","tool_input":"{\"expression\": \"2+2\"}"}"#,
            true,
        );
        match p.decision.unwrap() {
            Decision::Action(a) => assert_eq!(a.input, serde_json::json!({"expression": "2+2"})),
            other => panic!("{other:?}"),
        }
        assert_eq!(p.repairs, vec![RepairKind::OverEscaped]);
        let p = parse_text(
            r#"{"state":"action","reason":"r","tool":"calc","tool_input":"2+2"}"#,
            true,
        );
        assert_eq!(p.decision.unwrap_err().category, Category::DecisionSchema);
    }

    #[test]
    fn a_json_string_holding_the_decision_is_unescaped() {
        let text = serde_json::to_string(
            r#"{"state": "final", "satisfied": true, "final_summary": "ok"}"#,
        )
        .unwrap();
        let p = parse_text(&text, true);
        assert!(p.decision.is_ok(), "{:?}", p.decision);
        assert_eq!(p.repairs, vec![RepairKind::OverEscaped]);
        assert_eq!(
            parse_text(&text, false).decision.unwrap_err().category,
            Category::DecisionSchema
        );
    }

    #[test]
    fn truncated_reply_says_it_was_cut() {
        let r = parse_text(
            r#"{"state":"final","satisfied":true,"final_summary":"The ans"#,
            true,
        )
        .decision
        .unwrap_err();
        assert_eq!(r.category, Category::InvalidJson);
        assert!(r.message.contains("cut off"), "{}", r.message);
    }

    #[test]
    fn native_python_arguments_are_repaired() {
        let reply = ModelReply {
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "weather".into(),
                arguments: "{'city': 'Paris', 'metric': True}".into(),
            }],
            ..Default::default()
        };
        let parsed = parse_native(&reply, true);
        assert_eq!(
            parsed[0].repairs,
            vec![RepairKind::SingleQuotes, RepairKind::PythonLiterals]
        );
        match parsed[0].decision.as_ref().unwrap() {
            Decision::Action(a) => {
                assert_eq!(
                    a.input,
                    serde_json::json!({"city": "Paris", "metric": true})
                )
            }
            other => panic!("{other:?}"),
        }
    }
}
