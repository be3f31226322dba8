//! One MCP server's connection: opened on first use, kept open across runs, reopened (the
//! process restarted) on the next use after it died.

use std::process::Stdio;
use std::sync::Arc;

use opentelemetry::propagation::{Injector, TextMapPropagator};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ErrorCode, JsonObject, RequestParamsMeta,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ServiceError, ServiceExt};
use tokio::io::AsyncBufReadExt;
use tokio::sync::Mutex;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::config::{McpServerConfig, McpTransport};
use crate::error::McpError;

type Client = RunningService<RoleClient, ()>;

/// How a `tools/call` went, before it becomes a [`ToolOutcome`](corrigible::ToolOutcome).
#[derive(Debug)]
pub(crate) enum CallResult {
    /// The server answered (maybe with `isError: true`).
    Answered(CallToolResult),
    /// The server refused the arguments with a JSON-RPC "invalid params" error.
    InvalidParams(String),
    /// Transport failure, timeout, a dead server or any other protocol error.
    Failed(String),
}

/// A connection to one MCP server, shared by every tool it declares. Cheap to share behind an
/// `Arc`; safe to call from several runs at once.
pub struct McpConnection {
    config: McpServerConfig,
    live: Mutex<Option<Arc<Client>>>,
}

impl std::fmt::Debug for McpConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpConnection")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl McpConnection {
    /// A connection that opens on first use.
    pub fn new(config: McpServerConfig) -> Self {
        Self {
            config,
            live: Mutex::new(None),
        }
    }

    /// The server's configuration.
    pub fn config(&self) -> &McpServerConfig {
        &self.config
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// Every tool the server declares (all pages), connecting first if needed.
    pub async fn list_tools(&self) -> Result<Vec<rmcp::model::Tool>, McpError> {
        let client = self.client().await?;
        let after = self.config.connect_timeout;
        match tokio::time::timeout(after, client.list_all_tools()).await {
            Ok(Ok(tools)) => Ok(tools),
            Ok(Err(e)) => {
                self.forget(&client).await;
                Err(McpError::Transport {
                    server: self.config.name.clone(),
                    message: format!("tools/list failed: {e}"),
                })
            }
            Err(_) => Err(McpError::Timeout {
                server: self.config.name.clone(),
                what: "tools/list",
                after,
            }),
        }
    }

    /// Calls the tool `name` (as the server names it) with `arguments`, within the call timeout.
    pub(crate) async fn call(&self, name: &str, arguments: JsonObject) -> CallResult {
        let client = match self.client().await {
            Ok(client) => client,
            Err(e) => return CallResult::Failed(e.to_string()),
        };
        let mut params = CallToolRequestParams::new(name.to_string()).with_arguments(arguments);
        propagate(&mut params);
        let after = self.config.call_timeout;
        match tokio::time::timeout(after, client.call_tool(params)).await {
            Ok(Ok(result)) => CallResult::Answered(result),
            Ok(Err(ServiceError::McpError(data))) if data.code == ErrorCode::INVALID_PARAMS => {
                CallResult::InvalidParams(data.message.to_string())
            }
            Ok(Err(ServiceError::McpError(data))) => CallResult::Failed(format!(
                "MCP server `{}` answered with error {}: {}",
                self.config.name, data.code.0, data.message
            )),
            Ok(Err(e)) => {
                self.forget(&client).await;
                CallResult::Failed(format!(
                    "MCP server `{}` failed during the call: {e}",
                    self.config.name
                ))
            }
            Err(_) => CallResult::Failed(format!(
                "MCP server `{}` did not answer within {} ms",
                self.config.name,
                after.as_millis()
            )),
        }
    }

    /// Closes the connection (the process ends); the next use opens a new one.
    pub async fn close(&self) {
        let client = self.live.lock().await.take();
        if let Some(client) = client
            && let Ok(client) = Arc::try_unwrap(client)
        {
            let _ = client.cancel().await;
        }
    }

    /// The open client, or a new one when there is none or the last one died.
    async fn client(&self) -> Result<Arc<Client>, McpError> {
        let mut live = self.live.lock().await;
        if let Some(client) = live.as_ref() {
            if !is_dead(client) {
                return Ok(client.clone());
            }
            tracing::info!(server = %self.config.name, "MCP server connection closed; reconnecting");
        }
        *live = None;
        let after = self.config.connect_timeout;
        let client = tokio::time::timeout(after, self.connect())
            .await
            .map_err(|_| McpError::Timeout {
                server: self.config.name.clone(),
                what: "initialize",
                after,
            })??;
        let client = Arc::new(client);
        *live = Some(client.clone());
        Ok(client)
    }

    /// Drops `client` if it is still the current one, so the next use reconnects.
    async fn forget(&self, client: &Arc<Client>) {
        let mut live = self.live.lock().await;
        if live.as_ref().is_some_and(|c| Arc::ptr_eq(c, client)) && is_dead(client) {
            *live = None;
        }
    }

    async fn connect(&self) -> Result<Client, McpError> {
        let server = self.config.name.clone();
        let transport_error = |e: &dyn std::fmt::Display| McpError::Transport {
            server: server.clone(),
            message: format!("initialize failed: {e}"),
        };
        match &self.config.transport {
            McpTransport::Stdio { program, args, env } => {
                let mut command = tokio::process::Command::new(program);
                command.args(args).envs(env.iter().cloned());
                let (process, stderr) = TokioChildProcess::builder(command)
                    .stderr(Stdio::piped())
                    .spawn()
                    .map_err(|e| McpError::Spawn {
                        server: server.clone(),
                        command: program.clone(),
                        message: e.to_string(),
                    })?;
                if let Some(stderr) = stderr {
                    tokio::spawn(log_stderr(server.clone(), stderr));
                }
                ().serve(process).await.map_err(|e| transport_error(&e))
            }
            McpTransport::Http { url, headers } => {
                install_crypto_provider();
                let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(headers.iter().map(|h| h.pair()).collect());
                let transport = StreamableHttpClientTransport::from_config(config);
                ().serve(transport).await.map_err(|e| transport_error(&e))
            }
        }
    }
}

fn is_dead(client: &Client) -> bool {
    client.is_closed() || client.peer().is_transport_closed()
}

/// The server's stderr, line by line, as debug logs (never on the terminal).
async fn log_stderr(server: String, stderr: tokio::process::ChildStderr) {
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(server = %server, "{line}");
    }
}

/// HTTPS needs a rustls crypto provider; ring is the workspace's.
fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Puts the W3C `traceparent` (and `tracestate`) of the span the call is made in into the
/// request's `_meta` (SEP-414), when an OpenTelemetry layer records it, so the server's own
/// spans continue the run's trace over any transport.
fn propagate(params: &mut CallToolRequestParams) {
    let context = tracing::Span::current().context();
    TraceContextPropagator::new().inject_context(&context, &mut MetaInjector(params));
}

/// Writes trace context fields into a request's `_meta`.
struct MetaInjector<'a>(&'a mut CallToolRequestParams);

impl Injector for MetaInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if value.is_empty() {
            return;
        }
        self.0
            .meta_or_default()
            .0
            .0
            .insert(key.to_string(), serde_json::Value::String(value));
    }
}
