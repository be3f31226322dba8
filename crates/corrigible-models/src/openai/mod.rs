//! OpenAI-compatible Chat Completions (`openai:MODEL`): OpenAI, Ollama, vLLM, llama.cpp's
//! server and compatible gateways.

mod endpoint;
mod wire;

use async_trait::async_trait;
use corrigible::{
    Message, Model, ModelError, ModelReply, ModelRequest, Protocol, Reasoning, Role, ToolCall,
    Usage,
};
use serde_json::{Value, json};

use crate::convert::{
    self as convert, CallIds, Forced, answer_every_call, arguments_object, declared_tools,
    forced_tool, strict_compatible,
};
use crate::error::ModelsError;
use crate::http::Transport;
use crate::options::ProviderOptions;
use crate::spec::Provider;
pub use endpoint::{ChatEndpoint, EndpointAnswer};
use wire::{
    CallIn, CallOut, ChatMessage, ChatRequest, ChatResponse, FunctionDecl, FunctionOut, ToolDecl,
};

/// A model behind an OpenAI-compatible `/chat/completions` endpoint.
pub struct OpenAiModel {
    name: String,
    model: String,
    options: ProviderOptions,
    transport: Transport,
    ids: CallIds,
}

impl std::fmt::Debug for OpenAiModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiModel")
            .field("model", &self.model)
            .field("url", &self.transport.url())
            .finish_non_exhaustive()
    }
}

impl OpenAiModel {
    /// A model named `model`; requests go to `{base_url}/chat/completions` (default base
    /// `https://api.openai.com/v1`). The key is optional: local servers need none.
    pub fn new(model: impl Into<String>, options: ProviderOptions) -> Result<Self, ModelsError> {
        let model = model.into();
        Ok(Self {
            name: format!("openai:{model}"),
            transport: Transport::new(Provider::OpenAi, &options, "/chat/completions")?,
            model,
            options,
            ids: CallIds::default(),
        })
    }

    fn body<'a>(&'a self, request: &'a ModelRequest) -> ChatRequest<'a> {
        let native = request.protocol == Protocol::Native;
        let forced = forced_tool(request);
        let tools = if native {
            declared_tools(request)
                .map(|t| ToolDecl {
                    kind: "function",
                    function: FunctionDecl {
                        name: &t.name,
                        description: &t.description,
                        parameters: &t.parameters,
                        strict: (forced == Some(t.name.as_str())
                            && strict_compatible(&t.parameters))
                        .then_some(true),
                    },
                })
                .collect()
        } else {
            Vec::new()
        };
        let tool_choice = match convert::forced(request) {
            Some(Forced::Tool(name)) => {
                Some(json!({"type": "function", "function": {"name": name}}))
            }
            Some(Forced::AnyAction) => Some(json!("required")),
            None => None,
        };
        ChatRequest {
            model: &self.model,
            messages: answer_every_call(&request.messages)
                .iter()
                .map(message_out)
                .collect(),
            tools,
            tool_choice,
            temperature: self.options.temperature,
            max_tokens: self.options.max_output_tokens,
        }
    }

    fn reply(&self, body: &str) -> Result<ModelReply, ModelError> {
        let response: ChatResponse = serde_json::from_str(body).map_err(|e| {
            ModelError::Other(format!("unreadable OpenAI-compatible response: {e}"))
        })?;
        let usage = response.usage.as_ref();
        let mut reply = ModelReply {
            usage: Usage {
                input_tokens: usage.and_then(|u| u.prompt_tokens).unwrap_or(0),
                output_tokens: usage.and_then(|u| u.completion_tokens).unwrap_or(0),
            },
            prompt_tokens_reused: usage
                .and_then(|u| u.prompt_tokens_details.as_ref())
                .and_then(|d| d.cached_tokens),
            ..ModelReply::default()
        };
        let Some(choice) = response.choices.into_iter().next() else {
            return Err(ModelError::Other(
                "the OpenAI-compatible response has no choices".into(),
            ));
        };
        tracing::debug!(finish_reason = ?choice.finish_reason, "openai reply");
        let reasoning_tokens = usage
            .and_then(|u| u.completion_tokens_details.as_ref())
            .and_then(|d| d.reasoning_tokens)
            .filter(|&n| n > 0);
        let Some(message) = choice.message else {
            return Ok(reply);
        };
        let thought = message.reasoning_content.filter(|t| !t.trim().is_empty());
        if thought.is_some() || reasoning_tokens.is_some() {
            reply.reasoning = Some(Reasoning {
                tokens: reasoning_tokens,
                ..Reasoning::text(thought.unwrap_or_default())
            });
        }
        reply.text = message
            .content
            .as_ref()
            .and_then(content_text)
            .filter(|t| !t.is_empty())
            .or(message.refusal.filter(|t| !t.is_empty()));
        reply.tool_calls = message
            .tool_calls
            .unwrap_or_default()
            .into_iter()
            .map(|call| self.call_in(call))
            .collect();
        Ok(reply)
    }

