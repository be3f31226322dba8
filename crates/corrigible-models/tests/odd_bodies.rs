mod common;

use common::{Canned, FakeServer, first_request, options};
use corrigible::Model;
use corrigible_models::{AnthropicModel, GeminiModel, OpenAiModel};

const BODIES: &[&str] = &[
    "",
    "null",
    "[]",
    "{}",
    "\"text\"",
    r#"{"choices": null}"#,
    r#"{"choices": [{}]}"#,
    r#"{"choices": [{"message": {"content": [{"type": "text", "text": "a"}, 3], "tool_calls": [{"function": null}, {}]}}]}"#,
    r#"{"choices": [{"message": {"tool_calls": [{"id": "", "function": {"name": 7}}]}}]}"#,
    r#"{"candidates": [{"content": {"parts": [{}, {"functionCall": {}}, {"text": "t", "thought": true}]}}], "usageMetadata": {}}"#,
    r#"{"candidates": [{}], "usageMetadata": {"promptTokenCount": -1}}"#,
    r#"{"content": [{"type": "tool_use"}, {"type": "text"}, {"type": "thinking", "thinking": "x"}, {}]}"#,
    r#"{"content": "not a list", "usage": {"input_tokens": "many"}}"#,
];

#[tokio::test]
async fn no_body_makes_a_provider_panic() {
    for body in BODIES {
        let canned = || Canned {
            status: 200,
            headers: Vec::new(),
            body: body.to_string(),
            delay: std::time::Duration::ZERO,
        };
        let server = FakeServer::start(vec![canned(), canned(), canned()]).await;
        let models: Vec<Box<dyn Model>> = vec![
            Box::new(OpenAiModel::new("m", options(&server.base)).unwrap()),
            Box::new(GeminiModel::new("m", options(&server.base)).unwrap()),
            Box::new(AnthropicModel::new("m", options(&server.base)).unwrap()),
        ];
        for model in &models {
            let _ = model.complete(&first_request()).await;
        }
    }
}
