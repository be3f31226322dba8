use async_trait::async_trait;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Tool, ToolContext, ToolOutcome};
use crate::evidence::provenance::GroundedArgument;

/// A tool whose input is a Rust type: the schema comes from schemars, the input from serde.
#[async_trait]
pub trait TypedTool: Send + Sync + 'static {
    /// The input type.
    type Input: DeserializeOwned + JsonSchema + Send;

    /// The name the model uses.
    fn name(&self) -> &str;

    /// What the tool does, for the model.
    fn description(&self) -> &str;

    /// Whether executing the same call twice is harmless.
    fn idempotent(&self) -> bool {
        true
    }

    /// Arguments whose values must come from the request or a tool result, not from the model.
    fn grounded_arguments(&self) -> Vec<GroundedArgument> {
        Vec::new()
    }

    /// Whether it only looks something up or computes (see [`Tool::read_only`]).
    fn read_only(&self) -> bool {
        false
    }

    /// Whether its result is computed from its input alone (see [`Tool::computes`]).
    fn computes(&self) -> bool {
        false
    }

    /// Whether the same call can return something new later in one run (see
    /// [`Tool::repeatable`]).
    fn repeatable(&self) -> bool {
        false
    }

    /// Executes the tool.
    async fn call(&self, input: Self::Input, ctx: &ToolContext) -> ToolOutcome;
}

/// Adapts a [`TypedTool`] to the object-safe [`Tool`] trait.
pub struct Typed<T>(pub T);

#[async_trait]
impl<T: TypedTool> Tool for Typed<T> {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn description(&self) -> &str {
        self.0.description()
    }

    fn input_schema(&self) -> Value {
        let mut schema = serde_json::to_value(schemars::schema_for!(T::Input)).unwrap_or_default();
        if let Some(obj) = schema.as_object_mut() {
            obj.remove("$schema");
            obj.remove("title");
        }
        schema
    }

    fn idempotent(&self) -> bool {
        self.0.idempotent()
    }

    fn repeatable(&self) -> bool {
        self.0.repeatable()
    }

    fn read_only(&self) -> bool {
        self.0.read_only()
    }

    fn computes(&self) -> bool {
        self.0.computes()
    }

    fn grounded_arguments(&self) -> Vec<GroundedArgument> {
        self.0.grounded_arguments()
    }

    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutcome {
        match serde_json::from_value::<T::Input>(input) {
            Ok(typed) => self.0.call(typed, ctx).await,
            Err(e) => ToolOutcome::Retry(format!("tool_input: {e}")),
        }
    }
}
