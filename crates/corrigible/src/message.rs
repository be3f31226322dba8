//! Chat messages exchanged with a model, in a provider-neutral shape.

use serde::{Deserialize, Serialize};

use crate::model::Reasoning;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions from the application.
    System,
    /// The user, or the application speaking on the model's side of the loop (feedback, results).
    User,
    /// The model.
    Assistant,
    /// A tool result in a native tool-calling protocol.
    Tool,
}

/// What a message is for; the context budget decides what to trim from this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// The system prompt: never trimmed.
    System,
    /// A worked example turn given before the request.
    Example,
    /// The current user request: never trimmed.
    Request,
    /// A model reply.
    #[default]
    Reply,
    /// The result of a tool call.
    ToolResult,
    /// Correction feedback: the latest one is never trimmed.
    Feedback,
}

/// A tool call made by a model through native tool calling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for this call; results refer back to it.
    pub id: String,
    /// The name of the tool the model wants to call.
    pub name: String,
    /// The arguments exactly as the model produced them: JSON text that may be broken.
    pub arguments: String,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// The author.
    pub role: Role,
    /// Text content; may be empty for a reply that only calls tools.
    pub content: String,
    /// Native tool calls made in this (assistant) message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool result: the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For a tool result: the name of the tool that produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// For a tool result: whether it reports an error (a rejection or a failure).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// What the message is for.
    #[serde(default)]
    pub kind: MessageKind,
    /// For an assistant message: the reasoning that preceded it, kept so the model sees its
    /// own thought and a provider gets back what it requires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
}

impl Message {
    fn new(role: Role, kind: MessageKind, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            tool_name: None,
            is_error: false,
            kind,
            reasoning: None,
        }
    }

    /// The system prompt.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, MessageKind::System, content)
    }

    /// The user's request.
    pub fn request(content: impl Into<String>) -> Self {
        Self::new(Role::User, MessageKind::Request, content)
    }

    /// A user message of the given kind (feedback, a tagged tool result, an example).
    pub fn user(kind: MessageKind, content: impl Into<String>) -> Self {
        Self::new(Role::User, kind, content)
    }

    /// An assistant message of the given kind, with optional native tool calls.
    pub fn assistant(
        kind: MessageKind,
        content: impl Into<String>,
        tool_calls: Vec<ToolCall>,
    ) -> Self {
        Self {
            tool_calls,
            ..Self::new(Role::Assistant, kind, content)
        }
    }

    /// The same message with `reasoning` attached.
    pub fn with_reasoning(self, reasoning: Option<Reasoning>) -> Self {
        Self { reasoning, ..self }
    }

    /// A native tool result answering the call `call_id`.
    pub fn tool_result(
        call_id: impl Into<String>,
        tool_name: impl Into<String>,
        content: impl Into<String>,
        is_error: bool,
        kind: MessageKind,
    ) -> Self {
        Self {
            tool_call_id: Some(call_id.into()),
            tool_name: Some(tool_name.into()),
            is_error,
            ..Self::new(Role::Tool, kind, content)
        }
    }
}
