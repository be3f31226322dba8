//! Shared by the MCP tests: a scripted model, decision builders and the real servers' lookup.
#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::{Value, json};

/// Serves scripted JSON decisions in order and keeps every request it was sent.
#[allow(unused_imports)]
pub use corrigible_models::ReplayModel as Scripted;

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
