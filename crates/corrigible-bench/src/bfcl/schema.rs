//! BFCL's parameter dialect mapped to standard JSON Schema, and tool names providers accept.

use serde_json::{Map, Value};

/// Maps BFCL's dialect to JSON Schema, as BFCL does before calling function-calling APIs:
/// `dict`→`object`, `float`→`number`, `tuple`→`array`, `any`→`string`, at every depth.
/// The top-level object also gets `additionalProperties: false`, so an unexpected parameter
/// is rejected by the engine (and can be corrected) instead of only failing the grade.
pub fn to_json_schema(parameters: &Value) -> Value {
    let mut schema = map_types(parameters);
    if let Value::Object(obj) = &mut schema {
        obj.entry("type")
            .or_insert_with(|| Value::String("object".into()));
        if obj.get("type").and_then(Value::as_str) == Some("object") {
            obj.entry("properties")
                .or_insert_with(|| Value::Object(Map::new()));
            obj.insert("additionalProperties".into(), Value::Bool(false));
        }
    }
    schema
}

fn map_types(value: &Value) -> Value {
    match value {
        Value::Object(obj) => {
            let mut out = Map::new();
            for (key, v) in obj {
                let mapped = match (key.as_str(), v) {
                    ("type", Value::String(t)) => Value::String(map_type(t).into()),
                    ("type", Value::Array(ts)) => Value::Array(
                        ts.iter()
                            .map(|t| match t {
                                Value::String(t) => Value::String(map_type(t).into()),
                                other => other.clone(),
                            })
                            .collect(),
                    ),
                    // Property names are data, not schemas: map each property's schema.
                    ("properties", Value::Object(props)) => Value::Object(
                        props
                            .iter()
                            .map(|(name, schema)| (name.clone(), map_types(schema)))
                            .collect(),
                    ),
                    ("properties", _) => Value::Object(Map::new()),
                    // Descriptions, enums and defaults are kept verbatim.
                    ("description" | "enum" | "default" | "required", _) => v.clone(),
                    _ => map_types(v),
                };
                out.insert(key.clone(), mapped);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(map_types).collect()),
        other => other.clone(),
    }
}

fn map_type(t: &str) -> &str {
    match t {
        "dict" => "object",
        "float" => "number",
        "tuple" => "array",
        "any" => "string",
        other => other,
    }
}

/// The tool name for a BFCL function: like BFCL for APIs that refuse dots, every character
/// outside `[A-Za-z0-9_-]` becomes `_` (`math.factorial` → `math_factorial`). Applied to the
/// declared and the expected name alike.
pub fn tool_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn maps_the_dialect_at_every_depth() {
        let bfcl = json!({"type": "dict", "properties": {
            "x": {"type": "float", "description": "type dict"},
            "pair": {"type": "tuple", "items": {"type": "float"}},
            "opts": {"type": "dict", "properties": {"any": {"type": "any"}}},
            "type": {"type": "string", "enum": ["dict"]}
        }, "required": ["x"]});
        let schema = to_json_schema(&bfcl);
        assert_eq!(
            schema,
            json!({"type": "object", "additionalProperties": false, "properties": {
                "x": {"type": "number", "description": "type dict"},
                "pair": {"type": "array", "items": {"type": "number"}},
                "opts": {"type": "object", "properties": {"any": {"type": "string"}}},
                "type": {"type": "string", "enum": ["dict"]}
            }, "required": ["x"]})
        );
    }

    #[test]
    fn names_lose_their_dots() {
        assert_eq!(tool_name("math.factorial"), "math_factorial");
        assert_eq!(tool_name("get-weather_2"), "get-weather_2");
    }
}
