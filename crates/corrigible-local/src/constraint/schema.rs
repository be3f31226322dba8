//! The JSON Schema a decision is held to, in the form llguidance compiles best.

use corrigible::Allowed;
use corrigible::ToolSpec;
use corrigible::decision::{SchemaMode, allowed_schema, decision_schema};
use serde_json::{Value, json};

use crate::config::Constrain;

/// Longest `reason` the decoder allows, in characters.
pub const MAX_REASON_CHARS: u64 = 160;

/// Longest `final_summary` the decoder allows, in characters.
pub const MAX_SUMMARY_CHARS: u64 = 480;

/// Longest string inside a tool input that declares no bound of its own.
pub const MAX_INPUT_STRING_CHARS: u64 = 120;

/// Most properties of an envelope-mode `tool_input`.
pub const MAX_ENVELOPE_PROPERTIES: u64 = 6;

/// The decision schema for `tools` under `mode`, or `None` when decoding is free.
///
/// It is held tighter than the engine's schema so that a small model finishes its decision
/// within the token bound: whitespace is not flexible (the model keeps objects open with it),
/// every object schema that lists properties but says nothing of others is closed, free
/// strings have a maximum length, and the envelope's `tool_input` is a small flat object.
pub fn constraint_schema(tools: &[ToolSpec], mode: Constrain) -> Option<Value> {
    let schema_mode = match mode {
        Constrain::Off => return None,
        Constrain::Envelope => SchemaMode::Envelope,
        Constrain::Schema => SchemaMode::Full,
    };
    Some(tightened(decision_schema(tools, schema_mode)))
}

/// The schema of a correction round: what `allowed` still permits, tightened like
/// [`constraint_schema`]. Free decoding (`Constrain::Off`) is held to at least the envelope,
/// because the free reply is what was just rejected.
pub fn narrowed_schema(tools: &[ToolSpec], mode: Constrain, allowed: &Allowed) -> Value {
    let schema_mode = match mode {
        Constrain::Off | Constrain::Envelope => SchemaMode::Envelope,
        Constrain::Schema => SchemaMode::Full,
    };
    tightened(allowed_schema(tools, schema_mode, allowed))
}

fn tightened(mut schema: Value) -> Value {
    if let Some(branches) = schema.get_mut("anyOf").and_then(Value::as_array_mut) {
        for branch in branches {
            tighten_branch(branch);
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

fn tighten_branch(branch: &mut Value) {
    let Some(props) = branch.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(reason) = props.get_mut("reason") {
        reason["maxLength"] = json!(MAX_REASON_CHARS);
    }
    if let Some(summary) = props.get_mut("final_summary") {
        summary["maxLength"] = json!(MAX_SUMMARY_CHARS);
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
                        {"type": "string", "maxLength": MAX_INPUT_STRING_CHARS},
                        {"type": "number"},
                        {"type": "boolean"}
                    ]
                }
            });
        } else {
            close_objects(input);
            bound_strings(input);
        }
    }
}

/// Gives every string schema without a length bound, pattern or fixed values a maximum length.
fn bound_strings(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let is_string = map.get("type").and_then(Value::as_str) == Some("string");
            let fixed = ["maxLength", "pattern", "enum", "const", "format"]
                .iter()
                .any(|k| map.contains_key(*k));
            if is_string && !fixed {
                map.insert("maxLength".to_string(), json!(MAX_INPUT_STRING_CHARS));
            }
            for (key, value) in map.iter_mut() {
                if !matches!(key.as_str(), "const" | "enum" | "default" | "examples") {
                    bound_strings(value);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(bound_strings),
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
        }
    }

    #[test]
    fn off_has_no_schema() {
        assert!(constraint_schema(&[calculator()], Constrain::Off).is_none());
    }

    #[test]
    fn full_schema_closes_tool_input_and_fixes_whitespace() {
        let s = constraint_schema(&[calculator()], Constrain::Schema).expect("schema");
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
        let s = constraint_schema(&[calculator()], Constrain::Envelope).expect("schema");
        let input = &s["anyOf"][0]["properties"]["tool_input"];
        assert_eq!(input["type"], json!("object"));
        assert!(input.get("properties").is_none());
        assert_eq!(input["maxProperties"], json!(MAX_ENVELOPE_PROPERTIES));
    }

    #[test]
    fn free_strings_get_a_length_bound() {
        let s = constraint_schema(&[calculator()], Constrain::Schema).expect("schema");
        let action = &s["anyOf"][0]["properties"];
        assert_eq!(action["reason"]["maxLength"], json!(MAX_REASON_CHARS));
        assert_eq!(
            action["tool_input"]["properties"]["expression"]["maxLength"],
            json!(MAX_INPUT_STRING_CHARS)
        );
        let fin = &s["anyOf"][1]["properties"];
        assert_eq!(fin["final_summary"]["maxLength"], json!(MAX_SUMMARY_CHARS));
    }

    #[test]
    fn off_is_narrowed_to_at_least_the_envelope() {
        let s = narrowed_schema(&[calculator()], Constrain::Off, &Allowed::AnyDecision);
        let input = &s["anyOf"][0]["properties"]["tool_input"];
        assert_eq!(input["maxProperties"], json!(MAX_ENVELOPE_PROPERTIES));
        assert_eq!(s["x-guidance"]["whitespace_flexible"], json!(false));
    }

    #[test]
    fn tool_or_final_gets_the_exact_tool_schema_under_envelope() {
        let allowed = Allowed::ToolOrFinal {
            tool: "calculator".into(),
        };
        let s = narrowed_schema(&[calculator()], Constrain::Envelope, &allowed);
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
