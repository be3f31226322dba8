//! The agent: a model, tools and a policy, and the bounded self-correcting loop that runs them.

mod budget;
mod builder;
mod execute;
mod history;
mod output;
mod run;
mod validate;
mod verify;

use std::sync::Arc;

pub use builder::{AgentBuilder, BuildError};
pub use output::OutputValidator;
pub(crate) use run::Run;

use crate::context::ContextBudget;
use crate::correction::feedback::FeedbackTemplate;
use crate::model::{Model, ModelError, Protocol};
use crate::policy::{CircuitBreakers, Policy};
use crate::probe::ProtocolReason;
use crate::prompt::SystemPrompt;
use crate::tool::{InputValidator, ToolRegistry};
use crate::trace::{RunReport, TraceSink};

/// A configured agent. Cheap to share: runs borrow it, and its circuit breakers are shared by
/// every run.
pub struct Agent {
    pub(crate) model: Arc<dyn Model>,
    pub(crate) tools: ToolRegistry,
    pub(crate) policy: Policy,
    pub(crate) protocol: Protocol,
    pub(crate) protocol_reason: Option<ProtocolReason>,
    pub(crate) system: SystemPrompt,
    pub(crate) feedback: FeedbackTemplate,
    pub(crate) breakers: Arc<CircuitBreakers>,
    pub(crate) context: ContextBudget,
    pub(crate) validators: Vec<Arc<dyn OutputValidator>>,
    pub(crate) output: Option<(serde_json::Value, InputValidator)>,
    pub(crate) examples: Vec<crate::message::Message>,
    /// The worked examples behind the first of `examples`, for the `echo` rule.
    pub(crate) worked: Vec<crate::examples::WorkedExample>,
    pub(crate) discovery: crate::discovery::Discovery,
    pub(crate) verifier: Option<crate::verify::Verifier>,
    /// Rules of the agent's own, judged after the built-in ones.
    pub(crate) rules: Vec<Arc<dyn crate::rule::Rule>>,
    /// Built-in rules left out by name, whatever the policy's checks say.
    pub(crate) without_rules: Vec<String>,
    /// Whether the spans carry messages, tool arguments and results.
    pub(crate) capture_content: bool,
}

/// Per-run options.
#[derive(Clone, Default)]
pub struct RunOptions {
    /// The run's id; a fresh UUIDv7 when absent.
    pub run_id: Option<String>,
    /// Where trace events go as they happen.
    pub sink: Option<Arc<dyn TraceSink>>,
    /// Restricts the run to these registered tools.
    pub tools: Option<Vec<String>>,
    /// Uses this model instead of the agent's, for this run only.
    pub model: Option<Arc<dyn Model>>,
    /// Overrides the agent's policy for this run.
    pub policy: Option<Policy>,
}

/// A run could not complete. Corrections and bounds never produce this: they end in a report.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum RunError {
    /// The model's transport failed (infrastructure, not a correction).
    #[error("model transport failed: {0}")]
    Transport(String),
    /// The model is misconfigured or answered something unusable.
    #[error("{0}")]
    Model(ModelError),
    /// The request itself is invalid (empty prompt, unknown tool name).
    #[error("invalid request: {field}: {reason}")]
    InvalidRequest {
        /// The request field at fault (`prompt`, `tools`).
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A template failed to render.
    #[error("{0}")]
    Template(String),
}

impl Agent {
    /// How this agent verifies satisfied answers, if it does.
    pub fn verifier(&self) -> Option<&crate::verify::Verifier> {
        self.verifier.as_ref()
    }

    /// Starts building an agent around `model`.
    pub fn builder(model: impl Model + 'static) -> AgentBuilder {
        AgentBuilder::new(Arc::new(model))
    }

    /// Starts building an agent around a shared model.
    pub fn builder_shared(model: Arc<dyn Model>) -> AgentBuilder {
        AgentBuilder::new(model)
    }

    /// Runs `prompt` to a final decision or a bound.
    pub async fn run(&self, prompt: &str) -> Result<RunReport, RunError> {
        self.run_with(prompt, RunOptions::default()).await
    }

    /// Runs `prompt` with per-run options.
    pub async fn run_with(&self, prompt: &str, options: RunOptions) -> Result<RunReport, RunError> {
        run::Run::start(self, prompt, options)?.execute().await
    }

    /// The registered tools.
    pub fn tools(&self) -> &ToolRegistry {
        &self.tools
    }

    /// The policy in force.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The decision protocol.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// Why the protocol was chosen, when the builder was told.
    pub fn protocol_reason(&self) -> Option<ProtocolReason> {
        self.protocol_reason
    }

    /// The circuit breakers shared by this agent's runs.
    pub fn breakers(&self) -> &Arc<CircuitBreakers> {
        &self.breakers
    }

    /// The model.
    pub fn model(&self) -> &Arc<dyn Model> {
        &self.model
    }
}
