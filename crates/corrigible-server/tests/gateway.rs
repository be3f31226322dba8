//! The OpenAI-compatible gateway over real HTTP: a scripted upstream that answers a queue of
//! completions and records what it was sent, the gateway in front of it, and clients: reqwest
//! here, the OpenAI Python SDK and the OpenAI Agents SDK (`CORRIGIBLE_GATEWAY_PYTHON`), and the
//! `openai` npm package (`CORRIGIBLE_GATEWAY_NODE_MODULES`, the `node_modules` that holds it);
//! under CI a missing client fails its test, elsewhere it is skipped.

mod common;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::routing::post;
use corrigible_models::{ChatEndpoint, ProviderOptions, ReplayModel};
use corrigible_server::{
    AppState, Gateway, ServerConfig, Verification, open_store, replay_factory,
};
use serde_json::{Value, json};

/// What the scripted upstream answers and what it was sent.
#[derive(Clone, Default)]
struct Script {
    replies: Arc<Mutex<VecDeque<Value>>>,
    seen: Arc<Mutex<Vec<Value>>>,
}

async fn complete(
    State(script): State<Script>,
    Json(body): Json<Value>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let streamed = body["stream"] == true;
    script.seen.lock().unwrap().push(body);
    if streamed {
        let message = script
            .replies
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_default();
        let text = message["content"].as_str().unwrap_or_default().to_string();
        let mut events = String::new();
        for piece in text.split_inclusive(' ') {
            let chunk = json!({"id": "s", "object": "chat.completion.chunk", "model": "scripted",
                "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]});
            events.push_str(&format!("data: {chunk}\n\n"));
        }
        let usage = json!({"id": "s", "object": "chat.completion.chunk", "model": "scripted", "choices": [],
            "usage": {"prompt_tokens": 4, "completion_tokens": 3, "total_tokens": 7}});
        events.push_str(&format!("data: {usage}\n\ndata: [DONE]\n\n"));
        return (
            [(axum::http::header::CONTENT_TYPE, "text/event-stream")],
            events,
        )
            .into_response();
    }
    let message = script
        .replies
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or_else(|| json!({"role": "assistant", "content": "out of script"}));
    let finish = if message.get("tool_calls").is_some() {
        "tool_calls"
    } else {
        "stop"
    };
    Json(json!({
        "id": "chatcmpl-upstream", "object": "chat.completion", "created": 1_700_000_000,
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    }))
    .into_response()
}

fn call(id: &str, name: &str, arguments: &str) -> Value {
    json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}]})
}

fn text(content: &str) -> Value {
    json!({"role": "assistant", "content": content})
}

struct Setup {
    base: String,
    script: Script,
    client: reqwest::Client,
}

/// A scripted upstream answering `replies` in order; its base URL.
async fn upstream(script: &Script, replies: Vec<Value>) -> String {
    script.replies.lock().unwrap().extend(replies);
    let upstream = axum::Router::new()
        .route("/v1/chat/completions", post(complete))
        .with_state(script.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, upstream).await.unwrap() });
    format!("http://{addr}/v1")
}

fn endpoint(model: &str, base_url: String) -> ChatEndpoint {
    ChatEndpoint::new(
        model,
        ProviderOptions {
            base_url: Some(base_url),
            retry: corrigible_models::TransportRetry::none(),
            ..Default::default()
        },
    )
    .unwrap()
}

async fn start(replies: Vec<Value>, api_key: Option<&str>) -> Setup {
    let script = Script::default();
    let base_url = upstream(&script, replies).await;
    let gateway = Gateway::new(endpoint("scripted", base_url), 2, 8, Duration::from_secs(5));
    serve(gateway, script, api_key).await
}

