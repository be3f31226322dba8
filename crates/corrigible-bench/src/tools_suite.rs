//! The built-in tools suite: calculator, time and weather tasks with exact expected results.
//!
//! Tasks live in `data/tools.jsonl` (in this crate), one JSON object a line:
//! `{"id", "difficulty", "prompt", "answer": [accepted results…], "tool", "args": [zone or
//! city…], "calls"}`. The weather tool is served by a local fake Open-Meteo server started
//! by the bench, and the time tool's clock is fixed at [`FIXED_NOW`], so every expected
//! result is exact.

use chrono::{DateTime, Utc};
use corrigible::evidence::numbers::numbers_in;
use corrigible::trace::StepOutcome;
use corrigible::{RunReport, StopReason, ToolRegistry};
use corrigible_tools::fake::find_city;
use corrigible_tools::{Calculator, TimeTool, WeatherTool};
use serde::Deserialize;
use serde_json::Value;

use crate::error::BenchError;
use crate::suite::{Grade, Task, TaskKind};

/// The embedded suite file.
pub const BUILTIN: &str = include_str!("../data/tools.jsonl");

/// The held-out suite: tasks of other kinds, never tuned on.
pub const HELDOUT: &str = include_str!("../data/tools-heldout.jsonl");

/// The time tool's "now" during the bench (the fake weather server's observation time too).
pub const FIXED_NOW: &str = "2026-01-15T12:00:00Z";

/// A tools task's expectations.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ToolsTask {
    /// `easy`, `medium` or `hard`.
    #[serde(default)]
    pub difficulty: String,
    /// Accepted results: numbers (compared numerically) or strings (found in the answer).
    pub answer: Vec<Value>,
    /// The tool that must be called (`time`, `weather`); checked for those two.
    #[serde(default)]
    pub tool: Option<String>,
    /// The zones or cities the tool must have been called with.
    #[serde(default)]
    pub args: Vec<String>,
    /// Tool calls the task needs.
    #[serde(default = "one")]
    pub calls: u32,
    /// Whether the right final answer is satisfied; `false` for a request that cannot be
    /// fulfilled (an unknown place), which passes with an honest unsatisfied answer.
    #[serde(default = "yes")]
    pub satisfied: bool,
    /// Whether no tool serves the request: a question answered from knowledge, or a request
    /// that nothing here can carry out. Any tool call then fails the task.
    #[serde(default)]
    pub no_tool: bool,
}

fn one() -> u32 {
    1
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
struct Row {
    id: String,
    prompt: String,
    #[serde(flatten)]
    task: ToolsTask,
}

/// Parses a tools suite file.
pub fn parse(label: &str, text: &str) -> Result<Vec<Task>, BenchError> {
    let mut tasks = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let error = |message: String| BenchError::Suite {
            suite: label.to_string(),
            line: i + 1,
            message,
        };
        let row: Row = serde_json::from_str(line).map_err(|e| error(e.to_string()))?;
        if row.task.answer.is_empty() && row.task.satisfied {
            return Err(error("`answer` lists no accepted result".into()));
        }
        tasks.push(Task {
            id: row.id,
            prompt: row.prompt,
            max_actions: row.task.calls + 1,
            kind: TaskKind::Tools(row.task),
        });
    }
    Ok(tasks)
}

/// The running tools: the fake weather server (kept alive here) and the registry.
pub struct ToolsEnv {
    #[cfg(feature = "fixtures")]
    _server: corrigible_tools::fake::FakeOpenMeteo,
    /// Calculator, the fixed-clock time tool and the weather tool on the fake server.
    pub registry: ToolRegistry,
}

impl ToolsEnv {
    /// Starts the fake server and builds the registry.
    #[cfg(feature = "fixtures")]
    pub fn start() -> Result<Self, BenchError> {
        use corrigible_tools::fake::{FakeOpenMeteo, FakeOptions};
        let server =
            FakeOpenMeteo::start(FakeOptions::default()).map_err(BenchError::FakeServer)?;
        let weather = WeatherTool::new(server.weather_config())
            .map_err(|e| BenchError::FakeServer(std::io::Error::other(e.to_string())))?;
        Ok(Self {
            _server: server,
            registry: registry(weather)?,
        })
    }

    /// Without the `fixtures` feature there is no fake weather server to start.
    #[cfg(not(feature = "fixtures"))]
    pub fn start() -> Result<Self, BenchError> {
        Err(BenchError::NoFixtures)
    }
}

/// The calculator, the time tool at the suite's fixed clock, and `weather`.
#[cfg_attr(not(feature = "fixtures"), allow(dead_code))]
fn registry(weather: WeatherTool) -> Result<ToolRegistry, BenchError> {
    let now: DateTime<Utc> = FIXED_NOW
        .parse()
        .map_err(|e| BenchError::Usage(format!("bad fixed clock: {e}")))?;
    let mut registry = ToolRegistry::new();
    let register = |r: Result<(), corrigible::tool::RegistryError>| {
        r.map_err(|e| BenchError::Usage(e.to_string()))
    };
    register(registry.register_typed(Calculator))?;
    register(registry.register_typed(TimeTool::fixed(now)))?;
    register(registry.register_typed(weather))?;
    Ok(registry)
}

