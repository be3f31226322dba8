//! Load test: many concurrent runs against a server on a loopback port, with the replay
//! model (a calculator call and a final answer per run), stored in SQLite.
//!
//! `cargo bench -p corrigible-server --bench load` runs `LOAD_RUNS` runs (default 2000) with
//! `LOAD_CONCURRENCY` clients (default 64) and prints runs/s and p50/p90/p99 latency. Without
//! `--bench` (as under `cargo test --benches`) it runs a 20-run smoke test.

use std::sync::Arc;
use std::time::{Duration, Instant};

use corrigible::{Agent, ToolRegistry};
use corrigible_models::ReplayModel;
use corrigible_server::{AppState, ServerConfig, open_store, replay_factory, serve_listener};
use futures_util::StreamExt;

const REPLAY: &str = r#"{"text": "{\"state\":\"action\",\"reason\":\"compute\",\"tool\":\"calculator\",\"tool_input\":{\"expression\":\"2*(3+4)\"}}", "usage": {"input_tokens": 300, "output_tokens": 30}}
{"text": "{\"state\":\"final\",\"satisfied\":true,\"final_summary\":\"14\"}", "usage": {"input_tokens": 340, "output_tokens": 12}}
"#;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let runs = if full { env("LOAD_RUNS", 2000) } else { 20 };
    let concurrency = if full { env("LOAD_CONCURRENCY", 64) } else { 4 };
    let runtime = tokio::runtime::Runtime::new().expect("a Tokio runtime");
    runtime.block_on(load(runs, concurrency.max(1)));
}

async fn load(runs: usize, concurrency: usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("load.db").display().to_string();
    let replay = ReplayModel::from_str(REPLAY).expect("replay parses");
    let mut tools = ToolRegistry::new();
    tools
        .register_typed(corrigible_tools::Calculator)
        .expect("calculator registers");
    let agent = Agent::builder(replay.restarted())
        .tools(tools)
        .build()
        .expect("agent builds");
    let config = ServerConfig {
        db: db.clone(),
        max_concurrent_model_calls: concurrency,
        ..ServerConfig::default()
    };
    let store = open_store(&db).await.expect("store opens");
    let state = AppState::new(Arc::new(agent), replay_factory(replay), store, &config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(serve_listener(
        listener,
        state.clone(),
        Duration::from_secs(10),
        async {
            let _ = stopped.await;
        },
    ));

    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency)
        .build()
        .expect("client");
    let url = format!("{base}/v1/runs");
    let body = serde_json::json!({"prompt": "What is 2*(3+4)?"});
    let started = Instant::now();
    let results: Vec<Result<Duration, String>> = futures_util::stream::iter(0..runs)
        .map(|_| {
            let client = client.clone();
            let url = url.clone();
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
    let errors: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    latencies.sort();
    let stored = state
        .store()
        .list_runs(500, None)
        .await
        .map(|r| r.len())
        .unwrap_or(0);
    println!(
        "load: {runs} runs, concurrency {concurrency}, replay model, SQLite store ({} stored in the last page)",
        stored
    );
    println!(
        "load: {:.0} runs/s over {:.2} s; latency p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms; errors {}",
        latencies.len() as f64 / elapsed.as_secs_f64(),
        elapsed.as_secs_f64(),
        percentile(&latencies, 50.0).as_secs_f64() * 1000.0,
        percentile(&latencies, 90.0).as_secs_f64() * 1000.0,
        percentile(&latencies, 99.0).as_secs_f64() * 1000.0,
        latencies.last().copied().unwrap_or_default().as_secs_f64() * 1000.0,
        errors.len(),
    );
    if let Some(first) = errors.first() {
        println!("load: first error: {first}");
    }
    let _ = stop.send(());
    let _ = server.await;
    assert!(errors.is_empty(), "{} runs failed", errors.len());
}
