mod common;

use std::time::{Duration, Instant};

use common::{Canned, FakeServer, KEY, first_request, history_request, json_request, options};
use corrigible::{
    Category, CorrectionContext, Model, ModelError, ProbeFinding, Protocol, ToolCall, Usage,
    probe_tool_calling,
};
use corrigible_models::{OpenAiModel, ProviderOptions};
use serde_json::{Value, json};

fn completion(message: Value, finish_reason: &str) -> Value {
    json!({
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "object": "chat.completion",
        "created": 1741569952,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": 82, "completion_tokens": 17, "total_tokens": 99,
            "prompt_tokens_details": {"cached_tokens": 64, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
        },
        "service_tier": "default",
        "system_fingerprint": "fp_06737a9306"
    })
}

fn tool_calls(calls: &[(&str, &str, &str)]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| {
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
        })
        .collect();
    completion(
        json!({"role": "assistant", "content": null, "tool_calls": calls, "refusal": null, "annotations": []}),
        "tool_calls",
    )
}

fn error_body(message: &str, kind: &str, code: &str) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

async fn model_for(server: &FakeServer) -> OpenAiModel {
    OpenAiModel::new("gpt-4o-mini", options(&format!("{}/v1/", server.base))).unwrap()
}

#[tokio::test]
async fn correct_tool_call_and_request_shape() {
    let server = FakeServer::start(vec![Canned::ok(tool_calls(&[(
        "call_12345xyz",
        "weather",
        "{\"city\":\"Delhi\"}",
    )]))])
    .await;
    let model = model_for(&server).await;
    assert_eq!(model.name(), "openai:gpt-4o-mini");

    let reply = model.complete(&first_request()).await.unwrap();
    assert_eq!(
        reply.tool_calls,
        vec![ToolCall {
            id: "call_12345xyz".into(),
            name: "weather".into(),
            arguments: "{\"city\":\"Delhi\"}".into()
        }]
    );
    assert_eq!(reply.text, None);
    assert_eq!(
        reply.usage,
        Usage {
            input_tokens: 82,
            output_tokens: 17
        }
    );
    assert_eq!(reply.prompt_tokens_reused, Some(64));
    assert_eq!(reply.transport_retries, 0);

    let request = server.only_request();
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(
        request.body,
        json!({
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "You are a careful agent."},
                {"role": "user", "content": "Weather in Delhi and Paris?"}
            ],
            "tools": [
                {"type": "function", "function": {
                    "name": "weather",
                    "description": "Current weather in a city.",
                    "parameters": common::weather_spec().parameters
                }},
                {"type": "function", "function": {
                    "name": "final_answer",
                    "description": corrigible::decision::final_answer_spec().description,
                    "parameters": corrigible::decision::final_answer_spec().parameters
                }}
            ]
        })
    );
}

#[tokio::test]
async fn history_ties_results_to_call_ids() {
    let server = FakeServer::start(vec![Canned::ok(completion(
        json!({"role": "assistant", "content": "Delhi is 31°C.", "refusal": null}),
        "stop",
    ))])
    .await;
    let reply = model_for(&server)
        .await
        .complete(&history_request())
        .await
        .unwrap();
    assert_eq!(reply.text.as_deref(), Some("Delhi is 31°C."));
    assert!(reply.tool_calls.is_empty());

    let body = server.only_request().body;
    assert_eq!(
        body["messages"].as_array().unwrap()[2..],
        [
            json!({"role": "assistant", "content": "Checking both.", "tool_calls": [
                {"id": "call_a", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Delhi\"}"}},
                {"id": "call_b", "type": "function", "function": {"name": "weather", "arguments": "{\"_raw\":\"{\\\"city\\\": \\\"Par\"}"}},
                {"id": "call_c", "type": "function", "function": {"name": "teleport", "arguments": "{\"to\":\"Paris\"}"}}
            ]}),
            json!({"role": "tool", "tool_call_id": "call_a", "content": "{\"temp_c\":31}"}),
            json!({"role": "tool", "tool_call_id": "call_b", "content": "invalid_json: not valid JSON"}),
            json!({"role": "tool", "tool_call_id": "call_c", "content": "unknown_tool: no tool `teleport`"}),
            json!({"role": "user", "content": "Fix the rejected calls."}),
        ]
    );
}

