use crate::message::{Message, MessageKind};
use crate::model::{ModelReply, Protocol};
use crate::prompt::tagged_tool_result;

/// The conversation of one run, appended to in the shape its protocol expects: under `json`,
/// tool results and feedback are user messages; under `native`, each tool call gets a tool
/// result message tied to its call id.
pub(crate) struct History {
    protocol: Protocol,
    pub(crate) messages: Vec<Message>,
}

impl History {
    pub(crate) fn new(
        protocol: Protocol,
        system: String,
        examples: &[Message],
        request: &str,
    ) -> Self {
        let mut messages = vec![Message::system(system)];
        messages.extend(examples.iter().cloned());
        messages.push(Message::request(request));
        Self { protocol, messages }
    }

    /// Keeps the model's reply, rejected or not, as evidence; an empty reply leaves nothing.
    pub(crate) fn reply(&mut self, reply: &ModelReply) {
        let text = reply.text.clone().unwrap_or_default();
        if text.trim().is_empty() && reply.tool_calls.is_empty() {
            return;
        }
        self.messages.push(
            Message::assistant(MessageKind::Reply, text, reply.tool_calls.clone())
                .with_reasoning(reply.reasoning.clone()),
        );
    }

    /// The result of an executed (or refused) tool call.
    pub(crate) fn tool_result(
        &mut self,
        call_id: Option<&str>,
        tool: &str,
        content: &str,
        is_error: bool,
    ) {
        self.push(call_id, tool, content, is_error, MessageKind::ToolResult);
    }

    /// Correction feedback, tied to the rejected call when there is one.
    pub(crate) fn feedback(&mut self, call_id: Option<&str>, tool: &str, text: &str) {
        self.push(call_id, tool, text, true, MessageKind::Feedback);
    }

    fn push(
        &mut self,
        call_id: Option<&str>,
        tool: &str,
        content: &str,
        is_error: bool,
        kind: MessageKind,
    ) {
        let message = match (self.protocol, call_id) {
            (Protocol::Native, Some(id)) => Message::tool_result(id, tool, content, is_error, kind),
            (_, _) if kind == MessageKind::ToolResult => {
                Message::user(kind, tagged_tool_result(tool, content, is_error))
            }
            _ => Message::user(kind, content),
        };
        self.messages.push(message);
    }
}
