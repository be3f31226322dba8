//! The BFCL v4 subset (simple, multiple, parallel, irrelevance): tasks, schema-only tools and
//! the AST checker.
//!
//! Functions become [`RecordingTool`]s: declared with their schema mapped to JSON Schema
//! ([`schema`]), validated by the engine, never executed. The graded calls are the run's
//! executed actions, exact duplicates collapsed, checked by [`checker`].

pub mod checker;
mod data;
pub mod schema;
mod tool;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use corrigible::trace::StepOutcome;
use corrigible::{RunReport, ToolRegistry};
use serde::Deserialize;
use serde_json::{Map, Value};

pub use checker::{Call, CheckError, check};
pub use tool::RecordingTool;

use crate::error::BenchError;
use crate::suite::{Grade, Task, TaskKind};

/// A BFCL category.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BfclCategory {
    /// One function offered, one call expected.
    Simple,
    /// Several functions offered, one call of the right one expected.
    Multiple,
    /// Several calls expected, in any order.
    Parallel,
    /// No offered function fits: no call expected.
    Irrelevance,
}

impl BfclCategory {
    /// All four, in suite order.
    pub const ALL: [BfclCategory; 4] = [
        BfclCategory::Simple,
        BfclCategory::Multiple,
        BfclCategory::Parallel,
        BfclCategory::Irrelevance,
    ];

    /// The category's name.
    pub fn as_str(self) -> &'static str {
        match self {
            BfclCategory::Simple => "simple",
            BfclCategory::Multiple => "multiple",
            BfclCategory::Parallel => "parallel",
            BfclCategory::Irrelevance => "irrelevance",
        }
    }
}

impl fmt::Display for BfclCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for BfclCategory {
    type Err = BenchError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BfclCategory::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| {
                BenchError::Usage(format!(
                    "unknown BFCL category `{s}`: expected simple, multiple, parallel or irrelevance"
                ))
            })
    }
}

/// A function as BFCL declares it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct FunctionDef {
    /// Its name (may contain dots).
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// Its parameters in BFCL's JSON-Schema-like dialect.
    pub parameters: Value,
}

#[derive(Deserialize)]
struct Row {
    id: String,
    question: String,
    functions: Vec<FunctionDef>,
    #[serde(default)]
    answer: Vec<Map<String, Value>>,
}

/// A BFCL task: its category, functions and expected calls.
#[derive(Debug, Clone)]
pub struct BfclTask {
    /// The category, which decides how many calls are expected.
    pub category: BfclCategory,
    /// The offered functions.
    pub functions: Vec<FunctionDef>,
    /// The expected calls: `{name: {param: [allowed values]}}`; empty for irrelevance.
    pub answer: Vec<Map<String, Value>>,
}

impl BfclTask {
    /// The schema-only tools of this task.
    pub fn registry(&self) -> Result<ToolRegistry, String> {
        let mut registry = ToolRegistry::new();
        for function in &self.functions {
            registry
                .register(Arc::new(RecordingTool::new(function)))
                .map_err(|e| e.to_string())?;
        }
        Ok(registry)
    }

    /// Grades a run: the executed calls, exact duplicates collapsed, against the answer.
    pub fn grade(&self, report: &RunReport) -> Grade {
        let calls = executed_calls(report);
        match check(self.category, &self.functions, &self.answer, &calls) {
            Ok(()) => Grade::pass(),
            Err(e) => Grade::fail(e.to_string()),
        }
    }
}

/// The run's successfully executed actions as calls, in order, exact duplicates collapsed.
pub fn executed_calls(report: &RunReport) -> Vec<Call> {
    let mut calls: Vec<Call> = Vec::new();
    for step in &report.steps {
        if step.outcome != StepOutcome::Ok {
            continue;
        }
        let call = Call {
            name: step.tool.clone(),
            arguments: step.input.as_object().cloned().unwrap_or_default(),
        };
        if !calls.contains(&call) {
            calls.push(call);
        }
    }
    calls
}

/// The embedded tasks of `category`.
pub fn load(category: BfclCategory) -> Result<Vec<Task>, BenchError> {
    parse(category, data::text(category))
}

/// Parses BFCL rows (one JSON object a line) into tasks.
pub fn parse(category: BfclCategory, text: &str) -> Result<Vec<Task>, BenchError> {
    let mut tasks = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let row: Row = serde_json::from_str(line).map_err(|e| BenchError::Suite {
            suite: format!("bfcl:{category}"),
            line: i + 1,
            message: e.to_string(),
        })?;
        let expected = row.answer.len() as u32;
        tasks.push(Task {
            id: row.id,
            prompt: row.question,
            // One call per step under the json protocol: the expected calls, plus one spare.
            max_actions: expected + 1,
            kind: TaskKind::Bfcl(BfclTask {
                category,
                functions: row.functions,
                answer: row.answer,
            }),
        });
    }
    Ok(tasks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_row_loads_and_registers() {
        for category in BfclCategory::ALL {
            let tasks = load(category).unwrap();
            assert_eq!(tasks.len(), 200, "{category}");
            for task in &tasks {
                let TaskKind::Bfcl(bfcl) = &task.kind else {
                    panic!("not a BFCL task")
                };
                bfcl.registry()
                    .unwrap_or_else(|e| panic!("{}: {e}", task.id));
                if category == BfclCategory::Irrelevance {
                    assert!(bfcl.answer.is_empty());
                } else {
                    assert!(!bfcl.answer.is_empty(), "{}", task.id);
                }
            }
        }
    }
}
