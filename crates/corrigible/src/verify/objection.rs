//! What a verifier reports: comparisons of the answer's values with the evidence. The verifier
//! never rules on a comparison; the engine does ([`super::proof`]), and a comparison it proves
//! wrong becomes an objection.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The kind of mistake a proven comparison shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObjectionKind {
    /// The request or a tool result gives a value, and the answer states another in its place
    /// or leaves it out.
    Contradicts,
    /// The answer states a number that neither the request nor any tool result gives, and
    /// that no calculation from two of their numbers yields.
    Unsupported,
}

impl ObjectionKind {
    /// The name in the trace.
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectionKind::Contradicts => "contradicts",
            ObjectionKind::Unsupported => "unsupported",
        }
    }
}

/// One value of the answer set beside the evidence it rests on, as the verifier reads it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Comparison {
    /// The value as the answer states it (empty when the answer leaves it out).
    #[serde(default)]
    pub answer_says: String,
    /// The exact words of the request or a tool result that give the value (empty when
    /// nothing does).
    #[serde(default)]
    pub quote: String,
    /// The value as the quote gives it.
    #[serde(default)]
    pub source_says: String,
}

/// Most comparisons read from one report; the rest are ignored.
pub const MAX_COMPARISONS: usize = 4;

/// The comparisons of a verifier's `report` input, `{"comparisons": [...]}`. Entries without
/// the shape are skipped, never an error: a verifier's mistake must not stop the run.
pub fn comparisons_in(input: &Value) -> Vec<Comparison> {
    input
        .get("comparisons")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|c| serde_json::from_value::<Comparison>(c.clone()).ok())
                .filter(|c| !c.answer_says.trim().is_empty() || !c.source_says.trim().is_empty())
                .take(MAX_COMPARISONS)
                .collect()
        })
        .unwrap_or_default()
}

/// The JSON Schema of the `report` tool's input, which constrains the embedded model's reply.
pub fn report_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "comparisons": {
                "type": "array",
                "maxItems": MAX_COMPARISONS,
                "items": {
                    "type": "object",
                    "properties": {
                        "answer_says": {"type": "string", "maxLength": 60},
                        "quote": {"type": "string", "maxLength": 160},
                        "source_says": {"type": "string", "maxLength": 60}
                    },
                    "required": ["answer_says", "quote", "source_says"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["comparisons"],
        "additionalProperties": false
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn comparisons_are_read_and_malformed_ones_skipped() {
        let input = json!({"comparisons": [
            {"answer_says": "28.8 °C", "quote": "\"temperature_c\": 19.9", "source_says": "19.9"},
            {"answer_says": 3, "quote": "x", "source_says": "y"},
            {"answer_says": "", "quote": "", "source_says": ""},
            {"answer_says": "15", "quote": "", "source_says": ""},
            "nonsense"
        ]});
        let found = comparisons_in(&input);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].source_says, "19.9");
        assert_eq!(found[1].answer_says, "15");
        assert!(comparisons_in(&json!({})).is_empty());
        assert!(comparisons_in(&json!({"comparisons": "none"})).is_empty());
    }

    #[test]
    fn the_schema_takes_what_the_reader_reads() {
        let validator = jsonschema::validator_for(&report_schema()).unwrap();
        let report =
            json!({"comparisons": [{"answer_says": "a", "quote": "b", "source_says": "c"}]});
        assert!(validator.is_valid(&report));
        assert_eq!(comparisons_in(&report).len(), 1);
        assert!(!validator.is_valid(&json!({"objections": []})));
    }
}
