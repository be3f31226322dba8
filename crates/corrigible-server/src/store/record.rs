//! The values the store keeps: runs, their summaries and their events.

use std::time::{SystemTime, UNIX_EPOCH};

use corrigible::RunReport;
use serde::{Deserialize, Serialize};

/// The current time in unix milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Where a run is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Started and not ended yet.
    Running,
    /// Ended with a report (satisfied or not).
    Finished,
    /// Ended with an infrastructure error (e.g. the model's transport failed).
    Failed,
    /// Cut short by a shutdown or a crash.
    Interrupted,
}

impl RunStatus {
    /// The snake_case name stored and sent as JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Finished => "finished",
            RunStatus::Failed => "failed",
            RunStatus::Interrupted => "interrupted",
        }
    }

    /// Parses a stored status.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "running" => Some(RunStatus::Running),
            "finished" => Some(RunStatus::Finished),
            "failed" => Some(RunStatus::Failed),
            "interrupted" => Some(RunStatus::Interrupted),
            _ => None,
        }
    }
}

/// A run that is starting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRun {
    /// The run's id (UUIDv7: ids sort by creation time).
    pub id: String,
    /// When it started, unix milliseconds.
    pub created_at: i64,
    /// The user's request.
    pub prompt: String,
    /// The model's name.
    pub model: String,
    /// The decision protocol (`json` or `native`).
    pub protocol: String,
    /// The instance executing it.
    pub owner: String,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEnd {
    /// With a report.
    Finished(Box<RunReport>),
    /// With an infrastructure error.
    Failed {
        /// `transport`, `model` or `internal`.
        kind: String,
        /// What failed.
        error: String,
    },
    /// Cut short by a shutdown or a crash.
    Interrupted,
}

/// One row of the run list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// The run's id: `run_id` in JSON, as in the run report (`id` is still read).
    #[serde(rename = "run_id", alias = "id")]
    pub id: String,
    /// Where the run is in its life.
    pub status: RunStatus,
    /// When it started, unix milliseconds.
    pub created_at: i64,
    /// When it ended, unix milliseconds.
    pub finished_at: Option<i64>,
    /// The user's request.
    pub prompt: String,
    /// The model's name.
    pub model: String,
    /// The decision protocol.
    pub protocol: String,
    /// Whether the final decision was satisfied (`null` until finished).
    pub satisfied: Option<bool>,
    /// Why the run stopped (`null` until finished).
    pub stop_reason: Option<String>,
    /// Corrections sent back to the model.
    pub corrections: u32,
    /// Tool executions.
    pub tool_calls: u32,
    /// Model calls.
    pub model_calls: u32,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Wall time of the run.
    pub duration_ms: Option<f64>,
    /// The kind of failure (`transport`, …) when the run failed.
    pub error_kind: Option<String>,
    /// The failure's message when the run failed.
    pub error: Option<String>,
}

/// A run with its report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The summary.
    #[serde(flatten)]
    pub summary: RunSummary,
    /// The run report, once finished.
    pub report: Option<RunReport>,
}

/// One trace event as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    /// The run it belongs to.
    pub run_id: String,
    /// Its position in the run, from 1.
    pub seq: u64,
    /// The event's `type` (`model_call`, `rejection`, …).
    pub kind: String,
    /// When it happened, unix milliseconds.
    pub at: i64,
    /// The trace event as JSON.
    pub data: String,
}
