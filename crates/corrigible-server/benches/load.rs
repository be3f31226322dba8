//! Load benchmark: many concurrent replay runs against servers on loopback ports, next to the
//! two ceilings that bound them, all in one process and one run:
//!
//! 1. a bare axum route, served by `axum::serve` on the same runtime (the HTTP stack's
//!    ceiling);
//! 2. SQLite's write ceiling for our rows (whole runs in the writer's batches, no HTTP);
//! 3. the full server on SQLite (a calculator call and a final answer per run);
//! 4. with `LOAD_POSTGRES_URL` set: the full server on Postgres, with 1 and 2 instances
//!    sharing the database (the clients alternate between the instances);
//! 5. last, with `OTEL_EXPORTER_OTLP_ENDPOINT` set: the full server on SQLite again, its spans
//!    exported there over OTLP/HTTP through the batch processor `corrigible serve` uses.
//!
//! `cargo bench -p corrigible-server --bench load` runs `LOAD_RUNS` runs (default 2000) with
//! `LOAD_CONCURRENCY` clients (default 64) per phase and prints requests or runs per second
//! and p50/p90/p99 latency. Without `--bench` (as under `cargo test --benches`) it runs a
//! 20-run smoke test. With `LOAD_LOG=1` the servers log as `corrigible serve` does by
//! default (a line per request on stderr; redirect it).

mod measure;

use measure::{env, ms, percentile};

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::routing::post;
use corrigible::{Agent, RunOptions, ToolRegistry, TraceEvent, TraceSink};
use corrigible_models::ReplayModel;
use corrigible_server::store::{
    Ending, NewRun, RunEnd, RunStore, SqliteStore, StoredEvent, now_ms,
};
use corrigible_server::{AppState, ServerConfig, open_store, replay_factory, serve_listener};
use futures_util::StreamExt;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::SpanExporter;
use opentelemetry_sdk::trace::SdkTracerProvider;
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tracing::Level;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::prelude::*;

const REPLAY: &str = r#"{"text": "{\"state\":\"action\",\"reason\":\"compute\",\"tool\":\"calculator\",\"tool_input\":{\"expression\":\"2*(3+4)\"}}", "usage": {"input_tokens": 300, "output_tokens": 30}}
{"text": "{\"state\":\"final\",\"satisfied\":true,\"final_summary\":\"14\"}", "usage": {"input_tokens": 340, "output_tokens": 12}}
"#;

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let runs = if full { env("LOAD_RUNS", 2000) } else { 20 };
    let concurrency = if full { env("LOAD_CONCURRENCY", 64) } else { 4 };
    if env("LOAD_LOG", 0) == 1 {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(
                "warn,corrigible_server=info",
            ))
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .init();
    }
    let runtime = tokio::runtime::Runtime::new().expect("a Tokio runtime");
    runtime.block_on(load(runs, concurrency.max(1)));
}

