mod common;

use common::{Canned, FakeServer, KEY, first_request, history_request, json_request, options};
use corrigible::{
    Category, CorrectionContext, Message, MessageKind, Model, ModelError, ToolCall, Usage,
};
use corrigible_models::GeminiModel;
use serde_json::{Value, json};

fn generated(parts: Value) -> Value {
    json!({
        "candidates": [{
            "content": {"parts": parts, "role": "model"},
            "finishReason": "STOP",
            "index": 0
        }],
        "usageMetadata": {
            "promptTokenCount": 120, "candidatesTokenCount": 12, "totalTokenCount": 140,
            "thoughtsTokenCount": 8,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 120}]
        },
        "modelVersion": "gemini-2.5-flash",
        "responseId": "mCsvaPLwN-KAz7IPzoHD8Qs"
    })
}

fn call(name: &str, args: Value) -> Value {
    json!({"functionCall": {"name": name, "args": args}})
}

fn error_body(code: u16, message: &str, status: &str) -> Value {
    json!({"error": {"code": code, "message": message, "status": status}})
}

fn model_for(server: &FakeServer) -> GeminiModel {
    GeminiModel::new("gemini-2.5-flash", options(&server.base)).unwrap()
}

#[tokio::test]
async fn correct_tool_call_and_request_shape() {
    let server = FakeServer::start(vec![Canned::ok(generated(json!([call(
        "weather",
        json!({"city": "Delhi"})
    )])))])
    .await;
    let model = model_for(&server);
    assert_eq!(model.name(), "gemini:gemini-2.5-flash");
    let reply = model.complete(&first_request()).await.unwrap();
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].name, "weather");
    assert_eq!(reply.tool_calls[0].arguments, r#"{"city":"Delhi"}"#);
    assert!(reply.tool_calls[0].id.starts_with("call_"));
    assert_eq!(
        reply.usage,
        Usage {
            input_tokens: 120,
            output_tokens: 20
        }
    );

    let request = server.only_request();
    assert_eq!(
        request.path,
        "/v1beta/models/gemini-2.5-flash:generateContent"
    );
    assert_eq!(request.header("x-goog-api-key"), Some(KEY));
    assert!(!request.path.contains(KEY));
    assert_eq!(
        request.body,
        json!({
            "contents": [{"role": "user", "parts": [{"text": "Weather in Delhi and Paris?"}]}],
            "systemInstruction": {"parts": [{"text": "You are a careful agent."}]},
            "tools": [{"functionDeclarations": [
                {"name": "weather", "description": "Current weather in a city.",
                 "parameters": {"type": "object",
                    "properties": {"city": {"type": "string", "description": "City name"}},
                    "required": ["city"]}},
                {"name": "final_answer",
                 "description": corrigible::decision::final_answer_spec().description,
                 "parameters": {"type": "object",
                    "properties": {
                        "satisfied": {"type": "boolean", "description": "Whether the request was fulfilled."},
                        "final_summary": {"type": "string", "description": "The answer for the user."}},
                    "required": ["satisfied", "final_summary"]}}
            ]}]
        })
    );
}

#[tokio::test]
async fn history_merges_turns_and_returns_function_responses() {
    let server = FakeServer::start(vec![Canned::ok(generated(
        json!([{"text": "Delhi: 31°C."}]),
    ))])
    .await;
    let reply = model_for(&server)
        .complete(&history_request())
        .await
        .unwrap();
    assert_eq!(reply.text.as_deref(), Some("Delhi: 31°C."));

    let body = server.only_request().body;
    assert_eq!(
        body["contents"],
        json!([
            {"role": "user", "parts": [{"text": "Weather in Delhi and Paris?"}]},
            {"role": "model", "parts": [
                {"text": "Checking both."},
                {"functionCall": {"name": "weather", "args": {"city": "Delhi"}}},
                {"functionCall": {"name": "weather", "args": {"_raw": "{\"city\": \"Par"}}},
                {"functionCall": {"name": "teleport", "args": {"to": "Paris"}}}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "weather", "response": {"result": {"temp_c": 31}}}},
                {"functionResponse": {"name": "weather", "response": {"error": "invalid_json: not valid JSON"}}},
                {"functionResponse": {"name": "teleport", "response": {"error": "unknown_tool: no tool `teleport`"}}},
                {"text": "Fix the rejected calls."}
            ]}
        ])
    );
}

#[tokio::test]
async fn odd_arguments_are_passed_on_for_validation() {
    let server = FakeServer::start(vec![Canned::ok(generated(json!([
        {"functionCall": {"name": "weather"}},
        call("weather", json!("{\"city\": \"Del")),
    ])))])
    .await;
    let reply = model_for(&server).complete(&first_request()).await.unwrap();
    assert_eq!(reply.tool_calls[0].arguments, "{}");
    assert_eq!(reply.tool_calls[1].arguments, r#""{\"city\": \"Del""#);
}

#[tokio::test]
async fn unknown_tool_and_two_calls_in_order() {
    let server = FakeServer::start(vec![Canned::ok(generated(json!([
        {"text": "Let me check."},
        call("weather", json!({"city": "Delhi"})),
        call("teleport", json!({"to": "Paris"})),
    ])))])
    .await;
    let reply = model_for(&server).complete(&first_request()).await.unwrap();
    assert_eq!(reply.text.as_deref(), Some("Let me check."));
    let names: Vec<&str> = reply.tool_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["weather", "teleport"]);
    assert_ne!(reply.tool_calls[0].id, reply.tool_calls[1].id);
}

