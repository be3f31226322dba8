//! One tool of an MCP server as a [`corrigible::Tool`].

use std::sync::Arc;

use async_trait::async_trait;
use corrigible::{Tool, ToolContext, ToolOutcome};
use rmcp::model::ToolAnnotations;
use serde_json::Value;

use crate::connection::{CallResult, McpConnection};
use crate::content;

/// A tool declared by an MCP server. Its input is validated against its `inputSchema` by the
/// engine before [`Tool::call`]; the call goes to the server over the shared connection.
#[derive(Debug, Clone)]
pub struct McpTool {
    connection: Arc<McpConnection>,
    name: String,
    remote: String,
    description: String,
    schema: Value,
    idempotent: bool,
    read_only: bool,
}

impl McpTool {
    /// The tool `declared` by the server behind `connection`, offered to the model as `name`.
    pub fn new(connection: Arc<McpConnection>, declared: &rmcp::model::Tool, name: String) -> Self {
        let description = declared
            .description
            .as_deref()
            .or(declared.title.as_deref())
            .or_else(|| declared.annotations.as_ref()?.title.as_deref())
            .unwrap_or(&declared.name)
            .to_string();
        Self {
            connection,
            name,
            remote: declared.name.to_string(),
            description,
            schema: Value::Object((*declared.input_schema).clone()),
            idempotent: idempotent(declared.annotations.as_ref()),
            read_only: declared
                .annotations
                .as_ref()
                .is_some_and(|a| a.read_only_hint == Some(true)),
        }
    }

    /// The name the server gave the tool (the model's name may carry the server's prefix).
    pub fn remote_name(&self) -> &str {
        &self.remote
    }

    /// The server's name.
    pub fn server(&self) -> &str {
        self.connection.name()
    }
}

/// `readOnlyHint` or `idempotentHint` make a tool safe to re-run; `destructiveHint` never
/// does, and neither do missing hints (MCP's defaults: not read-only, destructive).
fn idempotent(annotations: Option<&ToolAnnotations>) -> bool {
    let Some(a) = annotations else {
        return false;
    };
    if a.destructive_hint == Some(true) {
        return false;
    }
    a.read_only_hint == Some(true) || a.idempotent_hint == Some(true)
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> Value {
        self.schema.clone()
    }

    fn idempotent(&self) -> bool {
        self.idempotent
    }

    fn read_only(&self) -> bool {
        self.read_only
    }

    async fn call(&self, input: Value, _ctx: &ToolContext) -> ToolOutcome {
        let arguments = match input {
            Value::Object(map) => map,
            Value::Null => serde_json::Map::new(),
            other => {
                return ToolOutcome::Retry(format!(
                    "the input of `{}` must be a JSON object, got {other}",
                    self.name
                ));
            }
        };
        match self.connection.call(&self.remote, arguments).await {
            CallResult::Answered(result) => content::outcome(result),
            CallResult::InvalidParams(message) => ToolOutcome::Retry(message),
            CallResult::Failed(message) => ToolOutcome::Failed(message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_decide_whether_a_tool_may_be_re_run() {
        assert!(!idempotent(None));
        let read_only = ToolAnnotations::new().read_only(true);
        assert!(idempotent(Some(&read_only)));
        let idem = ToolAnnotations::from_raw(None, None, Some(false), Some(true), None);
        assert!(idempotent(Some(&idem)));
        let destructive = ToolAnnotations::from_raw(None, None, Some(true), Some(true), None);
        assert!(!idempotent(Some(&destructive)));
        let silent = ToolAnnotations::new();
        assert!(!idempotent(Some(&silent)));
    }
}
