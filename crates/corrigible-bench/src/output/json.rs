//! The report as pretty JSON.

use crate::error::BenchError;
use crate::metrics::BenchReport;

/// The report as pretty-printed JSON.
pub fn to_json(report: &BenchReport) -> Result<String, BenchError> {
    serde_json::to_string_pretty(report).map_err(|e| BenchError::Write {
        path: "report.json".into(),
        source: std::io::Error::other(e),
    })
}
