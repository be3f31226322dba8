//! A schema-only tool: declared and validated like any tool, never executed for real.

use async_trait::async_trait;
use corrigible::{Tool, ToolContext, ToolOutcome};
use serde_json::Value;

use super::FunctionDef;
use super::schema::{to_json_schema, tool_name};

/// A BFCL function as a tool: its input is validated against the mapped schema, and a call
/// only answers `call recorded` (the run report keeps the call for grading).
#[derive(Debug, Clone)]
pub struct RecordingTool {
    name: String,
    description: String,
    schema: Value,
}

impl RecordingTool {
    /// The tool for `function`, named as [`tool_name`] says.
    pub fn new(function: &FunctionDef) -> Self {
        Self {
            name: tool_name(&function.name),
            description: function.description.clone(),
            schema: to_json_schema(&function.parameters),
        }
    }
}

#[async_trait]
impl Tool for RecordingTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.schema.clone()
    }

    async fn call(&self, _input: Value, _ctx: &ToolContext) -> ToolOutcome {
        ToolOutcome::Ok(serde_json::json!({"recorded": true}))
    }
}
