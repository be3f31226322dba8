//! The parts of the OpenAI Chat Completions wire format the gateway reads and writes. The
//! client's request is forwarded as sent (but for [`for_upstream`]); these views only read
//! what the checks need.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Marks a turn the gateway sent back that a json-protocol model wrote as it is, not as a
/// text answer; only a [`ModelUpstream`](super::ModelUpstream) reads it.
pub const RAW_TURN: &str = "x_corrigible_raw";

/// The fields of a `POST /v1/chat/completions` body that the gateway reads; every other field
/// (`temperature`, `max_tokens`, …) is forwarded to the upstream untouched.
#[derive(Debug, Clone, Deserialize)]
pub struct ChatRequest {
    /// The model the client asked for; forwarded as sent.
    #[serde(default)]
    pub model: Option<String>,
    /// The conversation, forwarded as sent.
    pub messages: Vec<Value>,
    /// The client's tools.
    #[serde(default)]
    pub tools: Option<Vec<ToolDef>>,
    /// `none`, `auto`, `required`, or `{"type": "function", "function": {"name": …}}`.
    #[serde(default)]
    pub tool_choice: Option<Value>,
    /// Whether several calls may come in one reply (default true).
    #[serde(default)]
    pub parallel_tool_calls: Option<bool>,
    /// `{"type": "json_schema", "json_schema": {"schema": …}}` or `{"type": "json_object"}`.
    #[serde(default)]
    pub response_format: Option<Value>,
    /// Whether the client wants server-sent events.
    #[serde(default)]
    pub stream: Option<bool>,
    /// `{"include_usage": true}` adds a last chunk with the usage.
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
}

/// A tool the client declares: only functions exist in this API.
#[derive(Debug, Clone, Deserialize)]
pub struct ToolDef {
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The function.
    pub function: FunctionDef,
}

/// A function the model may call.
#[derive(Debug, Clone, Deserialize)]
pub struct FunctionDef {
    /// Its name.
    pub name: String,
    /// The JSON Schema of its arguments; absent means any object.
    #[serde(default)]
    pub parameters: Option<Value>,
}

/// Options of a streamed response.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub struct StreamOptions {
    /// Send the usage in a last chunk.
    #[serde(default)]
    pub include_usage: bool,
}

/// An upstream's answer, as far as the gateway reads it; `raw` is the whole object, returned
/// to the client with its message and usage replaced.
#[derive(Debug, Clone)]
pub struct Completion {
    /// The whole JSON object the upstream sent.
    pub raw: Map<String, Value>,
    /// The first choice's message.
    pub message: ReplyMessage,
    /// The first choice's `finish_reason`.
    pub finish_reason: Option<String>,
    /// The tokens of this call.
    pub usage: TokenUsage,
    /// For a model asked under the json protocol: why its reply is no decision at all.
    pub unreadable: Option<(corrigible::Category, String)>,
}

/// The assistant message of a completion.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplyMessage {
    /// Its text, if any.
    #[serde(default)]
    pub content: Option<String>,
    /// Its tool calls, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<CallOut>,
    /// Every other field (`reasoning_content`, `refusal`, …), kept as sent.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// A tool call as the API writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallOut {
    /// The call's id; tool messages answer it.
    #[serde(default)]
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type", default = "function")]
    pub kind: String,
    /// The function and its arguments as JSON text.
    pub function: FunctionCall,
}

fn function() -> String {
    "function".to_string()
}

/// A called function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The function's name.
    #[serde(default)]
    pub name: String,
    /// Its arguments, JSON text as the model wrote it.
    #[serde(default)]
    pub arguments: String,
}

/// Token counts in the API's names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Prompt tokens.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Generated tokens.
    #[serde(default)]
    pub completion_tokens: u64,
    /// Their sum.
    #[serde(default)]
    pub total_tokens: u64,
}

impl std::ops::AddAssign for TokenUsage {
    fn add_assign(&mut self, rhs: Self) {
        self.prompt_tokens += rhs.prompt_tokens;
        self.completion_tokens += rhs.completion_tokens;
        self.total_tokens += rhs.total_tokens;
    }
}

/// Why an upstream's body is not a completion.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("the upstream's reply is not a chat completion: {0}")]
pub struct NotACompletion(pub String);

