//! The API's errors: one named type per 4xx/5xx case, each turning itself into a response
//! with the body `{"error": {"kind": "…", "message": "…", …}}`.

mod bad_gateway;
mod bad_request;
mod forbidden;
mod internal;
mod method_not_allowed;
mod not_found;
mod payload_too_large;
mod request_timeout;
mod unauthorized;
mod unavailable;
mod unsupported_media_type;

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

pub use bad_gateway::BadGateway;
pub use bad_request::BadRequest;
pub use forbidden::Forbidden;
pub use internal::InternalError;
pub use method_not_allowed::MethodNotAllowed;
pub use not_found::NotFound;
pub use payload_too_large::PayloadTooLarge;
pub use request_timeout::RequestTimeout;
pub use unauthorized::Unauthorized;
pub use unavailable::ServiceUnavailable;
pub use unsupported_media_type::UnsupportedMediaType;

/// Any error an API route can answer with.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400: the request is malformed or names something unknown.
    #[error(transparent)]
    BadRequest(#[from] BadRequest),
    /// 401: an API key is configured and the bearer token is missing or wrong.
    #[error(transparent)]
    Unauthorized(#[from] Unauthorized),
    /// 403: the `Host` or `Origin` is not allowed.
    #[error(transparent)]
    Forbidden(#[from] Forbidden),
    /// 404: no such run or route.
    #[error(transparent)]
    NotFound(#[from] NotFound),
    /// 405: the route does not take this method.
    #[error(transparent)]
    MethodNotAllowed(#[from] MethodNotAllowed),
    /// 408: the body did not arrive in time.
    #[error(transparent)]
    RequestTimeout(#[from] RequestTimeout),
    /// 413: the body is larger than the limit.
    #[error(transparent)]
    PayloadTooLarge(#[from] PayloadTooLarge),
    /// 415: the body is not JSON.
    #[error(transparent)]
    UnsupportedMediaType(#[from] UnsupportedMediaType),
    /// 500: the server failed (e.g. its store).
    #[error(transparent)]
    Internal(#[from] InternalError),
    /// 502: the model could not be reached.
    #[error(transparent)]
    BadGateway(#[from] BadGateway),
    /// 503: the server is shutting down or at capacity.
    #[error(transparent)]
    Unavailable(#[from] ServiceUnavailable),
}

impl From<crate::store::StoreError> for ApiError {
    fn from(error: crate::store::StoreError) -> Self {
        ApiError::Internal(InternalError::from(error))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match self {
            ApiError::BadRequest(e) => e.into_response(),
            ApiError::Unauthorized(e) => e.into_response(),
            ApiError::Forbidden(e) => e.into_response(),
            ApiError::NotFound(e) => e.into_response(),
            ApiError::MethodNotAllowed(e) => e.into_response(),
            ApiError::RequestTimeout(e) => e.into_response(),
            ApiError::PayloadTooLarge(e) => e.into_response(),
            ApiError::UnsupportedMediaType(e) => e.into_response(),
            ApiError::Internal(e) => e.into_response(),
            ApiError::BadGateway(e) => e.into_response(),
            ApiError::Unavailable(e) => e.into_response(),
        }
    }
}

/// The JSON error body: `{"error": {"kind": kind, "message": message, ...extra}}`.
pub(crate) fn error_response(
    status: StatusCode,
    kind: &str,
    message: &str,
    extra: &[(&str, Option<&str>)],
) -> Response {
    let mut error = Map::new();
    error.insert("kind".into(), Value::from(kind));
    error.insert("message".into(), Value::from(message));
    for (key, value) in extra {
        if let Some(value) = value {
            error.insert((*key).into(), Value::from(*value));
        }
    }
    let mut body = Map::new();
    body.insert("error".into(), Value::Object(error));
    (status, Json(Value::Object(body))).into_response()
}