    fn call_in(&self, call: CallIn) -> ToolCall {
        let function = call.function;
        let (name, arguments) = match function {
            Some(f) => (f.name.unwrap_or_default(), f.arguments),
            None => (String::new(), None),
        };
        ToolCall {
            id: call
                .id
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| self.ids.next()),
            name,
            arguments: match arguments {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) => s,
                Some(other) => other.to_string(),
            },
        }
    }
}

fn content_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => Some(
            parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(""),
        ),
        _ => None,
    }
}

fn message_out(message: &Message) -> ChatMessage {
    let plain = |role| ChatMessage {
        role,
        content: message.content.clone(),
        tool_calls: Vec::new(),
        tool_call_id: None,
        reasoning_content: None,
    };
    match message.role {
        Role::System => plain("system"),
        Role::User => plain("user"),
        Role::Tool => match &message.tool_call_id {
            Some(id) => ChatMessage {
                tool_call_id: Some(id.clone()),
                ..plain("tool")
            },
            None => plain("user"),
        },
        Role::Assistant => ChatMessage {
            role: "assistant",
            content: message.content.clone(),
            tool_calls: message
                .tool_calls
                .iter()
                .map(|call| CallOut {
                    id: call.id.clone(),
                    kind: "function",
                    function: FunctionOut {
                        name: call.name.clone(),
                        arguments: arguments_out(&call.arguments),
                    },
                })
                .collect(),
            tool_call_id: None,
            // Servers that think with tools (DeepSeek) want the reasoning of a tool-calling
            // turn back; other turns go without it, as they require.
            reasoning_content: message
                .reasoning
                .as_ref()
                .filter(|r| !message.tool_calls.is_empty() && !r.text.is_empty())
                .map(|r| r.text.clone()),
        },
    }
}

/// Arguments as sent back in the history: verbatim when they are JSON; broken JSON is
/// wrapped as `{"_raw": text}`, since compatible servers (Ollama, vLLM) parse them.
fn arguments_out(raw: &str) -> String {
    if serde_json::from_str::<Value>(raw).is_ok() {
        raw.to_string()
    } else {
        arguments_object(raw).to_string()
    }
}

#[async_trait]
impl Model for OpenAiModel {
    fn name(&self) -> &str {
        &self.name
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let answer = self.transport.post_json(&self.body(request)).await?;
        let mut reply = self.reply(&answer.body)?;
        reply.transport_retries = answer.retries;
        Ok(reply)
    }
}

#[cfg(test)]
mod tests {
    use corrigible::MessageKind;

    use super::*;

    fn call(id: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "calculator".into(),
            arguments: arguments.into(),
        }
    }

    fn wire(message: &Message) -> Value {
        serde_json::to_value(message_out(message)).unwrap_or_default()
    }

    #[test]
    fn a_call_only_assistant_message_has_empty_string_content() {
        let message = Message::assistant(MessageKind::Reply, "", vec![call("c1", "{\"x\":1}")]);
        assert_eq!(
            wire(&message),
            json!({"role": "assistant", "content": "", "tool_calls": [{
                "id": "c1", "type": "function",
                "function": {"name": "calculator", "arguments": "{\"x\":1}"}
            }]})
        );
    }

    #[test]
    fn text_next_to_calls_and_text_alone_are_strings() {
        let both = Message::assistant(MessageKind::Reply, "Checking.", vec![call("c1", "{}")]);
        assert_eq!(wire(&both)["content"], json!("Checking."));
        let empty = Message::assistant(MessageKind::Reply, "", Vec::new());
        assert_eq!(wire(&empty), json!({"role": "assistant", "content": ""}));
    }

    #[test]
    fn arguments_are_json_text_and_results_answer_their_id() {
        let broken = Message::assistant(MessageKind::Reply, "", vec![call("c1", "{\"x\":")]);
        let args = wire(&broken)["tool_calls"][0]["function"]["arguments"].clone();
        let args: Value = serde_json::from_str(args.as_str().unwrap_or_default()).unwrap();
        assert_eq!(args, json!({"_raw": "{\"x\":"}));
        let result = Message::tool_result("c1", "calculator", "42", false, MessageKind::ToolResult);
        assert_eq!(
            wire(&result),
            json!({"role": "tool", "content": "42", "tool_call_id": "c1"})
        );
    }

    #[test]
    fn no_message_of_a_conversation_carries_null() {
        let messages = vec![
            Message::system("s"),
            Message::request("q"),
            Message::assistant(MessageKind::Reply, "", vec![call("c1", "{}")]),
            Message::tool_result("c1", "calculator", "", true, MessageKind::ToolResult),
        ];
        for message in answer_every_call(&messages) {
            let value = wire(&message);
            let object = value.as_object().cloned().unwrap_or_default();
            assert!(object.values().all(|v| !v.is_null()), "{value}");
        }
    }
}
