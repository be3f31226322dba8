//! What the OpenAI-compatible gateway costs when no correction is needed, in one process and
//! one run: `GATEWAY_REQUESTS` chat completions with a tool (default 2000) from
//! `GATEWAY_CONCURRENCY` clients (default 64), each phase against the same scripted upstream (an
//! axum route that answers a valid call at once):
//!
//! 1. straight to the upstream (the baseline: the HTTP stack and the load generator);
//! 2. through corrigible's gateway (checks, run stored in SQLite, API key);
//! 3. with `GATEWAY_LITELLM` naming the `litellm` executable (PyPI `litellm[proxy]`): through
//!    the LiteLLM proxy in front of the same upstream (master key, no database).
//!
//! Each phase prints requests per second and p50/p99 latency; the added latency of a gateway
//! is its percentile minus the baseline's. `cargo bench -p corrigible-server --bench gateway`;
//! without `--bench` (as under `cargo test --benches`) it runs a 20-request smoke test.

mod measure;

use measure::{env, ms, percentile};

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Json;
use axum::routing::post;
use corrigible_models::{ChatEndpoint, ProviderOptions, ReplayModel};
use corrigible_server::{AppState, Gateway, ServerConfig, open_store, replay_factory};
use futures_util::StreamExt;
use serde_json::{Value, json};

/// The key every client sends; both gateways require it.
const KEY: &str = "sk-bench-5b1f0c2e9a7d4e38";

const REPLAY: &str = r#"{"text": "{\"state\":\"final\",\"satisfied\":true,\"final_summary\":\"unused\"}"}
"#;

async fn upstream_reply() -> Json<Value> {
    Json(json!({
        "id": "chatcmpl-bench", "object": "chat.completion", "created": 1_700_000_000,
        "model": "scripted",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]}}],
        "usage": {"prompt_tokens": 60, "completion_tokens": 12, "total_tokens": 72}
    }))
}

