//! Logs on stderr and, when the OpenTelemetry environment names an endpoint, the run's spans
//! exported over OTLP/HTTP (docs/telemetry.md).

use std::io::IsTerminal;

use opentelemetry::metrics::{Meter, MeterProvider as _};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{MetricExporter, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Level;
use tracing_subscriber::filter::{EnvFilter, Targets};
use tracing_subscriber::prelude::*;

use crate::config::TelemetryConfig;

/// What is exported: spans or metrics, each with its own variables.
#[derive(Debug, Clone, Copy)]
enum Signal {
    Traces,
    Metrics,
}

impl Signal {
    /// The variables that name its endpoint, the signal's own first.
    fn endpoint_vars(self) -> [&'static str; 2] {
        match self {
            Signal::Traces => [
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "OTEL_EXPORTER_OTLP_ENDPOINT",
            ],
            Signal::Metrics => [
                "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
                "OTEL_EXPORTER_OTLP_ENDPOINT",
            ],
        }
    }

    /// The variable that turns its exporter off with `none`.
    fn exporter_var(self) -> &'static str {
        match self {
            Signal::Traces => "OTEL_TRACES_EXPORTER",
            Signal::Metrics => "OTEL_METRICS_EXPORTER",
        }
    }

    /// The path appended to a base endpoint, as the SDK does for `OTEL_EXPORTER_OTLP_ENDPOINT`.
    fn path(self) -> &'static str {
        match self {
            Signal::Traces => "/v1/traces",
            Signal::Metrics => "/v1/metrics",
        }
    }
}

/// The process's subscriber and meter; `shutdown` flushes what is not yet exported.
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
    meters: Option<SdkMeterProvider>,
}

impl Telemetry {
    /// Logs filtered by `CORRIGIBLE_LOG` (else `default_log`) on stderr, and the engine's spans
    /// (and, for a server, its metrics) to OTLP/HTTP when the standard variables or the file's
    /// `[telemetry]` configure it.
    pub fn init(default_log: &str, file: &TelemetryConfig, serves: bool) -> Self {
        let logs = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
            .with_filter(
                EnvFilter::try_from_env("CORRIGIBLE_LOG")
                    .unwrap_or_else(|_| EnvFilter::new(default_log)),
            );
        let provider = provider(file);
        let meters = if serves { meters(file) } else { None };
        let spans = provider.as_ref().map(|provider| {
            tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("corrigible"))
                .with_filter(Targets::new().with_target("corrigible", Level::INFO))
        });
        tracing_subscriber::registry().with(logs).with(spans).init();
        Self { provider, meters }
    }

    /// The meter the server records its metrics on, when metrics are exported.
    pub fn meter(&self) -> Option<Meter> {
        self.meters
            .as_ref()
            .map(|meters| meters.meter("corrigible"))
    }

    /// Exports what is left, within the exporter's timeout.
    pub fn shutdown(self) {
        if let Some(provider) = self.provider
            && let Err(error) = provider.shutdown()
        {
            eprintln!("warning: OpenTelemetry export did not finish: {error}");
        }
        if let Some(meters) = self.meters
            && let Err(error) = meters.shutdown()
        {
            eprintln!("warning: OpenTelemetry metrics export did not finish: {error}");
        }
    }
}

/// Whether the spans should carry messages, tool arguments and results: the GenAI
/// instrumentations' opt-in, `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` (`true` or
/// `false`), else the file's `capture_content`.
pub fn captures_content(file: &TelemetryConfig) -> bool {
    match std::env::var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT") {
        Ok(value) if !value.trim().is_empty() => value.trim().eq_ignore_ascii_case("true"),
        _ => file.capture_content.unwrap_or(false),
    }
}

/// Where to export `signal`: the environment's endpoint, else the file's (with the signal's
/// path appended); none when the SDK is disabled or the signal's exporter is `none`.
/// `Some(None)` means the exporter reads the endpoint from the environment itself.
fn endpoint(file: &TelemetryConfig, signal: Signal) -> Option<Option<String>> {
    let is = |name: &str, value: &str| {
        std::env::var(name).is_ok_and(|v| v.trim().eq_ignore_ascii_case(value))
    };
    if is("OTEL_SDK_DISABLED", "true") || is(signal.exporter_var(), "none") {
        return None;
    }
    let from_environment = signal
        .endpoint_vars()
        .iter()
        .any(|name| std::env::var(name).is_ok_and(|v| !v.trim().is_empty()));
    if from_environment {
        return Some(None);
    }
    let base = file.endpoint.as_deref()?.trim().trim_end_matches('/');
    (!base.is_empty()).then(|| Some(format!("{base}{}", signal.path())))
}

/// The resource: `OTEL_SERVICE_NAME` (which the SDK reads), else the file's, else
/// `corrigible`.
fn resource(file: &TelemetryConfig) -> Resource {
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        let name = file.service_name.as_deref().unwrap_or("corrigible");
        resource = resource.with_service_name(name.to_string());
    }
    resource.build()
}

/// The exporter `builder` builds for `endpoint` (its own from the environment when `None`);
/// none, with a warning naming `what`, when it cannot be built.
fn exporter<B: WithExportConfig, E, Error: std::fmt::Display>(
    mut builder: B,
    endpoint: Option<String>,
    what: &str,
    build: impl FnOnce(B) -> Result<E, Error>,
) -> Option<E> {
    if let Some(url) = &endpoint {
        builder = builder.with_endpoint(url.clone());
    }
    build(builder)
        .map_err(|error| {
            let shown = endpoint.as_deref().unwrap_or("the configured endpoint");
            eprintln!("warning: no OpenTelemetry {what} export to {shown}: {error}");
        })
        .ok()
}

/// A batch span exporter to the configured endpoint (the exporter reads the headers and
/// timeout from the standard variables; the SDK reads the sampler and resource).
fn provider(file: &TelemetryConfig) -> Option<SdkTracerProvider> {
    let endpoint = endpoint(file, Signal::Traces)?;
    let builder = SpanExporter::builder().with_http();
    let exporter = exporter(builder, endpoint, "span", |b| b.build())?;
    Some(
        SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource(file))
            .build(),
    )
}

/// A periodic metrics exporter to the configured endpoint, every `OTEL_METRIC_EXPORT_INTERVAL`
/// (60 s unless set).
fn meters(file: &TelemetryConfig) -> Option<SdkMeterProvider> {
    let endpoint = endpoint(file, Signal::Metrics)?;
    let builder = MetricExporter::builder().with_http();
    let exporter = exporter(builder, endpoint, "metrics", |b| b.build())?;
    Some(
        SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(exporter).build())
            .with_resource(resource(file))
            .build(),
    )
}
