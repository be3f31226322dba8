//! A test server on a random loopback port, with the replay model, the calculator and a
//! `sleep` tool that makes runs last as long as a test needs.
#![allow(dead_code)]

#[cfg(feature = "postgres")]
pub mod postgres;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use corrigible::{Agent, Tool, ToolContext, ToolOutcome, ToolRegistry};
use corrigible_models::ReplayModel;
use corrigible_server::{AppState, ServerConfig, open_store, replay_factory, serve_listener};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A run with two corrections (`invalid_json`, then `unknown_tool`), one calculator call and
/// a satisfied final answer.
pub const TWO_CORRECTIONS: &str = r#"{"text": "I think the answer is 14", "usage": {"input_tokens": 100, "output_tokens": 8}}
{"text": "{\"state\":\"action\",\"reason\":\"look it up\",\"tool\":\"abacus\",\"tool_input\":{\"expression\":\"2*(3+4)\"}}", "usage": {"input_tokens": 120, "output_tokens": 20}}
{"text": "{\"state\":\"action\",\"reason\":\"compute it\",\"tool\":\"calculator\",\"tool_input\":{\"expression\":\"2*(3+4)\"}}", "reasoning": {"text": "The calculator computes 2*(3+4).", "recalculated": [{"expression": "3 + 4", "stated": "8", "value": "7"}]}, "usage": {"input_tokens": 140, "output_tokens": 20}}
{"text": "{\"state\":\"final\",\"satisfied\":true,\"final_summary\":\"2*(3+4) = 14\"}", "usage": {"input_tokens": 160, "output_tokens": 12}}
"#;

/// One calculator call and a final answer.
pub const SIMPLE: &str = r#"{"text": "{\"state\":\"action\",\"reason\":\"compute\",\"tool\":\"calculator\",\"tool_input\":{\"expression\":\"6*7\"}}"}
{"text": "{\"state\":\"final\",\"satisfied\":true,\"final_summary\":\"42\"}"}
"#;

/// The model's transport fails on the first call.
pub const TRANSPORT_FAILURE: &str = r#"{"transport_error": "connection refused (replayed)"}
"#;

/// A `sleep` call of `ms` milliseconds, then a final answer.
pub fn slow(ms: u64) -> String {
    format!(
        "{{\"text\": \"{{\\\"state\\\":\\\"action\\\",\\\"reason\\\":\\\"wait\\\",\\\"tool\\\":\\\"sleep\\\",\\\"tool_input\\\":{{\\\"ms\\\":{ms}}}}}\"}}\n\
         {{\"text\": \"{{\\\"state\\\":\\\"final\\\",\\\"satisfied\\\":true,\\\"final_summary\\\":\\\"slept {ms} ms\\\"}}\"}}\n"
    )
}

/// Sleeps for `ms` milliseconds.
pub struct SleepTool;

#[async_trait]
impl Tool for SleepTool {
    fn name(&self) -> &str {
        "sleep"
    }

    fn description(&self) -> &str {
        "Waits for `ms` milliseconds."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"ms": {"type": "integer", "minimum": 0}},
            "required": ["ms"],
            "additionalProperties": false
        })
    }

    async fn call(&self, input: Value, _ctx: &ToolContext) -> ToolOutcome {
        let ms = input.get("ms").and_then(Value::as_u64).unwrap_or(0);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        ToolOutcome::Ok(json!({"slept_ms": ms}))
    }
}

/// The agent of the test servers: calculator and sleep, JSON protocol.
pub fn agent(replay: &ReplayModel) -> Arc<Agent> {
    let mut tools = ToolRegistry::new();
    tools
        .register_typed(corrigible_tools::Calculator)
        .expect("calculator registers");
    tools
        .register(Arc::new(SleepTool))
        .expect("sleep registers");
    Arc::new(
        Agent::builder(replay.restarted())
            .tools(tools)
            .build()
            .expect("agent builds"),
    )
}

/// How to start a test server.
pub struct Options {
    /// The replay file's content.
    pub replay: String,
    /// The API key, if any.
    pub api_key: Option<String>,
    /// The body limit.
    pub body_limit: usize,
    /// The shutdown deadline.
    pub deadline: Duration,
    /// The database URL; a fresh file in a temporary directory when `None`.
    pub db: Option<String>,
    /// The lease of the server's runs (short, so tests see crashed runs recovered quickly).
    pub lease: Duration,
    /// Changes to the server configuration.
    pub configure: fn(&mut ServerConfig),
}

