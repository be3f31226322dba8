//! A request id on every request: the client's `X-Request-Id` when it is a plain token, else
//! a new one. It is sent back on the response, logged with the request, and carried by a 500's
//! body so that a client's report finds the cause in the log.

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;

/// The header that carries the id both ways.
pub(crate) const HEADER: &str = "x-request-id";

/// Longest client-chosen id kept.
const MAX_LEN: usize = 64;

tokio::task_local! {
    static CURRENT: String;
}

/// The id of the request being handled, inside a handler or a response conversion.
pub(crate) fn current() -> Option<String> {
    CURRENT.try_with(Clone::clone).ok()
}

/// The client's id when it is 1 to 64 of `A-Z a-z 0-9 . _ -`, else a fresh UUIDv7.
fn chosen(request: &Request) -> String {
    request
        .headers()
        .get(HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|id| {
            (1..=MAX_LEN).contains(&id.len())
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        })
        .map_or_else(|| uuid::Uuid::now_v7().simple().to_string(), str::to_string)
}

/// Sets the request's id on the request (for the access log), for the handler, and on the
/// response.
pub(crate) async fn assign(mut request: Request, next: Next) -> Response {
    let id = chosen(&request);
    let value = HeaderValue::from_str(&id).ok();
    if let Some(value) = &value {
        request.headers_mut().insert(HEADER, value.clone());
    }
    let mut response = CURRENT.scope(id, next.run(request)).await;
    if let Some(value) = value {
        response.headers_mut().insert(HEADER, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(id: Option<&str>) -> String {
        let mut request = Request::new(axum::body::Body::empty());
        if let Some(id) = id {
            request
                .headers_mut()
                .insert(HEADER, HeaderValue::from_str(id).unwrap());
        }
        chosen(&request)
    }

    #[test]
    fn keeps_a_plain_client_id_and_replaces_anything_else() {
        assert_eq!(with(Some("req-42.a_b")), "req-42.a_b");
        for odd in ["", "a b", "x\"y", &"z".repeat(65)] {
            let id = with(Some(odd));
            assert_ne!(id, odd);
            assert_eq!(id.len(), 32, "a fresh simple UUID");
        }
        assert_eq!(with(None).len(), 32);
    }
}
