use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::error_response;

/// 415: a request body that is not `application/json`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("body: Content-Type must be application/json, not `{0}`")]
pub struct UnsupportedMediaType(pub String);

impl IntoResponse for UnsupportedMediaType {
    fn into_response(self) -> Response {
        error_response(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            &self.to_string(),
            &[("field", Some("body"))],
        )
    }
}
