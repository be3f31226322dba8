//! `--transcript FILE`: one JSON object a line per model call, with the exact request and reply.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use corrigible::trace::{TraceEvent, TraceSink};
use corrigible::{ModelReply, ModelRequest};
use serde_json::json;

/// Appends model exchanges to a file.
pub struct Transcript {
    file: Mutex<File>,
}

impl Transcript {
    /// Opens `path` for appending, creating it if needed.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self {
            file: Mutex::new(file),
        })
    }
}

impl TraceSink for Transcript {
    fn event(&self, _event: &TraceEvent) {}

    fn exchange(&self, request: &ModelRequest, reply: &ModelReply) {
        let line = json!({
            "stage": request.stage,
            "request": {"messages": request.messages, "tools": request.tools},
            "reply": reply,
        });
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = writeln!(file, "{line}") {
            tracing::warn!(error = %e, "could not write the transcript");
        }
    }
}

/// Sends every event to several sinks.
pub struct Fanout(pub Vec<std::sync::Arc<dyn TraceSink>>);

impl TraceSink for Fanout {
    fn event(&self, event: &TraceEvent) {
        for sink in &self.0 {
            sink.event(event);
        }
    }

    fn exchange(&self, request: &ModelRequest, reply: &ModelReply) {
        for sink in &self.0 {
            sink.exchange(request, reply);
        }
    }
}
