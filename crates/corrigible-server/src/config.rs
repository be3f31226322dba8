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
/// How long a client may take to send a request's headers, by default.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection may sit with no request and no traffic, by default.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a client may take to send a request's body, by default.
pub const DEFAULT_BODY_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once, by default; past it the connection waiting longest for a
/// request is closed to make room, or the new one is answered 503.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Runs in flight at once, by default.
pub const DEFAULT_MAX_RUNS: usize = 256;
/// Requests waiting for a run slot, by default; past it new runs get 503.
pub const DEFAULT_MAX_QUEUED_RUNS: usize = 512;
/// How long a request may wait for a run slot, by default.
pub const DEFAULT_QUEUE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an instance's runs stay its own without a heartbeat, by default.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(15);
/// Trace events waiting to be written before runs wait, by default.
pub const DEFAULT_EVENT_QUEUE: usize = 4096;

/// How the server listens, stores and limits (validated by the CLI before it gets here).
#[derive(Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// Address to listen on, e.g. `127.0.0.1:8080`.
    pub addr: String,
    /// The run store: a file path, a `sqlite:` URL or a `postgres://` URL.
    pub db: String,
    /// When set, every `/v1` request needs `Authorization: Bearer <api_key>`.
    pub api_key: Option<String>,
    /// Largest accepted request body, in bytes.
    pub body_limit: usize,
    /// Model calls in flight at once over all runs (at least 1).
    pub max_concurrent_model_calls: usize,
    /// How long in-flight runs may go on after SIGTERM/SIGINT before they are interrupted.
    pub shutdown_deadline: Duration,
    /// Serve without an API key on a non-loopback address (refused otherwise).
    pub allow_insecure: bool,
    /// Extra `Host` names (`name` or `name:port`) accepted besides the listen address; the
    /// same list is checked against a request's `Origin`.
    pub allowed_hosts: Vec<String>,
    /// How long a client may take to send a request's headers.
    pub header_read_timeout: Duration,
    /// How long a client may take to send a request's whole body.
    pub body_read_timeout: Duration,
    /// How long a connection may sit with no request in progress and no traffic.
    pub idle_timeout: Duration,
    /// Connections served at once (at least 1).
    pub max_connections: usize,
    /// Runs in flight at once (at least 1).
    pub max_runs: usize,
    /// Requests waiting for a run slot; past it new runs get 503.
    pub max_queued_runs: usize,
    /// How long a request may wait for a run slot before it gets 503.
    pub queue_timeout: Duration,
    /// This instance's id in a shared store; `host:port` when `None`.
    pub instance_id: Option<String>,
    /// How long this instance's runs stay its own without a heartbeat (it heartbeats three
    /// times per lease); others mark them `interrupted` after that.
    pub lease: Duration,
    /// Trace events waiting to be written before runs wait for the store (at least 1).
    pub event_queue: usize,
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
            allow_insecure: false,
            allowed_hosts: Vec::new(),
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_read_timeout: DEFAULT_BODY_READ_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_runs: DEFAULT_MAX_RUNS,
            max_queued_runs: DEFAULT_MAX_QUEUED_RUNS,
            queue_timeout: DEFAULT_QUEUE_TIMEOUT,
            instance_id: None,
            lease: DEFAULT_LEASE,
            event_queue: DEFAULT_EVENT_QUEUE,
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
            .field("allow_insecure", &self.allow_insecure)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("body_read_timeout", &self.body_read_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_connections", &self.max_connections)
            .field("max_runs", &self.max_runs)
            .field("max_queued_runs", &self.max_queued_runs)
            .field("queue_timeout", &self.queue_timeout)
            .field("instance_id", &self.instance_id)
            .field("lease", &self.lease)
            .field("event_queue", &self.event_queue)
            .finish()
    }
}