async fn load(runs: usize, concurrency: usize) {
    println!(
        "load: {runs} per phase, concurrency {concurrency}, {} CPUs",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let bare = bare_route().await;
    report(
        "bare axum route",
        &drive(std::slice::from_ref(&bare.0), runs, concurrency).await,
        "req/s",
    );
    bare.stop().await;

    sqlite_write_ceiling(runs).await;

    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("load.db").display().to_string();
    let server = Server::start(&db, concurrency).await;
    let stats = drive(std::slice::from_ref(&server.base), runs, concurrency).await;
    report("server, SQLite", &stats, "runs/s");
    server.stop().await;
    assert!(
        stats.errors.is_empty(),
        "{} runs failed",
        stats.errors.len()
    );

    if let Ok(url) = std::env::var("LOAD_POSTGRES_URL") {
        let one = Server::start(&url, concurrency).await;
        let single = drive(std::slice::from_ref(&one.base), runs, concurrency).await;
        report("server, Postgres, 1 instance", &single, "runs/s");
        let two = Server::start(&url, concurrency).await;
        let both = drive(&[one.base.clone(), two.base.clone()], runs, concurrency).await;
        report("server, Postgres, 2 instances", &both, "runs/s");
        one.stop().await;
        two.stop().await;
        for stats in [single, both] {
            assert!(
                stats.errors.is_empty(),
                "{} runs failed on Postgres",
                stats.errors.len()
            );
        }
    }

    if let Some(provider) = exporter() {
        let subscriber = tracing_subscriber::registry().with(
            tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("load"))
                .with_filter(Targets::new().with_target("corrigible", Level::INFO)),
        );
        if tracing::subscriber::set_global_default(subscriber).is_err() {
            println!("export phase skipped: LOAD_LOG set a subscriber of its own");
            return;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("exported.db").display().to_string();
        let server = Server::start(&db, concurrency).await;
        let stats = drive(std::slice::from_ref(&server.base), runs, concurrency).await;
        report("server, SQLite, spans exported", &stats, "runs/s");
        server.stop().await;
        let flushed = tokio::task::spawn_blocking(move || provider.shutdown()).await;
        if let Ok(Err(error)) = flushed {
            println!("export did not finish: {error}");
        }
        assert!(
            stats.errors.is_empty(),
            "{} runs failed",
            stats.errors.len()
        );
    }
}

/// The exporter `corrigible serve` builds, when the environment names an endpoint.
fn exporter() -> Option<SdkTracerProvider> {
    std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT")?;
    let exporter = SpanExporter::builder().with_http().build().ok()?;
    Some(
        SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .build(),
    )
}

/// A server on a loopback port.
struct Server {
    base: String,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

impl Server {
    async fn start(db: &str, concurrency: usize) -> Self {
        let replay = ReplayModel::from_str(REPLAY).expect("replay parses");
        let agent = replay_agent();
        let config = ServerConfig {
            db: db.to_string(),
            max_concurrent_model_calls: concurrency,
            shutdown_deadline: Duration::from_secs(10),
            ..ServerConfig::default()
        };
        let store = open_store(db).await.expect("store opens");
        let state = AppState::new(Arc::new(agent), replay_factory(replay), store, &config);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binds");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            serve_listener(listener, state, config, async {
                let _ = stopped.await;
            })
            .await
            .expect("server runs");
        });
        Self { base, stop, task }
    }

    async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

/// A bare axum route answering a small JSON body, with axum's own server.
struct Bare(String, oneshot::Sender<()>, JoinHandle<()>);

impl Bare {
    async fn stop(self) {
        let _ = self.1.send(());
        let _ = self.2.await;
    }
}

async fn bare_route() -> Bare {
    let app = axum::Router::new().route(
        "/v1/runs",
        post(|Json(body): Json<Value>| async move { Json(json!({"echo": body})) }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await;
    });
    Bare(base, stop, task)
}

/// Records a run's trace events as the server stores them: `type` and JSON.
#[derive(Default)]
struct Recorded(Mutex<Vec<(String, String)>>);

impl TraceSink for Recorded {
    fn event(&self, event: &TraceEvent) {
        let data = serde_json::to_string(event).expect("events serialize");
        let kind = serde_json::from_str::<Value>(&data).expect("events are JSON")["type"]
            .as_str()
            .expect("events have a type")
            .to_string();
        self.0.lock().expect("not poisoned").push((kind, data));
    }
}