#[tokio::test]
async fn broken_arguments_are_kept_verbatim() {
    let broken = "{\"city\": \"Delhi\"";
    let server = FakeServer::start(vec![Canned::ok(tool_calls(&[(
        "call_1", "weather", broken,
    )]))])
    .await;
    let reply = model_for(&server)
        .await
        .complete(&first_request())
        .await
        .unwrap();
    assert_eq!(reply.tool_calls[0].arguments, broken);
}

#[tokio::test]
async fn unknown_tool_is_passed_through() {
    let server = FakeServer::start(vec![Canned::ok(tool_calls(&[(
        "call_9",
        "teleport",
        "{\"to\":\"Mars\"}",
    )]))])
    .await;
    let reply = model_for(&server)
        .await
        .complete(&first_request())
        .await
        .unwrap();
    assert_eq!(reply.tool_calls[0].name, "teleport");
    assert_eq!(reply.tool_calls[0].id, "call_9");
}

#[tokio::test]
async fn two_tool_calls_in_order() {
    let server = FakeServer::start(vec![Canned::ok(tool_calls(&[
        ("call_d", "weather", "{\"city\":\"Delhi\"}"),
        ("call_p", "weather", "{\"city\":\"Paris\"}"),
    ]))])
    .await;
    let reply = model_for(&server)
        .await
        .complete(&first_request())
        .await
        .unwrap();
    let ids: Vec<&str> = reply.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["call_d", "call_p"]);
    assert_eq!(reply.tool_calls[1].arguments, "{\"city\":\"Paris\"}");
}

#[tokio::test]
async fn rate_limit_with_retry_after_then_success() {
    let limited = error_body(
        "Rate limit reached for gpt-4o-mini.",
        "requests",
        "rate_limit_exceeded",
    );
    let server = FakeServer::start(vec![
        Canned::status(429, limited).header("retry-after", "1"),
        Canned::ok(tool_calls(&[("call_1", "weather", "{\"city\":\"Delhi\"}")])),
    ])
    .await;
    let started = Instant::now();
    let reply = model_for(&server)
        .await
        .complete(&first_request())
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "Retry-After was not capped"
    );
    assert_eq!(reply.transport_retries, 1);
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn overloaded_three_times_is_a_transport_error() {
    let overloaded = error_body(
        "The server is overloaded or not ready yet.",
        "server_error",
        "overloaded",
    );
    let server = FakeServer::start(vec![Canned::status(503, overloaded); 3]).await;
    let err = model_for(&server)
        .await
        .complete(&first_request())
        .await
        .unwrap_err();
    let ModelError::Transport(message) = err else {
        panic!("expected transport, got {err:?}")
    };
    assert!(message.contains("503"), "{message}");
    assert!(message.contains("overloaded"), "{message}");
    assert!(message.contains("2 transport retries"), "{message}");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn unauthorized_is_a_configuration_error_without_the_key() {
    let body = error_body(
        &format!(
            "Incorrect API key provided: {KEY}. You can find your API key at https://platform.openai.com/account/api-keys."
        ),
        "invalid_request_error",
        "invalid_api_key",
    );
    let server = FakeServer::start(vec![Canned::status(401, body)]).await;
    let err = model_for(&server)
        .await
        .complete(&first_request())
        .await
        .unwrap_err();
    let ModelError::Config(message) = err else {
        panic!("expected config, got {err:?}")
    };
    assert!(message.contains("401"), "{message}");
    assert!(message.contains("OPENAI_API_KEY"), "{message}");
    assert!(message.contains("Incorrect API key provided"), "{message}");
    assert!(!message.contains(KEY), "the key leaked: {message}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn other_client_errors_are_configuration_errors() {
    let body = error_body(
        "The model `gpt-9` does not exist",
        "invalid_request_error",
        "model_not_found",
    );
    let server = FakeServer::start(vec![Canned::status(404, body)]).await;
    let err = model_for(&server)
        .await
        .complete(&first_request())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ModelError::Config(m) if m.contains("does not exist")),
        "{err:?}"
    );
}

