//! `corrigible serve` exports its metrics over OTLP/HTTP when the standard variables name an
//! endpoint: the GenAI conventions' `gen_ai.client.token.usage` and
//! `gen_ai.client.operation.duration` histograms, and corrections by category, decoded here
//! with the protocol's own protobuf types (`opentelemetry-proto`).

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use prost::Message;
use serde_json::json;

const REPLAY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../corrigible/examples/replays/correction.jsonl"
);

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// One data point as exported: the metric's name and unit, the point's attributes, and its
/// count (histograms) or value (sums and gauges).
#[derive(Debug, Clone)]
struct Point {
    metric: String,
    unit: String,
    attributes: Vec<(String, String)>,
    value: f64,
}

type Received = Arc<Mutex<Vec<Point>>>;

async fn receive(State(received): State<Received>, body: Bytes) -> &'static str {
    let request = ExportMetricsServiceRequest::decode(body).expect("an OTLP metrics request");
    let text = |attributes: &[KeyValue]| -> Vec<(String, String)> {
        attributes
            .iter()
            .map(|kv| {
                let value = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                    Some(any_value::Value::StringValue(s)) => s.clone(),
                    other => format!("{other:?}"),
                };
                (kv.key.clone(), value)
            })
            .collect()
    };
    let mut points = Vec::new();
    for metric in request
        .resource_metrics
        .iter()
        .flat_map(|r| &r.scope_metrics)
        .flat_map(|s| &s.metrics)
    {
        let point = |attributes: &[KeyValue], value: f64| Point {
            metric: metric.name.clone(),
            unit: metric.unit.clone(),
            attributes: text(attributes),
            value,
        };
        match &metric.data {
            Some(Data::Histogram(h)) => points.extend(
                h.data_points
                    .iter()
                    .map(|p| point(&p.attributes, p.count as f64)),
            ),
            Some(Data::Sum(sum)) => points.extend(
                sum.data_points
                    .iter()
                    .map(|p| point(&p.attributes, number(p.value.as_ref()))),
            ),
            Some(Data::Gauge(gauge)) => points.extend(
                gauge
                    .data_points
                    .iter()
                    .map(|p| point(&p.attributes, number(p.value.as_ref()))),
            ),
            _ => {}
        }
    }
    received.lock().unwrap().extend(points);
    ""
}

fn number(
    value: Option<&opentelemetry_proto::tonic::metrics::v1::number_data_point::Value>,
) -> f64 {
    use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value;
    match value {
        Some(Value::AsInt(n)) => *n as f64,
        Some(Value::AsDouble(x)) => *x,
        None => f64::NAN,
    }
}

fn has(point: &Point, key: &str, value: &str) -> bool {
    point.attributes.iter().any(|(k, v)| k == key && v == value)
}

#[test]
fn a_server_exports_genai_and_correction_metrics_over_otlp() {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let received: Received = Arc::default();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("a port");
    let receiver = format!("http://{}", listener.local_addr().expect("an address"));
    let app = axum::Router::new()
        .route("/v1/metrics", post(receive))
        .with_state(received.clone());
    runtime.spawn(async move { axum::serve(listener, app).await });

    let dir = tempfile::tempdir().expect("a directory");
    let port = free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_corrigible"))
        .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
        .args(["--db", &dir.path().join("runs.db").display().to_string()])
        .args(["--model", &format!("replay:{REPLAY}")])
        .env(
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
            format!("{receiver}/v1/metrics"),
        )
        .env("OTEL_METRIC_EXPORT_INTERVAL", "200")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("CORRIGIBLE_API_KEY")
        .env_remove("CORRIGIBLE_CONFIG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("corrigible serve starts");
    let base = format!("http://127.0.0.1:{port}");
    let status = runtime.block_on(async {
        let client = reqwest::Client::new();
        let started = Instant::now();
        while client.get(format!("{base}/healthz")).send().await.is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "serve did not start"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        client
            .post(format!("{base}/v1/runs"))
            .json(&json!({"prompt": "What is 2*(3+4)?"}))
            .send()
            .await
            .map(|r| r.status().as_u16())
    });
    assert_eq!(status.ok(), Some(200));

    let wanted = |points: &[Point]| {
        let tokens = points.iter().any(|p| {
            p.metric == "gen_ai.client.token.usage"
                && has(p, "gen_ai.operation.name", "chat")
                && has(p, "gen_ai.token.type", "input")
                && p.value >= 3.0
        });
        let duration = points.iter().any(|p| {
            p.metric == "gen_ai.client.operation.duration" && p.unit == "s" && p.value >= 3.0
        });
        let corrections = points
            .iter()
            .any(|p| p.metric == "corrigible.corrections" && p.value >= 1.0);
        let runs = points.iter().any(|p| {
            p.metric == "corrigible.runs" && has(p, "outcome", "satisfied") && p.value >= 1.0
        });
        tokens && duration && corrections && runs
    };
    let started = Instant::now();
    loop {
        let points = received.lock().unwrap().clone();
        if wanted(&points) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the metrics did not arrive: {points:#?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
}
