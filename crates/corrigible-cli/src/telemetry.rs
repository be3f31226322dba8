//! Logs on stderr and, when the OpenTelemetry environment names an endpoint, the run's spans
//! exported over OTLP/HTTP (docs/telemetry.md).

use std::io::IsTerminal;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::Level;
use tracing_subscriber::filter::{EnvFilter, Targets};
use tracing_subscriber::prelude::*;

use crate::config::TelemetryConfig;

/// The variables that turn export on, one of which must name an endpoint.
const ENDPOINT_VARS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// The process's subscriber; `shutdown` flushes the spans not yet exported.
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

/// The traces path appended to a base endpoint, as the SDK does for
/// `OTEL_EXPORTER_OTLP_ENDPOINT`.
const TRACES_PATH: &str = "/v1/traces";

impl Telemetry {
    /// Logs filtered by `CORRIGIBLE_LOG` (else `default_log`) on stderr, and the engine's spans
    /// to OTLP/HTTP when the standard variables or the file's `[telemetry]` configure it.
    pub fn init(default_log: &str, file: &TelemetryConfig) -> Self {
        let logs = tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
            .with_filter(
                EnvFilter::try_from_env("CORRIGIBLE_LOG")
                    .unwrap_or_else(|_| EnvFilter::new(default_log)),
            );
        let provider = provider(file);
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
/// instrumentations' opt-in, `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` (`true` or
/// `false`), else the file's `capture_content`.
pub fn captures_content(file: &TelemetryConfig) -> bool {
    match std::env::var("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT") {
        Ok(value) if !value.trim().is_empty() => value.trim().eq_ignore_ascii_case("true"),
        _ => file.capture_content.unwrap_or(false),
    }
}

/// Where to export: the environment's endpoint, else the file's (with `/v1/traces` appended);
/// none when the SDK is disabled or the traces exporter is `none`. `Some(None)` means the
/// exporter reads the endpoint from the environment itself.
fn endpoint(file: &TelemetryConfig) -> Option<Option<String>> {
    let is = |name: &str, value: &str| {
        std::env::var(name).is_ok_and(|v| v.trim().eq_ignore_ascii_case(value))
    };
    if is("OTEL_SDK_DISABLED", "true") || is("OTEL_TRACES_EXPORTER", "none") {
        return None;
    }
    let from_environment = ENDPOINT_VARS
        .iter()
        .any(|name| std::env::var(name).is_ok_and(|v| !v.trim().is_empty()));
    if from_environment {
        return Some(None);
    }
    let base = file.endpoint.as_deref()?.trim().trim_end_matches('/');
    (!base.is_empty()).then(|| Some(format!("{base}{TRACES_PATH}")))
}

/// A batch exporter to the configured endpoint (the exporter reads the headers and timeout
/// from the standard variables; the SDK reads the sampler and resource), service name
/// `OTEL_SERVICE_NAME`, else the file's, else `corrigible`.
fn provider(file: &TelemetryConfig) -> Option<SdkTracerProvider> {
    let endpoint = endpoint(file)?;
    let mut builder = SpanExporter::builder().with_http();
    if let Some(url) = &endpoint {
        builder = builder.with_endpoint(url.clone());
    }
    let exporter = match builder.build() {
        Ok(exporter) => exporter,
        Err(error) => {
            let shown = endpoint.as_deref().unwrap_or("the configured endpoint");
            eprintln!("warning: no OpenTelemetry export to {shown}: {error}");
            return None;
        }
    };
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        let name = file.service_name.as_deref().unwrap_or("corrigible");
        resource = resource.with_service_name(name.to_string());
    }
    Some(
        SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource.build())
            .build(),
    )
}
