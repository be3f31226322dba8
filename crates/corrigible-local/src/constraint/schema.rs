//! The JSON Schema a decision is held to, in the form llguidance compiles best.

use corrigible::Allowed;
use corrigible::ToolSpec;
use corrigible::decision::{SchemaMode, allowed_schema, decision_schema};
use serde_json::{Value, json};

use crate::config::Constrain;

/// Most properties of an envelope-mode `tool_input`.
pub const MAX_ENVELOPE_PROPERTIES: u64 = 3;

/// Tokens of a decision that are not free strings (keys, punctuation, the tool name), rounded up.
const STRUCTURE_TOKENS: usize = 32;

/// The longest free strings a constrained decision may hold, in characters, chosen so that a
/// decision closes within the call's token bound: a token holds at least one character, so a
/// `reason` plus one tool-input string, or a `final_summary`, always fits. A reply cut off at
/// the bound is broken JSON, the most common rejection before these caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StringCaps {
    /// Longest `reason`.
    pub reason: u64,
    /// Longest `final_summary`.
    pub summary: u64,
    /// Longest string inside a tool input that declares no bound of its own.
    pub input: u64,
    /// Longest string value of an envelope-mode `tool_input`.
    pub envelope_input: u64,
}

impl StringCaps {
    /// Caps that fit a decision into `max_tokens` generated tokens.
    pub fn fitting(max_tokens: usize) -> Self {
        let budget = max_tokens.saturating_sub(STRUCTURE_TOKENS).max(16) as u64;
        Self {
            reason: budget * 2 / 5,
            summary: budget * 17 / 20,
            input: budget * 2 / 5,
            envelope_input: budget * 2 / 5 / MAX_ENVELOPE_PROPERTIES,
        }
    }
}

/// The decision schema for `tools` under `mode`, or `None` when decoding is free.
///
/// It is held tighter than the engine's schema so that a small model finishes its decision
/// within the token bound: whitespace is not flexible (the model keeps objects open with it),
/// every object schema that lists properties but says nothing of others is closed, free
/// strings have a maximum length, and the envelope's `tool_input` is a small flat object.
pub fn constraint_schema(tools: &[ToolSpec], mode: Constrain, caps: StringCaps) -> Option<Value> {
    let schema_mode = match mode {
        Constrain::Off => return None,
        Constrain::Envelope => SchemaMode::Envelope,
        Constrain::Schema => SchemaMode::Full,
    };
    Some(tightened(decision_schema(tools, schema_mode), caps))
}

/// The schema of a correction round: what `allowed` still permits, tightened like
/// [`constraint_schema`]. Free decoding (`Constrain::Off`) is held to at least the envelope,
/// because the free reply is what was just rejected.
pub fn narrowed_schema(
    tools: &[ToolSpec],
    mode: Constrain,
    allowed: &Allowed,
    caps: StringCaps,
) -> Value {
    let schema_mode = match mode {
        Constrain::Off | Constrain::Envelope => SchemaMode::Envelope,
        Constrain::Schema => SchemaMode::Full,
    };
    tightened(allowed_schema(tools, schema_mode, allowed), caps)
}

fn tightened(mut schema: Value, caps: StringCaps) -> Value {
    if let Some(branches) = schema.get_mut("anyOf").and_then(Value::as_array_mut) {
        for branch in branches {
            tighten_branch(branch, caps);
        }
    }
    if let Some(obj) = schema.as_object_mut() {
        obj.insert(
            "x-guidance".to_string(),
            json!({"whitespace_flexible": false}),
        );
    }
    schema
}

fn tighten_branch(branch: &mut Value, caps: StringCaps) {
    let Some(props) = branch.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(reason) = props.get_mut("reason") {
        reason["maxLength"] = json!(caps.reason);
    }
    if let Some(summary) = props.get_mut("final_summary") {
        summary["maxLength"] = json!(caps.summary);
    }
    let envelope = props
        .get("tool")
        .is_some_and(|tool| tool.get("enum").is_some());
    if let Some(input) = props.get_mut("tool_input") {
        if envelope {
            *input = json!({
                "type": "object",
                "maxProperties": MAX_ENVELOPE_PROPERTIES,
                "additionalProperties": {
                    "anyOf": [
                        {"type": "string", "maxLength": caps.envelope_input},
                        {"type": "number"},
                        {"type": "boolean"}
                    ]
                }
            });
        } else {
            close_objects(input);
            bound_strings(input, caps.input);
        }
    }
}