#[tokio::test]
async fn thought_signatures_go_back_with_their_calls() {
    let server = FakeServer::start(vec![
        Canned::ok(generated(json!([
            {"functionCall": {"name": "weather", "args": {"city": "Delhi"}}, "thoughtSignature": "c2lnLWFiYw=="}
        ]))),
        Canned::ok(generated(json!([{"text": "done"}]))),
    ])
    .await;
    let model = model_for(&server);
    let reply = model.complete(&first_request()).await.unwrap();
    let call: ToolCall = reply.tool_calls[0].clone();

    let mut next = first_request();
    next.messages.push(Message::assistant(
        MessageKind::Reply,
        "",
        vec![call.clone()],
    ));
    next.messages.push(Message::tool_result(
        &call.id,
        "weather",
        "31",
        false,
        MessageKind::ToolResult,
    ));
    model.complete(&next).await.unwrap();
    let body = &server.requests()[1].body;
    assert_eq!(
        body["contents"][1],
        json!({"role": "model", "parts": [{
            "functionCall": {"name": "weather", "args": {"city": "Delhi"}},
            "thoughtSignature": "c2lnLWFiYw=="
        }]})
    );
    assert_eq!(
        body["contents"][2]["parts"][0]["functionResponse"],
        json!({"name": "weather", "response": {"result": 31}})
    );
}

#[tokio::test]
async fn rate_limit_with_retry_after_then_success() {
    let server = FakeServer::start(vec![
        Canned::status(
            429,
            error_body(
                429,
                "Resource has been exhausted (e.g. check quota).",
                "RESOURCE_EXHAUSTED",
            ),
        )
        .header("retry-after", "1"),
        Canned::ok(generated(json!([{"text": "hi"}]))),
    ])
    .await;
    let reply = model_for(&server).complete(&first_request()).await.unwrap();
    assert_eq!(reply.transport_retries, 1);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn unavailable_three_times_is_a_transport_error() {
    let body = error_body(
        503,
        "The model is overloaded. Please try again later.",
        "UNAVAILABLE",
    );
    let server = FakeServer::start(vec![Canned::status(503, body); 3]).await;
    let err = model_for(&server)
        .complete(&first_request())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ModelError::Transport(m) if m.contains("overloaded") && m.contains("503")),
        "{err:?}"
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn unauthorized_is_a_configuration_error() {
    let body = error_body(401, &format!("API key not valid: {KEY}"), "UNAUTHENTICATED");
    let server = FakeServer::start(vec![Canned::status(401, body)]).await;
    let err = model_for(&server)
        .complete(&first_request())
        .await
        .unwrap_err();
    let ModelError::Config(message) = err else {
        panic!("expected config, got {err:?}")
    };
    assert!(
        message.contains("GEMINI_API_KEY or GOOGLE_API_KEY"),
        "{message}"
    );
    assert!(message.contains("API key not valid"), "{message}");
    assert!(!message.contains(KEY), "{message}");
}

#[tokio::test]
async fn json_protocol_sends_no_tools() {
    let server = FakeServer::start(vec![Canned::ok(generated(json!([{"text": "{}"}])))]).await;
    model_for(&server).complete(&json_request()).await.unwrap();
    let body = server.only_request().body;
    assert!(
        body.get("tools").is_none() && body.get("toolConfig").is_none(),
        "{body}"
    );
}

#[tokio::test]
async fn blocked_prompt_is_an_empty_reply() {
    let server = FakeServer::start(vec![Canned::ok(json!({
        "promptFeedback": {"blockReason": "SAFETY"},
        "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7}
    }))])
    .await;
    let reply = model_for(&server).complete(&first_request()).await.unwrap();
    assert!(reply.text.is_none() && reply.tool_calls.is_empty());
    assert_eq!(reply.usage.input_tokens, 7);
}

#[tokio::test]
async fn corrections_narrow_the_allowed_functions() {
    let server = FakeServer::start(vec![
        Canned::ok(generated(json!([{"text": "a"}]))),
        Canned::ok(generated(json!([{"text": "b"}]))),
        Canned::ok(generated(json!([{"text": "c"}]))),
    ])
    .await;
    let model = model_for(&server);
    let mut request = history_request();
    let mut correction = CorrectionContext {
        tool: Some("weather".into()),
        ..CorrectionContext::first_round(Category::InvalidToolInput, "{}")
    };
    request.correction = Some(correction.clone());
    model.complete(&request).await.unwrap();
    correction.category = Category::RepeatedFailedAction;
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
        requests[0].body["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["weather"]}})
    );
    assert_eq!(
        requests[1].body["toolConfig"]["functionCallingConfig"]["allowedFunctionNames"],
        json!(["final_answer"])
    );
    assert_eq!(
        requests[2].body["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["weather"]}})
    );
}
