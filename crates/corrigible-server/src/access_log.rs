//! One log line per request: method, path, status, latency and, when the request concerns a
//! run, its id. 5xx lines are at `ERROR`, the others at `INFO`.

use std::time::Instant;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;

/// The run a response is about, set by handlers that start runs.
#[derive(Debug, Clone)]
pub(crate) struct RunIdExt(pub(crate) String);

/// The run id in a path such as `/v1/runs/{id}` or `/v1/runs/{id}/events`.
fn run_id_in(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("/v1/runs/")?;
    let id = rest.split('/').next()?;
    (!id.is_empty()).then_some(id)
}

/// Logs the request once its response is ready.
pub(crate) async fn log_request(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let response = next.run(request).await;
    let run_id = response
        .extensions()
        .get::<RunIdExt>()
        .map(|r| r.0.as_str())
        .or_else(|| run_id_in(&path));
    let status = response.status().as_u16();
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    if status >= 500 {
        tracing::error!(%method, path, status, latency_ms, run_id, "request");
    } else {
        tracing::info!(%method, path, status, latency_ms, run_id, "request");
    }
    response
}

#[cfg(test)]
mod tests {
    use super::run_id_in;

    #[test]
    fn finds_the_run_id_in_run_paths() {
        assert_eq!(run_id_in("/v1/runs/abc"), Some("abc"));
        assert_eq!(run_id_in("/v1/runs/abc/events"), Some("abc"));
        assert_eq!(run_id_in("/v1/runs"), None);
        assert_eq!(run_id_in("/v1/runs/"), None);
        assert_eq!(run_id_in("/healthz"), None);
    }
}
