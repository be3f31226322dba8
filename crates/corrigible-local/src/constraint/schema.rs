//! The JSON Schema a decision is held to, in the form llguidance compiles best.

use corrigible::ToolSpec;
use corrigible::decision::{SchemaMode, decision_schema};
use serde_json::{Value, json};

use crate::config::Constrain;

/// The decision schema for `tools` under `mode`, or `None` when decoding is free.
///
/// Whitespace is not flexible (a small model keeps objects open with it), and every object
/// schema that lists properties but says nothing of others is closed.
pub fn constraint_schema(tools: &[ToolSpec], mode: Constrain) -> Option<Value> {
    let schema_mode = match mode {
        Constrain::Off => return None,
        Constrain::Envelope => SchemaMode::Envelope,
        Constrain::Schema => SchemaMode::Full,
    };
    let mut schema = decision_schema(tools, schema_mode);
    close_objects(&mut schema);
    if let Some(obj) = schema.as_object_mut() {
        obj.insert(
            "x-guidance".to_string(),
            json!({"whitespace_flexible": false}),
        );
    }
    Some(schema)
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
    fn envelope_leaves_tool_input_open() {
        let s = constraint_schema(&[calculator()], Constrain::Envelope).expect("schema");
        let input = &s["anyOf"][0]["properties"]["tool_input"];
        assert_eq!(input, &json!({"type": "object"}));
    }

    #[test]
    fn an_explicit_additional_properties_is_kept() {
        let mut v = json!({"properties": {"a": {}}, "additionalProperties": true});
        close_objects(&mut v);
        assert_eq!(v["additionalProperties"], json!(true));
    }
}
