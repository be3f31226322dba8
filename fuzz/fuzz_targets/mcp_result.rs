//! An MCP server's `tools/call` result, as any server may send it: whatever deserializes as a
//! `CallToolResult` maps to a tool outcome (text, JSON, structured, image, audio and resource
//! content, `isError`) without a panic, and the value the model sees serializes.
#![no_main]

#[allow(dead_code)]
#[path = "../../crates/corrigible-mcp/src/content.rs"]
mod content;

use corrigible::ToolOutcome;
use libfuzzer_sys::fuzz_target;
use rmcp::model::CallToolResult;

fuzz_target!(|data: &[u8]| {
    let Ok(result) = serde_json::from_slice::<CallToolResult>(data) else {
        return;
    };
    match content::outcome(result) {
        ToolOutcome::Ok(value) => {
            serde_json::to_string(&value).expect("the value serializes");
        }
        ToolOutcome::Retry(message) => assert!(!message.is_empty()),
        other => panic!("a result maps to Ok or Retry only: {other:?}"),
    }
});
