//! The server's metrics as OpenTelemetry instruments, for export over OTLP: the same counts as
//! `/metrics`, named as the GenAI conventions name theirs (`gen_ai.client.token.usage`,
//! `gen_ai.client.operation.duration`, attributes `gen_ai.operation.name` and
//! `gen_ai.token.type`) and ours with dots (`corrigible.corrections`, `corrigible.breaker_state`).

use std::sync::Arc;

use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, HistogramFn, Key, KeyName, Label, Metadata,
    Recorder, SharedString, Unit,
};
use metrics_exporter_otel::OpenTelemetryRecorder;
use metrics_exporter_prometheus::PrometheusRecorder;

/// A recorder that renames metrics and their labels from the Prometheus form to the
/// OpenTelemetry form before it hands them on.
pub(crate) struct OtelNames<R>(pub R);

/// A metric's OpenTelemetry name: the GenAI conventions' own, or ours with a dot after
/// `corrigible` and without the Prometheus unit and `_total` suffixes.
pub(crate) fn otel_name(name: &str) -> String {
    match name {
        "gen_ai_client_token_usage" => "gen_ai.client.token.usage".into(),
        "gen_ai_client_operation_duration_seconds" => "gen_ai.client.operation.duration".into(),
        _ => match name.strip_prefix("corrigible_") {
            Some(rest) => {
                let rest = rest
                    .strip_suffix("_total")
                    .or_else(|| rest.strip_suffix("_seconds"))
                    .unwrap_or(rest);
                format!("corrigible.{rest}")
            }
            None => name.to_string(),
        },
    }
}

/// A label's OpenTelemetry attribute name.
fn otel_label(key: &str) -> &str {
    match key {
        "gen_ai_operation_name" => "gen_ai.operation.name",
        "gen_ai_token_type" => "gen_ai.token.type",
        other => other,
    }
}

fn renamed(key: &Key) -> Key {
    let labels: Vec<Label> = key
        .labels()
        .map(|label| {
            Label::new(
                otel_label(label.key()).to_string(),
                label.value().to_string(),
            )
        })
        .collect();
    Key::from_parts(otel_name(key.name()), labels)
}

fn renamed_name(name: &KeyName) -> KeyName {
    KeyName::from(otel_name(name.as_str()))
}

impl<R: Recorder> Recorder for OtelNames<R> {
    fn describe_counter(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.0
            .describe_counter(renamed_name(&key), unit, description);
    }

    fn describe_gauge(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.0.describe_gauge(renamed_name(&key), unit, description);
    }

    fn describe_histogram(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.0
            .describe_histogram(renamed_name(&key), unit, description);
    }

    fn register_counter(&self, key: &Key, metadata: &Metadata<'_>) -> Counter {
        self.0.register_counter(&renamed(key), metadata)
    }

    fn register_gauge(&self, key: &Key, metadata: &Metadata<'_>) -> Gauge {
        self.0.register_gauge(&renamed(key), metadata)
    }

    fn register_histogram(&self, key: &Key, metadata: &Metadata<'_>) -> Histogram {
        self.0.register_histogram(&renamed(key), metadata)
    }
}

/// Both recorders: the Prometheus one behind `/metrics` and the OpenTelemetry one; every
/// metric goes to each.
pub(crate) struct Both {
    pub prometheus: Arc<PrometheusRecorder>,
    pub otel: OtelNames<OpenTelemetryRecorder>,
}

impl Recorder for Both {
    fn describe_counter(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.prometheus
            .describe_counter(key.clone(), unit, description.clone());
        self.otel.describe_counter(key, unit, description);
    }

    fn describe_gauge(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.prometheus
            .describe_gauge(key.clone(), unit, description.clone());
        self.otel.describe_gauge(key, unit, description);
    }

    fn describe_histogram(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.prometheus
            .describe_histogram(key.clone(), unit, description.clone());
        self.otel.describe_histogram(key, unit, description);
    }

    fn register_counter(&self, key: &Key, metadata: &Metadata<'_>) -> Counter {
        Counter::from_arc(Arc::new(Pair(
            self.prometheus.register_counter(key, metadata),
            self.otel.register_counter(key, metadata),
        )))
    }

    fn register_gauge(&self, key: &Key, metadata: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(Arc::new(Pair(
            self.prometheus.register_gauge(key, metadata),
            self.otel.register_gauge(key, metadata),
        )))
    }

    fn register_histogram(&self, key: &Key, metadata: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(Arc::new(Pair(
            self.prometheus.register_histogram(key, metadata),
            self.otel.register_histogram(key, metadata),
        )))
    }
}

/// One metric of each recorder, updated together.
struct Pair<T>(T, T);

impl CounterFn for Pair<Counter> {
    fn increment(&self, value: u64) {
        self.0.increment(value);
        self.1.increment(value);
    }

    fn absolute(&self, value: u64) {
        self.0.absolute(value);
        self.1.absolute(value);
    }
}

impl GaugeFn for Pair<Gauge> {
    fn increment(&self, value: f64) {
        self.0.increment(value);
        self.1.increment(value);
    }

    fn decrement(&self, value: f64) {
        self.0.decrement(value);
        self.1.decrement(value);
    }

    fn set(&self, value: f64) {
        self.0.set(value);
        self.1.set(value);
    }
}

impl HistogramFn for Pair<Histogram> {
    fn record(&self, value: f64) {
        self.0.record(value);
        self.1.record(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_conventions() {
        assert_eq!(
            otel_name("gen_ai_client_token_usage"),
            "gen_ai.client.token.usage"
        );
        assert_eq!(
            otel_name("gen_ai_client_operation_duration_seconds"),
            "gen_ai.client.operation.duration"
        );
        assert_eq!(
            otel_name("corrigible_corrections_total"),
            "corrigible.corrections"
        );
        assert_eq!(
            otel_name("corrigible_breaker_state"),
            "corrigible.breaker_state"
        );
        assert_eq!(
            otel_name("corrigible_model_call_duration_seconds"),
            "corrigible.model_call_duration"
        );
        let key = Key::from_parts(
            "gen_ai_client_token_usage",
            vec![
                Label::new("gen_ai_token_type", "input"),
                Label::new("tool", "x"),
            ],
        );
        let renamed = renamed(&key);
        let labels: Vec<(&str, &str)> = renamed.labels().map(|l| (l.key(), l.value())).collect();
        assert_eq!(labels, [("gen_ai.token.type", "input"), ("tool", "x")]);
    }
}
