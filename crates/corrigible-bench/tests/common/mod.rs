//! Test doubles: a model whose reply depends on the request's prompt, on how many tool results
//! the conversation holds (the phase) and on how many replies came since the last one, so every
//! run of a task replays the same script whatever the policy.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use corrigible::{MessageKind, Model, ModelError, ModelReply, ModelRequest, Role, ToolCall, Usage};

/// Replies by prompt: after P tool results and R replies since the last one, the reply is
/// `script[prompt][P][min(R, last)]`.
pub struct ByPrompt {
    scripts: HashMap<String, Vec<Vec<ModelReply>>>,
}

impl ByPrompt {
    pub fn texts(scripts: &[(&str, &[&[&str]])]) -> Arc<Self> {
        Arc::new(Self {
            scripts: scripts
                .iter()
                .map(|(prompt, phases)| {
                    (
                        prompt.to_string(),
                        phases
                            .iter()
                            .map(|replies| replies.iter().map(|t| text(t)).collect())
                            .collect(),
                    )
                })
                .collect(),
        })
    }

    pub fn replies(scripts: Vec<(&str, Vec<Vec<ModelReply>>)>) -> Arc<Self> {
        Arc::new(Self {
            scripts: scripts
                .into_iter()
                .map(|(p, r)| (p.to_string(), r))
                .collect(),
        })
    }
}

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

pub fn call(name: &str, args: &str) -> ModelReply {
    ModelReply {
        tool_calls: vec![ToolCall {
            id: "call_1".into(),
            name: name.into(),
            arguments: args.into(),
        }],
        usage: Usage {
            input_tokens: 100,
            output_tokens: 10,
        },
        ..Default::default()
    }
}

#[async_trait]
impl Model for ByPrompt {
    fn name(&self) -> &str {
        "by-prompt"
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let prompt = request
            .messages
            .iter()
            .find(|m| m.kind == MessageKind::Request)
            .map(|m| m.content.clone())
            .unwrap_or_default();
        let script = self
            .scripts
            .iter()
            .find(|(p, _)| prompt.contains(p.as_str()))
            .map(|(_, s)| s)
            .ok_or_else(|| ModelError::Transport(format!("no script for {prompt:?}")))?;
        // A rejection sent back as a native tool result is an error result: not a phase.
        let is_result = |m: &&corrigible::Message| {
            (m.kind == MessageKind::ToolResult || m.role == Role::Tool) && !m.is_error
        };
        // Only the turns after the request count (worked examples come before it).
        let start = request
            .messages
            .iter()
            .position(|m| m.kind == MessageKind::Request)
            .unwrap_or(0);
        let turns = &request.messages[start..];
        let results = turns.iter().filter(is_result).count();
        let since = turns
            .iter()
            .rev()
            .take_while(|m| !is_result(m))
            .filter(|m| m.role == Role::Assistant)
            .count();
        let phase = script
            .get(results)
            .ok_or_else(|| ModelError::Transport(format!("script exhausted at phase {results}")))?;
        phase
            .get(since.min(phase.len().saturating_sub(1)))
            .cloned()
            .ok_or_else(|| ModelError::Transport("empty phase".into()))
    }
}
