//! The server's configuration.

use std::time::Duration;

/// The default listening address.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8080";
/// The default run store.
pub const DEFAULT_DB: &str = "corrigible.db";
/// The default request body limit: 64 KiB.
pub const DEFAULT_BODY_LIMIT: usize = 64 * 1024;
/// The default number of model calls in flight at once, over all runs.
pub const DEFAULT_MAX_CONCURRENT_MODEL_CALLS: usize = 8;
/// How long in-flight runs may go on after a shutdown signal, by default.
pub const DEFAULT_SHUTDOWN_DEADLINE: Duration = Duration::from_secs(30);

/// How the server listens, stores and limits (validated by the CLI before it gets here).
#[derive(Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// Address to listen on, e.g. `127.0.0.1:8080`.
    pub addr: String,
    /// The run store: a file path or a `sqlite:` URL.
    pub db: String,
    /// When set, every `/v1` request needs `Authorization: Bearer <api_key>`.
    pub api_key: Option<String>,
    /// Largest accepted request body, in bytes.
    pub body_limit: usize,
    /// Model calls in flight at once over all runs (at least 1).
    pub max_concurrent_model_calls: usize,
    /// How long in-flight runs may go on after SIGTERM/SIGINT before they are interrupted.
    pub shutdown_deadline: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            addr: DEFAULT_ADDR.to_string(),
            db: DEFAULT_DB.to_string(),
            api_key: None,
            body_limit: DEFAULT_BODY_LIMIT,
            max_concurrent_model_calls: DEFAULT_MAX_CONCURRENT_MODEL_CALLS,
            shutdown_deadline: DEFAULT_SHUTDOWN_DEADLINE,
        }
    }
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("addr", &self.addr)
            .field("db", &self.db)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("body_limit", &self.body_limit)
            .field(
                "max_concurrent_model_calls",
                &self.max_concurrent_model_calls,
            )
            .field("shutdown_deadline", &self.shutdown_deadline)
            .finish()
    }
}