#[tokio::test]
async fn json_protocol_sends_no_tools() {
    let text = r#"{"state":"final","satisfied":true,"final_summary":"ok"}"#;
    let server = FakeServer::start(vec![Canned::ok(completion(
        json!({"role": "assistant", "content": text}),
        "stop",
    ))])
    .await;
    let reply = model_for(&server)
        .await
        .complete(&json_request())
        .await
        .unwrap();
    assert_eq!(reply.text.as_deref(), Some(text));
    let body = server.only_request().body;
    assert!(body.get("tools").is_none(), "{body}");
    assert!(body.get("tool_choice").is_none(), "{body}");
}

#[tokio::test]
async fn no_key_sends_no_authorization() {
    let server = FakeServer::start(vec![Canned::ok(completion(
        json!({"role": "assistant", "content": "hi"}),
        "stop",
    ))])
    .await;
    let options = ProviderOptions {
        api_key: None,
        ..options(&format!("{}/v1", server.base))
    };
    let model = OpenAiModel::new("llama3.2", options).unwrap();
    model.complete(&json_request()).await.unwrap();
    assert_eq!(server.only_request().header("authorization"), None);
}

#[tokio::test]
async fn unreadable_body_is_not_a_panic() {
    let server = FakeServer::start(vec![Canned {
        status: 200,
        headers: Vec::new(),
        body: "<html>gateway</html>".into(),
        delay: Duration::ZERO,
    }])
    .await;
    let err = model_for(&server)
        .await
        .complete(&first_request())
        .await
        .unwrap_err();
    assert!(matches!(err, ModelError::Other(_)), "{err:?}");
}

#[tokio::test]
async fn connection_refused_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let model = OpenAiModel::new("m", options(&base)).unwrap();
    let err = model.complete(&first_request()).await.unwrap_err();
    assert!(
        matches!(&err, ModelError::Transport(m) if m.contains("unreachable")),
        "{err:?}"
    );
}

#[tokio::test]
async fn slow_answers_time_out_and_are_retried() {
    let slow = || {
        Canned::ok(completion(
            json!({"role": "assistant", "content": "late"}),
            "stop",
        ))
        .after(Duration::from_millis(400))
    };
    let server = FakeServer::start(vec![slow(), slow(), slow()]).await;
    let mut options = options(&format!("{}/v1", server.base));
    options.timeouts.request = Duration::from_millis(50);
    let model = OpenAiModel::new("m", options).unwrap();
    let err = model.complete(&first_request()).await.unwrap_err();
    assert!(
        matches!(&err, ModelError::Transport(m) if m.contains("2 transport retries")),
        "{err:?}"
    );
    assert_eq!(server.requests().len(), 3);
}

/// The names of the tools a request body declares.
fn declared_names(body: &Value) -> Vec<&str> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default()
}

fn correction(category: Category, tool: Option<&str>, repeated: u32) -> CorrectionContext {
    CorrectionContext {
        tool: tool.map(String::from),
        repeated_in_slot: repeated,
        repeats_spent: repeated >= 2,
        ..CorrectionContext::first_round(category, "{}")
    }
}

#[tokio::test]
async fn corrections_narrow_the_tool_choice() {
    let reply = || Canned::ok(tool_calls(&[("call_1", "weather", "{\"city\":\"Delhi\"}")]));
    let server = FakeServer::start(vec![reply(), reply(), reply(), reply()]).await;
    let model = model_for(&server).await;

    let mut request = history_request();
    request.correction = Some(correction(Category::InvalidToolInput, Some("weather"), 0));
    model.complete(&request).await.unwrap();
    request.correction = Some(correction(
        Category::RepeatedFailedAction,
        Some("weather"),
        2,
    ));
    model.complete(&request).await.unwrap();
    request.correction = Some(correction(Category::InvalidJson, None, 0));
    model.complete(&request).await.unwrap();
    request.correction = Some(correction(Category::UngroundedArgument, Some("weather"), 0));
    model.complete(&request).await.unwrap();

    let requests = server.requests();
    assert_eq!(
        requests[0].body["tool_choice"],
        json!({"type": "function", "function": {"name": "weather"}})
    );
    assert_eq!(
        requests[1].body["tool_choice"],
        json!({"type": "function", "function": {"name": "final_answer"}})
    );
    assert!(requests[2].body.get("tool_choice").is_none());
    assert_eq!(requests[3].body["tool_choice"], json!("required"));
    let declared = declared_names(&requests[3].body);
    assert_eq!(
        declared,
        ["weather"],
        "an action-only round declares no final_answer"
    );
}

