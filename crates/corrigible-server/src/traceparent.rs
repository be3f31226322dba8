//! A client's W3C `traceparent`: the remote span that a request's spans continue.

use axum::http::HeaderMap;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_http::HeaderExtractor;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// A server span for `route` whose parent is the client's span, when the request carries a
/// valid `traceparent` (and `tracestate`); `None` otherwise, so the run's spans start a trace
/// of their own.
pub(crate) fn continued(headers: &HeaderMap, route: &'static str) -> Option<Span> {
    headers.get("traceparent")?;
    let context = TraceContextPropagator::new().extract(&HeaderExtractor(headers));
    if !context.span().span_context().is_valid() {
        return None;
    }
    let span = tracing::info_span!(
        "request",
        otel.name = route,
        otel.kind = "server",
        http.route = route,
    );
    // Without an OpenTelemetry layer there is nothing to parent: the span is a plain one.
    let _ = span.set_parent(context);
    Some(span)
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    #[test]
    fn only_a_valid_traceparent_is_continued() {
        let mut headers = HeaderMap::new();
        assert!(continued(&headers, "POST /v1/runs").is_none());
        headers.insert("traceparent", HeaderValue::from_static("garbage"));
        assert!(continued(&headers, "POST /v1/runs").is_none());
        headers.insert(
            "traceparent",
            HeaderValue::from_static("00-00000000000000000000000000000000-0000000000000000-01"),
        );
        assert!(
            continued(&headers, "POST /v1/runs").is_none(),
            "all-zero ids are invalid"
        );
        headers.insert(
            "traceparent",
            HeaderValue::from_static("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
        );
        assert!(continued(&headers, "POST /v1/runs").is_some());
    }
}
