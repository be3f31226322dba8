//! Prometheus metrics: runs by outcome, corrections by category, tool calls by tool and
//! outcome, breaker state per tool, model-call latency.
//!
//! Each server has its own recorder (no global state), so several servers can live in one
//! process (tests do).

use std::sync::{Arc, OnceLock};

use corrigible::TraceEvent;
use corrigible::policy::BreakerState;
use metrics::{
    KeyName, Unit, counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram,
};
use metrics_exporter_otel::OpenTelemetryRecorder;
use opentelemetry::metrics::Meter;

use crate::otel_metrics::{Both, OtelNames, otel_name};
use metrics_exporter_prometheus::{
    Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder,
};

/// Runs by outcome (`satisfied`, `unsatisfied`, `failed`, `interrupted`) and stop reason.
pub const RUNS: &str = "corrigible_runs_total";
/// Runs executing now.
pub const RUNS_IN_FLIGHT: &str = "corrigible_runs_in_flight";
/// Requests waiting for a run slot.
pub const RUNS_QUEUED: &str = "corrigible_runs_queued";
/// Runs refused by admission control, by reason (`at_capacity`, `shutting_down`).
pub const RUNS_REFUSED: &str = "corrigible_runs_refused_total";
/// Model calls waiting for their turn.
pub const MODEL_CALLS_WAITING: &str = "corrigible_model_calls_waiting";
/// Connections closed to make room (`evicted`) or refused with a 503 (`refused`) at
/// `--max-connections`.
pub const CONNECTIONS_SHED: &str = "corrigible_connections_shed_total";
/// Trace events waiting to be written to the store.
pub const EVENTS_QUEUED: &str = "corrigible_events_queued";
/// Corrections by category.
pub const CORRECTIONS: &str = "corrigible_corrections_total";
/// Tool calls by tool and outcome.
pub const TOOL_CALLS: &str = "corrigible_tool_calls_total";
/// Verifications of satisfied answers by outcome: `objected`, `accepted`, `no_report`.
pub const VERIFICATIONS: &str = "corrigible_verifications_total";
/// Chat completions answered by the gateway, by outcome: `passed`, `repaired`, `corrected`,
/// `spent`, `streamed`, `failed`.
pub const GATEWAY_REQUESTS: &str = "corrigible_gateway_requests_total";
/// Gateway replies sent back to the upstream, by category.
pub const GATEWAY_CORRECTIONS: &str = "corrigible_gateway_corrections_total";
/// Local repairs the gateway made to upstream replies, by kind.
pub const GATEWAY_REPAIRS: &str = "corrigible_gateway_repairs_total";
/// Breaker state per tool: 0 closed, 1 half-open, 2 open.
pub const BREAKER_STATE: &str = "corrigible_breaker_state";
/// Model-call latency.
pub const MODEL_CALL_SECONDS: &str = "corrigible_model_call_duration_seconds";

/// Local repairs of replies, by kind.
pub const REPAIRS: &str = "corrigible_repairs_total";
/// Tokens per model call, by `gen_ai_token_type` (`input`, `output`): the GenAI conventions'
/// `gen_ai.client.token.usage`.
pub const GENAI_TOKEN_USAGE: &str = "gen_ai_client_token_usage";
/// Model-call duration, the GenAI conventions' `gen_ai.client.operation.duration`.
pub const GENAI_OPERATION_DURATION: &str = "gen_ai_client_operation_duration_seconds";

/// The GenAI conventions' advised buckets for token counts.
const TOKEN_BUCKETS: [f64; 14] = [
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0, 67108864.0,
];

/// The GenAI conventions' advised buckets for operation durations, in seconds.
const OPERATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

const LATENCY_BUCKETS: [f64; 14] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// The histograms' bucket bounds.
const BUCKETS: [(&str, &[f64; 14]); 3] = [
    (MODEL_CALL_SECONDS, &LATENCY_BUCKETS),
    (GENAI_TOKEN_USAGE, &TOKEN_BUCKETS),
    (GENAI_OPERATION_DURATION, &OPERATION_BUCKETS),
];

