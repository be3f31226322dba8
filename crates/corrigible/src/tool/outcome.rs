use serde_json::Value;

/// The result of one tool execution.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolOutcome {
    /// The tool succeeded with this value.
    Ok(Value),
    /// The model can fix its arguments: the message goes back to it as the call's result.
    Retry(String),
    /// Execution failed (network, timeout): retried with backoff, then reported to the model.
    Failed(String),
    /// Never retried: ends the run unsatisfied with `stop_reason: "tool_fatal"`.
    Fatal(String),
}

impl ToolOutcome {
    /// `Ok` holding any serializable value (a serialization failure becomes `Fatal`).
    pub fn ok(value: impl serde::Serialize) -> Self {
        match serde_json::to_value(value) {
            Ok(v) => ToolOutcome::Ok(v),
            Err(e) => ToolOutcome::Fatal(format!("tool output is not serializable: {e}")),
        }
    }
}
