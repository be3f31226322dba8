use serde::{Deserialize, Serialize};

use crate::stage::Stage;
use crate::verify::{Dropped, ObjectionKind, Source};

/// One verification of a satisfied answer: the verifier's comparisons, and the engine's ruling
/// on each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerificationRecord {
    /// The action slot.
    pub step: u32,
    /// The model call whose answer was checked.
    pub stage: Stage,
    /// The verifying model.
    pub model: String,
    /// What the verifier said it checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The comparisons reported, each proven wrong (an objection; the first is sent) or
    /// dropped.
    pub comparisons: Vec<CheckedComparison>,
    /// Whether an objection was sent back to the model.
    pub objected: bool,
    /// Why the verifier gave no usable report (a transport failure, a reply that is no
    /// report); the answer is then accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wall time of the verifier's call.
    pub latency_ms: f64,
    /// Its prompt tokens.
    pub input_tokens: u64,
    /// Its generated tokens.
    pub output_tokens: u64,
}

/// A comparison of the verifier and the engine's ruling on it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckedComparison {
    /// The value as the answer states it, by the verifier.
    pub answer_says: String,
    /// The words of the request or a tool result it quotes.
    pub quote: String,
    /// The value in the quote.
    pub source_says: String,
    /// The objection the evidence proves, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objection: Option<ObjectionKind>,
    /// Where the right value is, when proven.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proven_in: Option<Source>,
    /// Why no objection, when not proven.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped: Option<Dropped>,
}
