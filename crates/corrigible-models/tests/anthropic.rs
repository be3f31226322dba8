mod common;

use common::{Canned, FakeServer, KEY, first_request, history_request, json_request, options};
use corrigible::{Category, CorrectionContext, Model, ModelError, Usage};
use corrigible_models::{ANTHROPIC_VERSION, AnthropicModel};
use serde_json::{Value, json};

fn message(content: Value, stop_reason: &str) -> Value {
    json!({
        "id": "msg_01Aq9w938a90dw8q",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": null,
        "usage": {
            "input_tokens": 472, "output_tokens": 89,
            "cache_creation_input_tokens": 10, "cache_read_input_tokens": 100,
            "service_tier": "standard"
        }
    })
}

fn tool_use(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": input})
}

fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"})
}

fn model_for(server: &FakeServer) -> AnthropicModel {
    AnthropicModel::new("claude-sonnet-4-5", options(&server.base)).unwrap()
}

#[tokio::test]
async fn correct_tool_call_and_request_shape() {
    let server = FakeServer::start(vec![Canned::ok(message(
        json!([
            {"type": "text", "text": "I'll check the weather."},
            tool_use("toolu_01A09q90qw90lq917835lq9", "weather", json!({"city": "Delhi"}))
        ]),
        "tool_use",
    ))])
    .await;
    let model = model_for(&server);
    assert_eq!(model.name(), "anthropic:claude-sonnet-4-5");
    let reply = model.complete(&first_request()).await.unwrap();
    assert_eq!(reply.text.as_deref(), Some("I'll check the weather."));
    assert_eq!(reply.tool_calls[0].id, "toolu_01A09q90qw90lq917835lq9");
    assert_eq!(reply.tool_calls[0].arguments, r#"{"city":"Delhi"}"#);
    assert_eq!(
        reply.usage,
        Usage {
            input_tokens: 582,
            output_tokens: 89
        }
    );
    assert_eq!(reply.prompt_tokens_reused, Some(100));

    let request = server.only_request();
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("x-api-key"), Some(KEY));
    assert_eq!(request.header("anthropic-version"), Some(ANTHROPIC_VERSION));
    assert_eq!(
        request.body,
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            "system": "You are a careful agent.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Weather in Delhi and Paris?"}]}],
            "tools": [
                {"name": "weather", "description": "Current weather in a city.",
                 "input_schema": common::weather_spec().parameters},
                {"name": "final_answer",
                 "description": corrigible::decision::final_answer_spec().description,
                 "input_schema": corrigible::decision::final_answer_spec().parameters}
            ]
        })
    );
}

#[tokio::test]
async fn history_has_tool_results_with_error_flags() {
    let server = FakeServer::start(vec![Canned::ok(message(
        json!([{"type": "text", "text": "Delhi: 31°C."}]),
        "end_turn",
    ))])
    .await;
    model_for(&server)
        .complete(&history_request())
        .await
        .unwrap();
    let body = server.only_request().body;
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Weather in Delhi and Paris?"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Checking both."},
                tool_use("call_a", "weather", json!({"city": "Delhi"})),
                tool_use("call_b", "weather", json!({"_raw": "{\"city\": \"Par"})),
                tool_use("call_c", "teleport", json!({"to": "Paris"}))
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_a", "content": "{\"temp_c\":31}"},
                {"type": "tool_result", "tool_use_id": "call_b", "content": "invalid_json: not valid JSON", "is_error": true},
                {"type": "tool_result", "tool_use_id": "call_c", "content": "unknown_tool: no tool `teleport`", "is_error": true},
                {"type": "text", "text": "Fix the rejected calls."}
            ]}
        ])
    );
}

#[tokio::test]
async fn odd_input_is_passed_on_for_validation() {
    let server = FakeServer::start(vec![Canned::ok(message(
        json!([tool_use("toolu_1", "weather", json!("{\"city\": \"Del"))]),
        "tool_use",
    ))])
    .await;
    let reply = model_for(&server).complete(&first_request()).await.unwrap();
    assert_eq!(reply.tool_calls[0].arguments, r#""{\"city\": \"Del""#);
}

#[tokio::test]
async fn unknown_tool_and_two_calls_in_order() {
    let server = FakeServer::start(vec![Canned::ok(message(
        json!([
            tool_use("toolu_a", "weather", json!({"city": "Delhi"})),
            tool_use("toolu_b", "teleport", json!({"to": "Paris"}))
        ]),
        "tool_use",
    ))])
    .await;
    let reply = model_for(&server).complete(&first_request()).await.unwrap();
    let calls: Vec<(&str, &str)> = reply
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str()))
        .collect();
    assert_eq!(calls, [("toolu_a", "weather"), ("toolu_b", "teleport")]);
    assert_eq!(reply.text, None);
}

