//! The trace of a run: typed records, the events emitted as they happen, and the run report.

mod event;
pub(crate) mod recorder;
mod report;
pub mod spans;
mod verification;

pub use event::{NullSink, TraceEvent, TraceSink};
pub use recorder::Recorder;
pub use report::{
    AttemptRecord, CorrectionRecord, ModelCallRecord, RepairRecord, RunReport, StepOutcome,
    StepRecord, StopReason, UsageTotals,
};
pub use verification::{CheckedComparison, VerificationRecord};
