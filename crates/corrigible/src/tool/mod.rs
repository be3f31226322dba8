//! Tools: the `Tool` trait, typed tools, outcomes, the registry and input validation.

mod outcome;
mod registry;
pub use registry::FINAL_ANSWER;
mod typed;
mod validation;

use async_trait::async_trait;
use serde_json::Value;

use crate::evidence::provenance::GroundedArgument;

pub use outcome::ToolOutcome;
pub use registry::{RegistryError, ToolRegistry};
pub use typed::{Typed, TypedTool};
pub use validation::{InputValidator, InvalidInput, Problem, SchemaError};

/// What a tool call knows about where it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolContext {
    /// The run this call belongs to.
    pub run_id: String,
    /// The action slot, from 1.
    pub step: u32,
    /// Execution attempt for this action, from 1.
    pub attempt: u32,
    /// Stable for one action (run id + step + input fingerprint): a side-effecting tool can
    /// deduplicate retried deliveries with it.
    pub idempotency_key: String,
}

/// A tool the model can call.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The name the model uses.
    fn name(&self) -> &str;

    /// What the tool does, for the model.
    fn description(&self) -> &str;

    /// JSON Schema of the input object; inputs are validated against it before any call.
    fn input_schema(&self) -> Value;

    /// Arguments whose values must come from the request or a tool result, not from the model.
    fn grounded_arguments(&self) -> Vec<GroundedArgument> {
        Vec::new()
    }

    /// Whether executing the same call twice is harmless. Non-idempotent tools are never
    /// re-executed automatically after a failure.
    fn idempotent(&self) -> bool {
        true
    }

    /// Whether it only looks something up or computes, and changes nothing outside the run.
    /// An answer that claims an action ("I have sent the email") needs a successful call of a
    /// tool that is not read-only; by default a tool may act.
    fn read_only(&self) -> bool {
        false
    }

    /// Whether its result is computed from its input alone, as a calculator's is: it reads
    /// nothing outside the run and changes nothing. A model that reaches for such a tool
    /// first is reasoning, and the embedded model may think before it decides (see
    /// `docs/thinking.md`); by default a tool does not merely compute.
    fn computes(&self) -> bool {
        false
    }

    /// Whether calling it again with the same input in one run can return something new (a
    /// job's status, a queue's next item). Otherwise an identical call after a success is
    /// rejected as `repeated_action`: its result is already in the conversation.
    fn repeatable(&self) -> bool {
        false
    }

    /// Executes the tool on an input that already passed the schema.
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutcome;
}

#[async_trait]
impl<T: Tool + ?Sized> Tool for std::sync::Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn description(&self) -> &str {
        (**self).description()
    }

    fn input_schema(&self) -> Value {
        (**self).input_schema()
    }

    fn grounded_arguments(&self) -> Vec<GroundedArgument> {
        (**self).grounded_arguments()
    }

    fn idempotent(&self) -> bool {
        (**self).idempotent()
    }

    fn repeatable(&self) -> bool {
        (**self).repeatable()
    }

    fn read_only(&self) -> bool {
        (**self).read_only()
    }

    fn computes(&self) -> bool {
        (**self).computes()
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutcome {
        (**self).call(input, ctx).await
    }
}
