//! The replay model: serves recorded replies from a JSONL file, or a script of replies written
//! in code, in order, whatever the request.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
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

/// One recorded entry: a reply or an error, and how long the model takes to give it.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    outcome: Outcome,
    delay: Duration,
}

#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Reply(ModelReply),
    Error(ModelError),
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
///
/// A script written in code ([`ReplayModel::script`]) serves its replies and errors the same
/// way and keeps every request it was sent, for a test to read ([`ReplayModel::requests`]).
#[derive(Debug)]
pub struct ReplayModel {
    entries: Arc<[Entry]>,
    source: Arc<str>,
    cursor: AtomicUsize,
    requests: Option<Mutex<Vec<ModelRequest>>>,
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

    /// Serves `replies` in order, each a reply or the error the call fails with, and keeps the
    /// requests it is sent.
    pub fn script(replies: impl IntoIterator<Item = Result<ModelReply, ModelError>>) -> Self {
        let entries: Vec<Entry> = replies
            .into_iter()
            .map(|reply| Entry {
                outcome: match reply {
                    Ok(reply) => Outcome::Reply(reply),
                    Err(error) => Outcome::Error(error),
                },
                delay: Duration::ZERO,
            })
            .collect();
        Self {
            entries: entries.into(),
            source: "the script".into(),
            cursor: AtomicUsize::new(0),
            requests: Some(Mutex::new(Vec::new())),
        }
    }

    /// A script of text replies, each with 100 input and 10 output tokens.
    pub fn texts<S: AsRef<str>>(texts: &[S]) -> Self {
        Self::script(texts.iter().map(|text| {
            Ok(ModelReply {
                text: Some(text.as_ref().to_string()),
                usage: Usage {
                    input_tokens: 100,
                    output_tokens: 10,
                },
                ..ModelReply::default()
            })
        }))
    }

    /// The requests a script was sent, in order (none for a replay file, which keeps none).
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests
            .as_ref()
            .and_then(|kept| kept.lock().ok().map(|kept| kept.clone()))
            .unwrap_or_default()
    }

    /// The `n`th request a script was sent, from 0.
    pub fn request(&self, n: usize) -> Option<ModelRequest> {
        self.requests
            .as_ref()
            .and_then(|kept| kept.lock().ok()?.get(n).cloned())
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
            requests: None,
        })
    }

    /// Starts again from the first line.
    pub fn reset(&self) {
        self.cursor.store(0, Ordering::SeqCst);
    }

    /// A new replay model over the same lines, starting from the first one; cheap (shares
    /// the parsed lines). A script's copy keeps its own requests.
    pub fn restarted(&self) -> Self {
        Self {
            entries: Arc::clone(&self.entries),
            source: Arc::clone(&self.source),
            cursor: AtomicUsize::new(0),
            requests: self.requests.as_ref().map(|_| Mutex::new(Vec::new())),
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
            outcome: Outcome::Error(ModelError::Transport(message)),
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

    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        if let Some(kept) = &self.requests
            && let Ok(mut kept) = kept.lock()
        {
            kept.push(request.clone());
        }
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
            Outcome::Error(error) => Err(error.clone()),
        }
    }
}

impl std::str::FromStr for ReplayModel {
    type Err = ReplayError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text, "<string>")
    }
}
