//! A fake provider: an in-process axum server on 127.0.0.1:0 that records every request and
//! answers with canned responses, in order.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use corrigible::decision::final_answer_spec;
use corrigible::{Message, MessageKind, ModelRequest, Protocol, Stage, ToolCall, ToolSpec};
use corrigible_models::{ApiKey, ProviderOptions, TransportRetry};
use serde_json::{Value, json};

pub const KEY: &str = "test-secret-key-0123456789";

/// One canned answer.
#[derive(Clone)]
pub struct Canned {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: String,
    pub delay: Duration,
}

impl Canned {
    pub fn ok(body: Value) -> Self {
        Self::status(200, body)
    }

    pub fn status(status: u16, body: Value) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: body.to_string(),
            delay: Duration::ZERO,
        }
    }

    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    pub fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_string()));
        self
    }
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

#[derive(Clone, Default)]
struct Shared {
    canned: Arc<Mutex<VecDeque<Canned>>>,
    recorded: Arc<Mutex<Vec<Recorded>>>,
}

pub struct FakeServer {
    pub base: String,
    shared: Shared,
}

async fn answer(
    State(shared): State<Shared>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    shared.recorded.lock().unwrap().push(Recorded {
        path: uri.to_string(),
        headers,
        body,
    });
    let Some(canned) = shared.canned.lock().unwrap().pop_front() else {
        return (StatusCode::IM_A_TEAPOT, "no canned response left").into_response();
    };
    tokio::time::sleep(canned.delay).await;
    let mut response = (
        StatusCode::from_u16(canned.status).unwrap(),
        [("content-type", "application/json")],
        canned.body,
    )
        .into_response();
    for (name, value) in canned.headers {
        response.headers_mut().insert(name, value.parse().unwrap());
    }
    response
}

impl FakeServer {
    pub async fn start(canned: Vec<Canned>) -> Self {
        let shared = Shared::default();
        shared.canned.lock().unwrap().extend(canned);
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            base: format!("http://{addr}"),
            shared,
        }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.recorded.lock().unwrap().clone()
    }

    pub fn only_request(&self) -> Recorded {
        let requests = self.requests();
        assert_eq!(requests.len(), 1, "expected exactly one request");
        requests.into_iter().next().unwrap()
    }
}

/// Options pointing at `base`, with the test key and tiny transport waits.
pub fn options(base: &str) -> ProviderOptions {
    ProviderOptions {
        base_url: Some(base.to_string()),
        api_key: Some(ApiKey::new(KEY)),
        retry: TransportRetry::new(2, Duration::from_millis(1), Duration::from_millis(5))
            .unwrap()
            .with_retry_after_cap(Duration::from_millis(20)),
        ..ProviderOptions::default()
    }
}

pub fn weather_spec() -> ToolSpec {
    ToolSpec {
        name: "weather".into(),
        description: "Current weather in a city.".into(),
        parameters: json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "WeatherInput",
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"],
            "additionalProperties": false
        }),
        grounded: Vec::new(),
        computes: false,
    }
}

/// A first call under the native protocol: system prompt, request, weather + final_answer.
pub fn first_request() -> ModelRequest {
    ModelRequest {
        stage: Stage::new(1, 0),
        messages: vec![
            Message::system("You are a careful agent."),
            Message::request("Weather in Delhi and Paris?"),
        ],
        tools: vec![weather_spec(), final_answer_spec()],
        protocol: Protocol::Native,
        correction: None,
        grounds: Default::default(),
    }
}

/// A later call: the model called `weather` twice (the second with broken JSON) and an unknown
/// tool; the first succeeded, the others were rejected; then a plain feedback message.
pub fn history_request() -> ModelRequest {
    let mut request = first_request();
    request.stage = Stage::new(1, 1);
    let call = |id: &str, name: &str, args: &str| ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.into(),
    };
    request.messages.extend([
        Message::assistant(
            MessageKind::Reply,
            "Checking both.",
            vec![
                call("call_a", "weather", r#"{"city":"Delhi"}"#),
                call("call_b", "weather", r#"{"city": "Par"#),
                call("call_c", "teleport", r#"{"to":"Paris"}"#),
            ],
        ),
        Message::tool_result(
            "call_a",
            "weather",
            r#"{"temp_c":31}"#,
            false,
            MessageKind::ToolResult,
        ),
        Message::tool_result(
            "call_b",
            "weather",
            "invalid_json: not valid JSON",
            true,
            MessageKind::Feedback,
        ),
        Message::tool_result(
            "call_c",
            "teleport",
            "unknown_tool: no tool `teleport`",
            true,
            MessageKind::Feedback,
        ),
        Message::user(MessageKind::Feedback, "Fix the rejected calls."),
    ]);
    request
}

/// The same conversation under the JSON protocol.
pub fn json_request() -> ModelRequest {
    ModelRequest {
        protocol: Protocol::Json,
        ..first_request()
    }
}
