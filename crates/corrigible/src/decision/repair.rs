//! Safe local repair of unambiguous JSON damage, with no model call.
//!
//! Only these cases are repaired: a JSON object inside markdown code fences, one JSON object
//! surrounded by prose, trailing commas before `}` or `]`, and JSON whose every quote is
//! HTML-escaped. Anything else (two candidate objects, a truncated object, single quotes,
//! comments) is left for a correction.

use serde::{Deserialize, Serialize};

/// A kind of local repair, recorded in the run report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RepairKind {
    /// The JSON was wrapped in markdown code fences.
    CodeFence,
    /// One JSON object was surrounded by prose.
    SurroundingProse,
    /// A comma stood before a closing `}` or `]`.
    TrailingComma,
    /// The JSON was HTML-escaped (`&#34;` for every `"`).
    HtmlEscaped,
    /// A native reply wrote one call of a registered tool as text; it was executed as that
    /// call (see [`crate::decision::parse_text_call`]).
    TextToolCall,
}

impl RepairKind {
    /// The snake_case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            RepairKind::CodeFence => "code_fence",
            RepairKind::SurroundingProse => "surrounding_prose",
            RepairKind::TrailingComma => "trailing_comma",
            RepairKind::HtmlEscaped => "html_escaped",
            RepairKind::TextToolCall => "text_tool_call",
        }
    }
}

/// Repairs `text` when its damage is one of the safe cases; returns the candidate JSON text and
/// the repairs made, or `None` when nothing safe applies.
pub fn repair(text: &str) -> Option<(String, Vec<RepairKind>)> {
    let mut kinds = Vec::new();
    let mut current = text.trim().to_string();
    if let Some(unescaped) = crate::decision::unescape_html(&current) {
        kinds.push(RepairKind::HtmlEscaped);
        current = unescaped;
    }
    if let Some(inner) = unfence(&current) {
        kinds.push(RepairKind::CodeFence);
        current = inner;
    }
    let spans = top_level_objects(&current);
    match spans.as_slice() {
        [(start, end)] => {
            if current[..*start].trim().len() + current[*end..].trim().len() > 0 {
                kinds.push(RepairKind::SurroundingProse);
                current = current[*start..*end].to_string();
            }
        }
        _ => return None,
    }
    if let Some(fixed) = strip_trailing_commas(&current) {
        kinds.push(RepairKind::TrailingComma);
        current = fixed;
    }
    if kinds.is_empty() {
        None
    } else {
        Some((current, kinds))
    }
}

fn unfence(text: &str) -> Option<String> {
    let open = text.find("```")?;
    let after_open = &text[open + 3..];
    let body_start = after_open.find('\n')?;
    let info = after_open[..body_start].trim();
    if !(info.is_empty() || info.eq_ignore_ascii_case("json")) {
        return None;
    }
    let body = &after_open[body_start + 1..];
    let close = body.find("```")?;
    if body[close + 3..].contains("```") {
        return None;
    }
    Some(body[..close].trim().to_string())
}

/// Byte spans of complete top-level `{…}` objects, scanning strings and escapes correctly.
fn top_level_objects(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut depth = 0usize;
    let mut start = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' if depth > 0 => in_string = true,
            '{' => {
                if depth == 0 {
                    start = i;
                }
                depth += 1;
            }
            '}' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    spans.push((start, i + 1));
                }
            }
            _ => {}
        }
    }
    spans
}

fn strip_trailing_commas(text: &str) -> Option<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    let mut changed = false;
    for (i, &c) in chars.iter().enumerate() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            out.push(c);
            continue;
        }
        if c == '"' {
            in_string = true;
        } else if c == ',' {
            let next = chars[i + 1..].iter().find(|ch| !ch.is_whitespace());
            if matches!(next, Some('}') | Some(']')) {
                changed = true;
                continue;
            }
        }
        out.push(c);
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fenced_json() {
        let (s, k) = repair("```json\n{\"a\": 1}\n```").unwrap();
        assert_eq!(s, "{\"a\": 1}");
        assert_eq!(k, vec![RepairKind::CodeFence]);
    }

    #[test]
    fn prose_around_one_object() {
        let (s, k) = repair("Sure! {\"a\": \"}\"} hope it helps").unwrap();
        assert_eq!(s, "{\"a\": \"}\"}");
        assert_eq!(k, vec![RepairKind::SurroundingProse]);
    }

    #[test]
    fn trailing_commas_outside_strings_only() {
        let (s, k) = repair("{\"a\": [1, 2,], \"b\": \",}\",}").unwrap();
        assert_eq!(s, "{\"a\": [1, 2], \"b\": \",}\"}");
        assert_eq!(k, vec![RepairKind::TrailingComma]);
    }

    #[test]
    fn html_escaped_json() {
        let (s, k) = repair("{&#34;state&#34;: &#34;final&#34;, &#34;n&#34;: [1,]}").unwrap();
        assert_eq!(s, "{\"state\": \"final\", \"n\": [1]}");
        assert_eq!(k, vec![RepairKind::HtmlEscaped, RepairKind::TrailingComma]);
    }

    #[test]
    fn two_objects_are_ambiguous() {
        assert!(repair("{\"a\": 1} or {\"a\": 2}").is_none());
    }

    #[test]
    fn truncated_object_is_not_repaired() {
        assert!(repair("{\"a\": 1, \"b\": ").is_none());
    }
}
