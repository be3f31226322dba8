//! JSON escaped one level too many: `"{\"a\": 1}"` or `{\"a\": 1}`.

use crate::decision::unique_keys;

/// The document one escaping level down, when `text` is a JSON string holding an object, or an
/// object whose every quote is written `\"`.
pub(super) fn unescape_document(text: &str) -> Option<String> {
    let quoted = if text.starts_with('"') {
        text.to_string()
    } else if text.starts_with('{') && text.contains("\\\"") && !has_bare_quote(text) {
        let body = text
            .replace('\n', "\\n")
            .replace('\r', "\\r")
            .replace('\t', "\\t");
        format!("\"{body}\"")
    } else {
        return None;
    };
    match unique_keys::from_str(&quoted) {
        Ok(serde_json::Value::String(inner)) if inner.trim_start().starts_with('{') => {
            Some(inner.trim().to_string())
        }
        _ => None,
    }
}

/// Whether `text` has a `"` not preceded by a backslash.
fn has_bare_quote(text: &str) -> bool {
    let mut escaped = false;
    for c in text.chars() {
        match (escaped, c) {
            (true, _) => escaped = false,
            (false, '\\') => escaped = true,
            (false, '"') => return true,
            _ => {}
        }
    }
    false
}
