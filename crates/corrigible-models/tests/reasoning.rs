//! Providers' own reasoning: kept in the reply where returned, passed back as each provider
//! requires, and asked for when a thinking budget is set.

mod common;

use common::{Canned, FakeServer, first_request, options};
use corrigible::{Message, MessageKind, Model, ModelRequest, Stage, ToolCall};
use corrigible_models::{AnthropicModel, GeminiModel, OpenAiModel, ProviderOptions};
use serde_json::{Value, json};

const SIGNATURE: &str = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds";

fn thinking_options(base: &str, think_tokens: u32) -> ProviderOptions {
    ProviderOptions {
        think_tokens: Some(think_tokens),
        ..options(base)
    }
}

/// The first request, then the model's reply (with `reasoning`) calling `weather`, its
/// result, and a second call.
fn second_call(reply: &corrigible::ModelReply) -> ModelRequest {
    let mut request = first_request();
    request.stage = Stage::new(2, 0);
    request.messages.extend([
        Message::assistant(
            MessageKind::Reply,
            reply.text.clone().unwrap_or_default(),
            reply.tool_calls.clone(),
        )
        .with_reasoning(reply.reasoning.clone()),
        Message::tool_result(
            reply.tool_calls[0].id.clone(),
            "weather",
            r#"{"temp_c":31}"#,
            false,
            MessageKind::ToolResult,
        ),
    ]);
    request
}

#[tokio::test]
async fn anthropic_thinking_is_kept_and_sent_back_with_its_signature() {
    let first = json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [
            {"type": "thinking", "thinking": "Delhi first, then Paris.", "signature": SIGNATURE},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Delhi"}}
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 100, "output_tokens": 40}
    });
    let done = json!({
        "id": "msg_2", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Delhi: 31°C."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 150, "output_tokens": 10}
    });
    let server = FakeServer::start(vec![Canned::ok(first), Canned::ok(done)]).await;
    let model =
        AnthropicModel::new("claude-sonnet-4-5", thinking_options(&server.base, 2000)).unwrap();
    let mut request = first_request();
    request.correction = None;
    let reply = model.complete(&request).await.unwrap();
    let reasoning = reply.reasoning.clone().expect("the thinking is kept");
    assert_eq!(reasoning.text, "Delhi first, then Paris.");
    assert_eq!(reasoning.blocks.len(), 2);
    assert_eq!(reply.tool_calls[0].name, "weather");

    model.complete(&second_call(&reply)).await.unwrap();
    let requests = server.requests();
    assert_eq!(
        requests[0].body["thinking"],
        json!({"type": "enabled", "budget_tokens": 2000})
    );
    assert!(requests[0].body["max_tokens"].as_u64().unwrap() > 2000);
    assert_eq!(
        requests[1].body["messages"][1],
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Delhi first, then Paris.", "signature": SIGNATURE},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Delhi"}}
        ]})
    );
}

#[tokio::test]
async fn anthropic_while_thinking_forces_no_tool_and_sets_no_temperature() {
    let done = json!({
        "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1}
    });
    let server = FakeServer::start(vec![Canned::ok(done)]).await;
    let model = AnthropicModel::new(
        "claude-sonnet-4-5",
        ProviderOptions {
            temperature: Some(0.2),
            ..thinking_options(&server.base, 10)
        },
    )
    .unwrap();
    let mut request = first_request();
    request.correction = Some(corrigible::CorrectionContext {
        budget_spent: true,
        ..corrigible::CorrectionContext::first_round(corrigible::Category::ActionBudgetSpent, "x")
    });
    let reply = model.complete(&request).await.unwrap();
    assert_eq!(reply.reasoning, None);
    let body = server.only_request().body;
    assert_eq!(body["thinking"]["budget_tokens"], json!(1024));
    assert_eq!(body.get("tool_choice"), None);
    assert_eq!(body.get("temperature"), None);
}

#[tokio::test]
async fn gemini_thoughts_are_kept_and_asked_for() {
    let body = json!({
        "candidates": [{
            "content": {"role": "model", "parts": [
                {"text": "**Checking Delhi** I need the weather tool.", "thought": true},
                {"functionCall": {"name": "weather", "args": {"city": "Delhi"}},
                 "thoughtSignature": SIGNATURE}
            ]},
            "finishReason": "STOP"
        }],
        "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 10,
                          "thoughtsTokenCount": 120, "totalTokenCount": 180}
    });
    let done = json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": "31°C"}]}}],
        "usageMetadata": {"promptTokenCount": 60, "candidatesTokenCount": 3}
    });
    let server = FakeServer::start(vec![Canned::ok(body), Canned::ok(done)]).await;
    let model = GeminiModel::new("gemini-2.5-flash", thinking_options(&server.base, 512)).unwrap();
    let reply = model.complete(&first_request()).await.unwrap();
    let reasoning = reply.reasoning.clone().expect("the thoughts are kept");
    assert_eq!(
        reasoning.text,
        "**Checking Delhi** I need the weather tool."
    );
    assert_eq!(reasoning.tokens, Some(120));
    assert_eq!(reply.usage.output_tokens, 130);
    assert_eq!(reply.text, None);

    model.complete(&second_call(&reply)).await.unwrap();
    let requests = server.requests();
    assert_eq!(
        requests[0].body["generationConfig"]["thinkingConfig"],
        json!({"thinkingBudget": 512, "includeThoughts": true})
    );
    let parts = &requests[1].body["contents"][1]["parts"];
    assert_eq!(parts[0]["thoughtSignature"], json!(SIGNATURE));
    assert!(
        parts
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p.get("thought").is_none())
    );
}

fn chat(message: Value, usage: Value) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "deepseek-reasoner",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": usage
    })
}

#[tokio::test]
async fn openai_compatible_reasoning_content_is_kept_and_sent_back_on_tool_turns() {
    let call = chat(
        json!({"role": "assistant", "content": null,
               "reasoning_content": "The user wants Delhi's weather.",
               "tool_calls": [{"id": "call_1", "type": "function",
                               "function": {"name": "weather", "arguments": "{\"city\":\"Delhi\"}"}}]}),
        json!({"prompt_tokens": 40, "completion_tokens": 30,
               "completion_tokens_details": {"reasoning_tokens": 22}}),
    );
    let plain = chat(
        json!({"role": "assistant", "content": "31°C", "reasoning": "Now answer."}),
        json!({"prompt_tokens": 60, "completion_tokens": 5}),
    );
    let server = FakeServer::start(vec![Canned::ok(call), Canned::ok(plain)]).await;
    let model = OpenAiModel::new(
        "deepseek-reasoner",
        options(&format!("{}/v1/", server.base)),
    )
    .unwrap();
    let reply = model.complete(&first_request()).await.unwrap();
    let reasoning = reply.reasoning.clone().expect("the reasoning is kept");
    assert_eq!(reasoning.text, "The user wants Delhi's weather.");
    assert_eq!(reasoning.tokens, Some(22));

    let mut next = second_call(&reply);
    next.messages.push(
        Message::assistant(MessageKind::Reply, "A plain turn.", Vec::<ToolCall>::new())
            .with_reasoning(Some(corrigible::Reasoning::text("not sent back"))),
    );
    let last = model.complete(&next).await.unwrap();
    assert_eq!(
        last.reasoning.map(|r| r.text),
        Some("Now answer.".to_string())
    );
    let messages = &server.requests()[1].body["messages"];
    assert_eq!(
        messages[2]["reasoning_content"],
        json!("The user wants Delhi's weather.")
    );
    assert_eq!(messages[4].get("reasoning_content"), None);
}
