//! corrigible-mcp: the tools of MCP servers as [`corrigible::Tool`]s.
//!
//! - [`McpServerConfig`] says where a server is: a command spawned over stdio, or a
//!   Streamable HTTP URL with [`Header`]s (whose values never appear in output).
//! - [`McpConnection`] opens on first use, stays open across runs and restarts a dead server on
//!   the next use.
//! - [`McpCatalog`] connects to several servers, names their tools so that none collide (a
//!   name declared twice becomes `SERVER_NAME`), and registers them on a
//!   [`ToolRegistry`](corrigible::ToolRegistry) or an [`AgentBuilder`](corrigible::AgentBuilder).
//!
//! An MCP tool is then a tool like any other: its `inputSchema` is validated before any call;
//! `isError: true` is the tool's `Retry` (`tool_rejected`); a transport failure, a timeout or
//! a server that dies mid-call is `Failed` (`tool_failed`, retried only when the tool's
//! `readOnlyHint` or `idempotentHint` says it is safe, never when `destructiveHint` is set).
//!
//! ```no_run
//! # async fn demo(model: impl corrigible::Model + 'static) -> Result<(), Box<dyn std::error::Error>> {
//! use corrigible_mcp::{McpCatalog, McpServerConfig};
//!
//! let time = McpServerConfig::command("uvx mcp-server-time")?;
//! let catalog = McpCatalog::connect(vec![time]).await?;
//! let agent = catalog.add_to(corrigible::Agent::builder(model)).build()?;
//! let report = agent.run("What time is it in Tokyo?").await?;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod catalog;
mod config;
mod connection;
mod content;
mod error;
mod header;
mod tool;

pub use catalog::{McpCatalog, SkippedTool};
pub use config::{DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, McpServerConfig, McpTransport};
pub use connection::McpConnection;
pub use error::McpError;
pub use header::Header;
pub use tool::McpTool;
