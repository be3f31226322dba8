//! Serving: bind, recover runs a crash left in flight, serve, and shut down gracefully.

use std::future::Future;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::config::ServerConfig;
use crate::routes::router;
use crate::state::AppState;
use crate::store::StoreError;

/// How long open connections may go on once the runs are done or interrupted.
const CONNECTION_GRACE: Duration = Duration::from_secs(5);

/// The server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
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
    let listener = TcpListener::bind(&config.addr)
        .await
        .map_err(|source| ServerError::Bind {
            addr: config.addr.clone(),
            source,
        })?;
    serve_listener(listener, state, config.shutdown_deadline, signal).await
}

/// Serves on an already bound listener (tests bind port 0) until `signal`, with the same
/// start-up recovery and graceful shutdown as [`serve`].
pub async fn serve_listener(
    listener: TcpListener,
    state: AppState,
    shutdown_deadline: Duration,
    signal: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let recovered = state.store().interrupt_in_flight().await?;
    if recovered > 0 {
        tracing::warn!(
            runs = recovered,
            "runs left in flight by a crash marked interrupted"
        );
    }
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "corrigible server listening");
    }
    let (stop_tx, stop_rx) = watch::channel(false);
    let draining = state.clone();
    tokio::spawn(async move {
        signal.await;
        tracing::info!("shutting down: no new runs");
        draining.shutdown(shutdown_deadline).await;
        let _ = stop_tx.send(true);
    });
    let server = axum::serve(listener, router(state.clone()))
        .with_graceful_shutdown(stopped(stop_rx.clone()));
    tokio::select! {
        result = server => result?,
        () = async { stopped(stop_rx).await; tokio::time::sleep(CONNECTION_GRACE).await } => {
            tracing::warn!("connections still open after the grace period; closing them");
        }
    }
    tracing::info!("server stopped");
    Ok(())
}

async fn stopped(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|stopped| *stopped).await;
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
