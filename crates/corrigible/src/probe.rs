//! Which protocol a server can carry: one native tool-calling request, read before any run.
//!
//! An OpenAI-compatible server may take tool declarations and still not turn the model's call
//! into `tool_calls` (llama-cpp-python with a GGUF chat template writes it into the text). The
//! native protocol then depends on reading calls out of prose, and the JSON protocol, which
//! needs nothing from the server, is the one to speak.

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::decision::parse_text_call;
use crate::message::Message;
use crate::model::{Model, ModelError, ModelRequest, Protocol, ToolSpec};
use crate::stage::Stage;

const PROBE_TOOL: &str = "lookup";
const PROBE_KEY: &str = "probe-7316";

/// What a server did with one request that asks for one tool call under native tool calling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeFinding {
    /// The call came back in `tool_calls`.
    NativeCall,
    /// The call came back written in the reply text.
    CallAsText,
    /// The reply was empty.
    EmptyReply,
    /// The reply was text with no call in it.
    NoCall,
}

impl ProbeFinding {
    /// The protocol a run should speak to that server.
    pub fn protocol(self) -> Protocol {
        match self {
            ProbeFinding::NativeCall => Protocol::Native,
            _ => Protocol::Json,
        }
    }

    /// What the server did, in words.
    pub fn describe(self) -> &'static str {
        match self {
            ProbeFinding::NativeCall => "the server returned the call in `tool_calls`",
            ProbeFinding::CallAsText => "the server returned the call written in the reply text",
            ProbeFinding::EmptyReply => "the server returned an empty reply",
            ProbeFinding::NoCall => "the server returned text with no call",
        }
    }
}

/// Why a run speaks the protocol it does; recorded when the run starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum ProtocolReason {
    /// Set by the user (a flag, a configuration file, a request field).
    Configured,
    /// The provider's default: native for hosted APIs, JSON for the embedded model.
    ProviderDefault,
    /// Chosen by [`probe_tool_calling`] on the server.
    Probe {
        /// What the server did with the probe request.
        finding: ProbeFinding,
    },
}

impl std::fmt::Display for ProtocolReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProtocolReason::Configured => f.write_str("configured"),
            ProtocolReason::ProviderDefault => f.write_str("the provider's default"),
            ProtocolReason::Probe { finding } => write!(f, "probed: {}", finding.describe()),
        }
    }
}

/// Sends `model` one request that declares one tool and asks for a call of it, and reports
/// what came back. A transport or configuration error is returned as is: the server could not
/// be asked.
pub async fn probe_tool_calling(model: &dyn Model) -> Result<ProbeFinding, ModelError> {
    let request = ModelRequest {
        stage: Stage::new(1, 0),
        messages: vec![
            Message::system("You are a tool-using assistant. Call tools to do what is asked."),
            Message::request(format!(
                "Look up the key `{PROBE_KEY}` with the `{PROBE_TOOL}` tool."
            )),
        ],
        tools: vec![ToolSpec {
            name: PROBE_TOOL.into(),
            description: "Looks up the value stored under a key.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"key": {"type": "string", "description": "The key."}},
                "required": ["key"],
                "additionalProperties": false
            }),
            grounded: Vec::new(),
            computes: false,
        }],
        protocol: Protocol::Native,
        correction: None,
        grounds: Default::default(),
    };
    let reply = model.complete(&request).await?;
    Ok(read(&reply.tool_calls, reply.text.as_deref().unwrap_or("")))
}

fn read(calls: &[crate::message::ToolCall], text: &str) -> ProbeFinding {
    if calls.iter().any(|call| call.name == PROBE_TOOL) {
        ProbeFinding::NativeCall
    } else if parse_text_call(text, &[PROBE_TOOL], true).is_some() {
        ProbeFinding::CallAsText
    } else if text.trim().is_empty() && calls.is_empty() {
        ProbeFinding::EmptyReply
    } else {
        ProbeFinding::NoCall
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    fn call(name: &str) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments: format!(r#"{{"key": "{PROBE_KEY}"}}"#),
        }
    }

    #[test]
    fn a_native_call_keeps_the_native_protocol() {
        let finding = read(&[call(PROBE_TOOL)], "");
        assert_eq!(finding, ProbeFinding::NativeCall);
        assert_eq!(finding.protocol(), Protocol::Native);
    }

    #[test]
    fn anything_else_chooses_json() {
        let qwen = format!(
            "<tool_call>\n{{\"name\": \"lookup\", \"arguments\": {{\"key\": \"{PROBE_KEY}\"}}}}\n</tool_call>"
        );
        let cases = [
            (qwen.as_str(), ProbeFinding::CallAsText),
            ("", ProbeFinding::EmptyReply),
            ("  \n", ProbeFinding::EmptyReply),
            ("I cannot look that up.", ProbeFinding::NoCall),
        ];
        for (text, expected) in cases {
            let finding = read(&[], text);
            assert_eq!(finding, expected, "{text:?}");
            assert_eq!(finding.protocol(), Protocol::Json);
        }
        assert_eq!(read(&[call("other")], ""), ProbeFinding::NoCall);
    }

    #[test]
    fn the_reason_reads_in_the_trace() {
        let reason = ProtocolReason::Probe {
            finding: ProbeFinding::CallAsText,
        };
        assert_eq!(
            serde_json::to_value(reason).unwrap(),
            json!({"by": "probe", "finding": "call_as_text"})
        );
        assert_eq!(
            reason.to_string(),
            "probed: the server returned the call written in the reply text"
        );
    }
}
