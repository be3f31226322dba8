//! End to end through the agent loop, per provider: an invalid tool call is rejected by the
//! engine, the correction travels back in the provider's native format, and the next round's
//! valid call is executed.

mod common;

use std::sync::Arc;

use async_trait::async_trait;
use common::{Canned, FakeServer, options};
use corrigible::{Agent, Category, Model, Protocol, Tool, ToolContext, ToolOutcome};
use corrigible_models::{AnthropicModel, GeminiModel, OpenAiModel};
use serde_json::{Value, json};

struct Calculator;

#[async_trait]
impl Tool for Calculator {
    fn name(&self) -> &str {
        "calculator"
    }
    fn description(&self) -> &str {
        "Evaluates an arithmetic expression."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"expression": {"type": "string"}},
               "required": ["expression"], "additionalProperties": false})
    }
    async fn call(&self, input: Value, _ctx: &ToolContext) -> ToolOutcome {
        match input["expression"].as_str() {
            Some("2*(3+4)") => ToolOutcome::Ok(json!(14)),
            _ => ToolOutcome::Retry("unsupported expression".into()),
        }
    }
}

async fn run(model: Arc<dyn Model>) -> corrigible::RunReport {
    let agent = Agent::builder_shared(model)
        .tool(Calculator)
        .protocol(Protocol::Native)
        .build()
        .unwrap();
    let report = agent.run("What is 2*(3+4)?").await.unwrap();
    assert!(report.satisfied, "{report:?}");
    assert_eq!(report.final_summary.as_deref(), Some("14"));
    assert_eq!(report.corrections[0].category, Category::InvalidToolInput);
    assert!(report.corrections[0].corrected);
    assert_eq!(report.steps.len(), 1);
    assert_eq!(report.steps[0].output, Some(json!(14)));
    report
}

fn openai_call(id: &str, name: &str, args: &str) -> Canned {
    Canned::ok(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [{"id": id, "type": "function", "function": {"name": name, "arguments": args}}]}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}
    }))
}

#[tokio::test]
async fn openai_correction_travels_as_a_tool_message() {
    let server = FakeServer::start(vec![
        openai_call("call_a", "calculator", r#"{"expr":"2*(3+4)"}"#),
        openai_call("call_b", "calculator", r#"{"expression":"2*(3+4)"}"#),
        openai_call(
            "call_c",
            "final_answer",
            r#"{"satisfied":true,"final_summary":"14"}"#,
        ),
    ])
    .await;
    run(Arc::new(
        OpenAiModel::new("gpt-4o-mini", options(&server.base)).unwrap(),
    ))
    .await;
    let second = &server.requests()[1].body;
    let messages = second["messages"].as_array().unwrap();
    let feedback = messages
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "call_a")
        .expect("feedback tied to call_a");
    assert!(
        feedback["content"]
            .as_str()
            .unwrap()
            .contains("invalid_tool_input")
    );
    assert_eq!(
        second["tool_choice"]["function"]["name"], "calculator",
        "the correction round narrows to the rejected tool"
    );
    let third = &server.requests()[2].body;
    assert!(
        third["messages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["role"] == "tool" && m["tool_call_id"] == "call_b" && m["content"] == "14")
    );
}

fn anthropic_call(id: &str, name: &str, input: Value) -> Canned {
    Canned::ok(json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "tool_use", "id": id, "name": name, "input": input}],
        "stop_reason": "tool_use", "stop_sequence": null,
        "usage": {"input_tokens": 50, "output_tokens": 10}
    }))
}

#[tokio::test]
async fn anthropic_correction_travels_as_an_error_tool_result() {
    let server = FakeServer::start(vec![
        anthropic_call("toolu_a", "calculator", json!({"expr": "2*(3+4)"})),
        anthropic_call("toolu_b", "calculator", json!({"expression": "2*(3+4)"})),
        anthropic_call(
            "toolu_c",
            "final_answer",
            json!({"satisfied": true, "final_summary": "14"}),
        ),
    ])
    .await;
    run(Arc::new(
        AnthropicModel::new("claude-sonnet-4-5", options(&server.base)).unwrap(),
    ))
    .await;
    let body = server.requests()[1].body.clone();
    let blocks: Vec<&Value> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .collect();
    let result = blocks
        .iter()
        .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == "toolu_a")
        .expect("tool_result for toolu_a");
    assert_eq!(result["is_error"], true);
    assert!(result.to_string().contains("invalid_tool_input"));
}

fn gemini_call(name: &str, args: Value) -> Canned {
    Canned::ok(json!({
        "candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": name, "args": args}}]},
                        "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 10, "totalTokenCount": 60},
        "modelVersion": "gemini-2.5-flash"
    }))
}

#[tokio::test]
async fn gemini_correction_travels_as_a_function_response_error() {
    let server = FakeServer::start(vec![
        gemini_call("calculator", json!({"expr": "2*(3+4)"})),
        gemini_call("calculator", json!({"expression": "2*(3+4)"})),
        gemini_call(
            "final_answer",
            json!({"satisfied": true, "final_summary": "14"}),
        ),
    ])
    .await;
    run(Arc::new(
        GeminiModel::new("gemini-2.5-flash", options(&server.base)).unwrap(),
    ))
    .await;
    let second = &server.requests()[1].body;
    let responses: Vec<&Value> = second["contents"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["parts"].as_array().into_iter().flatten())
        .filter_map(|p| p.get("functionResponse"))
        .collect();
    let feedback = responses
        .iter()
        .find(|r| r["name"] == "calculator")
        .expect("a functionResponse for calculator");
    assert!(
        feedback["response"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("invalid_tool_input")),
        "{feedback}"
    );
}
