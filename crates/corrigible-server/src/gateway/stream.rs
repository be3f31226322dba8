//! A checked completion written as the server-sent events of a streamed one, in the chunk
//! format the OpenAI SDKs parse: the role, the text, each tool call, the finish reason, the
//! usage when asked for, then `[DONE]`.

use serde_json::{Map, Value, json};

/// The event stream of `completion` (a whole `chat.completion` object), as one body.
pub fn events(completion: &Value, include_usage: bool) -> String {
    let mut base = Map::new();
    for key in ["id", "created", "model", "system_fingerprint"] {
        if let Some(value) = completion.get(key) {
            base.insert(key.into(), value.clone());
        }
    }
    base.insert("object".into(), Value::from("chat.completion.chunk"));
    let usage_slot = include_usage.then_some(Value::Null);
    let chunk = |choices: Value, usage: Option<Value>| {
        let mut chunk = base.clone();
        chunk.insert("choices".into(), choices);
        if let Some(usage) = usage {
            chunk.insert("usage".into(), usage);
        }
        format!("data: {}\n\n", Value::Object(chunk))
    };
    let delta = |delta: Value, finish: Value| json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]);
    let message = completion
        .pointer("/choices/0/message")
        .cloned()
        .unwrap_or_default();
    let calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let text = message.get("content").and_then(Value::as_str).unwrap_or("");
    let mut out = String::new();
    let opening = if calls.is_empty() {
        json!({"role": "assistant", "content": ""})
    } else {
        json!({"role": "assistant", "content": null})
    };
    out.push_str(&chunk(delta(opening, Value::Null), usage_slot.clone()));
    if let Some(reasoning) = message.get("reasoning_content").filter(|r| r.is_string()) {
        out.push_str(&chunk(
            delta(json!({"reasoning_content": reasoning}), Value::Null),
            usage_slot.clone(),
        ));
    }
    if !text.is_empty() {
        out.push_str(&chunk(
            delta(json!({"content": text}), Value::Null),
            usage_slot.clone(),
        ));
    }
    for (index, call) in calls.iter().enumerate() {
        let piece = json!({"tool_calls": [{
            "index": index,
            "id": call.get("id"),
            "type": "function",
            "function": call.get("function"),
        }]});
        out.push_str(&chunk(delta(piece, Value::Null), usage_slot.clone()));
    }
    let finish = completion
        .pointer("/choices/0/finish_reason")
        .cloned()
        .unwrap_or(Value::from("stop"));
    out.push_str(&chunk(delta(json!({}), finish), usage_slot));
    if include_usage {
        let usage = completion.get("usage").cloned().unwrap_or_default();
        out.push_str(&chunk(json!([]), Some(usage)));
    }
    out.push_str("data: [DONE]\n\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(events: &str) -> Vec<Value> {
        events
            .split("\n\n")
            .filter_map(|e| e.strip_prefix("data: "))
            .filter(|e| *e != "[DONE]")
            .map(|e| serde_json::from_str(e).unwrap())
            .collect()
    }

    #[test]
    fn tool_calls_stream_as_indexed_deltas_with_usage_last() {
        let completion = json!({
            "id": "c", "created": 1, "model": "m", "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{\"x\":1}"}}]}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
        });
        let text = events(&completion, true);
        assert!(text.ends_with("data: [DONE]\n\n"));
        let chunks = parsed(&text);
        assert_eq!(chunks.len(), 5);
        assert!(
            chunks
                .iter()
                .all(|c| c["object"] == "chat.completion.chunk")
        );
        assert_eq!(
            chunks[2]["choices"][0]["delta"]["tool_calls"][0]["index"],
            1
        );
        assert_eq!(chunks[3]["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(chunks[4]["usage"]["total_tokens"], 3);
        assert_eq!(chunks[0]["usage"], Value::Null);
    }

    #[test]
    fn text_streams_without_usage_unless_asked() {
        let completion = json!({"id": "c", "choices": [{"finish_reason": "stop",
            "message": {"role": "assistant", "content": "hi"}}]});
        let chunks = parsed(&events(&completion, false));
        assert_eq!(chunks.len(), 3);
        assert_eq!(chunks[1]["choices"][0]["delta"]["content"], "hi");
        assert!(chunks.iter().all(|c| c.get("usage").is_none()));
    }
}
