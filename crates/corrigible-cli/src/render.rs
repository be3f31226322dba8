//! The human-readable trace: printed live, event by event, then the totals.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;

use corrigible::trace::{RunReport, StepOutcome, TraceEvent, TraceSink};

/// ANSI styling, enabled only when stdout is a terminal.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    enabled: bool,
}

impl Style {
    /// Colour when stdout is a terminal and NO_COLOR is unset.
    pub fn detect() -> Self {
        Self {
            enabled: std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
        }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.enabled {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    fn bold(&self, t: &str) -> String {
        self.paint("1", t)
    }
    fn dim(&self, t: &str) -> String {
        self.paint("2", t)
    }
    fn red(&self, t: &str) -> String {
        self.paint("31", t)
    }
    fn green(&self, t: &str) -> String {
        self.paint("32", t)
    }
    fn yellow(&self, t: &str) -> String {
        self.paint("33", t)
    }
    fn cyan(&self, t: &str) -> String {
        self.paint("36", t)
    }
}

/// Prints each trace event as it happens.
pub struct LiveTrace {
    style: Style,
    out: Mutex<std::io::Stdout>,
}

impl LiveTrace {
    /// A printer on stdout.
    pub fn new(style: Style) -> Self {
        Self {
            style,
            out: Mutex::new(std::io::stdout()),
        }
    }

    fn line(&self, text: String) {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }
}

fn shorten(text: &str, max: usize) -> String {
    let one_line = text.replace('\n', " ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let cut: String = one_line.chars().take(max).collect();
        format!("{cut}…")
    }
}

impl TraceSink for LiveTrace {
    fn event(&self, event: &TraceEvent) {
        let s = self.style;
        match event {
            TraceEvent::RunStarted {
                run_id,
                model,
                protocol,
                protocol_reason,
                ..
            } => self.line(format!(
                "{} {}  {} {}  {} {:?}{}",
                s.bold("run"),
                run_id,
                s.dim("model"),
                model,
                s.dim("protocol"),
                protocol,
                match protocol_reason {
                    Some(reason @ corrigible::ProtocolReason::Probe { .. }) =>
                        s.dim(&format!(" ({reason})")),
                    _ => String::new(),
                }
            )),
            TraceEvent::ModelCall { record } => {
                let reused = record
                    .prompt_tokens_reused
                    .map(|r| format!(" ({r} from the prompt cache)"))
                    .unwrap_or_default();
                let retries = if record.transport_retries > 0 {
                    format!(", {} transport retries", record.transport_retries)
                } else {
                    String::new()
                };
                let decoded = match &record.decoding {
                    Some(d) if record.stage.is_correction() => format!(", decoded {d}"),
                    _ => String::new(),
                };
                let identical = if record.identical_retry {
                    s.red("  identical to the rejected reply")
                } else {
                    String::new()
                };
                self.line(format!(
                    "{:<24} {}{identical}",
                    s.cyan(&record.stage.to_string()),
                    s.dim(&format!(
                        "{:.0} ms, {} tokens in{reused} → {} out{retries}{decoded}",
                        record.latency_ms, record.input_tokens, record.output_tokens
                    ))
                ));
                if let Some(reasoning) = &record.reasoning {
                    self.line(thought_line(s, reasoning));
                    for fix in &reasoning.recalculated {
                        self.line(format!("    {} {fix}", s.yellow("= recalculated")));
                    }
                }
            }
            TraceEvent::Repair { record } => self.line(format!(
                "  {} {}",
                s.yellow("~ repaired"),
                record.kind.as_str()
            )),
            TraceEvent::Rejection { record, .. } => {
                let tool = record
                    .tool
                    .as_deref()
                    .map(|t| format!(" [{t}]"))
                    .unwrap_or_default();
                let category = match &record.rule {
                    Some(rule) if rule != record.category.as_str() => {
                        format!("{}: {rule}", record.category)
                    }
                    _ => record.category.to_string(),
                };
                self.line(format!(
                    "  {} {}{tool}: {}",
                    s.red("✗ rejected"),
                    s.bold(&category),
                    shorten(&record.error, 160)
                ))
            }
            TraceEvent::Corrected { .. } => {
                self.line(format!("  {}", s.green("✓ next reply accepted")))
            }
            TraceEvent::Decision { decision, .. } => {
                if decision["state"] == "final" {
                    let satisfied = decision["satisfied"].as_bool().unwrap_or(false);
                    let label = if satisfied {
                        s.green("■ final (satisfied)")
                    } else {
                        s.yellow("■ final (not satisfied)")
                    };
                    self.line(format!(
                        "  {label}: {}",
                        shorten(decision["final_summary"].as_str().unwrap_or(""), 200)
                    ));
                } else {
                    self.line(format!(
                        "  {} {} {}",
                        s.bold("→ action"),
                        decision["tool"].as_str().unwrap_or("?"),
                        shorten(&decision["tool_input"].to_string(), 120)
                    ));
                }
            }
            TraceEvent::ToolCall { record } => {
                let result = match record.outcome {
                    StepOutcome::Ok => s.green(&format!(
                        "ok {}",
                        shorten(
                            &record
                                .output
                                .as_ref()
                                .map(|o| o.to_string())
                                .unwrap_or_default(),
                            160
                        )
                    )),
                    other => s.red(&format!(
                        "{} {}",
                        other.as_str(),
                        shorten(record.error.as_deref().unwrap_or(""), 160)
                    )),
                };
                let same = if record.same_result {
                    ", the same result as before"
                } else {
                    ""
                };
                let head = format!(
                    "tool {} (step {}, {} attempt(s), {:.1} ms{same}):",
                    record.tool, record.step, record.attempts, record.latency_ms
                );
                self.line(format!("  {} {result}", s.dim(&head)))
            }
            TraceEvent::Verification { record } => {
                let head = format!(
                    "verified by {} ({:.0} ms, {} tokens in → {} out):",
                    record.model, record.latency_ms, record.input_tokens, record.output_tokens
                );
                let verdict = match (&record.error, record.objected) {
                    (Some(error), _) => s.yellow(&format!("no report, accepted ({error})")),
                    (None, true) => s.red("objection proven, sent back"),
                    (None, false) => s.green("nothing proven wrong, accepted"),
                };
                self.line(format!(
                    "  {} {} {verdict}",
                    s.bold("? check"),
                    s.dim(&head)
                ));
                if let Some(reason) = &record.reason {
                    self.line(format!(
                        "    {} {}",
                        s.dim("verifier:"),
                        shorten(reason, 200)
                    ));
                }
                for c in &record.comparisons {
                    let ruling = match (&c.objection, &c.proven_in, c.dropped) {
                        (Some(kind), Some(source), _) => {
                            s.red(&format!("{}: {}", kind.as_str(), source_name(source)))
                        }
                        (_, _, Some(reason)) => s.dim(reason.as_str()),
                        _ => String::new(),
                    };
                    self.line(format!(
                        "    {} `{}` beside `{}` ({})  {ruling}",
                        s.dim("compared"),
                        shorten(&c.answer_says, 40),
                        shorten(&c.quote, 80),
                        shorten(&c.source_says, 40)
                    ));
                }
            }
            TraceEvent::Breaker { transition } => self.line(format!(
                "  {} {}: {:?} → {:?} after {} failure(s)",
                s.yellow("⚡ breaker"),
                transition.tool,
                transition.from,
                transition.to,
                transition.failures
            )),
            TraceEvent::Messages { .. }
            | TraceEvent::RunFinished { .. }
            | TraceEvent::RunFailed { .. } => {}
        }
    }
}

/// Where a proven objection's quote was found, for a trace line.
fn source_name(source: &corrigible::verify::Source) -> String {
    match source {
        corrigible::verify::Source::Request => "request".into(),
        corrigible::verify::Source::ToolResult { tool } => format!("result of {tool}"),
        corrigible::verify::Source::Nowhere => "no source".into(),
    }
}

/// A model call's reasoning, on one line: `… thought (N tokens, cut, set aside): text`.
fn thought_line(s: Style, reasoning: &corrigible::Reasoning) -> String {
    let tokens = reasoning
        .tokens
        .map(|n| format!("{n} tokens"))
        .unwrap_or_else(|| "reasoning".to_string());
    let cut = if reasoning.truncated { ", cut" } else { "" };
    let aside = if reasoning.set_aside {
        ", set aside"
    } else {
        ""
    };
    format!(
        "  {} {}",
        s.dim(&format!("… thought ({tokens}{cut}{aside}):")),
        shorten(&reasoning.text, 400)
    )
}

/// The closing summary of a run.
pub fn summary(report: &RunReport, style: Style) -> String {
    let s = style;
    let verdict = if report.satisfied {
        s.green("satisfied")
    } else {
        s.yellow("not satisfied")
    };
    let mut out = format!(
        "\n{verdict}  {} {}",
        s.dim("stop:"),
        s.bold(report.stop_reason.as_str())
    );
    if let Some(missing) = &report.missing {
        out.push_str(&format!("  {} {missing}", s.dim("missing:")));
    }
    if let Some(summary) = &report.final_summary {
        out.push_str(&format!("\n{} {summary}", s.bold("answer:")));
    }
    let u = &report.usage;
    let accepted = report.corrections.iter().filter(|c| c.corrected).count();
    out.push_str(&format!(
        "\n{}",
        s.dim(&format!(
            "model calls {}  tokens {} in / {} out{}  actions {} (tool attempts {}, retries {})  corrections {} ({} followed by an accepted reply)  repairs {}  {:.0} ms",
            u.model_calls,
            u.input_tokens,
            u.output_tokens,
            if u.reasoning_tokens > 0 {
                format!(" ({} thinking)", u.reasoning_tokens)
            } else {
                String::new()
            },
            report.steps.len(),
            u.tool_calls,
            u.tool_retries,
            u.corrections,
            accepted,
            report.repairs.len(),
            report.duration_ms
        ))
    ));
    out
}
