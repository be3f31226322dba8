use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::error_response;
use crate::store::StoreError;

/// 500: the server itself failed (its store, a template, a crashed run task).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct InternalError {
    /// What failed.
    pub message: String,
}

impl InternalError {
    /// An internal error saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl From<StoreError> for InternalError {
    fn from(error: StoreError) -> Self {
        tracing::error!(%error, "run store failed");
        Self::new(error.to_string())
    }
}

impl IntoResponse for InternalError {
    fn into_response(self) -> Response {
        error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            &self.message,
            &[],
        )
    }
}
