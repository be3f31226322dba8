use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};

use super::error_response;

/// 405: the route exists but not with this method.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("method {method} is not allowed on {path}")]
pub struct MethodNotAllowed {
    /// The method used.
    pub method: Method,
    /// The path.
    pub path: String,
}

impl IntoResponse for MethodNotAllowed {
    fn into_response(self) -> Response {
        error_response(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            &self.to_string(),
            &[],
        )
    }
}
