//! Canonical fingerprints of actions: tool name plus canonical JSON of the input.
//!
//! Keys are sorted at every depth and numbers are normalized (`2`, `2.0` and `2e0` are the same
//! number), so the same action spelled differently has the same fingerprint.

use serde_json::Value;

/// Canonical JSON text of `value`: sorted keys, normalized numbers, no whitespace.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

/// The fingerprint of calling `tool` with `input`.
pub fn fingerprint(tool: &str, input: &Value) -> String {
    format!("{tool}:{}", canonical_json(input))
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 9.0e15 => {
                out.push_str(&format!("{}", f as i64));
            }
            Some(f) => out.push_str(&format!("{f}")),
            None => out.push_str(&n.to_string()),
        },
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn key_order_and_number_spelling_do_not_matter() {
        let a = json!({"b": 2.0, "a": {"y": 1, "x": [1.5, 3]}});
        let b: Value = serde_json::from_str(r#"{"a":{"x":[1.5,3e0],"y":1.0},"b":2}"#).unwrap();
        assert_eq!(fingerprint("t", &a), fingerprint("t", &b));
    }

    #[test]
    fn different_values_differ() {
        assert_ne!(
            fingerprint("t", &json!({"a": 1})),
            fingerprint("t", &json!({"a": 2}))
        );
        assert_ne!(
            fingerprint("t", &json!({"a": 1})),
            fingerprint("u", &json!({"a": 1}))
        );
    }
}
