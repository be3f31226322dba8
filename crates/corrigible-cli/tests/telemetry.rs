//! `corrigible run` exports its spans over OTLP/HTTP to a real backend, Arize Phoenix
//! (`arize-phoenix` from PyPI, started on loopback here), and Phoenix's REST API shows them:
//! names, the parent/child tree, the GenAI attributes, the correction events, a transport retry
//! as an attempt of its model call, no content, and W3C `traceparent` continued from a client
//! and passed on to the provider.
//!
//! Needs `CORRIGIBLE_PHOENIX`, the `phoenix` executable (`.ci/run` installs it); without it the
//! tests are skipped with a message, except under CI, where they fail.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

const REPLAY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../corrigible/examples/replays/correction.jsonl"
);
const PROMPT: &str = "What is 2*(3+4)? (a secret prompt)";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn phoenix() -> Option<PathBuf> {
    let found = std::env::var_os("CORRIGIBLE_PHOENIX").map(PathBuf::from);
    if found.is_none() {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        assert!(
            !ci,
            "CORRIGIBLE_PHOENIX is unset: CI must run the Phoenix tests (see .ci/run)"
        );
        eprintln!(
            "SKIPPED: set CORRIGIBLE_PHOENIX to the `phoenix` executable of `pip install \
             arize-phoenix` to run the telemetry tests"
        );
    }
    found
}

