//! The replay model: serves recorded replies from a JSONL file, in order, whatever the request.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use corrigible::{Model, ModelError, ModelReply, ModelRequest, Reasoning, ToolCall, Usage};
use serde::Deserialize;
use serde_json::Value;

/// Why a replay file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The file could not be read.
    #[error("cannot read replay file {path}")]
    Io {
        /// The file.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// One line is not a valid reply.
    #[error("replay line {line}: {message}")]
    Line {
        /// The line number, from 1.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LineSpec {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<CallSpec>>,
    #[serde(default)]
    transport_error: Option<String>,
    #[serde(default)]
    usage: Option<UsageSpec>,
    #[serde(default)]
    reasoning: Option<ReasoningSpec>,
    #[serde(default)]
    delay_ms: u64,
}

/// A line's reasoning: its text, or the whole record (tokens, cut, recalculations).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ReasoningSpec {
    Text(String),
    Record(Reasoning),
}

impl From<ReasoningSpec> for Reasoning {
    fn from(spec: ReasoningSpec) -> Self {
        match spec {
            ReasoningSpec::Text(text) => Reasoning::text(text),
            ReasoningSpec::Record(reasoning) => reasoning,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CallSpec {
    #[serde(default)]
    id: Option<String>,
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UsageSpec {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
}

/// One recorded entry: a reply or a transport error, and how long the model takes to give it.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    outcome: Outcome,
    delay: Duration,
}

#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Reply(ModelReply),
    TransportError(String),
}

/// A model that replays a JSONL file of replies, one per call, in order.
///
/// Each non-blank line is one of `{"text": "…"}`, `{"tool_calls": [{"name": "…",
/// "arguments": "<string or object>"}]}` or `{"transport_error": "…"}`, optionally with
/// `"usage": {"input_tokens": N, "output_tokens": N}` and the reasoning the model wrote
/// before the reply, `"reasoning": "…"` (or the whole record, `{"text": "…", "tokens": N,
/// "truncated": bool, "recalculated": [{"expression", "stated", "value"}]}`), and the time the call takes, `"delay_ms": N` (a slow
/// model, for load and crash tests). String arguments are kept verbatim
/// (even broken JSON); other values are serialized. Calls without an `"id"` are numbered
/// `call_1`, `call_2`, … across the file. Once the lines run out, every call is a transport
/// error ("replay exhausted").
#[derive(Debug)]
pub struct ReplayModel {
    entries: Arc<[Entry]>,
    source: Arc<str>,
    cursor: AtomicUsize,
}

impl ReplayModel {
    /// Loads a replay file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ReplayError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ReplayError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses replay lines from a string (the content of a JSONL file).
    #[allow(clippy::should_implement_trait)]
    pub fn from_str(text: &str) -> Result<Self, ReplayError> {
        Self::parse(text, "<string>")
    }

    fn parse(text: &str, source: &str) -> Result<Self, ReplayError> {
        let mut entries = Vec::new();
        let mut next_id = 1usize;
        for (index, raw) in text.lines().enumerate() {
            if raw.trim().is_empty() {
                continue;
            }
            let line = index + 1;
            let spec: LineSpec = serde_json::from_str(raw).map_err(|e| ReplayError::Line {
                line,
                message: format!("{e}"),
            })?;
            entries.push(entry(spec, line, &mut next_id)?);
        }
        Ok(Self {
            entries: entries.into(),
            source: source.into(),
            cursor: AtomicUsize::new(0),
        })
    }

    /// Starts again from the first line.
    pub fn reset(&self) {
        self.cursor.store(0, Ordering::SeqCst);
    }

    /// A new replay model over the same lines, starting from the first one; cheap (shares
    /// the parsed lines).
    pub fn restarted(&self) -> Self {
        Self {
            entries: Arc::clone(&self.entries),
            source: Arc::clone(&self.source),
            cursor: AtomicUsize::new(0),
        }
    }

    /// The number of recorded replies.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the file held no reply at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// How many recorded replies have not been served yet.
    pub fn remaining(&self) -> usize {
        self.entries
            .len()
            .saturating_sub(self.cursor.load(Ordering::SeqCst))
    }
}

fn entry(spec: LineSpec, line: usize, next_id: &mut usize) -> Result<Entry, ReplayError> {
    let usage = spec
        .usage
        .map(|u| Usage {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
        })
        .unwrap_or_default();
    let delay = Duration::from_millis(spec.delay_ms);
    if let Some(message) = spec.transport_error {
        if spec.text.is_some() || spec.tool_calls.is_some() || spec.reasoning.is_some() {
            return Err(ReplayError::Line {
                line,
                message: "`transport_error` cannot be combined with `text`, `tool_calls` or \
                          `reasoning`"
                    .into(),
            });
        }
        return Ok(Entry {
            outcome: Outcome::TransportError(message),
            delay,
        });
    }
    let mut tool_calls = Vec::new();
    for call in spec.tool_calls.unwrap_or_default() {
        if call.name.trim().is_empty() {
            return Err(ReplayError::Line {
                line,
                message: "a tool call needs a non-empty `name`".into(),
            });
        }
        let arguments = match call.arguments {
            None => "{}".to_string(),
            Some(Value::String(s)) => s,
            Some(other) => other.to_string(),
        };
        let id = call.id.unwrap_or_else(|| format!("call_{next_id}"));
        *next_id += 1;
        tool_calls.push(ToolCall {
            id,
            name: call.name,
            arguments,
        });
    }
    Ok(Entry {
        outcome: Outcome::Reply(ModelReply {
            text: spec.text,
            tool_calls,
            usage,
            reasoning: spec.reasoning.map(Reasoning::from),
            ..ModelReply::default()
        }),
        delay,
    })
}

#[async_trait]
impl Model for ReplayModel {
    fn name(&self) -> &str {
        "replay"
    }

    async fn complete(&self, _request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let index = self.cursor.fetch_add(1, Ordering::SeqCst);
        let Some(entry) = self.entries.get(index) else {
            return Err(ModelError::Transport(format!(
                "replay exhausted: all {} replies of {} were served",
                self.entries.len(),
                self.source
            )));
        };
        if !entry.delay.is_zero() {
            tokio::time::sleep(entry.delay).await;
        }
        match &entry.outcome {
            Outcome::Reply(reply) => Ok(reply.clone()),
            Outcome::TransportError(message) => Err(ModelError::Transport(message.clone())),
        }
    }
}

impl std::str::FromStr for ReplayModel {
    type Err = ReplayError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text, "<string>")
    }
}
