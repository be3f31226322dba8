use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::error_response;

/// 404: no such run, or no such route.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotFound {
    /// No run has this id.
    #[error("no run with id `{0}`")]
    Run(String),
    /// No route matches.
    #[error("no route for {0}")]
    Route(String),
}

impl IntoResponse for NotFound {
    fn into_response(self) -> Response {
        error_response(StatusCode::NOT_FOUND, "not_found", &self.to_string(), &[])
    }
}
