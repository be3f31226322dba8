//! Bearer-token authentication of the `/v1` routes, compared in constant time.

use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use crate::errors::Unauthorized;
use crate::state::AppState;

/// Lets a request through when no API key is configured, or when its bearer token is the key.
pub(crate) async fn require_api_key(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    match &state.api_key {
        None => next.run(request).await,
        Some(key) => match check(request.headers().get(header::AUTHORIZATION), key) {
            Ok(()) => next.run(request).await,
            Err(e) => e.into_response(),
        },
    }
}

fn check(header: Option<&axum::http::HeaderValue>, key: &str) -> Result<(), Unauthorized> {
    let value = header.ok_or(Unauthorized::Missing)?.as_bytes();
    let token = value
        .get(..7)
        .filter(|scheme| scheme.eq_ignore_ascii_case(b"bearer "))
        .and_then(|_| value.get(7..))
        .ok_or(Unauthorized::Missing)?;
    if bool::from(token.ct_eq(key.as_bytes())) {
        Ok(())
    } else {
        Err(Unauthorized::Wrong)
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    #[test]
    fn checks_the_bearer_token() {
        let ok = HeaderValue::from_static("Bearer s3cret");
        assert_eq!(check(Some(&ok), "s3cret"), Ok(()));
        let lower = HeaderValue::from_static("bearer s3cret");
        assert_eq!(check(Some(&lower), "s3cret"), Ok(()));
        let wrong = HeaderValue::from_static("Bearer s3cres");
        assert_eq!(check(Some(&wrong), "s3cret"), Err(Unauthorized::Wrong));
        let short = HeaderValue::from_static("Bearer s3");
        assert_eq!(check(Some(&short), "s3cret"), Err(Unauthorized::Wrong));
        let basic = HeaderValue::from_static("Basic czNjcmV0");
        assert_eq!(check(Some(&basic), "s3cret"), Err(Unauthorized::Missing));
        assert_eq!(check(None, "s3cret"), Err(Unauthorized::Missing));
    }
}
