//! Serving: bind, recover runs a crash left in flight, serve, and shut down gracefully.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::middleware::from_fn_with_state;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::config::ServerConfig;
use crate::connections::{ConnectionLimits, serve_connections};
use crate::origin::{HostPolicy, check_host};
use crate::routes::router;
use crate::state::AppState;
use crate::store::StoreError;
use crate::{access_log, lease, request_id, security_headers};

/// How long open connections may go on once the runs are done or interrupted.
const CONNECTION_GRACE: Duration = Duration::from_secs(5);

/// The server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address.
        addr: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A non-loopback address without an API key, and no explicit opt-in.
    #[error(
        "refusing to serve on {addr} without an API key: anyone who can reach it could start \
         runs. Set --api-key (or CORRIGIBLE_API_KEY), listen on 127.0.0.1, or pass \
         --insecure-no-auth to accept the risk"
    )]
    Insecure {
        /// The address.
        addr: String,
    },
    /// An API key that is empty or only whitespace.
    #[error("the API key is empty: set a real key, or leave --api-key out")]
    EmptyApiKey,
    /// Serving failed.
    #[error("server error: {0}")]
    Io(#[from] std::io::Error),
    /// The run store failed at start-up.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Serves on `config.addr` until SIGTERM or SIGINT, then shuts down gracefully: new runs get
/// 503, runs in flight may finish until `config.shutdown_deadline`, the rest are stored as
/// `interrupted`. Runs that a crash left `running` in the store are marked `interrupted` first.
pub async fn serve(config: ServerConfig, state: AppState) -> Result<(), ServerError> {
    serve_until(config, state, shutdown_signal()).await
}

/// [`serve`], shutting down when `signal` completes instead of on SIGTERM/SIGINT.
pub async fn serve_until(
    config: ServerConfig,
    state: AppState,
    signal: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let listener = bind(&config).await?;
    serve_listener(listener, state, config, signal).await
}

/// Checks `config` ([`check_config`]) and binds its address, so that a caller can say where
/// it serves only once the server can.
pub async fn bind(config: &ServerConfig) -> Result<TcpListener, ServerError> {
    check_config(config).await?;
    TcpListener::bind(&config.addr)
        .await
        .map_err(|source| ServerError::Bind {
            addr: config.addr.clone(),
            source,
        })
}

/// Refuses an empty API key, and a non-loopback address without an API key unless
/// `allow_insecure`; cheap, so a command line can check before it loads a model.
pub async fn check_config(config: &ServerConfig) -> Result<(), ServerError> {
    check_key(config)?;
    if let Ok(addrs) = tokio::net::lookup_host(&config.addr).await {
        for addr in addrs {
            check_exposure(addr, config)?;
        }
    }
    Ok(())
}

fn check_key(config: &ServerConfig) -> Result<(), ServerError> {
    match &config.api_key {
        Some(key) if key.trim().is_empty() => Err(ServerError::EmptyApiKey),
        _ => Ok(()),
    }
}

/// Refuses a non-loopback address when no API key is set, unless `allow_insecure`.
fn check_exposure(addr: SocketAddr, config: &ServerConfig) -> Result<(), ServerError> {
    if addr.ip().is_loopback() || config.api_key.is_some() || config.allow_insecure {
        return Ok(());
    }
    Err(ServerError::Insecure {
        addr: addr.to_string(),
    })
}

/// Serves on an already bound listener (tests bind port 0) until `signal`, with the same
/// checks, limits, start-up recovery and graceful shutdown as [`serve`] (`config.addr` is
/// ignored: the listener's address is used).
pub async fn serve_listener(
    listener: TcpListener,
    state: AppState,
    config: ServerConfig,
    signal: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let local = listener.local_addr()?;
    check_key(&config)?;
    check_exposure(local, &config)?;
    let instance = config
        .instance_id
        .clone()
        .unwrap_or_else(|| lease::default_instance_id(local));
    state.runner.set_instance(&instance);
    let recovered = lease::start(state.store().as_ref(), &instance, config.lease).await?;
    if recovered > 0 {
        tracing::warn!(
            runs = recovered,
            "runs left in flight by a crash marked interrupted"
        );
    }
    let heartbeat = lease::spawn(state.store().clone(), instance.clone(), config.lease);
    tracing::info!(addr = %local, instance, "corrigible server listening");
    let (stop_tx, stop_rx) = watch::channel(false);
    let draining = state.clone();
    let shutdown_deadline = config.shutdown_deadline;
    tokio::spawn(async move {
        signal.await;
        tracing::info!("shutting down: no new runs");
        draining.shutdown(shutdown_deadline).await;
        let _ = stop_tx.send(true);
    });
    let hosts = Arc::new(HostPolicy::new(local, &config.allowed_hosts));
    let metrics = state.metrics.clone();
    let app = router(state)
        .layer(from_fn_with_state(hosts, check_host))
        // Again outside the `Host` check, so that its 403s carry the headers too.
        .layer(axum::middleware::from_fn(security_headers::add))
        .layer(access_log::layer())
        .layer(axum::middleware::from_fn(access_log::log_aborted))
        .layer(axum::middleware::from_fn(request_id::assign));
    let limits = ConnectionLimits {
        header_read_timeout: config.header_read_timeout,
        idle_timeout: config.idle_timeout,
        max_connections: config.max_connections,
        grace: CONNECTION_GRACE,
    };
    serve_connections(listener, app, limits, metrics, stop_rx).await;
    heartbeat.abort();
    tracing::info!("server stopped");
    Ok(())
}

/// Completes on SIGINT (Ctrl-C) or, on Unix, SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}
