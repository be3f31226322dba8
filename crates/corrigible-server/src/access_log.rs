//! One log line per request, through tower-http's [`TraceLayer`]: method, path, request id,
//! status, latency and, when the request concerns a run, its id. 5xx lines are at `ERROR`, the
//! others at `INFO`; a request whose client went away before its response gets a line at
//! `INFO` saying so ([`log_aborted`]).

use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use tower_http::classify::{ServerErrorsAsFailures, SharedClassifier};
use tower_http::trace::TraceLayer;
use tracing::Span;

/// The run a response is about, set by handlers that start runs.
#[derive(Debug, Clone)]
pub(crate) struct RunIdExt(pub(crate) String);

/// The layer that writes the lines.
pub(crate) type AccessLog = TraceLayer<
    SharedClassifier<ServerErrorsAsFailures>,
    fn(&Request) -> Span,
    (),
    fn(&Response, Duration, &Span),
    (),
    (),
    (),
>;

/// The access log: a span per request carrying its method, path and run id, and one event
/// in it when the response is ready; nothing else (no line at the request, none at failure).
pub(crate) fn layer() -> AccessLog {
    TraceLayer::new_for_http()
        .make_span_with(request_span as fn(&Request) -> Span)
        .on_request(())
        .on_response(log_response as fn(&Response, Duration, &Span))
        .on_body_chunk(())
        .on_eos(())
        .on_failure(())
}

/// The run id in a path such as `/v1/runs/{id}` or `/v1/runs/{id}/events`.
fn run_id_in(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("/v1/runs/")?;
    let id = rest.split('/').next()?;
    (!id.is_empty()).then_some(id)
}

/// At `ERROR`, so that the line of a 5xx keeps its method and path whatever the filter lets
/// through; the event in it chooses the line's level.
fn request_span(request: &Request) -> Span {
    let path = request.uri().path();
    tracing::error_span!(
        "request",
        method = %request.method(),
        path,
        request_id = request_id_of(request),
        run_id = run_id_in(path),
    )
}

fn request_id_of(request: &Request) -> Option<&str> {
    request
        .headers()
        .get(crate::request_id::HEADER)
        .and_then(|v| v.to_str().ok())
}

/// Logs a request that was dropped before its response was ready: the client closed or reset
/// its connection, or the server cut it off.
pub(crate) async fn log_aborted(request: Request, next: Next) -> Response {
    let mut pending = Pending {
        method: request.method().to_string(),
        path: request.uri().path().to_string(),
        request_id: request_id_of(&request).map(str::to_string),
        started: Instant::now(),
        done: false,
    };
    let response = next.run(request).await;
    pending.done = true;
    response
}

/// A request whose response is not ready yet.
struct Pending {
    method: String,
    path: String,
    request_id: Option<String>,
    started: Instant,
    done: bool,
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.done {
            let latency_ms = self.started.elapsed().as_secs_f64() * 1000.0;
            tracing::info!(
                method = %self.method,
                path = %self.path,
                request_id = self.request_id.as_deref(),
                run_id = run_id_in(&self.path),
                latency_ms,
                "request aborted before its response"
            );
        }
    }
}

fn log_response(response: &Response, latency: Duration, span: &Span) {
    if let Some(RunIdExt(id)) = response.extensions().get::<RunIdExt>() {
        span.record("run_id", id.as_str());
    }
    let status = response.status().as_u16();
    let latency_ms = latency.as_secs_f64() * 1000.0;
    if status >= 500 {
        tracing::error!(parent: span, status, latency_ms, "request");
    } else {
        tracing::info!(parent: span, status, latency_ms, "request");
    }
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
