//! A batch of writes: the endings stored with new runs and events in one transaction, and
//! their split into the rows each kind of ending updates.

use corrigible::RunReport;

use super::{RunEnd, StoreError};

/// How one run ended, to be stored with others by [`RunStore::write_batch`](super::RunStore::write_batch).
#[derive(Debug, Clone, PartialEq)]
pub struct Ending {
    /// The run.
    pub run_id: String,
    /// How it ended: finished or failed (an interruption is written by `end_run`).
    pub end: RunEnd,
    /// When, unix milliseconds.
    pub at: i64,
}

/// A finished run's row: its report, and the report as JSON.
pub(super) struct FinishedRow<'a> {
    pub(super) id: &'a str,
    pub(super) at: i64,
    pub(super) report: &'a RunReport,
    pub(super) json: String,
}

/// A failed run's row.
pub(super) struct FailedRow<'a> {
    pub(super) id: &'a str,
    pub(super) at: i64,
    pub(super) kind: &'a str,
    pub(super) error: &'a str,
}

/// Splits endings by kind, serializing each report; refuses an interruption, which counts
/// the run's stored events and so is not a plain row update.
pub(super) fn split(
    ends: &[Ending],
) -> Result<(Vec<FinishedRow<'_>>, Vec<FailedRow<'_>>), StoreError> {
    let mut finished = Vec::new();
    let mut failed = Vec::new();
    for ending in ends {
        match &ending.end {
            RunEnd::Finished(report) => finished.push(FinishedRow {
                id: &ending.run_id,
                at: ending.at,
                report,
                json: serde_json::to_string(report)
                    .map_err(|e| StoreError::Corrupt(format!("report: {e}")))?,
            }),
            RunEnd::Failed { kind, error } => failed.push(FailedRow {
                id: &ending.run_id,
                at: ending.at,
                kind,
                error,
            }),
            RunEnd::Interrupted => {
                return Err(StoreError::Unsupported(format!(
                    "the interruption of run {} in a batch of writes",
                    ending.run_id
                )));
            }
        }
    }
    Ok((finished, failed))
}