/// Gives every string schema without a length bound, pattern or fixed values a maximum length.
fn bound_strings(schema: &mut Value, cap: u64) {
    match schema {
        Value::Object(map) => {
            let is_string = map.get("type").and_then(Value::as_str) == Some("string");
            let fixed = ["maxLength", "pattern", "enum", "const", "format"]
                .iter()
                .any(|k| map.contains_key(*k));
            if is_string && !fixed {
                map.insert("maxLength".to_string(), json!(cap));
            }
            for (key, value) in map.iter_mut() {
                if !matches!(key.as_str(), "const" | "enum" | "default" | "examples") {
                    bound_strings(value, cap);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| bound_strings(v, cap)),
        _ => {}
    }
}

/// Adds `additionalProperties: false` to every object schema with `properties` and no word
/// on other properties, recursively.
fn close_objects(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.contains_key("properties") && !map.contains_key("additionalProperties") {
                map.insert("additionalProperties".to_string(), Value::Bool(false));
            }
            for (key, value) in map.iter_mut() {
                if key != "const" && key != "enum" && key != "default" && key != "examples" {
                    close_objects(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(close_objects),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calculator() -> ToolSpec {
        ToolSpec {
            name: "calculator".into(),
            description: "Evaluates arithmetic.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"expression": {"type": "string"}},
                "required": ["expression"]
            }),
            grounded: Vec::new(),
            computes: false,
        }
    }

    const CAPS: StringCaps = StringCaps {
        reason: 90,
        summary: 190,
        input: 80,
        envelope_input: 30,
    };

    #[test]
    fn caps_fit_the_token_bound() {
        let caps = StringCaps::fitting(256);
        assert!(caps.reason + caps.input + STRUCTURE_TOKENS as u64 <= 256);
        assert!(caps.summary + STRUCTURE_TOKENS as u64 <= 256);
        assert!(caps.envelope_input * MAX_ENVELOPE_PROPERTIES <= caps.input);
        assert!(StringCaps::fitting(0).summary > 0);
    }

    #[test]
    fn off_has_no_schema() {
        assert!(constraint_schema(&[calculator()], Constrain::Off, CAPS).is_none());
    }

    #[test]
    fn full_schema_closes_tool_input_and_fixes_whitespace() {
        let s = constraint_schema(&[calculator()], Constrain::Schema, CAPS).expect("schema");
        assert_eq!(s["x-guidance"]["whitespace_flexible"], json!(false));
        let action = &s["anyOf"][0];
        assert_eq!(action["properties"]["tool"]["const"], json!("calculator"));
        assert_eq!(
            action["properties"]["tool_input"]["additionalProperties"],
            json!(false)
        );
    }

    #[test]
    fn envelope_keeps_tool_input_free_but_flat() {
        let s = constraint_schema(&[calculator()], Constrain::Envelope, CAPS).expect("schema");
        let input = &s["anyOf"][0]["properties"]["tool_input"];
        assert_eq!(input["type"], json!("object"));
        assert!(input.get("properties").is_none());
        assert_eq!(input["maxProperties"], json!(MAX_ENVELOPE_PROPERTIES));
    }

    #[test]
    fn free_strings_get_a_length_bound() {
        let s = constraint_schema(&[calculator()], Constrain::Schema, CAPS).expect("schema");
        let action = &s["anyOf"][0]["properties"];
        assert_eq!(action["reason"]["maxLength"], json!(CAPS.reason));
        assert_eq!(
            action["tool_input"]["properties"]["expression"]["maxLength"],
            json!(CAPS.input)
        );
        let fin = &s["anyOf"][1]["properties"];
        assert_eq!(fin["final_summary"]["maxLength"], json!(CAPS.summary));
    }

    #[test]
    fn off_is_narrowed_to_at_least_the_envelope() {
        let s = narrowed_schema(&[calculator()], Constrain::Off, &Allowed::AnyDecision, CAPS);
        let input = &s["anyOf"][0]["properties"]["tool_input"];
        assert_eq!(input["maxProperties"], json!(MAX_ENVELOPE_PROPERTIES));
        assert_eq!(s["x-guidance"]["whitespace_flexible"], json!(false));
    }

    #[test]
    fn tool_or_final_gets_the_exact_tool_schema_under_envelope() {
        let allowed = Allowed::ToolOrFinal {
            tool: "calculator".into(),
        };
        let s = narrowed_schema(&[calculator()], Constrain::Envelope, &allowed, CAPS);
        let input = &s["anyOf"][0]["properties"]["tool_input"];
        assert_eq!(input["additionalProperties"], json!(false));
        assert_eq!(input["required"], json!(["expression"]));
    }

    #[test]
    fn an_explicit_additional_properties_is_kept() {
        let mut v = json!({"properties": {"a": {}}, "additionalProperties": true});
        close_objects(&mut v);
        assert_eq!(v["additionalProperties"], json!(true));
    }
}
