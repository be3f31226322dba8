//! The server's trace sink: each event goes to the metrics, then to the store writer, which
//! shows it to the run's live subscribers once it is stored.

use std::sync::{Arc, Mutex};

use corrigible::{TraceEvent, TraceSink};

use super::live::LiveRun;
use super::writer::{QueuedEvent, StoreWriter};
use crate::metrics::Metrics;
use crate::store::{StoredEvent, now_ms};

/// Sends one run's events to the store, its live subscribers and the metrics.
pub(crate) struct ServerSink {
    run_id: String,
    /// The last sequence number; held while an event is queued, so events queue in order.
    seq: Mutex<u64>,
    writer: StoreWriter,
    live: Arc<LiveRun>,
    metrics: Metrics,
}

impl ServerSink {
    pub(crate) fn new(
        run_id: &str,
        writer: StoreWriter,
        live: Arc<LiveRun>,
        metrics: Metrics,
    ) -> Self {
        Self {
            run_id: run_id.to_string(),
            seq: Mutex::new(0),
            writer,
            live,
            metrics,
        }
    }
}

/// The `type` of a trace event, as in its JSON.
pub(crate) fn event_kind(event: &TraceEvent) -> &'static str {
    match event {
        TraceEvent::RunStarted { .. } => "run_started",
        TraceEvent::Messages { .. } => "messages",
        TraceEvent::ModelCall { .. } => "model_call",
        TraceEvent::Decision { .. } => "decision",
        TraceEvent::Repair { .. } => "repair",
        TraceEvent::Rejection { .. } => "rejection",
        TraceEvent::Corrected { .. } => "corrected",
        TraceEvent::ToolCall { .. } => "tool_call",
        TraceEvent::Verification { .. } => "verification",
        TraceEvent::Breaker { .. } => "breaker",
        TraceEvent::RunFinished { .. } => "run_finished",
        TraceEvent::RunFailed { .. } => "run_failed",
    }
}

impl TraceSink for ServerSink {
    fn event(&self, event: &TraceEvent) {
        let kind = event_kind(event);
        let data = match serde_json::to_string(event) {
            Ok(data) => data,
            Err(error) => {
                tracing::error!(%error, kind, "trace event is not serializable");
                return;
            }
        };
        self.metrics.event(event);
        let mut seq = self.seq.lock().unwrap_or_else(|p| p.into_inner());
        *seq += 1;
        self.writer.event(QueuedEvent {
            stored: StoredEvent {
                run_id: self.run_id.clone(),
                seq: *seq,
                kind: kind.to_string(),
                at: now_ms(),
                data,
            },
            kind,
            live: self.live.clone(),
        });
    }
}
