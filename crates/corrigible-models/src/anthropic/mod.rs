//! Anthropic Messages (`anthropic:MODEL`).

mod wire;

use async_trait::async_trait;
use corrigible::{
    Message, Model, ModelError, ModelReply, ModelRequest, Protocol, Reasoning, Role, ToolCall,
    Usage,
};
use serde_json::{Value, json};

use crate::convert::{
    CallIds, Forced, answer_every_call, arguments_object, declared_tools, forced,
};
use crate::error::ModelsError;
use crate::http::Transport;
use crate::options::ProviderOptions;
use crate::spec::Provider;
use wire::{Block, MessagesRequest, MessagesResponse, ToolDecl, Turn};

/// The `anthropic-version` header sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
const DEFAULT_MAX_TOKENS: u32 = 4096;
/// The smallest thinking budget Anthropic accepts.
const MIN_THINKING_BUDGET: u32 = 1024;

/// An Anthropic model; requests go to `{base_url}/v1/messages` (default base
/// `https://api.anthropic.com`), key in `x-api-key`.
pub struct AnthropicModel {
    name: String,
    model: String,
    options: ProviderOptions,
    transport: Transport,
    ids: CallIds,
}

impl std::fmt::Debug for AnthropicModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicModel")
            .field("model", &self.model)
            .field("url", &self.transport.url())
            .finish_non_exhaustive()
    }
}

impl AnthropicModel {
    /// A model named `model`.
    pub fn new(model: impl Into<String>, options: ProviderOptions) -> Result<Self, ModelsError> {
        let model = model.into();
        Ok(Self {
            name: format!("anthropic:{model}"),
            transport: Transport::new(Provider::Anthropic, &options, "/v1/messages")?,
            model,
            options,
            ids: CallIds::default(),
        })
    }

    fn body<'a>(&'a self, request: &'a ModelRequest) -> MessagesRequest<'a> {
        let native = request.protocol == Protocol::Native;
        let tools = if native {
            declared_tools(request)
                .map(|t| ToolDecl {
                    name: &t.name,
                    description: &t.description,
                    input_schema: &t.parameters,
                })
                .collect()
        } else {
            Vec::new()
        };
        let (messages, system) = turns(&request.messages);
        let thinking = self.options.think_tokens.map(
            |budget| json!({"type": "enabled", "budget_tokens": budget.max(MIN_THINKING_BUDGET)}),
        );
        let max_tokens = self.options.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
        MessagesRequest {
            model: &self.model,
            max_tokens: match self.options.think_tokens {
                Some(budget) => max_tokens.max(budget.max(MIN_THINKING_BUDGET) + 1024),
                None => max_tokens,
            },
            system,
            messages,
            tools,
            // Anthropic refuses a forced tool choice and a temperature while thinking.
            tool_choice: match forced(request) {
                _ if thinking.is_some() => None,
                Some(Forced::Tool(name)) => Some(json!({"type": "tool", "name": name})),
                Some(Forced::AnyAction) => Some(json!({"type": "any"})),
                None => None,
            },
            temperature: self.options.temperature.filter(|_| thinking.is_none()),
            thinking,
        }
    }

    fn reply(&self, body: &str) -> Result<ModelReply, ModelError> {
        let response: MessagesResponse = serde_json::from_str(body)
            .map_err(|e| ModelError::Other(format!("unreadable Anthropic response: {e}")))?;
        let usage = response.usage.as_ref();
        let cached = usage.and_then(|u| u.cache_read_input_tokens);
        let mut reply = ModelReply {
            usage: Usage {
                input_tokens: usage.and_then(|u| u.input_tokens).unwrap_or(0)
                    + usage
                        .and_then(|u| u.cache_creation_input_tokens)
                        .unwrap_or(0)
                    + cached.unwrap_or(0),
                output_tokens: usage.and_then(|u| u.output_tokens).unwrap_or(0),
            },
            prompt_tokens_reused: cached,
            ..ModelReply::default()
        };
        tracing::debug!(stop_reason = ?response.stop_reason, "anthropic reply");
        let mut text = String::new();
        let mut reasoning = Reasoning::default();
        for block in response.content {
            match block.kind.as_str() {
                "thinking" => {
                    let thought = block.thinking.unwrap_or_default();
                    if !reasoning.text.is_empty() && !thought.is_empty() {
                        reasoning.text.push('\n');
                    }
                    reasoning.text.push_str(&thought);
                    reasoning.blocks.push(json!({
                        "type": "thinking",
                        "thinking": thought,
                        "signature": block.signature.unwrap_or_default(),
                    }));
                }
                "redacted_thinking" => reasoning.blocks.push(json!({
                    "type": "redacted_thinking",
                    "data": block.data.unwrap_or_default(),
                })),
                "text" => text.push_str(block.text.as_deref().unwrap_or("")),
                "tool_use" => reply.tool_calls.push(ToolCall {
                    id: block
                        .id
                        .filter(|id| !id.is_empty())
                        .unwrap_or_else(|| self.ids.next()),
                    name: block.name.unwrap_or_default(),
                    arguments: match block.input {
                        None | Some(Value::Null) => "{}".to_string(),
                        Some(input) => input.to_string(),
                    },
                }),
                _ => {}
            }
        }
        reply.text = (!text.is_empty()).then_some(text);
        reply.reasoning = (!reasoning.blocks.is_empty()).then_some(reasoning);
        Ok(reply)
    }
}