impl ToolsTask {
    /// Passes when the run ends with an accepted, satisfied final answer containing an
    /// accepted result (or, for a request that cannot be fulfilled, an unsatisfied one), with
    /// no tool call where no tool serves the request, and (for `time` and `weather`) the tool
    /// answered for each expected zone or city.
    pub fn grade(&self, report: &RunReport) -> Grade {
        if report.stop_reason != StopReason::Final {
            return Grade::fail(format!("no final answer ({})", report.stop_reason.as_str()));
        }
        if self.no_tool && !report.steps.is_empty() {
            let tools: Vec<&str> = report.steps.iter().map(|s| s.tool.as_str()).collect();
            return Grade::fail(format!(
                "no tool serves this request, but it called {}",
                tools.join(", ")
            ));
        }
        if !self.satisfied {
            return if report.satisfied {
                Grade::fail("the request cannot be fulfilled, but the answer says it was")
            } else {
                Grade::pass()
            };
        }
        if !report.satisfied {
            return Grade::fail("the final answer is unsatisfied");
        }
        let summary = report.final_summary.as_deref().unwrap_or("");
        if !self.answer.iter().any(|a| answer_contains(summary, a)) {
            return Grade::fail(format!("the answer lacks {}", render(&self.answer)));
        }
        if let Some(tool) = self
            .tool
            .as_deref()
            .filter(|t| matches!(*t, "time" | "weather"))
        {
            for arg in &self.args {
                if !report.steps.iter().any(|s| {
                    s.outcome == StepOutcome::Ok
                        && s.tool == tool
                        && answered_for(tool, s.output.as_ref(), arg)
                }) {
                    return Grade::fail(format!("{tool} was not called for {arg}"));
                }
            }
        }
        Grade::pass()
    }
}

fn render(answers: &[Value]) -> String {
    answers
        .iter()
        .map(|a| a.to_string())
        .collect::<Vec<_>>()
        .join(" | ")
}

/// Whether a tool's output is for `arg`: the time tool's canonical zone, or the weather
/// tool's city (accents and case ignored).
fn answered_for(tool: &str, output: Option<&Value>, arg: &str) -> bool {
    let Some(output) = output else { return false };
    match tool {
        "time" => output
            .get("timezone")
            .and_then(Value::as_str)
            .is_some_and(|z| z.eq_ignore_ascii_case(arg)),
        "weather" => output.get("city").and_then(Value::as_str).is_some_and(|c| {
            match (find_city(c), find_city(arg)) {
                (Some(a), Some(b)) => a.name == b.name,
                _ => c.eq_ignore_ascii_case(arg),
            }
        }),
        _ => false,
    }
}

/// Whether `text` states `expected`: a number appears with that value (`391`, `391.0`,
/// `1,024`), or a string appears, case ignored, not glued to a preceding digit.
pub fn answer_contains(text: &str, expected: &Value) -> bool {
    match expected {
        Value::Number(n) => {
            let Some(want) = n.as_f64() else { return false };
            numbers_in(text)
                .into_iter()
                .any(|got| (got - want).abs() <= 1e-6 * want.abs().max(1.0))
        }
        Value::String(s) => {
            let hay = text.to_lowercase();
            let needle = s.to_lowercase();
            if needle.is_empty() {
                return false;
            }
            hay.match_indices(&needle).any(|(i, _)| {
                !hay[..i]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_ascii_digit())
            })
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_are_normalised() {
        assert!(answer_contains("The result is 391.0", &json!(391)));
        assert!(answer_contains(
            "about 6.3999999999999995 degrees",
            &json!(6.4)
        ));
        assert!(!answer_contains("3910", &json!(391)));
    }

    #[test]
    fn strings_do_not_match_inside_numbers() {
        assert!(answer_contains("It is 7:00 AM", &json!("7:00")));
        assert!(!answer_contains("It is 17:00", &json!("7:00")));
        assert!(answer_contains("It's 9 pm in Tokyo", &json!("9 PM")));
    }

    #[test]
    fn builtin_suite_loads_with_enough_tasks_of_each_tool() {
        let tasks = parse("tools.jsonl", BUILTIN).unwrap();
        assert!(tasks.len() >= 60);
        for tool in ["calculator", "time", "weather"] {
            let n = tasks
                .iter()
                .filter(
                    |t| matches!(&t.kind, TaskKind::Tools(k) if k.tool.as_deref() == Some(tool)),
                )
                .count();
            assert!(n >= 15, "{tool}: {n}");
        }
        for task in &tasks {
            let TaskKind::Tools(k) = &task.kind else {
                panic!()
            };
            if let Some("weather") = k.tool.as_deref() {
                for city in &k.args {
                    assert!(find_city(city).is_some(), "{}: {city}", task.id);
                }
            }
        }
    }
}