#[tokio::test]
async fn with_no_number_yet_the_round_requires_another_tool() {
    let reply = || Canned::ok(tool_calls(&[("call_1", "weather", "{\"city\":\"Paris\"}")]));
    let server = FakeServer::start(vec![reply()]).await;
    let model = model_for(&server).await;
    let mut request = history_request();
    let mut calculator = request.tools[0].clone();
    calculator.name = "calculator".into();
    request.tools.push(calculator);
    let mut c = correction(Category::UngroundedArgument, Some("calculator"), 0);
    c.detail = corrigible::CorrectionDetail::NoNumbersYet;
    request.correction = Some(c);
    model.complete(&request).await.unwrap();
    let requests = server.requests();
    assert_eq!(requests[0].body["tool_choice"], json!("required"));
    let declared = declared_names(&requests[0].body);
    assert_eq!(declared, ["weather"], "neither calculator nor final_answer");
}

#[tokio::test]
async fn an_uncovered_request_forces_the_covering_tool() {
    let reply = || Canned::ok(tool_calls(&[("call_1", "weather", "{\"city\":\"Paris\"}")]));
    let server = FakeServer::start(vec![reply()]).await;
    let model = model_for(&server).await;
    let mut request = history_request();
    let mut c = correction(Category::UncoveredRequest, None, 0);
    c.detail = corrigible::CorrectionDetail::UncoveredRequest {
        tools: vec!["weather".into()],
        done: Vec::new(),
    };
    request.correction = Some(c);
    model.complete(&request).await.unwrap();
    let requests = server.requests();
    assert_eq!(
        requests[0].body["tool_choice"],
        json!({"type": "function", "function": {"name": "weather"}})
    );
}

#[tokio::test]
async fn with_the_action_budget_spent_every_round_forces_the_final_answer() {
    let reply = || {
        Canned::ok(tool_calls(&[(
            "call_1",
            "final_answer",
            "{\"satisfied\":true,\"final_summary\":\"12.6\"}",
        )]))
    };
    let server = FakeServer::start(vec![reply(), reply()]).await;
    let model = model_for(&server).await;
    let mut request = history_request();
    for category in [Category::UnstatedResult, Category::InvalidToolInput] {
        let mut c = correction(category, Some("weather"), 0);
        c.budget_spent = true;
        request.correction = Some(c);
        model.complete(&request).await.unwrap();
    }
    for sent in server.requests() {
        assert_eq!(
            sent.body["tool_choice"],
            json!({"type": "function", "function": {"name": "final_answer"}})
        );
    }
}

#[tokio::test]
async fn the_probe_reads_what_the_server_does_with_a_tool_call() {
    let qwen_text = "<tool_call>\n{\"name\": \"lookup\", \"arguments\": {\"key\": \"probe-7316\"}}\n</tool_call>";
    let cases = [
        (
            tool_calls(&[("call_1", "lookup", "{\"key\":\"probe-7316\"}")]),
            ProbeFinding::NativeCall,
            Protocol::Native,
        ),
        (
            completion(json!({"role": "assistant", "content": qwen_text}), "stop"),
            ProbeFinding::CallAsText,
            Protocol::Json,
        ),
        (
            completion(json!({"role": "assistant", "content": ""}), "stop"),
            ProbeFinding::EmptyReply,
            Protocol::Json,
        ),
    ];
    for (reply, finding, protocol) in cases {
        let server = FakeServer::start(vec![Canned::ok(reply)]).await;
        let found = probe_tool_calling(&model_for(&server).await).await.unwrap();
        assert_eq!((found, found.protocol()), (finding, protocol));
        let body = server.only_request().body;
        let tools = body["tools"].as_array().expect("tools are declared");
        assert_eq!(tools.len(), 1, "{body}");
        assert_eq!(tools[0]["function"]["name"], "lookup");
        assert!(body.get("tool_choice").is_none(), "not forced: {body}");
    }
}

#[tokio::test]
async fn a_probe_of_a_server_that_is_down_is_a_transport_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let model = OpenAiModel::new("m", options(&format!("http://127.0.0.1:{port}/v1"))).unwrap();
    assert!(matches!(
        probe_tool_calling(&model).await,
        Err(ModelError::Transport(_))
    ));
}
