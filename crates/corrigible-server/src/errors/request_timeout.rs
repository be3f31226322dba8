use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::error_response;

/// 408: the client did not send the whole request body in time; the connection is closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("body: not received within {} s", .limit.as_secs_f64())]
pub struct RequestTimeout {
    /// How long the body could take.
    pub limit: Duration,
}

impl IntoResponse for RequestTimeout {
    fn into_response(self) -> Response {
        let mut response = error_response(
            StatusCode::REQUEST_TIMEOUT,
            "request_timeout",
            &self.to_string(),
            &[("field", Some("body"))],
        );
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        response
    }
}
