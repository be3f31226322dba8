//! Safe local repair of unambiguous JSON damage, with no model call.
//!
//! A repair applies only when the damaged text has exactly one reading: code fences, prose
//! around one object, trailing commas, single or smart quotes, unquoted keys, Python literals,
//! comments, a missing comma between members, a missing colon after a key, closers missing at
//! the very end, raw control characters in strings, `\'` and regular
//! expression escapes (`\d`) in a string, non-ASCII spaces between tokens, numbers written
//! `+3` or `.5`, JSON escaped one level too many, and HTML-escaped JSON. A truncated
//! string or number, a bare word, two objects, a duplicate key or an unknown escape has more
//! than one reading, and is refused with the reason (see [`Unrepairable`]).

mod escaped;
mod fence;
mod lenient;
mod unrepairable;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use unrepairable::Unrepairable;

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
    /// Strings or keys were quoted with `'`.
    SingleQuotes,
    /// Keys were bare identifiers.
    UnquotedKeys,
    /// `True`, `False` or `None` stood for `true`, `false` or `null`.
    PythonLiterals,
    /// `//`, `/* */` or `#` comments stood between tokens.
    Comments,
    /// Typographic quotes (`“ ”`, `‘ ’`) delimited strings or keys.
    SmartQuotes,
    /// Two members or elements were separated by whitespace alone.
    MissingComma,
    /// The text ended after a complete value with only closing `}` or `]` missing.
    MissingCloser,
    /// A string held a raw newline, tab or other control character.
    ControlCharacters,
    /// `\'` stood in a string (JSON has no such escape; every reading is `'`), or a regular
    /// expression's escape (`\d`, `\s`, `\.`), read as the backslash and the character.
    InvalidEscape,
    /// A key and its value stood with whitespace and no `:` between them (`{"state" "final"}`).
    MissingColon,
    /// A non-ASCII space (no-break, thin, ideographic) or a byte-order mark stood between
    /// tokens.
    UnicodeSpaces,
    /// A number was written with a leading `+`, or a `.` with no digit before it (`+3`,
    /// `.5`).
    NumberForm,
    /// The JSON was escaped one level too many: a string holding the object, or `\"` quotes.
    OverEscaped,
}

impl RepairKind {
    /// Every kind, in the order repairs are tried.
    pub const ALL: [RepairKind; 18] = [
        RepairKind::HtmlEscaped,
        RepairKind::CodeFence,
        RepairKind::OverEscaped,
        RepairKind::SurroundingProse,
        RepairKind::TrailingComma,
        RepairKind::SingleQuotes,
        RepairKind::UnquotedKeys,
        RepairKind::PythonLiterals,
        RepairKind::Comments,
        RepairKind::SmartQuotes,
        RepairKind::MissingComma,
        RepairKind::MissingCloser,
        RepairKind::ControlCharacters,
        RepairKind::InvalidEscape,
        RepairKind::MissingColon,
        RepairKind::UnicodeSpaces,
        RepairKind::NumberForm,
        RepairKind::TextToolCall,
    ];

    /// The snake_case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            RepairKind::CodeFence => "code_fence",
            RepairKind::SurroundingProse => "surrounding_prose",
            RepairKind::TrailingComma => "trailing_comma",
            RepairKind::HtmlEscaped => "html_escaped",
            RepairKind::TextToolCall => "text_tool_call",
            RepairKind::SingleQuotes => "single_quotes",
            RepairKind::UnquotedKeys => "unquoted_keys",
            RepairKind::PythonLiterals => "python_literals",
            RepairKind::Comments => "comments",
            RepairKind::SmartQuotes => "smart_quotes",
            RepairKind::MissingComma => "missing_comma",
            RepairKind::MissingCloser => "missing_closer",
            RepairKind::ControlCharacters => "control_characters",
            RepairKind::InvalidEscape => "invalid_escape",
            RepairKind::OverEscaped => "over_escaped",
            RepairKind::MissingColon => "missing_colon",
            RepairKind::UnicodeSpaces => "unicode_spaces",
            RepairKind::NumberForm => "number_form",
        }
    }
}