impl Options {
    /// Defaults with this replay.
    pub fn replay(replay: &str) -> Self {
        Self {
            replay: replay.to_string(),
            api_key: None,
            body_limit: corrigible_server::DEFAULT_BODY_LIMIT,
            deadline: Duration::from_secs(5),
            db: None,
            lease: Duration::from_secs(1),
            configure: |_| {},
        }
    }
}

/// A running test server.
pub struct TestServer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Its state (store, shutdown).
    pub state: AppState,
    /// A client.
    pub client: reqwest::Client,
    /// The database URL.
    pub db: String,
    stop: Option<oneshot::Sender<()>>,
    handle: Option<JoinHandle<()>>,
    _dir: Option<tempfile::TempDir>,
}

impl TestServer {
    /// Starts a server.
    pub async fn start(options: Options) -> Self {
        let (dir, db) = match options.db {
            Some(db) => (None, db),
            None => {
                let dir = tempfile::tempdir().expect("temp dir");
                let db = dir.path().join("runs.db").display().to_string();
                (Some(dir), db)
            }
        };
        let replay = ReplayModel::from_str(&options.replay).expect("replay parses");
        let mut config = ServerConfig {
            addr: "127.0.0.1:0".into(),
            db: db.clone(),
            api_key: options.api_key,
            body_limit: options.body_limit,
            shutdown_deadline: options.deadline,
            lease: options.lease,
            ..ServerConfig::default()
        };
        (options.configure)(&mut config);
        let store = open_store(&db).await.expect("store opens");
        let state = AppState::new(agent(&replay), replay_factory(replay), store, &config);
        let listener = tokio::net::TcpListener::bind(config.addr.as_str())
            .await
            .expect("binds");
        let port = listener.local_addr().expect("address").port();
        let base = format!("http://127.0.0.1:{port}");
        let (stop, stopped) = oneshot::channel::<()>();
        let serving = state.clone();
        let handle = tokio::spawn(async move {
            serve_listener(listener, serving, config, async {
                let _ = stopped.await;
            })
            .await
            .expect("server runs");
        });
        Self {
            base,
            state,
            client: reqwest::Client::new(),
            db,
            stop: Some(stop),
            handle: Some(handle),
            _dir: dir,
        }
    }

    /// `base` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// POSTs a run request.
    pub async fn post_run(&self, body: &Value) -> reqwest::Response {
        self.client
            .post(self.url("/v1/runs"))
            .json(body)
            .send()
            .await
            .expect("request is sent")
    }

    /// Sends the shutdown signal (as SIGTERM would).
    pub fn signal_shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }

    /// Sends the shutdown signal and waits for the server to stop.
    pub async fn stop(mut self) {
        self.signal_shutdown();
        if let Some(handle) = self.handle.take() {
            tokio::time::timeout(Duration::from_secs(30), handle)
                .await
                .expect("server stops in time")
                .expect("server task ends cleanly");
        }
    }

    /// Keeps the temporary directory (for a restart on the same database).
    pub fn take_dir(&mut self) -> Option<tempfile::TempDir> {
        self._dir.take()
    }
}

/// Waits until the async `check` holds, polling every 20 ms, for at most 20 s.
pub async fn eventually_async<F, Fut>(mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..1000 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("condition not reached within 20 s");
}

/// Waits until `check` holds, polling every 10 ms, for at most 10 s.
pub async fn eventually(mut check: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if check() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("condition not reached within 10 s");
}

/// One Server-Sent Event: its `event` and `data`.
#[derive(Debug, Clone)]
pub struct Sse {
    pub event: String,
    pub id: Option<String>,
    pub data: Value,
}

/// Reads an SSE response to its end.
pub async fn read_sse(response: reqwest::Response) -> Vec<Sse> {
    let text = tokio::time::timeout(Duration::from_secs(20), response.text())
        .await
        .expect("stream ends in time")
        .expect("stream reads");
    parse_sse(&text)
}

/// Parses SSE text.
pub fn parse_sse(text: &str) -> Vec<Sse> {
    text.split("\n\n")
        .filter_map(|block| {
            let mut event = "message".to_string();
            let mut id = None;
            let mut data = Vec::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    event = v.trim().to_string();
                } else if let Some(v) = line.strip_prefix("id:") {
                    id = Some(v.trim().to_string());
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push(v.strip_prefix(' ').unwrap_or(v).to_string());
                }
            }
            if data.is_empty() {
                return None;
            }
            let data = serde_json::from_str(&data.join("\n")).expect("data is JSON");
            Some(Sse { event, id, data })
        })
        .collect()
}
