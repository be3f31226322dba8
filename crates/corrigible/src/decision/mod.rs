//! Decisions: what the model chose, parsed from either protocol and normalized.

mod html_escaped;
mod normalize;
mod parse;
pub mod repair;
mod schema;
mod text_call;
pub mod unique_keys;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use html_escaped::{is_html_escaped, unescape_html};
pub use normalize::normalize;
pub use parse::{Parsed, call_arguments, parse_native, parse_text, read_decision_json, read_json};
pub use schema::{SchemaMode, allowed_schema, decision_schema, final_answer_spec, with_grounds};
pub use text_call::parse_text_call;

/// A request to execute one tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Action {
    /// Why the model wants this call.
    pub reason: String,
    /// The tool's name.
    pub tool: String,
    /// The tool's input object.
    pub input: Value,
    /// The native call id, when the action came from a native tool call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

/// The model's final answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Final {
    /// Whether the model says the request was fulfilled.
    pub satisfied: bool,
    /// The answer for the user.
    pub summary: String,
    /// The native call id, when the final came from a `final_answer` call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

/// What the model chose.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Decision {
    /// Execute a tool.
    Action(Action),
    /// Stop with an answer.
    Final(Final),
}

impl Decision {
    /// The decision in the JSON protocol's canonical shape.
    pub fn to_json(&self) -> Value {
        match self {
            Decision::Action(a) => serde_json::json!({
                "state": "action", "reason": a.reason, "tool": a.tool, "tool_input": a.input
            }),
            Decision::Final(f) => serde_json::json!({
                "state": "final", "satisfied": f.satisfied, "final_summary": f.summary
            }),
        }
    }
}
