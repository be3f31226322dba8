//! The SVG chart: success rate per policy, one bar group per constraint mode.
//!
//! Drawn with plotters' SVG backend and no font feature: text is emitted as SVG `<text>`
//! elements that the viewer renders, so no system font is needed.

use plotters::prelude::*;

use crate::error::BenchError;
use crate::metrics::BenchReport;
use crate::policy::PolicyKind;

const COLORS: [RGBColor; 3] = [
    RGBColor(0x9e, 0x9e, 0x9e),
    RGBColor(0x42, 0x85, 0xf4),
    RGBColor(0x0f, 0x9d, 0x58),
];

/// Grouped bars: for each mode (or `-`), one bar per policy with its success rate in %.
pub fn chart_svg(report: &BenchReport) -> Result<String, BenchError> {
    let mut modes: Vec<String> = Vec::new();
    let mut policies: Vec<PolicyKind> = Vec::new();
    for c in &report.columns {
        if !modes.contains(&c.mode) {
            modes.push(c.mode.clone());
        }
        if !policies.contains(&c.policy) {
            policies.push(c.policy);
        }
    }
    let groups = modes.len().max(1);
    let per_group = policies.len().max(1);
    let width = (160 + groups * (per_group * 60 + 40)).max(480) as u32;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(chart_error)?;
        let title = format!(
            "Success rate by policy: {} on {}{}",
            report.model,
            report.suite,
            report
                .faults
                .map(|f| format!(" (faults {:.2})", f.rate))
                .unwrap_or_default()
        );
        let slots = (groups * (per_group + 1)) as f64;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(0.0..slots, 0.0..100.0)
            .map_err(chart_error)?;
        let mode_names = modes.clone();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .y_desc("success %")
            .x_labels(groups * (per_group + 1))
            .x_label_formatter(&|x| {
                let slot = x.floor() as usize;
                let group = slot / (per_group + 1);
                let middle = per_group / 2;
                if slot % (per_group + 1) == middle {
                    match mode_names.get(group).map(String::as_str) {
                        Some("-") | None => String::new(),
                        Some(mode) => format!("constrain {mode}"),
                    }
                } else {
                    String::new()
                }
            })
            .draw()
            .map_err(chart_error)?;
        for (p, policy) in policies.iter().enumerate() {
            let color = COLORS[p % COLORS.len()];
            let bars: Vec<Rectangle<(f64, f64)>> = report
                .columns
                .iter()
                .filter(|c| c.policy == *policy)
                .filter_map(|c| {
                    let g = modes.iter().position(|m| *m == c.mode)?;
                    let x = (g * (per_group + 1) + p) as f64;
                    Some(Rectangle::new(
                        [(x + 0.1, 0.0), (x + 0.9, 100.0 * c.success_rate)],
                        color.filled(),
                    ))
                })
                .collect();
            chart
                .draw_series(bars)
                .map_err(chart_error)?
                .label(policy.as_str())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled())
                });
            let labels: Vec<Text<(f64, f64), String>> = report
                .columns
                .iter()
                .filter(|c| c.policy == *policy)
                .filter_map(|c| {
                    let g = modes.iter().position(|m| *m == c.mode)?;
                    let x = (g * (per_group + 1) + p) as f64;
                    Some(Text::new(
                        format!("{:.0}%", 100.0 * c.success_rate),
                        (x + 0.2, (100.0 * c.success_rate + 6.0).min(99.0)),
                        ("sans-serif", 12).into_font(),
                    ))
                })
                .collect();
            chart.draw_series(labels).map_err(chart_error)?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(chart_error)?;
        root.present().map_err(chart_error)?;
    }
    Ok(svg)
}

fn chart_error<E: std::fmt::Display>(e: E) -> BenchError {
    BenchError::Chart(e.to_string())
}
