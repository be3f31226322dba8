#![allow(dead_code)]

use corrigible::{Tool, ToolContext, ToolOutcome, ToolRegistry};
use serde_json::Value;

pub fn ctx() -> ToolContext {
    ToolContext {
        run_id: "test-run".into(),
        step: 1,
        attempt: 1,
        idempotency_key: "test-key".into(),
    }
}

/// Validates `input` against the tool's schema, as the engine does, then calls the tool.
pub async fn call(registry: &ToolRegistry, tool: &str, input: Value) -> ToolOutcome {
    match registry.validate(tool, &input) {
        Some(Ok(())) => {}
        Some(Err(e)) => panic!("input {input} fails the schema of {tool}: {e}"),
        None => panic!("tool {tool} is not registered"),
    }
    let tool: &dyn Tool = registry.get(tool).map(|t| t.as_ref()).unwrap();
    tool.call(input, &ctx()).await
}

pub fn retry_message(outcome: ToolOutcome) -> String {
    match outcome {
        ToolOutcome::Retry(message) => message,
        other => panic!("expected Retry, got {other:?}"),
    }
}

pub fn failed_message(outcome: ToolOutcome) -> String {
    match outcome {
        ToolOutcome::Failed(message) => message,
        other => panic!("expected Failed, got {other:?}"),
    }
}

pub fn ok_value(outcome: ToolOutcome) -> Value {
    match outcome {
        ToolOutcome::Ok(value) => value,
        other => panic!("expected Ok, got {other:?}"),
    }
}