/// SQLite's ceiling for our rows: the rows of `runs` runs of the server phase (the run, its
/// trace events and its report, taken from one real run of the same agent), written through
/// the store's `write_batch` in batches of 64 whole runs, one transaction each, with no HTTP
/// and no engine. The server writes each run in two batches (its start, then its events and
/// ending), so this bounds it from above.
async fn sqlite_write_ceiling(runs: usize) {
    let recorded = Arc::new(Recorded::default());
    let report = replay_agent()
        .run_with(
            "What is 2*(3+4)?",
            RunOptions {
                sink: Some(recorded.clone()),
                ..RunOptions::default()
            },
        )
        .await
        .expect("the replay run completes");
    let trace = recorded.0.lock().expect("not poisoned").clone();

    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("ceiling.db").display().to_string();
    let store = SqliteStore::open(&db).await.expect("store opens");
    let ids: Vec<String> = (0..runs).map(|i| format!("run-{i:08}")).collect();
    let started = Instant::now();
    for chunk in ids.chunks(64) {
        let new_runs: Vec<NewRun> = chunk
            .iter()
            .map(|id| NewRun {
                id: id.clone(),
                created_at: now_ms(),
                prompt: report.prompt.clone(),
                model: report.model.clone(),
                protocol: "json".into(),
                owner: "bench".into(),
            })
            .collect();
        let events: Vec<StoredEvent> = chunk
            .iter()
            .flat_map(|id| {
                trace
                    .iter()
                    .zip(1..)
                    .map(|((kind, data), seq)| StoredEvent {
                        run_id: id.clone(),
                        seq,
                        kind: kind.clone(),
                        at: now_ms(),
                        data: data.clone(),
                    })
            })
            .collect();
        let ends: Vec<Ending> = chunk
            .iter()
            .map(|id| Ending {
                run_id: id.clone(),
                end: RunEnd::Finished(Box::new(report.clone())),
                at: now_ms(),
            })
            .collect();
        store
            .write_batch(&new_runs, &events, &ends)
            .await
            .expect("batch written");
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "load: SQLite write ceiling: {:.0} runs/s ({:.0} event rows/s; {} events and a report per run, 64 whole runs per transaction)",
        runs as f64 / elapsed,
        (runs * trace.len()) as f64 / elapsed,
        trace.len()
    );
}

fn replay_agent() -> Agent {
    let replay = ReplayModel::from_str(REPLAY).expect("replay parses");
    let mut tools = ToolRegistry::new();
    tools
        .register_typed(corrigible_tools::Calculator)
        .expect("calculator registers");
    Agent::builder(replay.restarted())
        .tools(tools)
        .build()
        .expect("agent builds")
}

struct Stats {
    elapsed: Duration,
    latencies: Vec<Duration>,
    errors: Vec<String>,
}

/// Posts `runs` run requests with `concurrency` clients, alternating between `bases`.
async fn drive(bases: &[String], runs: usize, concurrency: usize) -> Stats {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency)
        .build()
        .expect("client");
    let body = json!({"prompt": "What is 2*(3+4)?"});
    let started = Instant::now();
    let results: Vec<Result<Duration, String>> = futures_util::stream::iter(0..runs)
        .map(|i| {
            let client = client.clone();
            let url = format!("{}/v1/runs", bases[i % bases.len()]);
            let body = body.clone();
            async move {
                let t = Instant::now();
                let response = client
                    .post(&url)
                    .json(&body)
                    .send()
                    .await
                    .map_err(|e| e.to_string())?;
                let status = response.status();
                let _ = response.bytes().await.map_err(|e| e.to_string())?;
                if status.is_success() {
                    Ok(t.elapsed())
                } else {
                    Err(format!("HTTP {status}"))
                }
            }
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let elapsed = started.elapsed();
    let mut latencies: Vec<Duration> = results.iter().filter_map(|r| r.clone().ok()).collect();
    latencies.sort();
    let errors = results.into_iter().filter_map(Result::err).collect();
    Stats {
        elapsed,
        latencies,
        errors,
    }
}

fn report(what: &str, stats: &Stats, unit: &str) {
    let l = &stats.latencies;
    println!(
        "load: {what}: {:.0} {unit} over {:.2} s; latency p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms; errors {}",
        l.len() as f64 / stats.elapsed.as_secs_f64(),
        stats.elapsed.as_secs_f64(),
        ms(percentile(l, 50.0)),
        ms(percentile(l, 90.0)),
        ms(percentile(l, 99.0)),
        ms(l.last().copied().unwrap_or_default()),
        stats.errors.len(),
    );
    if let Some(first) = stats.errors.first() {
        println!("load: first error: {first}");
    }
}
