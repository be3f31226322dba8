use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::error_response;

/// 400: the request is malformed, has unknown fields, or names something unknown. The message
/// starts with the field at fault (`prompt: must not be empty`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct BadRequest {
    /// The field at fault (`prompt`, `limits.max_actions`, `body`, …).
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

impl BadRequest {
    /// A bad request about `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl IntoResponse for BadRequest {
    fn into_response(self) -> Response {
        error_response(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            &self.to_string(),
            &[("field", Some(&self.field))],
        )
    }
}
