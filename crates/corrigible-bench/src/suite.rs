//! Suites and tasks: what is asked, with which tools, within which bounds, and how it is graded.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use corrigible::{RunReport, ToolRegistry};
use serde::Serialize;

use crate::bfcl::{self, BfclCategory, BfclTask};
use crate::error::BenchError;
use crate::gsm8k::{self, GsmTask};
use crate::tools_suite::{self, ToolsEnv, ToolsTask};

/// Which suite to run, as named on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SuiteSpec {
    /// The built-in tools suite (`tools`), or a tools suite read from a JSONL file (`tools:PATH`).
    Tools(Option<PathBuf>),
    /// One half of the built-in tools suite: `tools:dev`, the tasks whose number is odd (the
    /// rules are tuned on these), or `tools:test`, the even ones (only reported).
    ToolsSplit(Split),
    /// The held-out tools suite (`heldout`): tasks of other kinds, written before any tuning
    /// and never tuned on.
    Heldout,
    /// BFCL categories (`bfcl:simple`, …, or `bfcl` for all four).
    Bfcl(Vec<BfclCategory>),
    /// GSM8K word problems with the calculator (`gsm8k:dev` or `gsm8k:test`).
    Gsm8k(Split),
}

impl FromStr for SuiteSpec {
    type Err = BenchError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "tools" => Ok(SuiteSpec::Tools(None)),
            "tools:dev" => Ok(SuiteSpec::ToolsSplit(Split::Dev)),
            "tools:test" => Ok(SuiteSpec::ToolsSplit(Split::Test)),
            "heldout" => Ok(SuiteSpec::Heldout),
            "bfcl" => Ok(SuiteSpec::Bfcl(BfclCategory::ALL.to_vec())),
            other => {
                if let Some(path) = other.strip_prefix("tools:") {
                    return Ok(SuiteSpec::Tools(Some(PathBuf::from(path))));
                }
                if let Some(category) = other.strip_prefix("bfcl:") {
                    return Ok(SuiteSpec::Bfcl(vec![category.parse()?]));
                }
                if let Some(split) = other.strip_prefix("gsm8k:") {
                    return Ok(SuiteSpec::Gsm8k(gsm8k::parse_split(split)?));
                }
                Err(BenchError::Usage(format!(
                    "unknown suite `{other}`: expected tools, tools:dev, tools:test, tools:FILE, \
                     heldout, correct, correct:FILE, bfcl, \
                     bfcl:simple|multiple|parallel|irrelevance, or gsm8k:dev|test|heldout"
                )))
            }
        }
    }
}

impl fmt::Display for SuiteSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SuiteSpec::Tools(None) => f.write_str("tools"),
            SuiteSpec::Tools(Some(path)) => write!(f, "tools:{}", path.display()),
            SuiteSpec::ToolsSplit(split) => write!(f, "tools:{}", split.as_str()),
            SuiteSpec::Heldout => f.write_str("heldout"),
            SuiteSpec::Bfcl(cats) if cats.len() == BfclCategory::ALL.len() => f.write_str("bfcl"),
            SuiteSpec::Bfcl(cats) => {
                let names: Vec<&str> = cats.iter().map(|c| c.as_str()).collect();
                write!(f, "bfcl:{}", names.join(","))
            }
            SuiteSpec::Gsm8k(split) => write!(f, "gsm8k:{}", split.as_str()),
        }
    }
}

/// A half of a suite: the part rules are tuned on, or the part only reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// Tuned on.
    Dev,
    /// Only reported.
    Test,
    /// Fresh: reported once per change, after tuning is done (GSM8K test problems 200-499).
    Heldout,
}

impl Split {
    /// `dev` or `test`.
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Dev => "dev",
            Split::Test => "test",
            Split::Heldout => "heldout",
        }
    }

    /// Whether the task `id` (ending in its number, `calc_07`) belongs to this half: odd
    /// numbers are dev, even ones test.
    pub fn holds(self, id: &str) -> bool {
        let digits: String = id.chars().rev().take_while(char::is_ascii_digit).collect();
        let odd = digits
            .chars()
            .next()
            .and_then(|d| d.to_digit(10))
            .is_some_and(|d| d % 2 == 1);
        odd == (self == Split::Dev)
    }
}

