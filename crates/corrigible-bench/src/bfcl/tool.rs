//! A schema-only tool: declared and validated like any tool, never executed for real.

use async_trait::async_trait;
use corrigible::{GroundedArgument, Tool, ToolContext, ToolOutcome};
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

    /// Every free string parameter (a string without an `enum`): BFCL questions state the
    /// values of their string arguments (a city, a unit, a name).
    fn grounded_arguments(&self) -> Vec<GroundedArgument> {
        let Some(properties) = self.schema.get("properties").and_then(Value::as_object) else {
            return Vec::new();
        };
        properties
            .iter()
            .filter(|(_, p)| {
                p.get("type") == Some(&Value::from("string")) && p.get("enum").is_none()
            })
            .map(|(name, _)| GroundedArgument::copied(name.clone()))
            .collect()
    }

    async fn call(&self, _input: Value, _ctx: &ToolContext) -> ToolOutcome {
        ToolOutcome::Ok(serde_json::json!({"recorded": true}))
    }
}

#[cfg(test)]
mod tests {
    use corrigible::Provenance;
    use serde_json::json;

    use super::*;

    #[test]
    fn free_string_parameters_are_copied() {
        let tool = RecordingTool::new(&FunctionDef {
            name: "geometry.circumference".into(),
            description: String::new(),
            parameters: json!({"type": "dict", "properties": {
                "radius": {"type": "integer"},
                "unit": {"type": "string"},
                "shape": {"type": "string", "enum": ["circle", "square"]}
            }, "required": ["radius"]}),
        });
        let grounded = tool.grounded_arguments();
        assert_eq!(grounded.len(), 1);
        assert_eq!(grounded[0].field, "unit");
        assert_eq!(grounded[0].provenance, Provenance::Copied);
    }
}
