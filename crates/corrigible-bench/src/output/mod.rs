//! Rendering a [`BenchReport`](crate::BenchReport): a terminal table, JSON and an SVG chart.

mod chart;
mod json;
mod table;

pub use chart::chart_svg;
pub use json::to_json;
pub use table::table;

use std::path::Path;

use crate::error::BenchError;
use crate::metrics::BenchReport;

/// Writes `table.txt`, `report.json` and `chart.svg` into `dir` (created if missing).
pub fn write_all(report: &BenchReport, dir: &Path) -> Result<(), BenchError> {
    let write = |name: &str, contents: String| {
        let path = dir.join(name);
        std::fs::write(&path, contents).map_err(|source| BenchError::Write {
            path: path.display().to_string(),
            source,
        })
    };
    std::fs::create_dir_all(dir).map_err(|source| BenchError::Write {
        path: dir.display().to_string(),
        source,
    })?;
    write("table.txt", table(report))?;
    write("report.json", to_json(report)?)?;
    write("chart.svg", chart_svg(report)?)?;
    Ok(())
}