async fn serve(gateway: Gateway, script: Script, api_key: Option<&str>) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db").display().to_string();
    std::mem::forget(dir);
    let config = ServerConfig {
        addr: "127.0.0.1:0".into(),
        db: db.clone(),
        api_key: api_key.map(str::to_string),
        ..ServerConfig::default()
    };
    let replay = ReplayModel::from_str(common::SIMPLE).unwrap();
    let store = open_store(&db).await.unwrap();
    let state = AppState::new(
        common::agent(&replay),
        replay_factory(replay),
        store,
        &config,
    )
    .with_gateway(gateway);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        corrigible_server::serve_listener(listener, state, config, std::future::pending())
            .await
            .unwrap()
    });
    Setup {
        base,
        script,
        client: reqwest::Client::new(),
    }
}

fn weather_request() -> Value {
    json!({
        "model": "scripted",
        "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
        "tools": [{"type": "function", "function": {
            "name": "get_weather",
            "description": "Current weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                "required": ["city"], "additionalProperties": false}}}]
    })
}

impl Setup {
    async fn post(&self, body: &Value) -> reqwest::Response {
        self.client
            .post(format!("{}/v1/chat/completions", self.base))
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// `GET /v1/runs/{id}`: the run as stored.
    async fn run(&self, id: &str) -> Value {
        self.client
            .get(format!("{}/v1/runs/{id}", self.base))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    fn seen(&self) -> Vec<Value> {
        self.script.seen.lock().unwrap().clone()
    }
}

fn header(response: &reqwest::Response, name: &str) -> String {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn a_broken_call_is_corrected_before_the_client_sees_it() {
    let setup = start(
        vec![
            call("c1", "get_weather", r#"{"city": "#),
            call("c2", "get_weather", r#"{"city": "Paris"}"#),
        ],
        None,
    )
    .await;
    let response = setup.post(&weather_request()).await;
    assert_eq!(response.status(), 200);
    assert_eq!(header(&response, "x-corrigible-outcome"), "corrected");
    assert_eq!(
        header(&response, "x-corrigible-corrections"),
        "invalid_json"
    );
    assert_eq!(header(&response, "x-corrigible-upstream-calls"), "2");
    let run_id = header(&response, "x-corrigible-run-id");
    let body: Value = response.json().await.unwrap();
    let calls = &body["choices"][0]["message"]["tool_calls"];
    assert_eq!(calls[0]["id"], "c2");
    assert_eq!(calls[0]["function"]["arguments"], r#"{"city": "Paris"}"#);
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(
        body["usage"]["total_tokens"], 30,
        "both upstream calls count"
    );

    let seen = setup.seen();
    assert_eq!(seen.len(), 2);
    let second = seen[1]["messages"].as_array().unwrap();
    assert_eq!(
        second.len(),
        3,
        "the request, the rejected reply, its feedback"
    );
    assert_eq!(second[1]["tool_calls"][0]["id"], "c1");
    assert_eq!(second[2]["role"], "tool");
    assert_eq!(second[2]["tool_call_id"], "c1");
    let feedback = second[2]["content"].as_str().unwrap();
    assert!(feedback.contains("not valid JSON"), "{feedback}");
    assert_eq!(seen[0]["stream"], false);

    let run = setup.run(&run_id).await;
    assert_eq!(run["status"], "finished", "{run}");
    let report = &run["report"];
    assert_eq!(report["prompt"], "What is the weather in Paris?");
    assert_eq!(report["model"], "openai:scripted");
    assert_eq!(report["corrections"][0]["category"], "invalid_json");
    assert_eq!(report["corrections"][0]["corrected"], true);
    assert_eq!(report["usage"]["model_calls"], 2);
    assert_eq!(report["final_summary"], r#"get_weather({"city": "Paris"})"#);

    let response = setup
        .client
        .get(format!("{}/v1/runs/{run_id}/events", setup.base))
        .send()
        .await
        .unwrap();
    let events = common::read_sse(response).await;
    let kinds: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "run_started",
            "messages",
            "model_call",
            "rejection",
            "messages",
            "model_call",
            "corrected",
            "run_finished",
            "end"
        ],
        "a gateway request's trace, as a run's"
    );
    assert_eq!(events[3].data["record"]["category"], "invalid_json");
    let second = &events[4].data;
    assert_eq!(second["kept"], 1, "the client's message, kept");
    let added: Vec<&str> = second["added"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["kind"].as_str().unwrap())
        .collect();
    assert_eq!(added, ["reply", "feedback"]);
    assert_eq!(second["added"][0]["tool_calls"][0]["id"], "c1");
    let listed: Value = setup
        .client
        .get(format!("{}/v1/runs?category=invalid_json", setup.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["runs"][0]["run_id"], run_id.as_str());

    let metrics = setup
        .client
        .get(format!("{}/metrics", setup.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(
            "gen_ai_client_operation_duration_seconds_count{gen_ai_operation_name=\"chat\"} 2"
        ),
        "each upstream call is a chat operation: {metrics}"
    );
    assert!(
        metrics.contains(
            "gen_ai_client_token_usage_count{gen_ai_operation_name=\"chat\",gen_ai_token_type=\"input\"} 2"
        ),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_good_reply_passes_untouched_and_one_reading_is_repaired_locally() {
    let setup = start(
        vec![
            call("c1", "get_weather", r#"{"city": "Paris"}"#),
            call("c2", "get_weather", r#"{"city": "Paris",}"#),
        ],
        None,
    )
    .await;
    let response = setup.post(&weather_request()).await;
    assert_eq!(header(&response, "x-corrigible-outcome"), "passed");
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
        r#"{"city": "Paris"}"#
    );
    assert_eq!(body["usage"]["total_tokens"], 15);

    let response = setup.post(&weather_request()).await;
    assert_eq!(header(&response, "x-corrigible-outcome"), "repaired");
    assert_eq!(header(&response, "x-corrigible-repairs"), "trailing_comma");
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
        r#"{"city":"Paris"}"#
    );
    assert_eq!(setup.seen().len(), 2, "a repair costs no upstream call");
}

#[tokio::test]
async fn a_made_up_result_and_parroted_feedback_are_sent_back_after_a_tool_round() {
    let setup = start(
        vec![
            text("<tool_response>{\"temp\": 30}</tool_response> It is 30 °C in Paris."),
            text("Call a tool through the tool-calling interface, or answer in plain words."),
            text("It is 21 °C and sunny in Paris."),
        ],
        None,
    )
    .await;
    let mut request = weather_request();
    request["messages"] = json!([
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "c1",
            "content": [{"type": "text", "text": "21 °C and sunny in Paris"}]}
    ]);
    let response = setup.post(&request).await;
    assert_eq!(header(&response, "x-corrigible-outcome"), "corrected");
    assert_eq!(header(&response, "x-corrigible-corrections"), "echo,echo");
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "It is 21 °C and sunny in Paris."
    );
    let seen = setup.seen();
    assert_eq!(seen.len(), 3);
    assert_eq!(
        seen[0]["messages"][1]["content"], "",
        "no null content goes upstream"
    );
    assert_eq!(
        seen[0]["messages"][2]["content"],
        "21 °C and sunny in Paris"
    );
    let feedback = seen[1]["messages"][4]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(feedback.contains("<tool_response>"), "{feedback}");
}

/// A verifier's report that sets `answer_says` beside the tool result `14`.
fn report(answer_says: &str) -> String {
    let decision = json!({"state": "action", "reason": "compared", "tool": "report",
        "tool_input": {"comparisons": [
            {"answer_says": answer_says, "quote": "14", "source_says": "14"}]}});
    json!({"text": decision.to_string()}).to_string()
}

#[tokio::test]
async fn a_final_reply_the_tool_result_contradicts_is_sent_back_by_the_verifier() {
    let script = Script::default();
    let base_url = upstream(
        &script,
        vec![text("2*(3+4) is 41."), text("2*(3+4) is 14.")],
    )
    .await;
    let verifier = ReplayModel::from_str(&format!("{}\n{}\n", report("41"), report("14"))).unwrap();
    let gateway = Gateway::new(endpoint("scripted", base_url), 2, 8, Duration::from_secs(5))
        .with_verification(Verification::new(
            Arc::new(verifier),
            corrigible::Protocol::Json,
            2,
        ));
    let setup = serve(gateway, script, None).await;
    let request = json!({
        "model": "scripted",
        "messages": [
            {"role": "user", "content": "What is 2*(3+4)?"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "calculator", "arguments": "{\"expression\": \"2*(3+4)\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "14"}
        ],
        "tools": [{"type": "function", "function": {"name": "calculator",
            "parameters": {"type": "object", "properties": {"expression": {"type": "string"}},
                "required": ["expression"]}}}]
    });
    let response = setup.post(&request).await;
    assert_eq!(header(&response, "x-corrigible-outcome"), "corrected");
    assert_eq!(
        header(&response, "x-corrigible-corrections"),
        "verifier_objection"
    );
    let run_id = header(&response, "x-corrigible-run-id");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "2*(3+4) is 14.");
    let seen = setup.seen();
    assert_eq!(seen.len(), 2);
    let feedback = seen[1]["messages"][4]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(feedback.contains("the result of calculator"), "{feedback}");

    let run = setup.run(&run_id).await;
    let report = &run["report"];
    assert_eq!(
        report["verifications"].as_array().map(Vec::len),
        Some(2),
        "{run}"
    );
    assert_eq!(report["verifications"][0]["objected"], true);
    assert_eq!(report["verifications"][1]["objected"], false);
    assert_eq!(report["usage"]["verifications"], 2);
}

#[tokio::test]
async fn spent_corrections_answer_502_and_never_pass_an_invalid_call() {
    let setup = start(
        vec![
            call("c1", "get_wether", "{}"),
            call("c2", "get_wether", "{}"),
            call("c3", "get_wether", "{}"),
        ],
        None,
    )
    .await;
    let response = setup.post(&weather_request()).await;
    assert_eq!(response.status(), 502);
    assert_eq!(header(&response, "x-corrigible-outcome"), "spent");
    assert_eq!(
        header(&response, "x-corrigible-corrections"),
        "unknown_tool,unknown_tool,unknown_tool"
    );
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["kind"], "corrections_spent");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("get_weather"),
        "{body}"
    );
    assert_eq!(setup.seen().len(), 3, "one call and two corrections");
}

#[tokio::test]
async fn tool_choice_required_and_a_json_schema_format_are_enforced() {
    let setup = start(
        vec![
            text("It is sunny in Paris."),
            call("c1", "get_weather", r#"{"city": "Paris"}"#),
            text(r#"{"city": "Paris", "celsius": "warm"}"#),
            text(r#"{"city": "Paris", "celsius": 21}"#),
        ],
        None,
    )
    .await;
    let mut required = weather_request();
    required["tool_choice"] = json!("required");
    let response = setup.post(&required).await;
    assert_eq!(
        header(&response, "x-corrigible-corrections"),
        "decision_schema"
    );
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
        "get_weather"
    );
    let feedback = &setup.seen()[1]["messages"][2];
    assert_eq!(feedback["role"], "user");

    let formatted = json!({
        "model": "scripted",
        "messages": [{"role": "user", "content": "Paris, as JSON"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "w", "schema": {
            "type": "object", "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
            "required": ["city", "celsius"]}}}
    });
    let response = setup.post(&formatted).await;
    assert_eq!(
        header(&response, "x-corrigible-corrections"),
        "output_rejected"
    );
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["choices"][0]["message"]["content"],
        r#"{"city": "Paris", "celsius": 21}"#
    );
}

#[tokio::test]
async fn a_streamed_reply_arrives_as_chunks_with_usage_last() {
    let setup = start(
        vec![
            call("c1", "get_weather", "{city: Paris}"),
            call("c2", "get_weather", r#"{"city": "Paris"}"#),
        ],
        None,
    )
    .await;
    let mut request = weather_request();
    request["stream"] = json!(true);
    request["stream_options"] = json!({"include_usage": true});
    let response = setup.post(&request).await;
    assert_eq!(response.status(), 200);
    assert!(header(&response, "content-type").starts_with("text/event-stream"));
    let body = response.text().await.unwrap();
    assert!(body.ends_with("data: [DONE]\n\n"), "{body}");
    let chunks: Vec<Value> = body
        .split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .filter(|e| *e != "[DONE]")
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    let call = chunks
        .iter()
        .find_map(|c| c["choices"][0]["delta"]["tool_calls"].get(0).cloned())
        .expect("a tool-call delta");
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(chunks.last().unwrap()["usage"]["total_tokens"], 30);
    assert_eq!(
        setup.seen()[0]["stream"],
        false,
        "the upstream is asked whole"
    );
}

#[tokio::test]
async fn models_keys_and_bad_requests() {
    let setup = start(Vec::new(), Some("secret-key")).await;
    let refused = setup.post(&weather_request()).await;
    assert_eq!(refused.status(), 401);
    let models: Value = setup
        .client
        .get(format!("{}/v1/models", setup.base))
        .bearer_auth("secret-key")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["data"][0]["id"], "scripted");
    let mut bad = weather_request();
    bad["tool_choice"] = json!({"type": "function", "function": {"name": "nope"}});
    let response = setup
        .client
        .post(format!("{}/v1/chat/completions", setup.base))
        .bearer_auth("secret-key")
        .json(&bad)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert!(body["error"]["message"].as_str().unwrap().contains("nope"));
    assert!(setup.seen().is_empty(), "nothing reached the upstream");
}

/// The Python that has the `openai` and `openai-agents` packages, or `None` (a failure under CI).
fn python() -> Option<String> {
    let python = std::env::var("CORRIGIBLE_GATEWAY_PYTHON").unwrap_or_else(|_| "python3".into());
    let found = std::process::Command::new(&python)
        .args(["-c", "import openai, agents"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        let message = format!(
            "{python} cannot import openai and agents (pip install openai openai-agents; \
             CORRIGIBLE_GATEWAY_PYTHON names the interpreter)"
        );
        if std::env::var_os("CI").is_some() {
            panic!("{message}");
        }
        eprintln!("skipping: {message}");
        return None;
    }
    Some(python)
}

async fn run_python(python: &str, script: &str, base: &str) -> String {
    let path = format!(
        "{}/tests/gateway_clients/{script}",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = tokio::process::Command::new(python)
        .arg(&path)
        .env("GATEWAY_BASE_URL", format!("{base}/v1"))
        .env("OPENAI_API_KEY", "unused")
        .env("OPENAI_AGENTS_DISABLE_TRACING", "1")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{script} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[tokio::test]
async fn the_openai_python_sdk_gets_corrected_calls_streamed_and_whole() {
    let Some(python) = python() else { return };
    let setup = start(
        vec![
            // tools, non-streaming: a broken call, then a good one
            call("c1", "get_weather", r#"{"city": "#),
            call("c2", "get_weather", r#"{"city": "Paris"}"#),
            // tools, streaming: an unknown function, then a good call
            call("c3", "weather", r#"{"city": "Oslo"}"#),
            call("c4", "get_weather", r#"{"city": "Oslo"}"#),
            // tool_choice required: text, then a call
            text("Sunny."),
            call("c5", "get_weather", r#"{"city": "Rome"}"#),
            // json_schema response format: a wrong type, then a match
            text(r#"{"city": "Rome", "celsius": "hot"}"#),
            text(r#"{"city": "Rome", "celsius": 30}"#),
        ],
        None,
    )
    .await;
    let out = run_python(&python, "openai_sdk.py", &setup.base).await;
    assert!(out.contains("all checks passed"), "{out}");
    assert_eq!(setup.seen().len(), 8);
}

#[tokio::test]
async fn an_openai_agents_sdk_agent_runs_its_tool_through_the_gateway() {
    let Some(python) = python() else { return };
    let setup = start(
        vec![
            call("c1", "get_weather", r#"{"city": "#),
            call("c2", "get_weather", r#"{"town": "Paris"}"#),
            call("c3", "get_weather", r#"{"city": "Paris"}"#),
            text("It is 21 °C and sunny in Paris."),
        ],
        None,
    )
    .await;
    let out = run_python(&python, "openai_agents.py", &setup.base).await;
    assert!(
        out.contains("final: It is 21 °C and sunny in Paris."),
        "{out}"
    );
    assert!(out.contains("tool ran with city=Paris"), "{out}");
    let seen = setup.seen();
    assert_eq!(
        seen.len(),
        4,
        "two corrections, then the turn after the tool"
    );
    let last = seen[3]["messages"].as_array().unwrap();
    let result = last.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(result["tool_call_id"], "c3");
}

/// The `node_modules` directory that holds the `openai` package, or `None` (a failure under CI).
fn node_modules() -> Option<String> {
    let dir = std::env::var("CORRIGIBLE_GATEWAY_NODE_MODULES").unwrap_or_default();
    let found = !dir.is_empty()
        && std::process::Command::new("node")
            .args(["-e", "require('openai')"])
            .env("NODE_PATH", &dir)
            .output()
            .is_ok_and(|o| o.status.success());
    if !found {
        let message = "node cannot require the openai package from CORRIGIBLE_GATEWAY_NODE_MODULES \
                       (npm install openai, then point the variable at its node_modules)";
        if std::env::var_os("CI").is_some() {
            panic!("{message}");
        }
        eprintln!("skipping: {message}");
        return None;
    }
    Some(dir)
}

#[tokio::test]
async fn the_openai_npm_package_gets_corrected_calls_streamed_and_whole() {
    let Some(modules) = node_modules() else {
        return;
    };
    let setup = start(
        vec![
            call("c1", "get_weather", r#"{"city": "#),
            call("c2", "get_weather", r#"{"city": "Paris"}"#),
            call("c3", "weather", r#"{"city": "Oslo"}"#),
            call("c4", "get_weather", r#"{"city": "Oslo"}"#),
        ],
        None,
    )
    .await;
    let script = format!(
        "{}/tests/gateway_clients/openai_node.cjs",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = tokio::process::Command::new("node")
        .arg(&script)
        .env("NODE_PATH", &modules)
        .env("GATEWAY_BASE_URL", format!("{}/v1", setup.base))
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(setup.seen().len(), 4);
}

#[tokio::test]
async fn a_fallback_answers_when_the_upstream_spends_its_corrections_or_is_down() {
    let primary = Script::default();
    let primary_url = upstream(
        &primary,
        vec![
            call("p1", "get_wether", "{}"),
            call("p2", "get_wether", "{}"),
            call("p3", "get_wether", "{}"),
        ],
    )
    .await;
    let backup = Script::default();
    let backup_url = upstream(
        &backup,
        vec![call("b1", "get_weather", r#"{"city": "Paris"}"#)],
    )
    .await;
    let gateway = Gateway::new(
        endpoint("primary", primary_url),
        2,
        8,
        Duration::from_secs(5),
    )
    .with_fallback(endpoint("backup", backup_url));
    let setup = serve(gateway, primary.clone(), None).await;
    let response = setup.post(&weather_request()).await;
    assert_eq!(response.status(), 200);
    assert_eq!(header(&response, "x-corrigible-upstream"), "openai:backup");
    assert_eq!(
        header(&response, "x-corrigible-fallbacks"),
        "primary: corrections spent"
    );
    assert_eq!(header(&response, "x-corrigible-upstream-calls"), "4");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["tool_calls"][0]["id"], "b1");
    assert_eq!(
        body["usage"]["total_tokens"], 60,
        "every upstream call counts"
    );
    let asked = backup.seen.lock().unwrap()[0].clone();
    assert_eq!(
        asked["model"], "backup",
        "a fallback is asked for its own model"
    );
    assert_eq!(
        asked["messages"].as_array().unwrap().len(),
        1,
        "without the primary's corrections"
    );

    let dead = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/v1", listener.local_addr().unwrap())
    };
    let backup = Script::default();
    let backup_url = upstream(
        &backup,
        vec![call("b1", "get_weather", r#"{"city": "Paris"}"#)],
    )
    .await;
    let gateway = Gateway::new(endpoint("dead", dead), 2, 8, Duration::from_secs(5))
        .with_fallback(endpoint("backup", backup_url))
        .with_breaker_policy(
            corrigible::policy::BreakerPolicy::new(1, Duration::from_secs(60)).unwrap(),
        );
    let setup = serve(gateway, backup, None).await;
    let response = setup.post(&weather_request()).await;
    assert_eq!(response.status(), 200);
    assert_eq!(header(&response, "x-corrigible-upstream"), "openai:backup");
    let passed_over = header(&response, "x-corrigible-fallbacks");
    assert!(
        passed_over.starts_with("dead: transport error"),
        "{passed_over}"
    );
}

#[tokio::test]
async fn a_json_protocol_model_answers_through_the_gateway_with_its_decisions_as_calls() {
    let replay = ReplayModel::from_str(concat!(
        r#"{"text": "I think it is sunny in Paris.", "usage": {"input_tokens": 100, "output_tokens": 8}}"#,
        "\n",
        r#"{"text": "{\"state\":\"action\",\"reason\":\"look\",\"tool\":\"get_weather\",\"tool_input\":{\"city\":\"Paris\"}}", "usage": {"input_tokens": 120, "output_tokens": 20}}"#,
        "\n",
        r#"{"text": "{\"state\":\"final\",\"satisfied\":true,\"final_summary\":\"It is 21 °C in Paris.\"}", "usage": {"input_tokens": 150, "output_tokens": 12}}"#,
        "\n",
    ))
    .unwrap();
    let model: Arc<dyn corrigible::Model> = Arc::new(replay);
    let gateway = Gateway::new(
        corrigible_server::ModelUpstream::new(model),
        2,
        8,
        Duration::from_secs(5),
    );
    let setup = serve(gateway, Script::default(), None).await;
    let response = setup.post(&weather_request()).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        header(&response, "x-corrigible-corrections"),
        "invalid_json"
    );
    let body: Value = response.json().await.unwrap();
    let call = &body["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "get_weather");
    assert_eq!(call["function"]["arguments"], r#"{"city":"Paris"}"#);
    assert_eq!(body["usage"]["prompt_tokens"], 220);

    let mut next = weather_request();
    let messages = next["messages"].as_array_mut().unwrap();
    messages.push(json!({"role": "assistant", "content": null, "tool_calls": [call]}));
    messages.push(json!({"role": "tool", "tool_call_id": call["id"], "content": "21 °C"}));
    let response = setup.post(&next).await;
    assert_eq!(header(&response, "x-corrigible-outcome"), "passed");
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["choices"][0]["message"]["content"],
        "It is 21 °C in Paris."
    );
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
}

#[tokio::test]
async fn a_streamed_plain_text_reply_is_passed_through_and_recorded() {
    let setup = start(vec![text("Bonjour tout le monde")], None).await;
    let request = json!({
        "messages": [{"role": "user", "content": "Say hello in French."}],
        "stream": true,
        "stream_options": {"include_usage": true}
    });
    let response = setup.post(&request).await;
    assert_eq!(response.status(), 200);
    assert_eq!(header(&response, "x-corrigible-outcome"), "streamed");
    let run_id = header(&response, "x-corrigible-run-id");
    let body = response.text().await.unwrap();
    assert_eq!(body.matches("data: ").count(), 6, "{body}");
    assert!(body.ends_with("data: [DONE]\n\n"));
    let seen = setup.seen();
    assert_eq!(seen[0]["stream"], true, "the upstream streams");
    assert_eq!(seen[0]["stream_options"]["include_usage"], true);
    assert_eq!(seen[0]["model"], "scripted");

    let mut run = Value::Null;
    for _ in 0..50 {
        run = setup.run(&run_id).await;
        if run["status"] == "finished" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        run["report"]["final_summary"], "Bonjour tout le monde",
        "{run}"
    );
    assert_eq!(run["report"]["usage"]["input_tokens"], 4);
}