/// One task: a prompt, its tools, its bound on actions and its grader.
#[derive(Debug, Clone)]
pub struct Task {
    /// A stable id (`calc_03`, `simple_python_0`).
    pub id: String,
    /// The user request.
    pub prompt: String,
    /// Executed tool actions allowed: the calls the task needs, plus one.
    pub max_actions: u32,
    /// What the task is and how it is graded.
    pub kind: TaskKind,
}

/// The suite-specific part of a task.
#[derive(Debug, Clone)]
pub enum TaskKind {
    /// A built-in tools task.
    Tools(ToolsTask),
    /// A BFCL task.
    Bfcl(BfclTask),
    /// A GSM8K problem.
    Gsm8k(GsmTask),
}

/// The verdict on one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Grade {
    /// Whether the run did what the task asks.
    pub success: bool,
    /// Why not, when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Grade {
    /// A passing grade.
    pub fn pass() -> Self {
        Self {
            success: true,
            detail: None,
        }
    }

    /// A failing grade with its reason.
    pub fn fail(detail: impl Into<String>) -> Self {
        Self {
            success: false,
            detail: Some(detail.into()),
        }
    }
}

impl Task {
    /// Grades a finished run of this task.
    pub fn grade(&self, report: &RunReport) -> Grade {
        match &self.kind {
            TaskKind::Tools(task) => task.grade(report),
            TaskKind::Bfcl(task) => task.grade(report),
            TaskKind::Gsm8k(task) => task.grade(report),
        }
    }
}

/// A loaded suite: its tasks and what they need to run (the fake weather server).
pub struct Suite {
    /// The suite's name as given.
    pub name: String,
    /// The tasks, in order.
    pub tasks: Vec<Task>,
    tools_env: Option<ToolsEnv>,
}

/// Leaves out the first `skip` tasks and keeps at most `limit` of the rest.
fn window(tasks: &mut Vec<Task>, skip: usize, limit: Option<usize>) {
    tasks.drain(..skip.min(tasks.len()));
    if let Some(n) = limit {
        tasks.truncate(n);
    }
}

impl Suite {
    /// Loads the suite named by `spec`, leaving out the first `skip` tasks and keeping the next
    /// `limit` (per BFCL category). The tools suite starts its fake Open-Meteo server here; it
    /// stops when the suite drops.
    pub fn load(spec: &SuiteSpec, skip: usize, limit: Option<usize>) -> Result<Self, BenchError> {
        match spec {
            SuiteSpec::ToolsSplit(split) => {
                let mut tasks = tools_suite::parse("tools.jsonl", tools_suite::BUILTIN)?;
                tasks.retain(|t| split.holds(&t.id));
                Self::tools(spec, tasks, skip, limit)
            }
            SuiteSpec::Heldout => {
                let tasks = tools_suite::parse("tools-heldout.jsonl", tools_suite::HELDOUT)?;
                Self::tools(spec, tasks, skip, limit)
            }
            SuiteSpec::Tools(path) => {
                let (label, text) = match path {
                    None => ("tools.jsonl".to_string(), tools_suite::BUILTIN.to_string()),
                    Some(path) => (
                        path.display().to_string(),
                        std::fs::read_to_string(path).map_err(|e| {
                            BenchError::Usage(format!(
                                "--suite tools:{}: cannot read it: {e}",
                                path.display()
                            ))
                        })?,
                    ),
                };
                let tasks = tools_suite::parse(&label, &text)?;
                Self::tools(spec, tasks, skip, limit)
            }
            SuiteSpec::Bfcl(categories) => {
                let mut tasks = Vec::new();
                for category in categories {
                    let mut some = bfcl::load(*category)?;
                    window(&mut some, skip, limit);
                    tasks.extend(some);
                }
                Ok(Self {
                    name: spec.to_string(),
                    tasks,
                    tools_env: None,
                })
            }
            SuiteSpec::Gsm8k(split) => {
                let mut tasks = gsm8k::load(*split)?;
                window(&mut tasks, skip, limit);
                Ok(Self {
                    name: spec.to_string(),
                    tasks,
                    tools_env: None,
                })
            }
        }
    }