/// How a run ended, for [`RUNS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOutcome<'a> {
    /// Finished, satisfied, with this stop reason.
    Satisfied(&'a str),
    /// Finished, unsatisfied, with this stop reason.
    Unsatisfied(&'a str),
    /// Failed with this kind of error (`transport`, `model`, `internal`).
    Failed(&'a str),
    /// Interrupted by a shutdown.
    Interrupted,
}

/// The gauges read from the server at scrape time, so they always agree with `/healthz`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Load {
    /// Runs executing now.
    pub runs_in_flight: usize,
    /// Requests waiting for a run slot.
    pub runs_queued: usize,
    /// Model calls waiting for their turn.
    pub calls_waiting: usize,
    /// Trace events waiting to be written.
    pub events_queued: usize,
}

/// The server's metrics recorder: Prometheus text for `/metrics`, and OpenTelemetry
/// instruments too once [`Metrics::export`] gives it a meter.
#[derive(Clone)]
pub struct Metrics {
    recorder: Arc<PrometheusRecorder>,
    handle: PrometheusHandle,
    exported: Arc<OnceLock<Both>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A fresh recorder with the model-latency histogram's buckets.
    pub fn new() -> Self {
        let mut builder = PrometheusBuilder::new();
        for (name, bounds) in BUCKETS {
            builder = match builder.set_buckets_for_metric(Matcher::Full(name.into()), bounds) {
                Ok(builder) => builder,
                Err(_) => PrometheusBuilder::new(),
            };
        }
        let recorder = builder.build_recorder();
        let handle = recorder.handle();
        let metrics = Self {
            recorder: Arc::new(recorder),
            handle,
            exported: Arc::new(OnceLock::new()),
        };
        metrics.with(describe);
        metrics
    }

    /// Records every metric on `meter` as well, under its OpenTelemetry name, from now on; a
    /// second meter is ignored.
    pub fn export(&self, meter: Meter) {
        let otel = OpenTelemetryRecorder::new(meter);
        for (name, bounds) in BUCKETS {
            otel.set_histogram_bounds(&KeyName::from(otel_name(name)), bounds.to_vec());
        }
        let both = Both {
            prometheus: self.recorder.clone(),
            otel: OtelNames(otel),
        };
        if self.exported.set(both).is_ok() {
            self.with(describe);
        }
    }

    fn with<T>(&self, f: impl FnOnce() -> T) -> T {
        match self.exported.get() {
            Some(both) => metrics::with_local_recorder(both, f),
            None => metrics::with_local_recorder(self.recorder.as_ref(), f),
        }
    }

    /// Counts one gateway request: how it ended, what was sent back, what was repaired.
    pub fn gateway_request(
        &self,
        outcome: &'static str,
        corrections: &[&'static str],
        repairs: &[String],
    ) {
        self.with(|| {
            counter!(GATEWAY_REQUESTS, "outcome" => outcome).increment(1);
            for category in corrections {
                counter!(GATEWAY_CORRECTIONS, "category" => *category).increment(1);
            }
            for kind in repairs {
                counter!(GATEWAY_REPAIRS, "kind" => kind.clone()).increment(1);
            }
        });
    }

    /// Observes one call the gateway made upstream as a GenAI `chat` operation.
    pub fn gateway_call(&self, latency_ms: f64, input_tokens: u64, output_tokens: u64) {
        self.with(|| chat_operation(latency_ms, input_tokens, output_tokens));
    }

    /// Counts what a trace event says.
    pub fn event(&self, event: &TraceEvent) {
        self.with(|| match event {
            TraceEvent::ModelCall { record } => {
                histogram!(MODEL_CALL_SECONDS).record(record.latency_ms / 1000.0);
                chat_operation(record.latency_ms, record.input_tokens, record.output_tokens);
            }
            TraceEvent::Repair { record } => {
                counter!(REPAIRS, "kind" => record.kind.as_str()).increment(1);
            }
            TraceEvent::Rejection { record, .. } => {
                counter!(CORRECTIONS, "category" => record.category.as_str()).increment(1);
            }
            TraceEvent::ToolCall { record } => {
                counter!(TOOL_CALLS, "tool" => record.tool.clone(), "outcome" => record.outcome.as_str())
                    .increment(1);
            }
            TraceEvent::Verification { record } => {
                let outcome = match (&record.error, record.objected) {
                    (Some(_), _) => "no_report",
                    (None, true) => "objected",
                    (None, false) => "accepted",
                };
                counter!(VERIFICATIONS, "outcome" => outcome).increment(1);
            }
            _ => {}
        });
    }

    /// A run was refused before it started.
    pub fn run_refused(&self, why: &crate::errors::ServiceUnavailable) {
        let reason = match why {
            crate::errors::ServiceUnavailable::AtCapacity { .. } => "at_capacity",
            _ => "shutting_down",
        };
        self.with(|| counter!(RUNS_REFUSED, "reason" => reason).increment(1));
    }

    /// A connection was closed to make room (`evicted`) or refused (`refused`).
    pub fn connection_shed(&self, how: &'static str) {
        self.with(|| counter!(CONNECTIONS_SHED, "how" => how).increment(1));
    }

    /// A run ended.
    pub fn run_ended(&self, outcome: RunOutcome<'_>) {
        let (label, reason) = match outcome {
            RunOutcome::Satisfied(reason) => ("satisfied", reason),
            RunOutcome::Unsatisfied(reason) => ("unsatisfied", reason),
            RunOutcome::Failed(kind) => ("failed", kind),
            RunOutcome::Interrupted => ("interrupted", "interrupted"),
        };
        self.with(|| {
            counter!(RUNS, "outcome" => label, "stop_reason" => reason.to_string()).increment(1);
        });
    }

    /// The metrics in Prometheus text format, with the breakers' current states and `load`.
    pub fn render(&self, breakers: &[(String, BreakerState)], load: Load) -> String {
        self.with(|| {
            gauge!(RUNS_IN_FLIGHT).set(load.runs_in_flight as f64);
            gauge!(RUNS_QUEUED).set(load.runs_queued as f64);
            gauge!(MODEL_CALLS_WAITING).set(load.calls_waiting as f64);
            gauge!(EVENTS_QUEUED).set(load.events_queued as f64);
            for (tool, state) in breakers {
                let value = match state {
                    BreakerState::Closed => 0.0,
                    BreakerState::HalfOpen => 1.0,
                    BreakerState::Open => 2.0,
                };
                gauge!(BREAKER_STATE, "tool" => tool.clone()).set(value);
            }
        });
        self.handle.render()
    }
}

/// The GenAI conventions' client metrics of one `chat` operation: its duration and tokens.
fn chat_operation(latency_ms: f64, input_tokens: u64, output_tokens: u64) {
    histogram!(GENAI_OPERATION_DURATION, "gen_ai_operation_name" => "chat")
        .record(latency_ms / 1000.0);
    for (kind, tokens) in [("input", input_tokens), ("output", output_tokens)] {
        histogram!(
            GENAI_TOKEN_USAGE,
            "gen_ai_operation_name" => "chat",
            "gen_ai_token_type" => kind
        )
        .record(tokens as f64);
    }
}

/// Describes every metric to the recorder in use.
fn describe() {
    describe_counter!(RUNS, "Runs by outcome and stop reason.");
    describe_gauge!(RUNS_IN_FLIGHT, "Runs executing now.");
    describe_gauge!(RUNS_QUEUED, "Requests waiting for a run slot.");
    describe_counter!(
        RUNS_REFUSED,
        "Runs refused by admission control, by reason."
    );
    describe_gauge!(MODEL_CALLS_WAITING, "Model calls waiting for their turn.");
    describe_counter!(
        CONNECTIONS_SHED,
        "Connections closed to make room or refused at the connection limit."
    );
    describe_gauge!(
        EVENTS_QUEUED,
        "Trace events waiting to be written to the store."
    );
    describe_counter!(
        CORRECTIONS,
        "Rejections sent back to the model, by category."
    );
    describe_counter!(TOOL_CALLS, "Tool actions by tool and outcome.");
    describe_counter!(
        VERIFICATIONS,
        "Verifications of satisfied answers, by outcome."
    );
    describe_counter!(
        GATEWAY_REQUESTS,
        "Chat completions answered by the gateway, by outcome."
    );
    describe_counter!(
        GATEWAY_CORRECTIONS,
        "Gateway replies sent back to the upstream, by category."
    );
    describe_counter!(
        GATEWAY_REPAIRS,
        "Local repairs of upstream replies by the gateway, by kind."
    );
    describe_gauge!(
        BREAKER_STATE,
        "Circuit breaker state per tool: 0 closed, 1 half-open, 2 open."
    );
    describe_histogram!(MODEL_CALL_SECONDS, Unit::Seconds, "Model-call latency.");
    describe_counter!(REPAIRS, "Local repairs of model replies, by kind.");
    describe_histogram!(
        GENAI_TOKEN_USAGE,
        "Tokens per model call, by token type (gen_ai.client.token.usage)."
    );
    describe_histogram!(
        GENAI_OPERATION_DURATION,
        Unit::Seconds,
        "Model-call duration (gen_ai.client.operation.duration)."
    );
}
