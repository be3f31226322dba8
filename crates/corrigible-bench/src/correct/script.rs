//! A model that gives a trajectory's replies in order, and gives up once it is corrected.

use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use corrigible::tool::FINAL_ANSWER;
use corrigible::{Model, ModelError, ModelReply, ModelRequest, Protocol, Reasoning, ToolCall};
use serde_json::{Value, json};

use super::trajectory::Trajectory;
use crate::bfcl::schema::tool_name;

/// What a correct trajectory's author would have sent, reply by reply, in one protocol. When
/// the engine sends a reply back, the script has nothing more to say: it answers with an
/// unsatisfied final, so that the run ends and the rejection is in its report.
#[derive(Debug)]
pub struct ScriptModel {
    replies: Vec<ModelReply>,
    give_up: ModelReply,
    cursor: AtomicUsize,
}

impl ScriptModel {
    /// The replies of `trajectory` under `protocol`: one call per reply, except a BFCL
    /// `parallel` trajectory, whose calls come in one native reply.
    pub fn new(trajectory: &Trajectory, protocol: Protocol) -> Self {
        let name = |tool: &str| {
            if trajectory.functions.is_empty() {
                tool.to_string()
            } else {
                tool_name(tool)
            }
        };
        let mut replies = Vec::new();
        let parallel = protocol == Protocol::Native && trajectory.source == "bfcl:parallel";
        let mut batch = Vec::new();
        for (i, step) in trajectory.steps.iter().enumerate() {
            let tool = name(&step.tool);
            match protocol {
                Protocol::Json => replies.push(text(&json!({
                    "state": "action",
                    "reason": step.reason.as_deref().unwrap_or("this call answers the request"),
                    "tool": tool,
                    "tool_input": step.input,
                }))),
                Protocol::Native => {
                    let call = ToolCall {
                        id: format!("call_{}", i + 1),
                        name: tool,
                        arguments: step.input.to_string(),
                    };
                    if parallel {
                        batch.push(call);
                    } else {
                        replies.push(calls(vec![call]));
                    }
                }
            }
        }
        if !batch.is_empty() {
            replies.push(calls(batch));
        }
        let mut last = final_reply(protocol, trajectory.satisfied, &trajectory.answer);
        last.reasoning = trajectory.reasoning.as_deref().map(Reasoning::text);
        replies.push(last);
        Self {
            replies,
            give_up: final_reply(protocol, false, "I cannot do better than my last reply."),
            cursor: AtomicUsize::new(0),
        }
    }
}

fn text(value: &Value) -> ModelReply {
    ModelReply {
        text: Some(value.to_string()),
        ..ModelReply::default()
    }
}

fn calls(tool_calls: Vec<ToolCall>) -> ModelReply {
    ModelReply {
        tool_calls,
        ..ModelReply::default()
    }
}

/// A final answer: JSON under the json protocol; under the native one, plain text when
/// satisfied (as hosted models answer), else a `final_answer` call.
fn final_reply(protocol: Protocol, satisfied: bool, answer: &str) -> ModelReply {
    match protocol {
        Protocol::Json => text(&json!({
            "state": "final",
            "satisfied": satisfied,
            "final_summary": answer,
        })),
        Protocol::Native if satisfied => ModelReply {
            text: Some(answer.to_string()),
            ..ModelReply::default()
        },
        Protocol::Native => calls(vec![ToolCall {
            id: "call_final".into(),
            name: FINAL_ANSWER.into(),
            arguments: json!({"satisfied": false, "final_summary": answer}).to_string(),
        }]),
    }
}

#[async_trait]
impl Model for ScriptModel {
    fn name(&self) -> &str {
        "script"
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        if request.correction.is_some() {
            return Ok(self.give_up.clone());
        }
        let next = self.cursor.fetch_add(1, Ordering::Relaxed);
        Ok(self
            .replies
            .get(next)
            .cloned()
            .unwrap_or_else(|| self.give_up.clone()))
    }
}
