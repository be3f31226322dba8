use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::error_response;

/// 401: an API key is configured and the request's bearer token is missing or wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unauthorized {
    /// No `Authorization: Bearer …` header.
    #[error("missing bearer token: send `Authorization: Bearer <API key>`")]
    Missing,
    /// A token that is not the configured key.
    #[error("wrong bearer token")]
    Wrong,
}

impl IntoResponse for Unauthorized {
    fn into_response(self) -> Response {
        let mut response = error_response(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            &self.to_string(),
            &[],
        );
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"corrigible\""),
        );
        response
    }
}
