use serde_json::{Map, Value};

use super::{Action, Decision, Final};
use crate::correction::rejection::{Category, Rejection};

fn schema_error(message: impl Into<String>) -> Rejection {
    Rejection::new(Category::DecisionSchema, message)
}

/// Turns a JSON value into a decision, accepting the legacy shapes: no `state` but `tool`
/// means an action; `thought` stands for `reason`; no `state` but `final_summary` or
/// `satisfied` means a final answer.
pub fn normalize(value: Value) -> Result<Decision, Rejection> {
    let Value::Object(mut obj) = value else {
        return Err(schema_error(format!(
            "expected a JSON object with \"state\", got {}",
            kind_of(&value)
        )));
    };
    let state = match obj.remove("state") {
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(schema_error(format!(
                "state: expected \"action\" or \"final\", got {other}"
            )));
        }
        None if obj.contains_key("tool") => "action".to_string(),
        None if obj.contains_key("final_summary") || obj.contains_key("satisfied") => {
            "final".to_string()
        }
        None => {
            return Err(schema_error(
                "state: required property missing (\"action\" with tool and tool_input, or \"final\" with satisfied and final_summary)",
            ));
        }
    };
    match state.as_str() {
        "action" => action(obj).map(Decision::Action),
        "final" => final_answer(obj).map(Decision::Final),
        other => Err(schema_error(format!(
            "state: expected \"action\" or \"final\", got \"{other}\""
        ))),
    }
}

fn action(mut obj: Map<String, Value>) -> Result<Action, Rejection> {
    let tool = match obj.remove("tool") {
        Some(Value::String(s)) if !s.trim().is_empty() => s,
        Some(Value::String(_)) => return Err(schema_error("tool: must not be empty")),
        Some(other) => {
            return Err(schema_error(format!(
                "tool: expected a string, got {}",
                kind_of(&other)
            )));
        }
        None => return Err(schema_error("tool: required property missing")),
    };
    let reason = match obj.remove("reason").or_else(|| obj.remove("thought")) {
        Some(Value::String(s)) => s,
        None | Some(Value::Null) => String::new(),
        Some(other) => {
            return Err(schema_error(format!(
                "reason: expected a string, got {}",
                kind_of(&other)
            )));
        }
    };
    let input = match obj.remove("tool_input") {
        Some(v @ Value::Object(_)) => v,
        Some(other) => {
            return Err(schema_error(format!(
                "tool_input: expected an object, got {}",
                kind_of(&other)
            )));
        }
        None => return Err(schema_error("tool_input: required property missing")),
    };
    Ok(Action {
        reason,
        tool,
        input,
        call_id: None,
    })
}

fn final_answer(mut obj: Map<String, Value>) -> Result<Final, Rejection> {
    let satisfied = match obj.remove("satisfied") {
        Some(Value::Bool(b)) => b,
        Some(other) => {
            return Err(schema_error(format!(
                "satisfied: expected a boolean, got {}",
                kind_of(&other)
            )));
        }
        None => return Err(schema_error("satisfied: required property missing")),
    };
    let summary = match obj.remove("final_summary") {
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(schema_error(format!(
                "final_summary: expected a string, got {}",
                kind_of(&other)
            )));
        }
        None => return Err(schema_error("final_summary: required property missing")),
    };
    Ok(Final {
        satisfied,
        summary,
        call_id: None,
    })
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn legacy_action_with_thought() {
        let d = normalize(json!({"thought": "t", "tool": "x", "tool_input": {}})).unwrap();
        assert_eq!(
            d,
            Decision::Action(Action {
                reason: "t".into(),
                tool: "x".into(),
                input: json!({}),
                call_id: None
            })
        );
    }

    #[test]
    fn legacy_final_without_state() {
        let d = normalize(json!({"satisfied": false, "final_summary": "no"})).unwrap();
        assert!(matches!(
            d,
            Decision::Final(Final {
                satisfied: false,
                ..
            })
        ));
    }

    #[test]
    fn wrong_state_is_a_schema_error() {
        let r = normalize(json!({"state": "done"})).unwrap_err();
        assert_eq!(r.category, Category::DecisionSchema);
        assert!(r.message.contains("state"), "{}", r.message);
    }

    #[test]
    fn missing_tool_is_named() {
        let r = normalize(json!({"state": "action", "tool_input": {}})).unwrap_err();
        assert_eq!(r.message, "tool: required property missing");
    }
}
