//! The tools of several MCP servers, named so that no two collide, ready to register.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use corrigible::tool::{FINAL_ANSWER, InputValidator};
use corrigible::{AgentBuilder, Tool, ToolRegistry};

use crate::config::McpServerConfig;
use crate::connection::McpConnection;
use crate::error::McpError;
use crate::tool::McpTool;

/// A tool a server declared that cannot be offered, and why (its schema does not compile).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedTool {
    /// The server's name.
    pub server: String,
    /// The tool's name on the server.
    pub tool: String,
    /// Why it was left out.
    pub reason: String,
}

/// The connected servers and their tools. A name declared by two servers (or already taken by
/// another tool) is offered as `SERVER_NAME` for each server that declares it.
#[derive(Debug, Clone, Default)]
pub struct McpCatalog {
    connections: Vec<Arc<McpConnection>>,
    tools: Vec<Arc<McpTool>>,
    skipped: Vec<SkippedTool>,
}

impl McpCatalog {
    /// Connects to every server and lists its tools. Fails on the first server that cannot be
    /// reached: a configured server that is missing is an error, not an empty catalog.
    pub async fn connect(servers: Vec<McpServerConfig>) -> Result<Self, McpError> {
        Self::connect_beside(servers, &[]).await
    }

    /// As [`connect`](Self::connect), beside tools already named `taken` (built-ins).
    pub async fn connect_beside(
        servers: Vec<McpServerConfig>,
        taken: &[&str],
    ) -> Result<Self, McpError> {
        let mut connections = Vec::new();
        let mut seen = BTreeSet::new();
        for mut config in servers {
            let base = config.name.clone();
            let mut n = 1;
            while !seen.insert(config.name.clone()) {
                n += 1;
                config.name = format!("{base}_{n}");
            }
            connections.push(Arc::new(McpConnection::new(config)));
        }
        let mut declared = Vec::new();
        for connection in &connections {
            declared.push(connection.list_tools().await?);
        }
        Ok(Self::assemble(connections, declared, taken))
    }

    fn assemble(
        connections: Vec<Arc<McpConnection>>,
        declared: Vec<Vec<rmcp::model::Tool>>,
        taken: &[&str],
    ) -> Self {
        let mut count: BTreeMap<&str, usize> = BTreeMap::new();
        for tools in &declared {
            let unique: BTreeSet<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
            for name in unique {
                *count.entry(name).or_default() += 1;
            }
        }
        let mut tools = Vec::new();
        let mut skipped = Vec::new();
        let mut used: BTreeSet<String> = taken.iter().map(|s| s.to_string()).collect();
        for (connection, server_tools) in connections.iter().zip(&declared) {
            for declared_tool in server_tools {
                let remote = declared_tool.name.as_ref();
                let clash = count.get(remote).copied().unwrap_or(0) > 1
                    || taken.contains(&remote)
                    || remote == FINAL_ANSWER;
                let mut name = if clash {
                    format!("{}_{remote}", connection.name())
                } else {
                    remote.to_string()
                };
                if used.contains(&name) {
                    name = format!("{}_{remote}", connection.name());
                }
                if used.contains(&name) {
                    skipped.push(SkippedTool {
                        server: connection.name().to_string(),
                        tool: remote.to_string(),
                        reason: format!("the name `{name}` is declared twice"),
                    });
                    continue;
                }
                let tool = McpTool::new(connection.clone(), declared_tool, name.clone());
                if let Err(e) = InputValidator::new(&name, &tool.input_schema()) {
                    tracing::warn!(server = %connection.name(), tool = %remote, "skipped: {e}");
                    skipped.push(SkippedTool {
                        server: connection.name().to_string(),
                        tool: remote.to_string(),
                        reason: e.to_string(),
                    });
                    continue;
                }
                used.insert(name);
                tools.push(Arc::new(tool));
            }
        }
        Self {
            connections,
            tools,
            skipped,
        }
    }

    /// The tools, in server order then declaration order.
    pub fn tools(&self) -> &[Arc<McpTool>] {
        &self.tools
    }

    /// The tools left out, with the reason.
    pub fn skipped(&self) -> &[SkippedTool] {
        &self.skipped
    }

    /// The servers' connections (kept open across runs).
    pub fn connections(&self) -> &[Arc<McpConnection>] {
        &self.connections
    }

    /// Adds every tool to `registry`.
    pub fn register(&self, registry: &mut ToolRegistry) -> Result<(), McpError> {
        for tool in &self.tools {
            registry
                .register(tool.clone() as Arc<dyn Tool>)
                .map_err(|e| McpError::Register {
                    server: tool.server().to_string(),
                    message: e.to_string(),
                })?;
        }
        Ok(())
    }

    /// Adds every tool to an agent under construction.
    pub fn add_to(&self, mut builder: AgentBuilder) -> AgentBuilder {
        for tool in &self.tools {
            builder = builder.tool(tool.clone());
        }
        builder
    }

    /// Closes every connection (their processes end).
    pub async fn close(&self) {
        for connection in &self.connections {
            connection.close().await;
        }
    }
}
