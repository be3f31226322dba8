//! Gemini `generateContent` (`gemini:MODEL`).

mod contents;
mod schema;
mod wire;

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use corrigible::{
    Model, ModelError, ModelReply, ModelRequest, Protocol, Reasoning, ToolCall, Usage,
};
use serde_json::{Value, json};

use crate::convert::{CallIds, Forced, declared_tools, forced};
use crate::error::ModelsError;
use crate::http::Transport;
use crate::options::ProviderOptions;
use crate::spec::Provider;
use wire::{
    FunctionCallingConfig, FunctionDecl, GenerateRequest, GenerateResponse, GenerationConfig,
    ToolConfig, ToolOut,
};

const MAX_SIGNATURES: usize = 4096;

/// A Gemini model; requests go to `{base_url}/v1beta/models/{model}:generateContent`
/// (default base `https://generativelanguage.googleapis.com`), key in `x-goog-api-key`.
pub struct GeminiModel {
    name: String,
    options: ProviderOptions,
    transport: Transport,
    ids: CallIds,
    signatures: Mutex<HashMap<String, String>>,
}

impl std::fmt::Debug for GeminiModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeminiModel")
            .field("name", &self.name)
            .field("url", &self.transport.url())
            .finish_non_exhaustive()
    }
}

impl GeminiModel {
    /// A model named `model` (with or without the `models/` prefix).
    pub fn new(model: impl Into<String>, options: ProviderOptions) -> Result<Self, ModelsError> {
        let model = model.into();
        let model = model.strip_prefix("models/").unwrap_or(&model).to_string();
        let path = format!("/v1beta/models/{model}:generateContent");
        Ok(Self {
            name: format!("gemini:{model}"),
            transport: Transport::new(Provider::Gemini, &options, &path)?,
            options,
            ids: CallIds::default(),
            signatures: Mutex::new(HashMap::new()),
        })
    }

    fn signature(&self, call_id: &str) -> Option<String> {
        self.signatures.lock().ok()?.get(call_id).cloned()
    }

    fn remember_signature(&self, call_id: &str, signature: String) {
        if let Ok(mut map) = self.signatures.lock() {
            if map.len() >= MAX_SIGNATURES {
                map.clear();
            }
            map.insert(call_id.to_string(), signature);
        }
    }

    fn body(&self, request: &ModelRequest) -> GenerateRequest {
        let (contents, system_instruction) =
            contents::contents(&request.messages, |id| self.signature(id));
        let native = request.protocol == Protocol::Native && !request.tools.is_empty();
        let tools = if native {
            vec![ToolOut {
                function_declarations: request
                    .tools
                    .iter()
                    .map(|t| FunctionDecl {
                        name: t.name.clone(),
                        description: t.description.clone(),
                        parameters: schema::parameters(&t.parameters),
                    })
                    .collect(),
            }]
        } else {
            Vec::new()
        };
        let tool_config = forced(request).map(|forced| ToolConfig {
            function_calling_config: FunctionCallingConfig {
                mode: "ANY",
                allowed_function_names: match forced {
                    Forced::Tool(name) => vec![name.to_string()],
                    Forced::AnyAction => declared_tools(request).map(|t| t.name.clone()).collect(),
                },
            },
        });
        let thinking_config = self
            .options
            .think_tokens
            .map(|budget| json!({"thinkingBudget": budget, "includeThoughts": true}));
        let generation_config = (self.options.temperature.is_some()
            || self.options.max_output_tokens.is_some()
            || thinking_config.is_some())
        .then_some(GenerationConfig {
            temperature: self.options.temperature,
            max_output_tokens: self.options.max_output_tokens,
            thinking_config,
        });
        GenerateRequest {
            contents,
            system_instruction,
            tools,
            tool_config,
            generation_config,
        }
    }

    fn reply(&self, body: &str) -> Result<ModelReply, ModelError> {
        let response: GenerateResponse = serde_json::from_str(body)
            .map_err(|e| ModelError::Other(format!("unreadable Gemini response: {e}")))?;
        let usage = response.usage_metadata.as_ref();
        let mut reply = ModelReply {
            usage: Usage {
                input_tokens: usage.and_then(|u| u.prompt_token_count).unwrap_or(0),
                output_tokens: usage.and_then(|u| u.candidates_token_count).unwrap_or(0)
                    + usage.and_then(|u| u.thoughts_token_count).unwrap_or(0),
            },
            prompt_tokens_reused: usage.and_then(|u| u.cached_content_token_count),
            ..ModelReply::default()
        };
        let Some(candidate) = response.candidates.into_iter().next() else {
            tracing::warn!(feedback = ?response.prompt_feedback, "Gemini returned no candidate");
            return Ok(reply);
        };
        tracing::debug!(finish_reason = ?candidate.finish_reason, "gemini reply");
        let mut text = String::new();
        let mut thoughts = String::new();
        for part in candidate.content.map(|c| c.parts).unwrap_or_default() {
            if part.thought == Some(true) {
                thoughts.push_str(part.text.as_deref().unwrap_or(""));
                continue;
            }
            if let Some(call) = part.function_call {
                let id = call
                    .id
                    .filter(|id| !id.is_empty())
                    .unwrap_or_else(|| self.ids.next());
                if let Some(signature) = part.thought_signature {
                    self.remember_signature(&id, signature);
                }
                reply.tool_calls.push(ToolCall {
                    id,
                    name: call.name.unwrap_or_default(),
                    arguments: match call.args {
                        None | Some(Value::Null) => "{}".to_string(),
                        Some(args) => args.to_string(),
                    },
                });
            } else if let Some(t) = part.text {
                text.push_str(&t);
            }
        }
        reply.text = (!text.is_empty()).then_some(text);
        let thought_tokens = usage.and_then(|u| u.thoughts_token_count);
        if !thoughts.is_empty() || thought_tokens.is_some_and(|n| n > 0) {
            reply.reasoning = Some(Reasoning {
                tokens: thought_tokens,
                ..Reasoning::text(thoughts)
            });
        }
        Ok(reply)
    }
}

#[async_trait]
impl Model for GeminiModel {
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