/// The conversation as alternating `user`/`assistant` turns (consecutive messages of one role
/// merged, tool results first in their turn) and the system prompt.
fn turns(messages: &[Message]) -> (Vec<Turn>, Option<String>) {
    let mut system: Vec<&str> = Vec::new();
    let mut turns: Vec<Turn> = Vec::new();
    let messages = answer_every_call(messages);
    for message in &messages {
        let text = |content: &str| {
            (!content.is_empty()).then(|| Block::Text {
                text: content.to_string(),
            })
        };
        let (role, blocks): (&'static str, Vec<Block>) = match message.role {
            Role::System => {
                if !message.content.is_empty() {
                    system.push(&message.content);
                }
                continue;
            }
            Role::User => ("user", text(&message.content).into_iter().collect()),
            Role::Tool => match &message.tool_call_id {
                Some(id) => (
                    "user",
                    vec![Block::ToolResult {
                        tool_use_id: id.clone(),
                        content: message.content.clone(),
                        is_error: message.is_error,
                    }],
                ),
                None => ("user", text(&message.content).into_iter().collect()),
            },
            Role::Assistant => {
                let mut blocks: Vec<Block> = message
                    .reasoning
                    .iter()
                    .flat_map(|r| r.blocks.iter().filter_map(thinking_block))
                    .collect();
                blocks.extend(text(&message.content));
                blocks.extend(message.tool_calls.iter().map(|call| Block::ToolUse {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    input: arguments_object(&call.arguments),
                }));
                ("assistant", blocks)
            }
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => turns.push(Turn {
                role,
                content: blocks,
            }),
        }
    }
    for turn in &mut turns {
        turn.content
            .sort_by_key(|b| !matches!(b, Block::ToolResult { .. }));
    }
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    (turns, system)
}

/// A thinking block Anthropic sent, to send back verbatim (it checks the signature); `None`
/// for anything else, such as another provider's reasoning.
fn thinking_block(block: &Value) -> Option<Block> {
    let field = |name: &str| block.get(name).and_then(Value::as_str).map(str::to_string);
    match block.get("type").and_then(Value::as_str)? {
        "thinking" => Some(Block::Thinking {
            thinking: field("thinking")?,
            signature: field("signature")?,
        }),
        "redacted_thinking" => Some(Block::RedactedThinking {
            data: field("data")?,
        }),
        _ => None,
    }
}

#[async_trait]
impl Model for AnthropicModel {
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

    #[test]
    fn turns_alternate_and_carry_no_empty_text_block() {
        let call = ToolCall {
            id: "toolu_1".into(),
            name: "calculator".into(),
            arguments: "{\"expression\":\"2+2\"}".into(),
        };
        let messages = vec![
            Message::system("s"),
            Message::request("q"),
            Message::assistant(MessageKind::Reply, "", vec![call]),
            Message::tool_result("toolu_1", "calculator", "4", false, MessageKind::ToolResult),
            Message::user(MessageKind::Feedback, "go on"),
        ];
        let (turns, system) = turns(&messages);
        assert_eq!(system.as_deref(), Some("s"));
        assert_eq!(
            serde_json::to_value(&turns).unwrap_or_default(),
            json!([
                {"role": "user", "content": [{"type": "text", "text": "q"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1",
                    "name": "calculator", "input": {"expression": "2+2"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "4"},
                    {"type": "text", "text": "go on"}
                ]}
            ])
        );
    }
}
