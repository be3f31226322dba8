use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::error_response;
use crate::request_id;
use crate::store::StoreError;

/// 500: the server itself failed (its store, a template, a crashed run task). The cause goes
/// to the log under the request's id; the client gets the id and a fixed message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{cause}")]
pub struct InternalError {
    /// What failed, for the log only.
    pub cause: String,
}

impl InternalError {
    /// An internal error whose cause is `cause`.
    pub fn new(cause: impl Into<String>) -> Self {
        Self {
            cause: cause.into(),
        }
    }
}

impl From<StoreError> for InternalError {
    fn from(error: StoreError) -> Self {
        Self::new(format!("run store: {error}"))
    }
}

impl IntoResponse for InternalError {
    fn into_response(self) -> Response {
        let request_id = request_id::current();
        tracing::error!(request_id, cause = %self.cause, "internal error");
        let message = match &request_id {
            Some(id) => format!("the server failed; its log has the cause under request id {id}"),
            None => "the server failed; its log has the cause".to_string(),
        };
        error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            &message,
            &[("request_id", request_id.as_deref())],
        )
    }
}
