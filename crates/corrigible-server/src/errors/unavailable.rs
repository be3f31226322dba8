use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::error_response;

/// 503: the server is shutting down and takes no new runs, or a run was interrupted by the
/// shutdown deadline.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServiceUnavailable {
    /// No new runs are accepted.
    #[error("the server is shutting down and accepts no new runs; retry on another instance")]
    ShuttingDown,
    /// The run was still in flight at the shutdown deadline.
    #[error("run `{0}` was interrupted: the server shut down before it finished")]
    Interrupted(String),
}

impl IntoResponse for ServiceUnavailable {
    fn into_response(self) -> Response {
        let (kind, run_id) = match &self {
            ServiceUnavailable::ShuttingDown => ("shutting_down", None),
            ServiceUnavailable::Interrupted(id) => ("interrupted", Some(id.as_str())),
        };
        error_response(
            StatusCode::SERVICE_UNAVAILABLE,
            kind,
            &self.to_string(),
            &[("run_id", run_id)],
        )
    }
}