/// Reads the one JSON object in damaged `text`, returning it with the repairs made (in the
/// order they were found), or why no single reading exists.
pub fn repair_value(text: &str) -> Result<(Value, Vec<RepairKind>), Unrepairable> {
    let mut kinds = Vec::new();
    let mut current = text
        .trim_matches(|c: char| c.is_ascii_whitespace())
        .to_string();
    if let Some(unescaped) = crate::decision::unescape_html(&current) {
        kinds.push(RepairKind::HtmlEscaped);
        current = unescaped;
    }
    if let Some(inner) = fence::unfence(&current) {
        kinds.push(RepairKind::CodeFence);
        current = inner;
    }
    if let Some(inner) = escaped::unescape_document(&current) {
        kinds.push(RepairKind::OverEscaped);
        current = inner;
    }
    let (value, found) = lenient::one_object(&current)?;
    for kind in found {
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    Ok((value, kinds))
}

/// Repairs `text` when its damage has one reading; returns the repaired JSON text and the
/// repairs made, or `None` when nothing safe applies (or nothing needed repair).
pub fn repair(text: &str) -> Option<(String, Vec<RepairKind>)> {
    let (value, kinds) = repair_value(text).ok()?;
    if kinds.is_empty() {
        return None;
    }
    Some((value.to_string(), kinds))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn repaired(text: &str) -> (Value, Vec<RepairKind>) {
        repair_value(text).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    #[test]
    fn fenced_json() {
        let (s, k) = repair("```json\n{\"a\": 1}\n```").unwrap();
        assert_eq!(s, "{\"a\":1}");
        assert_eq!(k, vec![RepairKind::CodeFence]);
    }

    #[test]
    fn prose_around_one_object() {
        let (v, k) = repaired("Sure! {\"a\": \"}\"} hope it helps");
        assert_eq!(v, json!({"a": "}"}));
        assert_eq!(k, vec![RepairKind::SurroundingProse]);
    }

    #[test]
    fn trailing_commas_outside_strings_only() {
        let (v, k) = repaired("{\"a\": [1, 2,], \"b\": \",}\",}");
        assert_eq!(v, json!({"a": [1, 2], "b": ",}"}));
        assert_eq!(k, vec![RepairKind::TrailingComma]);
    }

    #[test]
    fn two_objects_are_ambiguous() {
        assert!(repair("{\"a\": 1} or {\"a\": 2}").is_none());
    }

    #[test]
    fn html_escaped_json() {
        let (v, k) = repaired("{&#34;state&#34;: &#34;final&#34;, &#34;n&#34;: [1,]}");
        assert_eq!(v, json!({"state": "final", "n": [1]}));
        assert_eq!(k, vec![RepairKind::HtmlEscaped, RepairKind::TrailingComma]);
    }

    #[test]
    fn truncated_object_is_not_repaired() {
        assert!(repair("{\"a\": 1, \"b\": ").is_none());
    }

    #[test]
    fn python_dict() {
        let (v, k) = repaired("{'tool': 'calc', 'ok': True, 'x': None, 'n': False}");
        assert_eq!(
            v,
            json!({"tool": "calc", "ok": true, "x": null, "n": false})
        );
        assert_eq!(
            k,
            vec![RepairKind::SingleQuotes, RepairKind::PythonLiterals]
        );
    }

    #[test]
    fn unquoted_keys_and_comments() {
        let (v, k) = repaired("{\n  // the tool\n  tool: \"calc\", /* why */ n: 2 # end\n}");
        assert_eq!(v, json!({"tool": "calc", "n": 2}));
        assert_eq!(k, vec![RepairKind::Comments, RepairKind::UnquotedKeys]);
    }

    #[test]
    fn smart_quotes() {
        let (v, k) = repaired("{“state”: “final”, ‘x’: “it’s \"so\"”}");
        assert_eq!(v, json!({"state": "final", "x": "it’s \"so\""}));
        assert_eq!(k, vec![RepairKind::SmartQuotes]);
    }

    #[test]
    fn missing_comma_between_members() {
        let (v, k) = repaired("{\"a\": \"x\"\n \"b\": [true false] \"c\": {}}");
        assert_eq!(v, json!({"a": "x", "b": [true, false], "c": {}}));
        assert_eq!(k, vec![RepairKind::MissingComma]);
    }

    #[test]
    fn adjacent_numbers_are_ambiguous() {
        assert!(matches!(
            repair_value("{\"a\": [1 000]}"),
            Err(Unrepairable::Ambiguous(_))
        ));
    }

    #[test]
    fn missing_closers_after_a_complete_value() {
        let (v, k) = repaired("{\"a\": {\"b\": [\"x\", true");
        assert_eq!(v, json!({"a": {"b": ["x", true]}}));
        assert_eq!(k, vec![RepairKind::MissingCloser]);
    }

    #[test]
    fn truncation_is_refused() {
        for text in [
            "{\"a\": \"unfinished",
            "{\"a\": 12",
            "{\"a\": [1, 2",
            "{\"a\": tru",
            "{\"a\": ",
            "{\"a\"",
            "{\"a\": 1,",
            "{\"a\": \"x\" /* comment",
        ] {
            assert!(
                matches!(repair_value(text), Err(Unrepairable::Truncated(_))),
                "{text:?}: {:?}",
                repair_value(text)
            );
        }
    }

    #[test]
    fn control_characters_are_escaped() {
        let (v, k) = repaired("{\"a\": \"line one\nline\ttwo\"}");
        assert_eq!(v, json!({"a": "line one\nline\ttwo"}));
        assert_eq!(k, vec![RepairKind::ControlCharacters]);
    }

    #[test]
    fn escaped_apostrophe() {
        let (v, k) = repaired(r#"{"a": "it\'s"}"#);
        assert_eq!(v, json!({"a": "it's"}));
        assert_eq!(k, vec![RepairKind::InvalidEscape]);
    }

    #[test]
    fn regex_escapes_are_read_and_other_unknown_escapes_are_ambiguous() {
        let (v, k) = repaired(r#"{"a": "\d+\.\s*"}"#);
        assert_eq!(v, json!({"a": "\\d+\\.\\s*"}));
        assert_eq!(k, vec![RepairKind::InvalidEscape]);
        assert!(repair_value(r#"{"a": "\x41"}"#).is_err());
        assert!(repair_value(r#"{"a": "\U0001"}"#).is_err());
    }

    #[test]
    fn a_missing_colon_unicode_spaces_and_number_forms_have_one_reading() {
        let (v, k) = repaired(r#"{"state" "final", "n" 2}"#);
        assert_eq!(v, json!({"state": "final", "n": 2}));
        assert_eq!(k, vec![RepairKind::MissingColon]);
        let (v, k) = repaired("{\"a\":\u{a0}1,\u{3000}\"b\": 2}");
        assert_eq!(v, json!({"a": 1, "b": 2}));
        assert_eq!(k, vec![RepairKind::UnicodeSpaces]);
        let (v, k) = repaired(r#"{"a": +3, "b": .5, "c": -.25}"#);
        assert_eq!(v, json!({"a": 3, "b": 0.5, "c": -0.25}));
        assert_eq!(k, vec![RepairKind::NumberForm]);
        assert!(repair_value(r#"{"a": +-3}"#).is_err());
        assert!(repair_value(r#"{"a" "b": 1}"#).is_err());
        assert!(
            repair_value(r#"{"a": 1}}"#).is_err(),
            "a stray closer has two readings"
        );
    }

    #[test]
    fn over_escaped_documents() {
        let (v, k) = repaired(r#"{\"a\": \"x\", \"b\": 1}"#);
        assert_eq!(v, json!({"a": "x", "b": 1}));
        assert_eq!(k, vec![RepairKind::OverEscaped]);
        let (v, k) = repaired(r#""{\"a\": [1]}""#);
        assert_eq!(v, json!({"a": [1]}));
        assert_eq!(k, vec![RepairKind::OverEscaped]);
    }

    #[test]
    fn duplicate_keys_are_refused() {
        assert!(matches!(
            repair_value("{'a': 1, a: 2}"),
            Err(Unrepairable::DuplicateKey(_))
        ));
    }

    #[test]
    fn bare_words_are_refused() {
        assert!(repair_value("{\"a\": hello}").is_err());
        assert!(repair_value("{\"a\": NaN}").is_err());
    }

    #[test]
    fn apostrophe_inside_single_quotes_is_refused() {
        assert!(repair_value("{'q': 'what's: up'}").is_err());
        assert!(repair_value("{'q': 'it's 4'}").is_err());
    }

    #[test]
    fn brackets_in_the_prose_are_ambiguous() {
        assert!(repair_value("[{\"a\": 1}]").is_err());
        assert!(repair_value("{\"a\": 1}}").is_err());
    }

    #[test]
    fn deep_nesting_is_refused_without_overflow() {
        let text = "[".repeat(100_000);
        assert!(repair_value(&format!("{{\"a\": {text}")).is_err());
    }

    #[test]
    fn a_fence_inside_a_string_is_content() {
        let text = "{\"a\": \"```json\\n{\\\"b\\\": 1}\\n```\",}";
        let (v, k) = repaired(text);
        assert_eq!(v, json!({"a": "```json\n{\"b\": 1}\n```"}));
        assert_eq!(k, vec![RepairKind::TrailingComma]);
    }

    #[test]
    fn every_kind_has_a_distinct_name() {
        let names: std::collections::HashSet<_> =
            RepairKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), RepairKind::ALL.len());
        for kind in RepairKind::ALL {
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                Value::String(kind.as_str().into())
            );
        }
    }
}
