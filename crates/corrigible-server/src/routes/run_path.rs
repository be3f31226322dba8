//! The `{id}` of a run route, with a JSON 400 when it is not valid (e.g. not UTF-8).

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;

use crate::errors::{ApiError, BadRequest};

/// A run id taken from the path.
pub(super) struct RunPath(pub(super) String);

impl<S: Send + Sync> FromRequestParts<S> for RunPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<String>::from_request_parts(parts, state).await {
            Ok(Path(id)) => Ok(Self(id)),
            Err(rejection) => Err(BadRequest::new("id", rejection.body_text()).into()),
        }
    }
}
