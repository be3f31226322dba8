use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::error_response;

/// 502: the model could not be used — its transport failed (`kind: "transport"`) or it is
/// misconfigured (`kind: "model"`). The run is stored as `failed`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct BadGateway {
    /// `transport` or `model`.
    pub kind: &'static str,
    /// What failed.
    pub message: String,
    /// The run that failed.
    pub run_id: String,
}

impl IntoResponse for BadGateway {
    fn into_response(self) -> Response {
        error_response(
            StatusCode::BAD_GATEWAY,
            self.kind,
            &self.message,
            &[("run_id", Some(&self.run_id))],
        )
    }
}
