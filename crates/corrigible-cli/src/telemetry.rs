//! Logs on stderr and, when the OpenTelemetry environment names an endpoint, the run's spans
//! exported over OTLP/HTTP (docs/telemetry.md).

use std::io::IsTerminal;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::SpanExporter;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Level;
use tracing_subscriber::filter::{EnvFilter, Targets};
use tracing_subscriber::prelude::*;

/// The variables that turn export on, one of which must name an endpoint.
const ENDPOINT_VARS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// The process's subscriber; `shutdown` flushes the spans not yet exported.
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Logs filtered by `CORRIGIBLE_LOG` (else `default_log`) on stderr, and the engine's spans
    /// to OTLP/HTTP when the standard variables configure it.
    pub fn init(default_log: &str) -> Self {
        let logs = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
            .with_filter(
                EnvFilter::try_from_env("CORRIGIBLE_LOG")
                    .unwrap_or_else(|_| EnvFilter::new(default_log)),
            );
        let provider = provider();
        let spans = provider.as_ref().map(|provider| {
            tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("corrigible"))
                .with_filter(Targets::new().with_target("corrigible", Level::INFO))
        });
        tracing_subscriber::registry().with(logs).with(spans).init();
        Self { provider }
    }

    /// Exports what is left, within the exporter's timeout.
    pub fn shutdown(self) {
        if let Some(provider) = self.provider
            && let Err(error) = provider.shutdown()
        {
            eprintln!("warning: OpenTelemetry export did not finish: {error}");
        }
    }
}

/// Whether the spans should carry messages, tool arguments and results: the GenAI
/// instrumentations' opt-in, `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`.
pub fn captures_content() -> bool {
    std::env::var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
        .is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// The endpoint the environment asks to export to: one is named, the SDK is not disabled and
/// the traces exporter is not `none`.
fn endpoint() -> Option<String> {
    let is = |name: &str, value: &str| {
        std::env::var(name).is_ok_and(|v| v.trim().eq_ignore_ascii_case(value))
    };
    if is("OTEL_SDK_DISABLED", "true") || is("OTEL_TRACES_EXPORTER", "none") {
        return None;
    }
    ENDPOINT_VARS
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
}

/// A batch exporter to the configured endpoint (the exporter reads the endpoint, headers and
/// timeout from the standard variables; the SDK reads the sampler and resource), service name
/// `corrigible` unless `OTEL_SERVICE_NAME` gives one.
fn provider() -> Option<SdkTracerProvider> {
    let endpoint = endpoint()?;
    let exporter = match SpanExporter::builder().with_http().build() {
        Ok(exporter) => exporter,
        Err(error) => {
            eprintln!("warning: no OpenTelemetry export to {endpoint}: {error}");
            return None;
        }
    };
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("corrigible");
    }
    Some(
        SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.build())
            .build(),
    )
}
