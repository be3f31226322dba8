use serde_json::{Value, json};

use crate::model::ToolSpec;
use crate::tool::FINAL_ANSWER;

/// How much of a decision's shape a JSON Schema pins down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaMode {
    /// The decision envelope: `tool` is one of the registered names, `tool_input` any object.
    Envelope,
    /// One action branch per tool with that tool's exact input schema, plus the final branch.
    Full,
}

fn final_branch() -> Value {
    json!({
        "type": "object",
        "properties": {
            "state": {"const": "final"},
            "satisfied": {"type": "boolean"},
            "final_summary": {"type": "string"}
        },
        "required": ["state", "satisfied", "final_summary"],
        "additionalProperties": false
    })
}

fn action_branch(tool: Value, input: Value) -> Value {
    json!({
        "type": "object",
        "properties": {
            "state": {"const": "action"},
            "reason": {"type": "string"},
            "tool": tool,
            "tool_input": input
        },
        "required": ["state", "reason", "tool", "tool_input"],
        "additionalProperties": false
    })
}

/// The JSON Schema of a JSON-protocol decision over `tools`.
pub fn decision_schema(tools: &[ToolSpec], mode: SchemaMode) -> Value {
    let mut branches = Vec::new();
    match mode {
        SchemaMode::Envelope if !tools.is_empty() => {
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            branches.push(action_branch(
                json!({"enum": names}),
                json!({"type": "object"}),
            ));
        }
        SchemaMode::Envelope => {}
        SchemaMode::Full => {
            for tool in tools {
                branches.push(action_branch(
                    json!({"const": tool.name}),
                    tool.parameters.clone(),
                ));
            }
        }
    }
    branches.push(final_branch());
    json!({"anyOf": branches})
}

/// The built-in `final_answer` tool of the native protocol.
pub fn final_answer_spec() -> ToolSpec {
    ToolSpec {
        name: FINAL_ANSWER.to_string(),
        description: "Give the final answer to the user and end the run. Set satisfied to false \
                      when the request could not be fulfilled."
            .to_string(),
        parameters: json!({
            "type": "object",
            "properties": {
                "satisfied": {"type": "boolean", "description": "Whether the request was fulfilled."},
                "final_summary": {"type": "string", "description": "The answer for the user."}
            },
            "required": ["satisfied", "final_summary"],
            "additionalProperties": false
        }),
    }
}
