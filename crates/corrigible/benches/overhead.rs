//! The engine's own cost per run: parsing, validation, feedback, fingerprints and trace, with
//! the replay model in-process and the real calculator tool.
//!
//! Scripted run: "What is 2*(3+4)?" → calculator `{"expr": …}` (rejected: wrong field) →
//! calculator `{"expression": "2*(3+4)"}` → final answer.
//!
//! With `OTEL_EXPORTER_OTLP_ENDPOINT` set, the same run again with its spans exported there
//! (a `tracing-opentelemetry` layer, the SDK's batch processor, OTLP/HTTP), as `corrigible`
//! exports them.

use std::sync::Arc;

use corrigible::{Agent, RunOptions};
use corrigible_models::ReplayModel;
use corrigible_tools::Calculator;
use criterion::{Criterion, criterion_group, criterion_main};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::SpanExporter;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::prelude::*;

const SCRIPT: &str = r#"{"text": "{\"state\":\"action\",\"reason\":\"arithmetic\",\"tool\":\"calculator\",\"tool_input\":{\"expr\":\"2*(3+4)\"}}", "usage": {"input_tokens": 412, "output_tokens": 37}}
{"text": "{\"state\":\"action\",\"reason\":\"fixed the field\",\"tool\":\"calculator\",\"tool_input\":{\"expression\":\"2*(3+4)\"}}", "usage": {"input_tokens": 520, "output_tokens": 38}}
{"text": "{\"state\":\"final\",\"satisfied\":true,\"final_summary\":\"2*(3+4) = 14\"}", "usage": {"input_tokens": 600, "output_tokens": 20}}
"#;

fn overhead(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let replay = ReplayModel::from_str(SCRIPT).expect("script parses");
    let agent = Agent::builder(replay.restarted())
        .typed_tool(Calculator)
        .build()
        .expect("agent builds");

    let check = runtime
        .block_on(agent.run_with(
            "What is 2*(3+4)?",
            RunOptions {
                model: Some(Arc::new(replay.restarted())),
                ..Default::default()
            },
        ))
        .expect("run completes");
    assert!(check.satisfied && check.corrections.len() == 1 && check.steps.len() == 1);

    c.bench_function("overhead/scripted_run_with_one_correction", |b| {
        b.to_async(&runtime).iter(|| {
            let options = RunOptions {
                model: Some(Arc::new(replay.restarted())),
                ..Default::default()
            };
            agent.run_with("What is 2*(3+4)?", options)
        })
    });

    let Some(provider) = exporter() else {
        return;
    };
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("overhead")));
    let guard = tracing::subscriber::set_default(subscriber);
    c.bench_function(
        "overhead/scripted_run_with_one_correction/otlp_export",
        |b| {
            b.to_async(&runtime).iter(|| {
                let options = RunOptions {
                    model: Some(Arc::new(replay.restarted())),
                    ..Default::default()
                };
                agent.run_with("What is 2*(3+4)?", options)
            })
        },
    );
    drop(guard);
    if let Err(error) = provider.shutdown() {
        eprintln!("export did not finish: {error}");
    }
}

/// The exporter the binary builds, when the environment names an endpoint.
fn exporter() -> Option<SdkTracerProvider> {
    std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT")?;
    let exporter = SpanExporter::builder().with_http().build().ok()?;
    Some(
        SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .build(),
    )
}

criterion_group!(benches, overhead);
criterion_main!(benches);