#[tokio::test]
async fn rate_limit_with_retry_after_then_success() {
    let server = FakeServer::start(vec![
        Canned::status(
            429,
            error_body(
                "rate_limit_error",
                "Number of request tokens has exceeded your per-minute rate limit",
            ),
        )
        .header("retry-after", "0"),
        Canned::ok(message(json!([{"type": "text", "text": "hi"}]), "end_turn")),
    ])
    .await;
    let reply = model_for(&server).complete(&first_request()).await.unwrap();
    assert_eq!(reply.transport_retries, 1);
    assert_eq!(reply.text.as_deref(), Some("hi"));
}

#[tokio::test]
async fn unavailable_three_times_is_a_transport_error() {
    let server = FakeServer::start(vec![
        Canned::status(
            503,
            error_body("api_error", "Service unavailable")
        );
        3
    ])
    .await;
    let err = model_for(&server)
        .complete(&first_request())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ModelError::Transport(m) if m.contains("503")),
        "{err:?}"
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn overloaded_is_retried() {
    let server = FakeServer::start(vec![
        Canned::status(529, error_body("overloaded_error", "Overloaded")),
        Canned::ok(message(json!([{"type": "text", "text": "ok"}]), "end_turn")),
    ])
    .await;
    let reply = model_for(&server).complete(&first_request()).await.unwrap();
    assert_eq!(reply.transport_retries, 1);
}

#[tokio::test]
async fn unauthorized_is_a_configuration_error() {
    let server = FakeServer::start(vec![Canned::status(
        401,
        error_body("authentication_error", "invalid x-api-key"),
    )])
    .await;
    let err = model_for(&server)
        .complete(&first_request())
        .await
        .unwrap_err();
    let ModelError::Config(message) = err else {
        panic!("expected config, got {err:?}")
    };
    assert!(message.contains("ANTHROPIC_API_KEY"), "{message}");
    assert!(message.contains("invalid x-api-key"), "{message}");
    assert!(!message.contains(KEY), "{message}");
}

#[tokio::test]
async fn json_protocol_sends_no_tools() {
    let server = FakeServer::start(vec![Canned::ok(message(
        json!([{"type": "text", "text": "{}"}]),
        "end_turn",
    ))])
    .await;
    model_for(&server).complete(&json_request()).await.unwrap();
    let body = server.only_request().body;
    assert!(
        body.get("tools").is_none() && body.get("tool_choice").is_none(),
        "{body}"
    );
}

#[tokio::test]
async fn corrections_force_the_tool() {
    let ok = || Canned::ok(message(json!([{"type": "text", "text": "ok"}]), "end_turn"));
    let server = FakeServer::start(vec![ok(), ok(), ok()]).await;
    let model = model_for(&server);
    let mut request = history_request();
    let mut correction = CorrectionContext {
        tool: Some("weather".into()),
        ..CorrectionContext::first_round(Category::InvalidToolInput, "{}")
    };
    request.correction = Some(correction.clone());
    model.complete(&request).await.unwrap();
    correction.repeated_in_slot = 2;
    correction.repeats_spent = true;
    request.correction = Some(correction.clone());
    model.complete(&request).await.unwrap();
    correction.category = Category::UngroundedArgument;
    correction.repeated_in_slot = 0;
    correction.repeats_spent = false;
    request.correction = Some(correction);
    model.complete(&request).await.unwrap();
    let requests = server.requests();
    assert_eq!(
        requests[0].body["tool_choice"],
        json!({"type": "tool", "name": "weather"})
    );
    assert_eq!(
        requests[1].body["tool_choice"],
        json!({"type": "tool", "name": "final_answer"})
    );
    assert_eq!(requests[2].body["tool_choice"], json!({"type": "any"}));
    let declared: Vec<&str> = requests[2].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(
        declared,
        ["weather"],
        "an action-only round declares no final_answer"
    );
}
