//! The server's trace sink: each event goes to the store writer, to the run's live
//! subscribers and to the metrics, as it happens.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use corrigible::{TraceEvent, TraceSink};

use super::live::{LiveEvent, LiveRun};
use super::writer::StoreWriter;
use crate::metrics::Metrics;
use crate::store::{StoredEvent, now_ms};

/// Sends one run's events to the store, its live subscribers and the metrics.
pub(crate) struct ServerSink {
    run_id: String,
    seq: AtomicU64,
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
            seq: AtomicU64::new(0),
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
        TraceEvent::ModelCall { .. } => "model_call",
        TraceEvent::Decision { .. } => "decision",
        TraceEvent::Repair { .. } => "repair",
        TraceEvent::Rejection { .. } => "rejection",
        TraceEvent::Corrected { .. } => "corrected",
        TraceEvent::ToolCall { .. } => "tool_call",
        TraceEvent::Breaker { .. } => "breaker",
        TraceEvent::RunFinished { .. } => "run_finished",
        TraceEvent::RunFailed { .. } => "run_failed",
    }
}

impl TraceSink for ServerSink {
    fn event(&self, event: &TraceEvent) {
        let seq = self.seq.fetch_add(1, Ordering::SeqCst) + 1;
        let kind = event_kind(event);
        let data = match serde_json::to_string(event) {
            Ok(data) => data,
            Err(error) => {
                tracing::error!(%error, kind, "trace event is not serializable");
                return;
            }
        };
        self.metrics.event(event);
        self.writer.event(StoredEvent {
            run_id: self.run_id.clone(),
            seq,
            kind: kind.to_string(),
            at: now_ms(),
            data: data.clone(),
        });
        self.live.publish(LiveEvent {
            seq,
            kind,
            data: data.into(),
        });
    }
}
