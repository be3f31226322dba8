//! Test doubles shared by the engine's integration tests: the scripted model and small tools.
#![allow(dead_code)]

use std::sync::atomic::{AtomicU32, Ordering};

use async_trait::async_trait;
use corrigible::{ModelReply, Tool, ToolCall, ToolContext, ToolOutcome, Usage};
use serde_json::{Value, json};

/// Serves scripted replies in order and keeps every request it was sent.
pub use corrigible_models::ReplayModel as Scripted;

pub fn text(t: &str) -> ModelReply {
    ModelReply {
        text: Some(t.to_string()),
        usage: Usage {
            input_tokens: 100,
            output_tokens: 10,
        },
        ..Default::default()
    }
}

pub fn calls(calls: &[(&str, &str, &str)]) -> ModelReply {
    ModelReply {
        tool_calls: calls
            .iter()
            .map(|(id, name, args)| ToolCall {
                id: id.to_string(),
                name: name.to_string(),
                arguments: args.to_string(),
            })
            .collect(),
        usage: Usage {
            input_tokens: 100,
            output_tokens: 10,
        },
        ..Default::default()
    }
}

pub fn action(tool: &str, input: Value) -> String {
    json!({"state": "action", "reason": "r", "tool": tool, "tool_input": input}).to_string()
}

pub fn final_answer(satisfied: bool, summary: &str) -> String {
    json!({"state": "final", "satisfied": satisfied, "final_summary": summary}).to_string()
}

/// A calculator that only knows `{"expression": "2*(3+4)"}` → 14, and says so otherwise.
pub struct Calc {
    pub calls: AtomicU32,
}

impl Calc {
    pub fn new() -> Self {
        Self {
            calls: AtomicU32::new(0),
        }
    }
}

#[async_trait]
impl Tool for Calc {
    fn name(&self) -> &str {
        "calculator"
    }
    fn description(&self) -> &str {
        "Evaluates an arithmetic expression."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"], "additionalProperties": false})
    }
    fn read_only(&self) -> bool {
        true
    }
    async fn call(&self, input: Value, _ctx: &ToolContext) -> ToolOutcome {
        self.calls.fetch_add(1, Ordering::SeqCst);
        match input["expression"].as_str() {
            Some("2*(3+4)") => ToolOutcome::Ok(json!(14)),
            Some("1/0") => ToolOutcome::Retry("division by zero".into()),
            Some(other) => ToolOutcome::Ok(json!(other.len())),
            None => ToolOutcome::Retry("expression missing".into()),
        }
    }
}

/// A tool whose first `fail` calls fail with the given outcome, then succeed.
pub struct Flaky {
    pub name: &'static str,
    pub fail: u32,
    pub idempotent: bool,
    pub repeatable: bool,
    pub fatal: bool,
    pub calls: AtomicU32,
}

impl Flaky {
    pub fn new(name: &'static str, fail: u32) -> Self {
        Self {
            name,
            fail,
            idempotent: true,
            repeatable: false,
            fatal: false,
            calls: AtomicU32::new(0),
        }
    }
}

#[async_trait]
impl Tool for Flaky {
    fn name(&self) -> &str {
        self.name
    }
    fn description(&self) -> &str {
        "Sometimes fails."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]})
    }
    fn idempotent(&self) -> bool {
        self.idempotent
    }
    fn repeatable(&self) -> bool {
        self.repeatable
    }
    async fn call(&self, _input: Value, _ctx: &ToolContext) -> ToolOutcome {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if n <= self.fail {
            if self.fatal {
                ToolOutcome::Fatal("credentials revoked".into())
            } else {
                ToolOutcome::Failed(format!("connection reset (call {n})"))
            }
        } else {
            ToolOutcome::Ok(json!({"answer": 42}))
        }
    }
}

/// The default policy with every evidence rule on: the rules these tests pin.
pub fn strict() -> corrigible::Policy {
    corrigible::Policy {
        checks: corrigible::Checks::STRICT,
        ..corrigible::Policy::default()
    }
}
