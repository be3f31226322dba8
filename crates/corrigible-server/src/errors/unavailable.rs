use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::error_response;

/// Seconds a client is told to wait before it retries a run refused at capacity.
pub const RETRY_AFTER_SECS: u64 = 1;

/// 503: the server is shutting down, is at capacity (runs or connections), or a run was interrupted by the shutdown
/// deadline.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServiceUnavailable {
    /// No new runs are accepted.
    #[error("the server is shutting down and accepts no new runs; retry on another instance")]
    ShuttingDown,
    /// Every run slot is taken and the queue is full, or no slot came free in time.
    #[error(
        "the server is at capacity ({why}); retry after {} s",
        RETRY_AFTER_SECS
    )]
    AtCapacity {
        /// Which bound was reached.
        why: &'static str,
    },
    /// Every open connection has a request or a response in progress.
    #[error("every connection is busy; retry after {} s", RETRY_AFTER_SECS)]
    TooManyConnections,
    /// The run was still in flight at the shutdown deadline.
    #[error("run `{0}` was interrupted: the server shut down before it finished")]
    Interrupted(String),
}

impl IntoResponse for ServiceUnavailable {
    fn into_response(self) -> Response {
        let (kind, run_id) = match &self {
            ServiceUnavailable::ShuttingDown => ("shutting_down", None),
            ServiceUnavailable::AtCapacity { .. } => ("at_capacity", None),
            ServiceUnavailable::TooManyConnections => ("too_many_connections", None),
            ServiceUnavailable::Interrupted(id) => ("interrupted", Some(id.as_str())),
        };
        let mut response = error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            kind,
            &self.to_string(),
            &[("run_id", run_id)],
        );
        if !matches!(self, ServiceUnavailable::Interrupted(_)) {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
        }
        response
    }
}