/// Phoenix on loopback ports of its own, with a throwaway working directory; killed on drop.
struct Phoenix {
    child: std::process::Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Phoenix {
    fn start(program: &PathBuf) -> Self {
        let dir = tempfile::tempdir().expect("a working directory");
        let port = free_port();
        let child = Command::new(program)
            .arg("serve")
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", free_port().to_string())
            .env("PHOENIX_WORKING_DIR", dir.path())
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("phoenix starts");
        let phoenix = Self {
            child,
            port,
            _dir: dir,
        };
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(120) {
            let health = http::status(&phoenix.url("/healthz"));
            if health.is_some_and(|status| status == 200) {
                return phoenix;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        panic!("Phoenix did not answer /healthz within 120 s");
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The spans of the default project, once `want` of them have arrived.
    fn spans(&self, want: usize) -> Vec<Value> {
        let started = Instant::now();
        loop {
            let spans = http::json(&self.url("/v1/projects/default/spans?limit=100"))
                .and_then(|page| page["data"].as_array().cloned())
                .unwrap_or_default();
            if spans.len() >= want || started.elapsed() > Duration::from_secs(30) {
                return spans;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Blocking HTTP for a synchronous test, on a runtime of its own.
mod http {
    use serde_json::Value;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    }

    pub fn status(url: &str) -> Option<u16> {
        runtime().block_on(async { reqwest::get(url).await.ok().map(|r| r.status().as_u16()) })
    }

    pub fn json(url: &str) -> Option<Value> {
        runtime().block_on(async { reqwest::get(url).await.ok()?.json().await.ok() })
    }
}

fn corrigible(args: &[&str], endpoint: &str, env: &[(&str, &str)]) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_corrigible"))
        .args(args)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env("OTEL_SERVICE_NAME", "corrigible-test")
        .envs(env.iter().copied())
        .env_remove("CORRIGIBLE_LOG")
        .output()
        .expect("corrigible runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("a JSON report")
}

/// `corrigible serve` with `args`, exporting to `endpoint`, once it answers `/healthz`; killed
/// on drop.
struct Served {
    child: std::process::Child,
    base: String,
    _dir: tempfile::TempDir,
}

impl Served {
    fn start(args: &[&str], endpoint: &str) -> Self {
        let dir = tempfile::tempdir().expect("a directory");
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_corrigible"))
            .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
            .args(["--db", &dir.path().join("runs.db").display().to_string()])
            .args(args)
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
            .env("OTEL_BSP_SCHEDULE_DELAY", "100")
            .env_remove("CORRIGIBLE_API_KEY")
            .env_remove("CORRIGIBLE_CONFIG")
            .env_remove("CORRIGIBLE_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("corrigible serve starts");
        let served = Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        };
        let started = Instant::now();
        while http::status(&format!("{}/healthz", served.base)) != Some(200) {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "serve did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        served
    }

    /// POSTs `body` to `path` with a client's `traceparent`; the status.
    fn post(&self, path: &str, traceparent: &str, body: Value) -> Option<u16> {
        let runtime = tokio::runtime::Runtime::new().expect("a runtime");
        runtime.block_on(async {
            reqwest::Client::new()
                .post(format!("{}{path}", self.base))
                .header("traceparent", traceparent)
                .json(&body)
                .send()
                .await
                .ok()
                .map(|r| r.status().as_u16())
        })
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["name"] == name).collect()
}

fn span_id(span: &Value) -> &str {
    span["context"]["span_id"].as_str().unwrap_or_default()
}

#[test]
fn a_run_with_a_tool_call_and_a_correction_is_a_tree_of_genai_spans_in_phoenix() {
    let Some(program) = phoenix() else { return };
    let phoenix = Phoenix::start(&program);
    let report = corrigible(
        &[
            "run",
            "--json",
            "--model",
            &format!("replay:{REPLAY}"),
            PROMPT,
        ],
        &phoenix.url(""),
        &[],
    );
    assert_eq!(report["stop_reason"], "final");
    let spans = phoenix.spans(5);

    let runs = named(&spans, "invoke_agent corrigible");
    assert_eq!(runs.len(), 1, "{spans:#?}");
    let run = runs[0];
    assert_eq!(run["parent_id"], Value::Null);
    let attributes = &run["attributes"];
    assert_eq!(attributes["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(attributes["gen_ai.agent.name"], "corrigible");
    assert_eq!(attributes["gen_ai.conversation.id"], report["run_id"]);

    let chats = named(&spans, "chat replay");
    assert_eq!(chats.len(), 3, "three model calls: {spans:#?}");
    for chat in &chats {
        assert_eq!(chat["parent_id"].as_str(), Some(span_id(run)));
        assert_eq!(chat["context"]["trace_id"], run["context"]["trace_id"]);
        let attributes = &chat["attributes"];
        assert_eq!(attributes["gen_ai.operation.name"], "chat");
        assert_eq!(attributes["gen_ai.provider.name"], "corrigible");
        assert_eq!(attributes["gen_ai.request.model"], "replay");
        assert!(
            attributes["gen_ai.usage.input_tokens"].as_i64() > Some(0),
            "{chat:#}"
        );
        assert!(
            attributes["gen_ai.usage.output_tokens"].as_i64() > Some(0),
            "{chat:#}"
        );
    }

    let tools = named(&spans, "execute_tool calculator");
    assert_eq!(tools.len(), 1, "{spans:#?}");
    assert_eq!(tools[0]["parent_id"].as_str(), Some(span_id(run)));
    assert_eq!(tools[0]["attributes"]["gen_ai.tool.name"], "calculator");
    assert_eq!(
        tools[0]["attributes"]["gen_ai.operation.name"],
        "execute_tool"
    );

    let corrections: Vec<&Value> = run["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["name"] == "correction")
        .collect();
    assert_eq!(corrections.len(), 1, "{run:#}");
    let correction = &corrections[0]["attributes"];
    assert_eq!(
        correction["corrigible.correction.category"],
        "invalid_tool_input"
    );
    assert_eq!(correction["corrigible.correction.tool"], "calculator");

    let exported = serde_json::to_string(&spans).unwrap_or_default();
    assert!(
        !exported.contains("secret prompt"),
        "no prompt is exported: {exported}"
    );
    assert!(
        !exported.contains("2*(3+4) = 14"),
        "no answer is exported: {exported}"
    );
}

#[test]
fn content_is_exported_only_when_opted_in() {
    let Some(program) = phoenix() else { return };
    let phoenix = Phoenix::start(&program);
    corrigible(
        &[
            "run",
            "--json",
            "--model",
            &format!("replay:{REPLAY}"),
            PROMPT,
        ],
        &phoenix.url(""),
        &[("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")],
    );
    let spans = phoenix.spans(5);
    let chats = named(&spans, "chat replay");
    assert_eq!(chats.len(), 3, "{spans:#?}");
    let input = chats[0]["attributes"]["gen_ai.input.messages"]
        .as_str()
        .unwrap_or_default();
    let messages: Value = serde_json::from_str(input).expect("JSON messages");
    let asked = messages.as_array().into_iter().flatten().any(|m| {
        m["role"] == "user"
            && m["parts"][0]["content"]
                .as_str()
                .is_some_and(|c| c.contains("secret prompt"))
    });
    assert!(asked, "the request is among the messages: {messages:#}");
    let output = chats[0]["attributes"]["gen_ai.output.messages"]
        .as_str()
        .unwrap_or_default();
    assert!(output.contains("\"role\":\"assistant\""), "{output}");
    let tools = named(&spans, "execute_tool calculator");
    assert_eq!(tools.len(), 1);
    assert!(
        tools[0]["attributes"]["gen_ai.tool.call.result"]
            .as_str()
            .is_some_and(|r| r.contains("14")),
        "{:#}",
        tools[0]
    );
    assert!(
        tools[0]["attributes"]["gen_ai.tool.call.arguments"]
            .as_str()
            .is_some_and(|a| a.contains("expression"))
    );
}

#[test]
fn the_config_file_turns_export_and_content_on() {
    let Some(program) = phoenix() else { return };
    let phoenix = Phoenix::start(&program);
    let dir = tempfile::tempdir().expect("a directory");
    let config = dir.path().join("corrigible.toml");
    std::fs::write(
        &config,
        format!(
            "[telemetry]\nendpoint = \"{}/\"\nservice_name = \"from-the-file\"\ncapture_content = true\n",
            phoenix.url("")
        ),
    )
    .expect("config written");
    let output = Command::new(env!("CARGO_BIN_EXE_corrigible"))
        .args([
            "run",
            "--json",
            "--model",
            &format!("replay:{REPLAY}"),
            PROMPT,
        ])
        .arg("--config")
        .arg(&config)
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
        .env_remove("OTEL_SERVICE_NAME")
        .env_remove("CORRIGIBLE_LOG")
        .output()
        .expect("corrigible runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let spans = phoenix.spans(5);
    let chats = named(&spans, "chat replay");
    assert_eq!(
        chats.len(),
        3,
        "the file's endpoint gets the spans: {spans:#?}"
    );
    assert!(
        chats[0]["attributes"]["gen_ai.input.messages"]
            .as_str()
            .is_some_and(|m| m.contains("secret prompt")),
        "the file's capture_content: {:#}",
        chats[0]
    );
}

/// An OpenAI-compatible upstream that answers 503 to its first `fails` requests, then a final
/// decision, and keeps the `traceparent` of every request.
#[derive(Clone)]
struct Flaky {
    fails: u32,
    calls: Arc<AtomicU32>,
    traceparents: Arc<Mutex<Vec<String>>>,
}

impl Flaky {
    /// Serves on a loopback port of `runtime`; the base URL (`…/v1`).
    fn serve(runtime: &tokio::runtime::Runtime, fails: u32) -> (Self, String) {
        let flaky = Self {
            fails,
            calls: Arc::new(AtomicU32::new(0)),
            traceparents: Arc::new(Mutex::new(Vec::new())),
        };
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("a port");
        let base = format!("http://{}/v1", listener.local_addr().expect("an address"));
        let app = axum::Router::new()
            .route("/v1/chat/completions", post(chat))
            .with_state(flaky.clone());
        runtime.spawn(async move { axum::serve(listener, app).await });
        (flaky, base)
    }
}

async fn chat(
    State(flaky): State<Flaky>,
    headers: HeaderMap,
    Json(_body): Json<Value>,
) -> Response {
    let traceparent = headers
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    flaky.traceparents.lock().unwrap().push(traceparent);
    if flaky.calls.fetch_add(1, Ordering::SeqCst) < flaky.fails {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [("retry-after", "0")],
            Json(json!({"error": {"message": "overloaded"}})),
        )
            .into_response();
    }
    let decision = json!({"state": "final", "satisfied": true, "final_summary": "Hello."});
    Json(json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "flaky-model",
        "choices": [{
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": decision.to_string()}
        }],
        "usage": {"prompt_tokens": 50, "completion_tokens": 12, "total_tokens": 62}
    }))
    .into_response()
}

#[test]
fn a_transport_retry_is_an_attempt_of_its_one_chat_span() {
    let Some(program) = phoenix() else { return };
    let phoenix = Phoenix::start(&program);
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let (flaky, base) = Flaky::serve(&runtime, 1);

    let report = corrigible(
        &[
            "run",
            "--json",
            "--model",
            "openai:flaky-model",
            "--base-url",
            &base,
            "--provider-key",
            "sk-test-not-exported",
            "--protocol",
            "json",
            "Say hello.",
        ],
        &phoenix.url(""),
        &[],
    );
    assert_eq!(report["stop_reason"], "final", "{report:#}");
    assert_eq!(
        flaky.calls.load(Ordering::SeqCst),
        2,
        "one retry, then the answer"
    );

    let spans = phoenix.spans(2);
    let chats = named(&spans, "chat flaky-model");
    assert_eq!(chats.len(), 1, "a retry is no span of its own: {spans:#?}");
    let attributes = &chats[0]["attributes"];
    assert_eq!(attributes["gen_ai.provider.name"], "openai");
    assert_eq!(attributes["corrigible.transport_retries"], 1);
    assert_eq!(attributes["gen_ai.usage.input_tokens"], 50);
    let exported = serde_json::to_string(&spans).unwrap_or_default();
    assert!(!exported.contains("sk-test-not-exported"), "{exported}");

    let chat = chats[0];
    let expected = format!(
        "00-{}-{}-01",
        chat["context"]["trace_id"].as_str().unwrap_or_default(),
        span_id(chat)
    );
    let sent = flaky.traceparents.lock().unwrap().clone();
    assert_eq!(
        sent,
        [expected.clone(), expected],
        "both attempts carry the chat span as their parent"
    );
}

#[test]
fn a_served_run_continues_the_clients_trace() {
    let Some(program) = phoenix() else { return };
    let phoenix = Phoenix::start(&program);
    let served = Served::start(&["--model", &format!("replay:{REPLAY}")], &phoenix.url(""));
    let (trace_id, parent) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let status = served.post(
        "/v1/runs",
        &format!("00-{trace_id}-{parent}-01"),
        json!({"prompt": "What is 2*(3+4)?"}),
    );
    assert_eq!(status, Some(200));
    let spans = phoenix.spans(6);

    let requests = named(&spans, "POST /v1/runs");
    assert_eq!(requests.len(), 1, "{spans:#?}");
    let request = requests[0];
    assert_eq!(request["context"]["trace_id"], trace_id);
    assert_eq!(request["parent_id"], parent);
    let runs = named(&spans, "invoke_agent corrigible");
    assert_eq!(runs.len(), 1, "{spans:#?}");
    assert_eq!(runs[0]["context"]["trace_id"], trace_id);
    assert_eq!(runs[0]["parent_id"].as_str(), Some(span_id(request)));
}

#[test]
fn the_gateway_continues_the_clients_trace_to_the_upstream() {
    let Some(program) = phoenix() else { return };
    let phoenix = Phoenix::start(&program);
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let (flaky, upstream) = Flaky::serve(&runtime, 0);
    let served = Served::start(
        &[
            "--model",
            "openai:flaky-model",
            "--base-url",
            &upstream,
            "--provider-key",
            "none",
            "--protocol",
            "json",
        ],
        &phoenix.url(""),
    );
    let (trace_id, parent) = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
    let status = served.post(
        "/v1/chat/completions",
        &format!("00-{trace_id}-{parent}-01"),
        json!({"model": "flaky-model", "messages": [{"role": "user", "content": "Hi"}]}),
    );
    assert_eq!(status, Some(200));
    let sent = flaky.traceparents.lock().unwrap().clone();
    assert_eq!(sent.len(), 1, "{sent:?}");
    let fields: Vec<&str> = sent[0].split('-').collect();
    assert_eq!(fields.len(), 4, "{sent:?}");
    assert_eq!(fields[1], trace_id, "the client's trace goes on upstream");
    assert_ne!(fields[2], parent, "under the gateway's own span");

    let spans = phoenix.spans(2);
    let requests = named(&spans, "POST /v1/chat/completions");
    assert_eq!(requests.len(), 1, "{spans:#?}");
    assert_eq!(requests[0]["parent_id"], parent);
    let chats = named(&spans, "chat flaky-model");
    assert_eq!(
        chats.len(),
        1,
        "the upstream call is a chat span: {spans:#?}"
    );
    let chat = chats[0];
    assert_eq!(chat["parent_id"].as_str(), Some(span_id(requests[0])));
    assert_eq!(
        fields[2],
        span_id(chat),
        "the upstream's parent is the chat span"
    );
    let attributes = &chat["attributes"];
    assert_eq!(attributes["gen_ai.operation.name"], "chat");
    assert_eq!(attributes["gen_ai.provider.name"], "openai");
    assert_eq!(attributes["gen_ai.response.model"], "flaky-model");
    assert_eq!(attributes["gen_ai.usage.input_tokens"], 50);
    assert_eq!(attributes["gen_ai.usage.output_tokens"], 12);
    assert_eq!(attributes["corrigible.stage"], "round_0");
}
