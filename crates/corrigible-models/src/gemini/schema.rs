//! JSON Schema to the OpenAPI subset that Gemini's `functionDeclarations` accept.

use serde_json::{Map, Value, json};

const MAX_DEPTH: usize = 16;

/// The schema of a function's parameters as Gemini accepts it, or `None` for a function that
/// takes no parameters (Gemini refuses an object with empty `properties`).
pub(crate) fn parameters(schema: &Value) -> Option<Value> {
    let defs = definitions(schema);
    let converted = convert(schema, &defs, 0);
    let empty_object = converted.get("type").and_then(Value::as_str) == Some("object")
        && converted
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty);
    (!empty_object).then_some(converted)
}

fn definitions(schema: &Value) -> Map<String, Value> {
    let mut defs = Map::new();
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(map)) = schema.get(key) {
            defs.extend(map.clone());
        }
    }
    defs
}

fn resolve<'a>(reference: &str, defs: &'a Map<String, Value>) -> Option<&'a Value> {
    let name = reference
        .strip_prefix("#/$defs/")
        .or_else(|| reference.strip_prefix("#/definitions/"))?;
    defs.get(name)
}

/// Converts one schema node, keeping only what the OpenAPI subset knows.
fn convert(schema: &Value, defs: &Map<String, Value>, depth: usize) -> Value {
    let Value::Object(node) = schema else {
        return json!({"type": "string"});
    };
    if depth > MAX_DEPTH {
        return json!({"type": "object"});
    }
    if let Some(target) = node
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| resolve(r, defs))
    {
        let mut inlined = convert(target, defs, depth + 1);
        if let (Some(Value::String(d)), Value::Object(obj)) =
            (node.get("description"), &mut inlined)
        {
            obj.insert("description".into(), Value::String(d.clone()));
        }
        return inlined;
    }
    if let Some(Value::Array(parts)) = node.get("allOf") {
        let mut merged = node.clone();
        merged.remove("allOf");
        for part in parts {
            if let Value::Object(part) = part {
                for (k, v) in part {
                    merged.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        }
        return convert(&Value::Object(merged), defs, depth + 1);
    }

    let mut out = Map::new();
    let mut nullable = node.get("nullable") == Some(&Value::Bool(true));
    let mut kind = match node.get("type") {
        Some(Value::String(t)) => Some(t.clone()),
        Some(Value::Array(types)) => {
            nullable |= types.iter().any(|t| t == "null");
            types
                .iter()
                .filter_map(Value::as_str)
                .find(|t| *t != "null")
                .map(String::from)
        }
        _ => None,
    };
    if kind.is_none() {
        kind = if node.contains_key("properties") {
            Some("object".into())
        } else if node.contains_key("items") {
            Some("array".into())
        } else {
            None
        };
    }

    let mut description = node
        .get("description")
        .and_then(Value::as_str)
        .map(String::from);
    let mut values: Option<Vec<Value>> = match (node.get("enum"), node.get("const")) {
        (Some(Value::Array(values)), _) => Some(values.clone()),
        (None, Some(value)) => Some(vec![value.clone()]),
        _ => None,
    };
    if let Some(list) = &values {
        if list.iter().any(Value::is_null) {
            nullable = true;
        }
        let list: Vec<Value> = list.iter().filter(|v| !v.is_null()).cloned().collect();
        if list.iter().all(Value::is_string) && !list.is_empty() {
            kind.get_or_insert_with(|| "string".into());
            values = Some(list);
        } else {
            if kind.is_none() {
                kind = list.first().and_then(json_type).map(String::from);
            }
            let shown: Vec<String> = list.iter().map(Value::to_string).collect();
            let note = format!("One of: {}.", shown.join(", "));
            description = Some(match description {
                Some(d) => format!("{d} {note}"),
                None => note,
            });
            values = None;
        }
    }

    if let Some(kind) = &kind {
        out.insert("type".into(), Value::String(kind.clone()));
    }
    if let Some(d) = description {
        out.insert("description".into(), Value::String(d));
    }
    if nullable {
        out.insert("nullable".into(), Value::Bool(true));
    }
    if let Some(values) = values {
        out.insert("enum".into(), Value::Array(values));
    }
    if let Some(Value::String(format)) = node.get("format") {
        let allowed = match kind.as_deref() {
            Some("string") => ["date-time", "enum"].contains(&format.as_str()),
            Some("integer") => ["int32", "int64"].contains(&format.as_str()),
            Some("number") => ["float", "double"].contains(&format.as_str()),
            _ => false,
        };
        if allowed {
            out.insert("format".into(), Value::String(format.clone()));
        }
    }
    for key in [
        "minimum",
        "maximum",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "minProperties",
        "maxProperties",
        "pattern",
    ] {
        if let Some(v) = node.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    if let Some(Value::Object(props)) = node.get("properties") {
        let converted: Map<String, Value> = props
            .iter()
            .map(|(k, v)| (k.clone(), convert(v, defs, depth + 1)))
            .collect();
        if !converted.is_empty() {
            if let Some(Value::Array(required)) = node.get("required") {
                let required: Vec<Value> = required
                    .iter()
                    .filter(|r| r.as_str().is_some_and(|r| converted.contains_key(r)))
                    .cloned()
                    .collect();
                if !required.is_empty() {
                    out.insert("required".into(), Value::Array(required));
                }
            }
            out.insert("properties".into(), Value::Object(converted));
        }
    }
    if let Some(items) = node.get("items") {
        out.insert("items".into(), convert(items, defs, depth + 1));
    } else if kind.as_deref() == Some("array") {
        out.insert("items".into(), json!({"type": "string"}));
    }
    let alternatives = node.get("anyOf").or_else(|| node.get("oneOf"));
    if let Some(Value::Array(options)) = alternatives {
        let options: Vec<Value> = options
            .iter()
            .filter(|o| o.get("type").and_then(Value::as_str) != Some("null"))
            .map(|o| convert(o, defs, depth + 1))
            .collect();
        if options.len() < alternatives.map_or(0, |a| a.as_array().map_or(0, Vec::len)) {
            out.insert("nullable".into(), Value::Bool(true));
        }
        let strings: Option<Vec<Vec<Value>>> = (options.len() > 1)
            .then(|| options.iter().map(single_string_enum).collect())
            .flatten();
        if let Some(values) = strings {
            out.insert("type".into(), Value::String("string".into()));
            out.insert("enum".into(), Value::Array(values.concat()));
            return Value::Object(out);
        }
        match options.len() {
            0 => {}
            1 => {
                if let Some(Value::Object(only)) = options.into_iter().next() {
                    for (k, v) in only {
                        out.entry(k).or_insert(v);
                    }
                }
            }
            _ => {
                out.insert("anyOf".into(), Value::Array(options));
            }
        }
    }
    Value::Object(out)
}

/// The values of an alternative that is only a string enum (as schemars writes documented
/// enum variants), so a `oneOf` of them can become one enum.
fn single_string_enum(option: &Value) -> Option<Vec<Value>> {
    let obj = option.as_object()?;
    let only_enum = obj
        .keys()
        .all(|k| ["type", "enum", "description"].contains(&k.as_str()));
    (only_enum && obj.get("type")? == "string")
        .then(|| obj.get("enum")?.as_array().cloned())
        .flatten()
}

fn json_type(value: &Value) -> Option<&'static str> {
    match value {
        Value::Bool(_) => Some("boolean"),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some("integer"),
        Value::Number(_) => Some("number"),
        Value::String(_) => Some("string"),
        Value::Array(_) => Some("array"),
        Value::Object(_) => Some("object"),
        Value::Null => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_what_gemini_refuses() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "WeatherInput",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "city": {"type": "string", "description": "City name", "title": "City"},
                "unit": {"$ref": "#/$defs/Unit"},
                "days": {"type": ["integer", "null"], "format": "uint8", "minimum": 1},
                "kind": {"const": "forecast"},
                "level": {"enum": [1, 2, 3]}
            },
            "required": ["city", "ghost"],
            "$defs": {"Unit": {"type": "string", "enum": ["c", "f"]}}
        });
        assert_eq!(
            parameters(&schema).unwrap(),
            json!({
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name"},
                    "unit": {"type": "string", "enum": ["c", "f"]},
                    "days": {"type": "integer", "nullable": true, "minimum": 1},
                    "kind": {"type": "string", "enum": ["forecast"]},
                    "level": {"type": "integer", "description": "One of: 1, 2, 3."}
                },
                "required": ["city"]
            })
        );
    }

    #[test]
    fn no_parameters_for_an_empty_object() {
        assert_eq!(
            parameters(&json!({"type": "object", "properties": {}})),
            None
        );
        assert_eq!(parameters(&json!({"type": "object"})), None);
    }

    #[test]
    fn option_any_of_becomes_nullable() {
        let schema = json!({"type": "object", "properties": {
            "x": {"anyOf": [{"type": "number"}, {"type": "null"}], "default": null}
        }});
        assert_eq!(
            parameters(&schema).unwrap()["properties"]["x"],
            json!({"type": "number", "nullable": true})
        );
    }

    #[test]
    fn documented_enum_variants_become_one_enum() {
        let schema = json!({"type": "object", "properties": {"unit": {
            "description": "Unit",
            "oneOf": [
                {"type": "string", "const": "c", "description": "Celsius"},
                {"type": "string", "const": "f", "description": "Fahrenheit"}
            ]
        }}});
        assert_eq!(
            parameters(&schema).unwrap()["properties"]["unit"],
            json!({"type": "string", "description": "Unit", "enum": ["c", "f"]})
        );
    }

    #[test]
    fn recursive_refs_stop() {
        let schema = json!({"type": "object", "properties": {"n": {"$ref": "#/$defs/N"}},
            "$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}}});
        assert!(parameters(&schema).is_some());
    }
}
