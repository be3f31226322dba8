use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::error_response;

/// 413: the request body is larger than the configured limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("body: larger than the limit of {limit} bytes")]
pub struct PayloadTooLarge {
    /// The limit in bytes.
    pub limit: usize,
}

impl IntoResponse for PayloadTooLarge {
    fn into_response(self) -> Response {
        error_response(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            &self.to_string(),
            &[("field", Some("body"))],
        )
    }
}
