use serde_json::Value;

use crate::agent::Run;

/// What a rule may read of the run at the moment it judges a decision: the request, the model's
/// reasoning before the decision, the tool results so far and the available tools.
pub struct Evidence<'a> {
    pub(crate) run: &'a Run<'a>,
    pub(crate) reasoning: &'a str,
}

/// A tool call of the run that succeeded: the tool, its input and what it returned.
#[derive(Debug, Clone, Copy)]
pub struct ToolResult<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// The input it was called with.
    pub input: &'a Value,
    /// What it returned.
    pub output: &'a Value,
}

impl<'a> Evidence<'a> {
    /// The user's request.
    pub fn request(&self) -> &str {
        &self.run.request
    }

    /// What the model thought before this decision (empty when it did not say).
    pub fn reasoning(&self) -> &str {
        self.reasoning
    }

    /// The run's successful tool calls, in order.
    pub fn results(&self) -> impl Iterator<Item = ToolResult<'_>> {
        self.run.state.results.iter().map(|s| ToolResult {
            tool: &s.tool,
            input: &s.input,
            output: &s.output,
        })
    }

    /// Whether any tool action ran in this run, successful or not.
    pub fn acted(&self) -> bool {
        self.run.budget.acted()
    }

    /// The names of the tools this run may call.
    pub fn tools(&self) -> Vec<&str> {
        self.run.tools.names()
    }

    /// Whether `tool` only looks things up or computes (declared read-only).
    pub fn read_only(&self, tool: &str) -> bool {
        self.run.tools.read_only(tool)
    }
}
