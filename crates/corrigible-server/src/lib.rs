//! corrigible-server: the HTTP API, the run store and the dashboard.
//!
//! - [`AppState`] holds an [`Agent`](corrigible::Agent) (tools, policy, protocol, breakers
//!   shared by all runs), a [`ModelFactory`] called once per run, and a [`RunStore`].
//! - [`router`] is the API (`POST /v1/runs`, `GET /v1/runs`, `GET /v1/runs/{id}`,
//!   `GET /v1/runs/{id}/events`), `/healthz`, `/metrics`, `/openapi.json` and the dashboard
//!   at `/`; [`serve`] binds it and shuts down gracefully on SIGTERM/SIGINT.
//! - [`open_store`] opens the SQLite store (WAL, embedded migrations), or with the `postgres`
//!   feature a Postgres store that several instances share, behind the [`RunStore`] trait
//!   (over TLS to a host that is not loopback, unless [`StoreOptions`] allow clear text). A
//!   run is stored when it starts, its events before any client sees them, its report when it
//!   ends.
//! - Without an API key the server listens only on loopback; it checks `Host` and `Origin`,
//!   takes only JSON bodies, sends security headers, bounds connections and their timeouts,
//!   and logs one line per request (see `docs/service.md`).
//!
//! ```no_run
//! # async fn demo(agent: corrigible::Agent) -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use corrigible_server::{AppState, ServerConfig, open_store, replay_factory, serve};
//!
//! let config = ServerConfig { addr: "127.0.0.1:8080".into(), ..ServerConfig::default() };
//! let store = open_store(&config.db).await?;
//! let replay = corrigible_models::ReplayModel::from_file("demo.jsonl")?;
//! let state = AppState::new(Arc::new(agent), replay_factory(replay), store, &config);
//! serve(config, state).await?;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod access_log;
mod auth;
mod body;
mod config;
mod connections;
mod dashboard;
pub mod errors;
mod gateway;
mod lease;
pub mod metrics;
mod models;
mod open_connections;
mod origin;
mod otel_metrics;
mod request;
mod request_id;
mod routes;
mod runner;
mod scheduler;
mod security_headers;
mod server;
mod state;
pub mod store;
mod traceparent;

pub use config::{
    DEFAULT_ADDR, DEFAULT_BODY_LIMIT, DEFAULT_BODY_READ_TIMEOUT, DEFAULT_DB, DEFAULT_EVENT_QUEUE,
    DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_LEASE,
    DEFAULT_MAX_CONCURRENT_MODEL_CALLS, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_QUEUED_RUNS,
    DEFAULT_MAX_RUNS, DEFAULT_QUEUE_TIMEOUT, DEFAULT_SHUTDOWN_DEADLINE, ServerConfig,
};
pub use errors::ApiError;
pub use gateway::{DEFAULT_MAX_CORRECTIONS, Gateway, ModelUpstream, Upstream, Verification};
pub use models::{LimitedModel, ModelFactory, factory_for_spec, replay_factory, shared_factory};
pub use request::{RunLimits, RunPlan, RunRequest};
pub use routes::router;
pub use scheduler::{CallPermit, CallScheduler};
pub use server::{
    ServerError, bind, check_config, serve, serve_listener, serve_until, shutdown_signal,
};
pub use state::AppState;
pub use store::{RunStore, StoreError, StoreOptions, open_store, open_store_with};

/// The OpenAPI document served at `/openapi.json`.
pub const OPENAPI_JSON: &str = include_str!("openapi.json");
