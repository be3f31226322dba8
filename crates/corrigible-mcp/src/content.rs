//! An MCP tool result as the value the model sees: text, JSON and structured content kept.

use corrigible::ToolOutcome;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{Value, json};

/// `isError: true` becomes `Retry` with the server's message; anything else `Ok`.
pub(crate) fn outcome(result: CallToolResult) -> ToolOutcome {
    if result.is_error == Some(true) {
        let text = message(&result.content);
        let text = if text.is_empty() {
            "the tool reported an error without a message".to_string()
        } else {
            text
        };
        return ToolOutcome::Retry(text);
    }
    ToolOutcome::Ok(value(result))
}

/// The result's value: its structured content when the text repeats it, its single block when
/// there is one (parsed when it is JSON), else every block in order.
pub(crate) fn value(result: CallToolResult) -> Value {
    let parts: Vec<Value> = result.content.iter().map(block).collect();
    match result.structured_content {
        Some(structured) if parts.iter().all(|p| *p == structured) => structured,
        Some(structured) => json!({"structured": structured, "content": parts}),
        None => match <[Value; 1]>::try_from(parts) {
            Ok([single]) => single,
            Err(parts) if parts.is_empty() => Value::String(String::new()),
            Err(parts) => Value::Array(parts),
        },
    }
}

fn block(content: &ContentBlock) -> Value {
    match content {
        ContentBlock::Text(text) => text_value(&text.text),
        ContentBlock::Image(image) => {
            json!({"image": image.mime_type, "bytes": base64_len(&image.data)})
        }
        ContentBlock::Audio(audio) => {
            json!({"audio": audio.mime_type, "bytes": base64_len(&audio.data)})
        }
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                json!({"resource": uri, "text": text_value(text)})
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => json!({"resource": uri, "mime_type": mime_type, "bytes": base64_len(blob)}),
            other => serde_json::to_value(other).unwrap_or_else(|e| Value::String(e.to_string())),
        },
        other => serde_json::to_value(other).unwrap_or_else(|e| Value::String(e.to_string())),
    }
}

/// Text that is a JSON object or array is passed as JSON; other text as a string.
fn text_value(text: &str) -> Value {
    let trimmed = text.trim_start();
    if (trimmed.starts_with('{') || trimmed.starts_with('['))
        && let Ok(parsed) = serde_json::from_str::<Value>(text)
    {
        return parsed;
    }
    Value::String(text.to_string())
}

/// The text of an error result: its text blocks, joined.
fn message(content: &[ContentBlock]) -> String {
    content
        .iter()
        .map(|c| match c {
            ContentBlock::Text(text) => text.text.clone(),
            other => block(other).to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

fn base64_len(data: &str) -> usize {
    data.len() / 4 * 3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_text_stays_a_string_and_json_text_is_parsed() {
        let plain = CallToolResult::success(vec![ContentBlock::text("12:00 in Paris")]);
        assert_eq!(value(plain), json!("12:00 in Paris"));
        let json_text =
            CallToolResult::success(vec![ContentBlock::text(r#"{"timezone":"Europe/Paris"}"#)]);
        assert_eq!(value(json_text), json!({"timezone": "Europe/Paris"}));
    }

    #[test]
    fn structured_content_is_kept_with_text_that_differs() {
        let mut result = CallToolResult::success(vec![ContentBlock::text("sum is 5")]);
        result.structured_content = Some(json!({"sum": 5}));
        assert_eq!(
            value(result),
            json!({"structured": {"sum": 5}, "content": ["sum is 5"]})
        );
        let mut same = CallToolResult::success(vec![ContentBlock::text(r#"{"sum": 5}"#)]);
        same.structured_content = Some(json!({"sum": 5}));
        assert_eq!(value(same), json!({"sum": 5}));
    }

    #[test]
    fn several_blocks_become_an_array_and_errors_a_retry() {
        let many = CallToolResult::success(vec![ContentBlock::text("a"), ContentBlock::text("b")]);
        assert_eq!(value(many), json!(["a", "b"]));
        let error = CallToolResult::error(vec![ContentBlock::text("city not found")]);
        assert_eq!(outcome(error), ToolOutcome::Retry("city not found".into()));
        let silent = CallToolResult::error(Vec::new());
        assert!(matches!(outcome(silent), ToolOutcome::Retry(m) if !m.is_empty()));
    }
}
