//! JSON reading that refuses duplicate keys.
//!
//! `serde_json` keeps the last of two equal keys without a word, so `{"tool_input": {...},
//! "tool_input": {...}}` would run a call the model may not have meant. Every object read here,
//! at any depth, must name each key once.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Why reading with unique keys failed.
#[derive(Debug, thiserror::Error)]
pub enum UniqueKeysError {
    /// The same key appears twice in one object.
    #[error(
        "duplicate key \"{key}\" in one object: the value meant is ambiguous, send each key once"
    )]
    DuplicateKey {
        /// The repeated key.
        key: String,
    },
    /// The text is not JSON.
    #[error("{0}")]
    Syntax(serde_json::Error),
}

/// Parses `text` as one JSON value, refusing any object that repeats a key.
pub fn from_str(text: &str) -> Result<Value, UniqueKeysError> {
    let duplicate = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_str(text);
    let value = UniqueValue {
        duplicate: &duplicate,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v));
    value.map_err(|e| match duplicate.into_inner() {
        Some(key) => UniqueKeysError::DuplicateKey { key },
        None => UniqueKeysError::Syntax(e),
    })
}

/// The first JSON value of `text` and the byte offset just past it, when it reads and names
/// no key twice; what follows it is left to the caller.
pub fn leading(text: &str) -> Option<(Value, usize)> {
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<de::IgnoredAny>();
    stream.next()?.ok()?;
    let end = stream.byte_offset();
    from_str(&text[..end]).ok().map(|value| (value, end))
}

#[derive(Clone, Copy)]
struct UniqueValue<'a> {
    duplicate: &'a RefCell<Option<String>>,
}

impl<'de> DeserializeSeed<'de> for UniqueValue<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for UniqueValue<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                let message = format!("duplicate key \"{key}\"");
                *self.duplicate.borrow_mut() = Some(key);
                return Err(de::Error::custom(message));
            }
            let value = map.next_value_seed(self)?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_what_serde_json_reads() {
        let text = r#"{"a": [1, -2, 3.5, "x", null, true], "b": {"c": {}}}"#;
        assert_eq!(
            from_str(text).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
        );
    }

    #[test]
    fn duplicate_top_level_key_is_refused() {
        let e = from_str(r#"{"tool_input": {"a": 1}, "tool_input": {"a": 2}}"#).unwrap_err();
        assert!(
            matches!(&e, UniqueKeysError::DuplicateKey { key } if key == "tool_input"),
            "{e}"
        );
    }

    #[test]
    fn duplicate_nested_key_is_refused() {
        let e = from_str(r#"{"tool_input": {"city": "Paris", "city": "Rome"}}"#).unwrap_err();
        assert!(
            matches!(&e, UniqueKeysError::DuplicateKey { key } if key == "city"),
            "{e}"
        );
        let e = from_str(r#"[{"x": 1}, {"y": [{"z": 1, "z": 1}]}]"#).unwrap_err();
        assert!(matches!(e, UniqueKeysError::DuplicateKey { .. }), "{e}");
    }

    #[test]
    fn a_leading_value_is_read_up_to_its_end() {
        let (value, end) = leading(r#" {"a": 1} tail"#).unwrap();
        assert_eq!((value, end), (json!({"a": 1}), 9));
        assert!(leading(r#"{"a": 1, "a": 2} tail"#).is_none());
        assert!(leading("nothing").is_none());
    }

    #[test]
    fn same_key_in_sibling_objects_is_fine() {
        assert_eq!(
            from_str(r#"[{"a": 1}, {"a": 2}]"#).unwrap(),
            json!([{"a": 1}, {"a": 2}])
        );
    }

    #[test]
    fn syntax_errors_stay_syntax_errors() {
        assert!(matches!(
            from_str("{\"a\": }"),
            Err(UniqueKeysError::Syntax(_))
        ));
        assert!(matches!(from_str("{} {}"), Err(UniqueKeysError::Syntax(_))));
    }
}