fn request() -> Value {
    json!({
        "model": "scripted",
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "What is the weather in Paris?"}
        ],
        "tools": [{"type": "function", "function": {
            "name": "get_weather", "description": "Current weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                "required": ["city"], "additionalProperties": false}}}]
    })
}

/// Latencies and wall time of `total` requests to `url` from `concurrency` clients.
async fn phase(url: &str, total: usize, concurrency: usize) -> (Vec<Duration>, Duration) {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency)
        .build()
        .expect("client");
    let body = Arc::new(request());
    let started = Instant::now();
    let mut latencies: Vec<Duration> = futures_util::stream::iter(0..total)
        .map(|_| {
            let client = client.clone();
            let body = body.clone();
            let url = url.to_string();
            async move {
                let sent = Instant::now();
                let response = client
                    .post(&url)
                    .header("authorization", format!("Bearer {KEY}"))
                    .json(&*body)
                    .send()
                    .await
                    .expect("request is sent");
                assert!(response.status().is_success(), "{}", response.status());
                let answer: Value = response.json().await.expect("a JSON answer");
                assert_eq!(
                    answer["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
                    "get_weather"
                );
                sent.elapsed()
            }
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let wall = started.elapsed();
    latencies.sort();
    (latencies, wall)
}

fn report(name: &str, latencies: &[Duration], wall: Duration, baseline: Option<(f64, f64)>) {
    let p50 = ms(percentile(latencies, 50.0));
    let p99 = ms(percentile(latencies, 99.0));
    let rps = latencies.len() as f64 / wall.as_secs_f64();
    let added = baseline
        .map(|(b50, b99)| format!("  added p50 {:.2} ms, p99 {:.2} ms", p50 - b50, p99 - b99))
        .unwrap_or_default();
    println!("{name:<28} {rps:>9.0} req/s  p50 {p50:>8.2} ms  p99 {p99:>8.2} ms{added}");
}

/// The LiteLLM proxy on `port` in front of `upstream`, killed on drop; `_config` holds its
/// configuration file until then.
struct LiteLlm {
    child: Child,
    _config: tempfile::TempDir,
}

impl Drop for LiteLlm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn litellm(executable: &str, upstream: &str, port: u16) -> LiteLlm {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("litellm.yaml");
    std::fs::write(
        &config,
        format!(
            "model_list:\n  - model_name: scripted\n    litellm_params:\n      model: openai/scripted\n      api_base: {upstream}\n      api_key: none\n"
        ),
    )
    .expect("config written");
    let child = Command::new(executable)
        .arg("--config")
        .arg(&config)
        .args(["--port", &port.to_string(), "--host", "127.0.0.1"])
        .env("LITELLM_LOG", "ERROR")
        .env("LITELLM_MASTER_KEY", KEY)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("litellm starts");
    let proxy = LiteLlm {
        child,
        _config: dir,
    };
    let client = reqwest::Client::new();
    let started = Instant::now();
    loop {
        let ready = client
            .get(format!("http://127.0.0.1:{port}/health/liveliness"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success());
        if ready {
            return proxy;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "litellm not ready"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let total = if full {
        env("GATEWAY_REQUESTS", 2000)
    } else {
        20
    };
    let concurrency = if full {
        env("GATEWAY_CONCURRENCY", 64)
    } else {
        4
    };
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async move {
        let upstream = axum::Router::new().route("/v1/chat/completions", post(upstream_reply));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binds");
        let upstream_url = format!("http://{}/v1", listener.local_addr().expect("address"));
        tokio::spawn(async move { axum::serve(listener, upstream).await });

        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("runs.db").display().to_string();
        let config = ServerConfig {
            addr: "127.0.0.1:0".into(),
            db: db.clone(),
            api_key: Some(KEY.to_string()),
            ..ServerConfig::default()
        };
        let replay = ReplayModel::from_str(REPLAY).expect("replay");
        let agent = Arc::new(
            corrigible::Agent::builder(replay.restarted())
                .build()
                .expect("agent"),
        );
        let endpoint = ChatEndpoint::new(
            "scripted",
            ProviderOptions {
                base_url: Some(upstream_url.clone()),
                ..Default::default()
            },
        )
        .expect("endpoint");
        let store = open_store(&db).await.expect("store");
        let state = AppState::new(agent, replay_factory(replay), store, &config).with_gateway(
            Gateway::new(endpoint, 2, config.max_runs, config.queue_timeout),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binds");
        let gateway_url = format!(
            "http://{}/v1/chat/completions",
            listener.local_addr().expect("address")
        );
        tokio::spawn(corrigible_server::serve_listener(
            listener,
            state,
            config,
            std::future::pending(),
        ));

        println!("{total} chat completions with a tool, {concurrency} clients");
        let direct = format!("{upstream_url}/chat/completions");
        let _ = phase(&direct, total.min(200), concurrency).await;
        let (latencies, wall) = phase(&direct, total, concurrency).await;
        report("upstream directly", &latencies, wall, None);
        let baseline = (
            ms(percentile(&latencies, 50.0)),
            ms(percentile(&latencies, 99.0)),
        );
        let _ = phase(&gateway_url, total.min(200), concurrency).await;
        let (latencies, wall) = phase(&gateway_url, total, concurrency).await;
        report("through corrigible", &latencies, wall, Some(baseline));

        if let Ok(executable) = std::env::var("GATEWAY_LITELLM") {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .map(|a| a.port())
                .expect("a free port");
            let _proxy = litellm(&executable, &upstream_url, port).await;
            let url = format!("http://127.0.0.1:{port}/v1/chat/completions");
            let _ = phase(&url, total.min(200), concurrency).await;
            let (latencies, wall) = phase(&url, total, concurrency).await;
            report("through LiteLLM proxy", &latencies, wall, Some(baseline));
        }
    });
}
