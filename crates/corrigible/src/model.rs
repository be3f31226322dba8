//! The `Model` trait: one request in, one reply out, provider-neutral.

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::correction::CorrectionContext;
use crate::evidence::provenance::{GroundedArgument, Grounds};
use crate::message::{Message, ToolCall};
use crate::stage::Stage;

/// How the model states its decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// A JSON decision in the reply text; no tool declarations are sent to the provider.
    #[default]
    Json,
    /// The provider's own tool calling; the final answer is the `final_answer` tool.
    Native,
}

impl std::str::FromStr for Protocol {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "json" => Ok(Protocol::Json),
            "native" => Ok(Protocol::Native),
            other => Err(format!(
                "unknown protocol `{other}`: expected `json` or `native`"
            )),
        }
    }
}

/// A tool as declared to a model: name, description and the JSON Schema of its input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool's name.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the tool's input object.
    pub parameters: Value,
    /// Arguments whose values must come from the request or a tool result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grounded: Vec<GroundedArgument>,
    /// Whether its result is computed from its input alone (see [`crate::Tool::computes`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub computes: bool,
}

/// Tokens spent by one or more model calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
}

impl Usage {
    /// Input plus output tokens.
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, rhs: Self) {
        self.input_tokens += rhs.input_tokens;
        self.output_tokens += rhs.output_tokens;
    }
}

/// A model's reasoning before its decision: the embedded model's thought, or the reasoning a
/// provider returns (OpenAI-compatible `reasoning_content`, Anthropic thinking blocks, Gemini
/// thought parts).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Reasoning {
    /// The reasoning as text (the provider's summary where it gives only that); may be empty.
    pub text: String,
    /// Tokens spent reasoning, when known; they are part of the call's output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    /// Whether the reasoning reached its bound and was cut into the decision.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// What the provider requires back verbatim on later requests (Anthropic thinking blocks
    /// with their signatures, Gemini thought signatures), as the provider sent it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocks: Vec<Value>,
    /// Calculations of the thought that the calculator rewrote while it was decoded (the
    /// embedded model's thought calculator), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recalculated: Vec<Recalculation>,
    /// Whether the decision was decoded before this thought and stands (the embedded model's
    /// `--think auto`): the thought is recorded, but neither shown to later calls nor read by
    /// the rules.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub set_aside: bool,
}

/// A calculation written in a thought whose value did not hold, and the calculator's value
/// that replaced it before the model went on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recalculation {
    /// The calculation's left side, as written.
    pub expression: String,
    /// The value the model wrote.
    pub stated: String,
    /// The value written in its place.
    pub value: String,
}

impl std::fmt::Display for Recalculation {
    /// `20 + 80 + 160 = 460 → 260`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} = {} → {}", self.expression, self.stated, self.value)
    }
}

impl Reasoning {
    /// Reasoning with `text` and nothing else.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            ..Self::default()
        }
    }

    /// The same reasoning without the provider's opaque blocks, as the run report keeps it.
    pub fn without_blocks(&self) -> Self {
        Self {
            blocks: Vec::new(),
            ..self.clone()
        }
    }
}

/// One request to a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The stage name of this call.
    pub stage: Stage,
    /// The conversation so far, already fitted to the context budget.
    pub messages: Vec<Message>,
    /// Tools the model may call (with `final_answer` under the native protocol).
    pub tools: Vec<ToolSpec>,
    /// How the decision is expected.
    pub protocol: Protocol,
    /// Set on correction rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correction: Option<CorrectionContext>,
    /// What the tools' grounded arguments may be taken from now (spans of the request, short
    /// strings and numbers of tool results), for a model that holds them to it while decoding.
    #[serde(default, skip_serializing_if = "Grounds::is_empty")]
    pub grounds: Grounds,
}

/// One reply from a model.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ModelReply {
    /// The text of the reply, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Native tool calls, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Tokens spent by this call (including any transport retries that the provider billed).
    #[serde(default)]
    pub usage: Usage,
    /// Prompt tokens served from a cache of an earlier call instead of being pre-filled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_reused: Option<u64>,
    /// Transport-level retries made by the backend for this call.
    #[serde(default)]
    pub transport_retries: u32,
    /// How the reply was decoded (e.g. `greedy`, `schema`, `sampled(seed=7)`), if the backend knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decoding: Option<String>,
    /// The model's reasoning before this reply, when it has any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
}

/// Why a model call failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum ModelError {
    /// Infrastructure: the model could not be reached or kept failing. Never a correction.
    #[error("transport error: {0}")]
    Transport(String),
    /// The model is misconfigured (missing key, unknown model, missing weights).
    #[error("configuration error: {0}")]
    Config(String),
    /// The backend answered something it could not understand.
    #[error("model error: {0}")]
    Other(String),
}

/// Makes the model of one run: a server calls it once per run, a bench once per task, so a
/// stateful model (a replay) can start afresh each time.
pub type ModelFactory = std::sync::Arc<dyn Fn() -> std::sync::Arc<dyn Model> + Send + Sync>;

/// A language model: takes the conversation and tool declarations, returns a reply.
#[async_trait]
pub trait Model: Send + Sync {
    /// A short name for traces (e.g. `replay`, `openai:gpt-4o-mini`).
    fn name(&self) -> &str;

    /// Sends one request.
    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError>;

    /// Counts the tokens of `text` when the model has a tokenizer; `None` means "estimate".
    fn count_tokens(&self, _text: &str) -> Option<usize> {
        None
    }

    /// Whether the model writes free-text reasoning before its JSON decision, so the prompt
    /// asks it to think first (the embedded model with a thought budget).
    fn thinks(&self) -> bool {
        false
    }
}

#[async_trait]
impl<M: Model + ?Sized> Model for Arc<M> {
    fn name(&self) -> &str {
        (**self).name()
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        (**self).complete(request).await
    }

    fn count_tokens(&self, text: &str) -> Option<usize> {
        (**self).count_tokens(text)
    }

    fn thinks(&self) -> bool {
        (**self).thinks()
    }
}