impl Completion {
    /// Reads an upstream's JSON body.
    pub fn parse(body: &[u8]) -> Result<Self, NotACompletion> {
        let raw: Map<String, Value> =
            serde_json::from_slice(body).map_err(|e| NotACompletion(e.to_string()))?;
        let choice = raw
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
            .ok_or_else(|| NotACompletion("no choices".into()))?;
        let message = choice
            .get("message")
            .cloned()
            .map(serde_json::from_value::<ReplyMessage>)
            .transpose()
            .map_err(|e| NotACompletion(format!("choices[0].message: {e}")))?
            .unwrap_or_default();
        let finish_reason = choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_string);
        let usage = raw
            .get("usage")
            .cloned()
            .and_then(|u| serde_json::from_value(u).ok())
            .unwrap_or_default();
        Ok(Self {
            raw,
            message,
            finish_reason,
            usage,
            unreadable: None,
        })
    }

    /// The assistant message as a conversation turn, to send back in a correction round; its
    /// content is a string even when it only calls tools.
    pub fn as_turn(&self) -> Value {
        let mut turn = Map::new();
        turn.insert("role".into(), Value::from("assistant"));
        // An empty string, not null, beside calls: llama-cpp-python's server refuses null.
        let content = self.message.content.clone().unwrap_or_default();
        turn.insert("content".into(), Value::from(content));
        if self.unreadable.is_some() {
            turn.insert(RAW_TURN.into(), Value::Bool(true));
        }
        if !self.message.tool_calls.is_empty() {
            turn.insert(
                "tool_calls".into(),
                serde_json::to_value(&self.message.tool_calls).unwrap_or_default(),
            );
        }
        Value::Object(turn)
    }

    /// The completion to answer with: `message` as the first choice's, the finish reason that
    /// goes with it, and `usage` (every upstream call's) in place of this call's.
    pub fn answer(&self, message: &ReplyMessage, usage: TokenUsage) -> Value {
        let mut raw = self.raw.clone();
        let finish = if message.tool_calls.is_empty() {
            match self.finish_reason.as_deref() {
                Some("tool_calls") | None => "stop".to_string(),
                Some(other) => other.to_string(),
            }
        } else {
            "tool_calls".to_string()
        };
        let mut message_value = serde_json::to_value(message).unwrap_or_default();
        if let Value::Object(m) = &mut message_value {
            m.insert("role".into(), Value::from("assistant"));
            m.entry("content").or_insert(Value::Null);
        }
        let choice = serde_json::json!({
            "index": 0,
            "message": message_value,
            "finish_reason": finish,
            "logprobs": null,
        });
        raw.insert("choices".into(), Value::Array(vec![choice]));
        raw.insert(
            "usage".into(),
            serde_json::to_value(usage).unwrap_or_default(),
        );
        raw.entry("object")
            .or_insert_with(|| Value::from("chat.completion"));
        Value::Object(raw)
    }
}

/// The text of a message's `content`: a string, or the text parts of a list.
pub fn text_of(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Some(other) => other.to_string(),
        None => String::new(),
    }
}

/// The text of the conversation's last user message: what a claim is read against.
pub fn last_user_text(messages: &[Value]) -> String {
    messages
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .map(|m| text_of(m.get("content")))
        .unwrap_or_default()
}

/// The body as the upstream is sent it: the client's, but for two spellings the API reads the
/// same that llama-cpp-python's server refuses and the OpenAI SDKs write: an assistant
/// message's `"content": null` becomes `""` (left out, a chat template that reads it fails),
/// and a content list of text parts alone, outside a user message, becomes the parts' text.
pub fn for_upstream(mut body: Map<String, Value>) -> Value {
    if let Some(Value::Array(messages)) = body.get_mut("messages") {
        for message in messages.iter_mut().filter_map(Value::as_object_mut) {
            let role = message.get("role").and_then(Value::as_str).unwrap_or("");
            match message.get("content") {
                Some(Value::Null) if role == "assistant" => {
                    message.insert("content".into(), Value::from(""));
                }
                Some(Value::Array(parts)) if role != "user" && parts.iter().all(is_text_part) => {
                    let text = text_of(message.get("content"));
                    message.insert("content".into(), Value::String(text));
                }
                _ => {}
            }
        }
    }
    Value::Object(body)
}

fn is_text_part(part: &Value) -> bool {
    part.get("type").and_then(Value::as_str) == Some("text")
        && part.get("text").is_some_and(Value::is_string)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_a_completion_and_answers_with_the_summed_usage() {
        let body = json!({
            "id": "c1", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null, "reasoning_content": "hm",
                "tool_calls": [{"id": "a", "type": "function",
                    "function": {"name": "f", "arguments": "{}"}}]}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
        });
        let c = Completion::parse(body.to_string().as_bytes()).unwrap();
        assert_eq!(c.message.tool_calls[0].function.name, "f");
        assert_eq!(c.usage.total_tokens, 5);
        let mut sum = c.usage;
        sum += c.usage;
        let answer = c.answer(&c.message, sum);
        assert_eq!(answer["usage"]["total_tokens"], 10);
        assert_eq!(answer["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(answer["choices"][0]["message"]["reasoning_content"], "hm");
        assert_eq!(answer["choices"][0]["message"]["role"], "assistant");
    }

    #[test]
    fn the_upstream_is_sent_no_null_assistant_content() {
        let body = json!({"model": "m", "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": []},
            {"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": "4"}]},
            {"role": "user", "content": [{"type": "text", "text": "and?"}]},
            {"role": "tool", "tool_call_id": "b", "content": [{"type": "image_url", "image_url": {}}]}
        ]});
        let Value::Object(body) = body else { panic!() };
        let sent = for_upstream(body);
        assert_eq!(sent["messages"][1]["content"], "");
        assert_eq!(sent["messages"][0]["content"], "hi");
        assert_eq!(sent["messages"][2]["content"], "4");
        assert!(sent["messages"][3]["content"].is_array());
        assert!(sent["messages"][4]["content"].is_array());
        assert_eq!(sent["model"], "m");
    }

    #[test]
    fn a_body_without_choices_is_refused() {
        assert!(Completion::parse(br#"{"id": "x"}"#).is_err());
        assert!(Completion::parse(b"not json").is_err());
    }
}