    fn tools(
        spec: &SuiteSpec,
        mut tasks: Vec<Task>,
        skip: usize,
        limit: Option<usize>,
    ) -> Result<Self, BenchError> {
        window(&mut tasks, skip, limit);
        Ok(Self {
            name: spec.to_string(),
            tasks,
            tools_env: Some(ToolsEnv::start()?),
        })
    }

    /// The tools offered for `task`.
    pub fn registry(&self, task: &Task) -> Result<ToolRegistry, BenchError> {
        match (&task.kind, &self.tools_env) {
            (TaskKind::Tools(_), Some(env)) => Ok(env.registry.clone()),
            (TaskKind::Tools(_), None) => Err(BenchError::Agent {
                task: task.id.clone(),
                message: "the tools suite was not started".into(),
            }),
            (TaskKind::Bfcl(bfcl), _) => bfcl.registry().map_err(|message| BenchError::Agent {
                task: task.id.clone(),
                message,
            }),
            (TaskKind::Gsm8k(_), _) => {
                let mut registry = ToolRegistry::new();
                registry
                    .register_typed(corrigible_tools::Calculator)
                    .map_err(|e| BenchError::Agent {
                        task: task.id.clone(),
                        message: e.to_string(),
                    })?;
                Ok(registry)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tools_suite_splits_into_two_disjoint_halves() {
        let all = tools_suite::parse("tools.jsonl", tools_suite::BUILTIN).unwrap();
        let dev = all.iter().filter(|t| Split::Dev.holds(&t.id)).count();
        let test = all.iter().filter(|t| Split::Test.holds(&t.id)).count();
        assert_eq!(dev + test, all.len());
        assert!(dev >= 25 && test >= 25, "{dev} / {test}");
        assert!(Split::Dev.holds("calc_07") && Split::Test.holds("calc_10"));
    }

    #[test]
    fn skip_and_limit_pick_a_window_of_the_suite() {
        let spec = SuiteSpec::Gsm8k(Split::Test);
        let all = Suite::load(&spec, 0, None).unwrap().tasks;
        let part = Suite::load(&spec, 30, Some(20)).unwrap().tasks;
        let ids = |tasks: &[Task]| tasks.iter().map(|t| t.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&part), ids(&all[30..50]));
        assert!(
            Suite::load(&spec, all.len() + 5, None)
                .unwrap()
                .tasks
                .is_empty()
        );
    }

    #[test]
    fn parses_suite_names() {
        assert_eq!(
            "tools".parse::<SuiteSpec>().unwrap(),
            SuiteSpec::Tools(None)
        );
        assert_eq!(
            "tools:test".parse::<SuiteSpec>().unwrap(),
            SuiteSpec::ToolsSplit(Split::Test)
        );
        assert_eq!("heldout".parse::<SuiteSpec>().unwrap(), SuiteSpec::Heldout);
        assert_eq!(
            "bfcl:parallel".parse::<SuiteSpec>().unwrap(),
            SuiteSpec::Bfcl(vec![BfclCategory::Parallel])
        );
        assert_eq!("bfcl".parse::<SuiteSpec>().unwrap().to_string(), "bfcl");
        assert!("bfcl:live".parse::<SuiteSpec>().is_err());
        assert!("mmlu".parse::<SuiteSpec>().is_err());
        let test = "gsm8k:test".parse::<SuiteSpec>().unwrap();
        assert_eq!(test, SuiteSpec::Gsm8k(Split::Test));
        assert_eq!(test.to_string(), "gsm8k:test");
    }
}
