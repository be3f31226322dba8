//! Shared by the MCP tests: a scripted model, decision builders and the real servers' lookup.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;

use async_trait::async_trait;
use corrigible::{Model, ModelError, ModelReply, ModelRequest, Usage};
use serde_json::{Value, json};

/// Serves scripted JSON decisions in order and keeps every request it was sent.
pub struct Scripted {
    replies: Mutex<VecDeque<String>>,
    pub requests: Mutex<Vec<ModelRequest>>,
}

impl Scripted {
    pub fn new(replies: Vec<String>) -> Self {
        Self {
            replies: Mutex::new(replies.into()),
            requests: Mutex::new(Vec::new()),
        }
    }
}

#[async_trait]
impl Model for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        self.requests.lock().unwrap().push(request.clone());
        let text = self.replies.lock().unwrap().pop_front();
        let text = text.ok_or_else(|| ModelError::Transport("script exhausted".into()))?;
        Ok(ModelReply {
            text: Some(text),
            usage: Usage {
                input_tokens: 100,
                output_tokens: 10,
            },
            ..Default::default()
        })
    }
}

pub fn action(tool: &str, input: Value) -> String {
    json!({"state": "action", "reason": "r", "tool": tool, "tool_input": input}).to_string()
}

pub fn final_answer(satisfied: bool, summary: &str) -> String {
    json!({"state": "final", "satisfied": satisfied, "final_summary": summary}).to_string()
}

/// The fault server built with this crate.
pub fn fault_server() -> String {
    env!("CARGO_BIN_EXE_corrigible-mcp-fault-server").to_string()
}

/// `program` from PATH. Missing: the test is skipped with a message, except under CI
/// (`CI=true`), where `.ci/run` installs it and a missing server fails the test.
pub fn installed(program: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|path| path.is_file())
    });
    if found.is_none() {
        let message = format!(
            "{program} is not installed (pip install mcp-server-time; \
             npm install -g @modelcontextprotocol/server-everything)"
        );
        if std::env::var("CI").is_ok_and(|v| v == "true" || v == "1") {
            panic!("{message}");
        }
        eprintln!("skipping: {message}");
    }
    found
}
