use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::correction::rejection::Category;
use crate::decision::repair::RepairKind;
use crate::model::{Protocol, Reasoning};
use crate::policy::BreakerTransition;
use crate::probe::ProtocolReason;
use crate::stage::Stage;

/// Why a run stopped (contract values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// A valid final decision.
    Final,
    /// A slot ran out of corrections.
    CorrectionsExhausted,
    /// The executed-actions bound was reached.
    MaxActions,
    /// A usage limit (model calls, tokens) was reached.
    UsageLimit,
    /// Output validators kept rejecting the final answer.
    OutputRejected,
    /// A tool failed fatally, or a tool's rejection budget ran out.
    ToolFatal,
}

impl StopReason {
    /// The snake_case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Final => "final",
            StopReason::CorrectionsExhausted => "corrections_exhausted",
            StopReason::MaxActions => "max_actions",
            StopReason::UsageLimit => "usage_limit",
            StopReason::OutputRejected => "output_rejected",
            StopReason::ToolFatal => "tool_fatal",
        }
    }
}

/// How an executed (or breaker-refused) action ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepOutcome {
    /// The tool returned a value.
    Ok,
    /// The tool returned `Retry`: the model can fix its arguments.
    Rejected,
    /// Execution failed (after its retries), or fatally.
    Failed,
    /// The breaker was open; the tool was not called.
    CircuitOpen,
}

impl StepOutcome {
    /// The snake_case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            StepOutcome::Ok => "ok",
            StepOutcome::Rejected => "rejected",
            StepOutcome::Failed => "failed",
            StepOutcome::CircuitOpen => "circuit_open",
        }
    }
}

/// One failed execution attempt of a step, and the delay waited before the next one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptRecord {
    /// The attempt, from 1.
    pub attempt: u32,
    /// What went wrong.
    pub error: String,
    /// Delay waited before the next attempt, if there was one.
    pub delay_ms: Option<f64>,
}

/// An executed (or breaker-refused) tool action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    /// The action slot, from 1.
    pub step: u32,
    /// The tool called.
    pub tool: String,
    /// Its validated input.
    pub input: Value,
    /// How it ended.
    pub outcome: StepOutcome,
    /// The tool's value, when it succeeded.
    pub output: Option<Value>,
    /// The error, when it did not.
    pub error: Option<String>,
    /// Execution attempts made (0 when the breaker refused the call).
    pub attempts: u32,
    /// Wall time of all attempts, including backoff.
    pub latency_ms: f64,
    /// Key a side-effecting tool can deduplicate on: run id, step and input fingerprint.
    pub idempotency_key: String,
    /// The failed attempts, with the delays waited.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempt_errors: Vec<AttemptRecord>,
    /// Whether the call returned the same result as an identical call earlier in the run: the
    /// model was told so, and a few such repeats make a further one `repeated_action`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub same_result: bool,
}

/// A rejection sent back to the model, and whether the next reply fixed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorrectionRecord {
    /// The action slot.
    pub step: u32,
    /// Which correction of its kind this is (per slot for decisions, per tool otherwise).
    pub attempt: u32,
    /// The stage of the model call that produced the rejected reply.
    pub stage: Stage,
    /// Why it was rejected.
    pub category: Category,
    /// The message sent back.
    pub error: String,
    /// Whether a later reply was accepted.
    pub corrected: bool,
    /// The tool concerned, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The rule that sent it back, when a rule did (a built-in rule's name is its category).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
}

/// A local repair made without a model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepairRecord {
    /// The action slot.
    pub step: u32,
    /// The model call whose reply was repaired.
    pub stage: Stage,
    /// What was repaired.
    pub kind: RepairKind,
}

/// One model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelCallRecord {
    /// Its stage name.
    pub stage: Stage,
    /// Wall time of the call.
    pub latency_ms: f64,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens reused from a cache instead of pre-filled, when the backend reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_reused: Option<u64>,
    /// Transport retries the backend made for this call.
    #[serde(default)]
    pub transport_retries: u32,
    /// How the reply was decoded, when the backend says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decoding: Option<String>,
    /// Whether this correction call's reply repeated the reply it corrects word for word.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub identical_retry: bool,
    /// The model's reasoning before its reply (without the provider's opaque blocks), when
    /// it had any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
}

/// Totals of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct UsageTotals {
    /// Model calls made.
    pub model_calls: u32,
    /// Prompt tokens over all calls.
    pub input_tokens: u64,
    /// Generated tokens over all calls.
    pub output_tokens: u64,
    /// Tool executions started (attempts, not counting breaker refusals).
    pub tool_calls: u32,
    /// Rejections sent back to the model.
    pub corrections: u32,
    /// Execution retries after `Failed`.
    pub tool_retries: u32,
    /// Correction replies identical to the reply they corrected.
    #[serde(default)]
    pub identical_retries: u32,
    /// Output tokens spent reasoning before decisions (counted in `output_tokens` too);
    /// left out of the JSON when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
    /// Verifications of satisfied answers (each one call of the verifier); left out of the
    /// JSON when none. Not counted in `model_calls`.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub verifications: u32,
    /// Prompt tokens of the verifier's calls; not counted in `input_tokens`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub verifier_input_tokens: u64,
    /// Generated tokens of the verifier's calls; not counted in `output_tokens`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub verifier_output_tokens: u64,
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The run report: what `corrigible run --json` prints and `POST /v1/runs`
/// returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// The run's id.
    pub run_id: String,
    /// Whether the final decision says the request was fulfilled.
    pub satisfied: bool,
    /// The final answer, when a valid final decision was reached.
    pub final_summary: Option<String>,
    /// What is missing when the run stopped early, e.g. `valid decision`.
    pub missing: Option<String>,
    /// Why the run stopped.
    pub stop_reason: StopReason,
    /// Executed and breaker-refused tool actions.
    pub steps: Vec<StepRecord>,
    /// Rejections sent back to the model.
    pub corrections: Vec<CorrectionRecord>,
    /// Local repairs.
    pub repairs: Vec<RepairRecord>,
    /// Every model call.
    pub model_calls: Vec<ModelCallRecord>,
    /// Totals.
    pub usage: UsageTotals,
    /// Breaker state changes seen during the run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub breaker_events: Vec<BreakerTransition>,
    /// Verifications of satisfied answers, in order; left out of the JSON when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verifications: Vec<super::VerificationRecord>,
    /// The typed final output, when the agent declares one and the summary parsed into it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// The user's request.
    pub prompt: String,
    /// The model's name.
    pub model: String,
    /// The decision protocol the run spoke (absent from reports written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// Why that protocol, when the agent was told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_reason: Option<ProtocolReason>,
    /// Wall time of the run.
    pub duration_ms: f64,
}
