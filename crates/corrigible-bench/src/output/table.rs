//! The terminal table: one row per policy (× mode), then the breakdowns.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::metrics::BenchReport;

const HEADERS: [&str; 11] = [
    "policy",
    "mode",
    "success",
    "valid replies",
    "calls/task",
    "tokens in/task",
    "tokens out/task",
    "p50 ms",
    "p95 ms",
    "corrections",
    "repairs",
];

/// The report as a plain-text table followed by corrections, repairs, stop reasons and faults.
pub fn table(report: &BenchReport) -> String {
    let mut out = String::new();
    let faults = report
        .faults
        .map(|f| format!(", faults {:.2} seed {}", f.rate, f.seed))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "suite {}  model {}  protocol {:?}  {} task(s){faults}\n",
        report.suite, report.model, report.protocol, report.tasks
    );
    let rows: Vec<Vec<String>> = report
        .columns
        .iter()
        .map(|c| {
            vec![
                c.policy.to_string(),
                c.mode.clone(),
                format!("{}/{} {:.1}%", c.successes, c.tasks, 100.0 * c.success_rate),
                format!("{:.1}%", 100.0 * c.valid_reply_rate),
                format!("{:.2}", c.model_calls_per_task),
                format!("{:.0}", c.input_tokens_per_task),
                format!("{:.0}", c.output_tokens_per_task),
                format!("{:.0}", c.latency_p50_ms),
                format!("{:.0}", c.latency_p95_ms),
                c.corrections.values().sum::<u32>().to_string(),
                c.repairs.values().sum::<u32>().to_string(),
            ]
        })
        .collect();
    let mut widths: Vec<usize> = HEADERS.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let _ = writeln!(
        out,
        "{}",
        line(HEADERS.iter().map(|h| h.to_string()).collect())
    );
    let _ = writeln!(
        out,
        "{}",
        widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .join("  ")
    );
    for row in rows {
        let _ = writeln!(out, "{}", line(row));
    }
    out.push('\n');
    for c in &report.columns {
        let label = if c.mode == "-" {
            c.policy.to_string()
        } else {
            format!("{} [{}]", c.policy, c.mode)
        };
        let _ = writeln!(out, "{label}:");
        let _ = writeln!(out, "  corrections   {}", counts(&c.corrections));
        let _ = writeln!(out, "  repairs       {}", counts(&c.repairs));
        let _ = writeln!(out, "  identical retries {}", c.identical_retries);
        if c.recalculated > 0 {
            let _ = writeln!(out, "  recalculated in thoughts {}", c.recalculated);
        }
        let _ = writeln!(out, "  stop reasons  {}", counts(&c.stop_reasons));
        let _ = writeln!(out, "  unsatisfied   {}", counts(&c.unsatisfied));
        if let Some(f) = &c.faults {
            let injected: u32 = f.injected.values().sum();
            let recovered: u32 = f.recovered.values().sum();
            let cost: u32 = f.recovery_model_calls.values().sum();
            let _ = writeln!(
                out,
                "  faults        {injected} injected, {recovered} recovered ({cost} model call(s)); \
                 {}/{} hit run(s) still succeeded",
                f.runs_with_faults_succeeded, f.runs_with_faults
            );
            for (kind, n) in &f.injected {
                let r = f.recovered.get(kind).copied().unwrap_or(0);
                let calls = f.recovery_model_calls.get(kind).copied().unwrap_or(0);
                let _ = writeln!(
                    out,
                    "    {:<18} {n} injected, {r} recovered, {calls} call(s)",
                    kind.as_str()
                );
            }
        }
    }
    out
}

fn counts<K: std::fmt::Display>(map: &BTreeMap<K, u32>) -> String {
    if map.is_empty() {
        return "-".into();
    }
    map.iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}
