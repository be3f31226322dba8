//! The correction rules on both sides: what each sends back of correct work (false
//! rejections on the correct corpus) and what it catches of real mistakes (recall on the
//! mistakes corpus).
//!
//! Every [`Trajectory`] is replayed through the engine by a [`ScriptModel`] under both
//! protocols, with the real built-in tools (the bench's fixed clock and fake weather server)
//! or BFCL's schema-only tools, once per rule set: the contract alone, each evidence rule
//! alone, and the `precise` and `strict` profiles. A trajectory is *sent back* under a rule set
//! when any of its replies is rejected under either protocol.

mod script;
pub mod trajectory;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use corrigible::trace::StepOutcome;
use corrigible::{Agent, Checks, Policy, Protocol, Rule, RunReport, StopReason, ToolRegistry};
use serde::Serialize;

pub use script::ScriptModel;
pub use trajectory::{Mistake, Step, Trajectory};

use crate::bfcl::RecordingTool;
use crate::error::BenchError;
use crate::tools_suite::ToolsEnv;

/// A named set of rules the corpus is replayed under.
#[derive(Clone, Serialize)]
pub struct RuleSet {
    /// `contract`, a rule's category name, `precise`, `strict`, `verifier`, or the name of a
    /// rule of one's own.
    pub name: String,
    /// The checks it turns on.
    #[serde(skip)]
    pub checks: Checks,
    /// The verifier of satisfied answers, if any. A set with one replays each trajectory under
    /// the json protocol only: the verifier reads the same evidence under either.
    #[serde(skip)]
    pub verifier: Option<corrigible::Verifier>,
    /// Rules of one's own, judged after the checks.
    #[serde(skip)]
    pub rules: Vec<Arc<dyn Rule>>,
}

impl std::fmt::Debug for RuleSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuleSet")
            .field("name", &self.name)
            .field("checks", &self.checks)
            .field("verifier", &self.verifier.is_some())
            .field(
                "rules",
                &self.rules.iter().map(|r| r.name()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl RuleSet {
    /// The contract alone, each evidence rule alone, then both profiles.
    pub fn all() -> Vec<RuleSet> {
        let mut sets = vec![RuleSet::new("contract", Checks::NONE)];
        for (category, _) in Checks::STRICT.rules() {
            if let Some(checks) = Checks::only(category) {
                sets.push(RuleSet::new(category.as_str(), checks));
            }
        }
        sets.push(RuleSet::new("precise", Checks::PRECISE));
        sets.push(RuleSet::new("strict", Checks::STRICT));
        sets
    }

    /// The set `name` of `checks`, with no verifier.
    pub fn new(name: &str, checks: Checks) -> Self {
        RuleSet {
            name: name.into(),
            checks,
            verifier: None,
            rules: Vec::new(),
        }
    }

    /// The contract and `rule` alone, named after the rule: what a rule of one's own sends
    /// back of the correct corpus and catches of the mistakes.
    pub fn rule(rule: Arc<dyn Rule>) -> Self {
        RuleSet {
            rules: vec![rule.clone()],
            ..RuleSet::new(rule.name(), Checks::NONE)
        }
    }

    /// The contract and `verifier` alone: what verification sends back and catches.
    pub fn verifier(verifier: corrigible::Verifier) -> Self {
        RuleSet {
            verifier: Some(verifier),
            ..RuleSet::new("verifier", Checks::NONE)
        }
    }
}

/// How one trajectory fared under one rule set and protocol.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Every reply was taken as it was.
    Accepted,
    /// A reply was rejected.
    SentBack {
        /// The rejection's category (a rule of one's own: its name).
        category: String,
        /// The model call it rejected.
        stage: String,
        /// The feedback the model was sent.
        message: String,
    },
    /// The trajectory itself is broken: a tool refused or failed one of its calls, or the run
    /// did not end in its final answer.
    Broken {
        /// What went wrong.
        reason: String,
    },
}

/// One rejection of a trajectory, for the report's listing.
#[derive(Debug, Clone, Serialize)]
pub struct Rejected {
    /// The trajectory.
    pub id: String,
    /// Its source.
    pub source: String,
    /// The protocol it was replayed under.
    pub protocol: String,
    /// The verdict.
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// One rule set's row: false rejections and catches.
#[derive(Debug, Clone, Serialize)]
pub struct RuleRow {
    /// The rule set's name.
    pub rules: String,
    /// Correct trajectories sent back, by source.
    pub false_rejections: BTreeMap<String, usize>,
    /// Correct trajectories sent back in all.
    pub false_rejections_total: usize,
    /// Mistakes sent back.
    pub caught: usize,
    /// Every correct trajectory sent back, with why.
    pub rejected: Vec<Rejected>,
    /// Every mistake sent back, with why.
    pub catches: Vec<Rejected>,
}

/// The corpus report.
#[derive(Debug, Clone, Serialize)]
pub struct CorpusReport {
    /// Correct trajectories, by source.
    pub correct: BTreeMap<String, usize>,
    /// Correct trajectories in all.
    pub correct_total: usize,
    /// Mistakes in all.
    pub mistakes_total: usize,
    /// One row per rule set.
    pub rows: Vec<RuleRow>,
    /// Trajectories that could not be replayed as written (a corpus defect).
    pub broken: Vec<Rejected>,
}

impl CorpusReport {
    /// The row of rule set `name`.
    pub fn row(&self, name: &str) -> Option<&RuleRow> {
        self.rows.iter().find(|r| r.rules == name)
    }
}

/// Replays `trajectories` under every rule set of [`RuleSet::all`] and both protocols.
pub async fn run_corpus(trajectories: &[Trajectory]) -> Result<CorpusReport, BenchError> {
    run_corpus_with(trajectories, &RuleSet::all()).await
}

/// Replays `trajectories` under `sets` and both protocols.
pub async fn run_corpus_with(
    trajectories: &[Trajectory],
    sets: &[RuleSet],
) -> Result<CorpusReport, BenchError> {
    let env = ToolsEnv::start()?;
    let mut correct = BTreeMap::new();
    for t in trajectories.iter().filter(|t| t.is_correct()) {
        *correct.entry(t.source.clone()).or_insert(0) += 1;
    }
    let mut rows = Vec::new();
    let mut broken = Vec::new();
    for set in sets {
        let mut row = RuleRow {
            rules: set.name.clone(),
            false_rejections: BTreeMap::new(),
            false_rejections_total: 0,
            caught: 0,
            rejected: Vec::new(),
            catches: Vec::new(),
        };
        for trajectory in trajectories {
            let mut sent_back = None;
            let protocols: &[Protocol] = match set.verifier {
                Some(_) => &[Protocol::Json],
                None => &[Protocol::Json, Protocol::Native],
            };
            for &protocol in protocols {
                let verdict = replay(trajectory, set, protocol, &env).await?;
                let entry = Rejected {
                    id: trajectory.id.clone(),
                    source: trajectory.source.clone(),
                    protocol: protocol_name(protocol).into(),
                    verdict: verdict.clone(),
                };
                match verdict {
                    Verdict::Accepted => {}
                    Verdict::Broken { .. } => {
                        if set.checks == Checks::NONE
                            && set.rules.is_empty()
                            && trajectory.is_correct()
                        {
                            broken.push(entry);
                        }
                    }
                    Verdict::SentBack { .. } => {
                        if sent_back.is_none() {
                            sent_back = Some(entry);
                        }
                    }
                }
            }
            let Some(entry) = sent_back else { continue };
            if trajectory.is_correct() {
                *row.false_rejections
                    .entry(trajectory.source.clone())
                    .or_insert(0) += 1;
                row.false_rejections_total += 1;
                row.rejected.push(entry);
            } else {
                row.caught += 1;
                row.catches.push(entry);
            }
        }
        rows.push(row);
    }
    Ok(CorpusReport {
        correct_total: correct.values().sum(),
        correct,
        mistakes_total: trajectories.iter().filter(|t| !t.is_correct()).count(),
        rows,
        broken,
    })
}

fn protocol_name(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Json => "json",
        Protocol::Native => "native",
    }
}

/// The tools a trajectory offers: BFCL's schema-only functions, or the named built-ins.
fn registry(trajectory: &Trajectory, env: &ToolsEnv) -> Result<ToolRegistry, BenchError> {
    if !trajectory.functions.is_empty() {
        let mut registry = ToolRegistry::new();
        for function in &trajectory.functions {
            registry
                .register(Arc::new(RecordingTool::new(function)))
                .map_err(|e| BenchError::Agent {
                    task: trajectory.id.clone(),
                    message: e.to_string(),
                })?;
        }
        return Ok(registry);
    }
    for name in &trajectory.tools {
        if !env.registry.names().contains(&name.as_str()) {
            return Err(BenchError::Agent {
                task: trajectory.id.clone(),
                message: format!("unknown built-in tool `{name}`"),
            });
        }
    }
    Ok(env
        .registry
        .filtered(|name| trajectory.tools.iter().any(|t| t == name)))
}

/// Replays one trajectory under the rule set and `protocol`, with the built-in worked
/// examples of its tools, as `corrigible run` shows them.
pub async fn replay(
    trajectory: &Trajectory,
    set: &RuleSet,
    protocol: Protocol,
    env: &ToolsEnv,
) -> Result<Verdict, BenchError> {
    let model = Arc::new(ScriptModel::new(trajectory, protocol));
    let mut policy = Policy {
        checks: set.checks,
        ..Policy::default()
    };
    policy.limits.max_actions = trajectory.steps.len() as u32 + 1;
    let mut builder = Agent::builder_shared(model)
        .tools(registry(trajectory, env)?)
        .worked_examples(corrigible_tools::builtin_examples(&trajectory.tools))
        .protocol(protocol)
        .policy(policy);
    if let Some(verifier) = &set.verifier {
        builder = builder.verifier(verifier.clone());
    }
    for rule in &set.rules {
        builder = builder.shared_rule(rule.clone());
    }
    let agent = builder.build().map_err(|e| BenchError::Agent {
        task: trajectory.id.clone(),
        message: e.to_string(),
    })?;
    let report = agent
        .run(&trajectory.request)
        .await
        .map_err(|e| BenchError::Run {
            task: trajectory.id.clone(),
            message: e.to_string(),
        })?;
    Ok(verdict(trajectory, &report))
}

fn verdict(trajectory: &Trajectory, report: &RunReport) -> Verdict {
    if let Some(c) = report
        .corrections
        .iter()
        .find(|c| c.category.is_decision_rejection())
    {
        return Verdict::SentBack {
            category: c.rule.clone().unwrap_or_else(|| c.category.to_string()),
            stage: c.stage.to_string(),
            message: c.error.clone(),
        };
    }
    let expected_ok = trajectory.satisfied;
    if let Some(step) = report.steps.iter().find(|s| s.outcome != StepOutcome::Ok)
        && expected_ok
    {
        return Verdict::Broken {
            reason: format!(
                "{} {} ended {:?}: {}",
                step.tool,
                step.input,
                step.outcome,
                step.error.as_deref().unwrap_or("")
            ),
        };
    }
    if report.stop_reason != StopReason::Final
        || report.satisfied != trajectory.satisfied
        || report.final_summary.as_deref() != Some(trajectory.answer.as_str())
    {
        return Verdict::Broken {
            reason: format!(
                "the run ended {} (satisfied {}) instead of with its answer",
                report.stop_reason.as_str(),
                report.satisfied
            ),
        };
    }
    Verdict::Accepted
}

/// The report as a table: one row per rule set.
pub fn table(report: &CorpusReport) -> String {
    let mut out = String::new();
    let sources: Vec<&String> = report.correct.keys().collect();
    let _ = writeln!(
        out,
        "correct trajectories: {} ({}); mistakes: {}",
        report.correct_total,
        sources
            .iter()
            .map(|s| format!("{s} {}", report.correct[*s]))
            .collect::<Vec<_>>()
            .join(", "),
        report.mistakes_total
    );
    let _ = writeln!(
        out,
        "\n{:<22} {:>16} {:>10} {:>9}",
        "rules", "false rejections", "caught", "recall"
    );
    for row in &report.rows {
        let recall = if report.mistakes_total == 0 {
            "-".to_string()
        } else {
            format!(
                "{:.1}%",
                100.0 * row.caught as f64 / report.mistakes_total as f64
            )
        };
        let _ = writeln!(
            out,
            "{:<22} {:>16} {:>10} {:>9}",
            row.rules,
            format!("{} / {}", row.false_rejections_total, report.correct_total),
            format!("{} / {}", row.caught, report.mistakes_total),
            recall
        );
    }
    for name in ["precise", "strict"] {
        let Some(row) = report.row(name) else {
            continue;
        };
        if row.rejected.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\nsent back under {name}:");
        for r in &row.rejected {
            if let Verdict::SentBack {
                category, message, ..
            } = &r.verdict
            {
                let _ = writeln!(
                    out,
                    "  {} ({}, {}): {category}: {message}",
                    r.id, r.source, r.protocol
                );
            }
        }
    }
    if !report.broken.is_empty() {
        let _ = writeln!(out, "\nbroken trajectories (corpus defects):");
        for r in &report.broken {
            if let Verdict::Broken { reason } = &r.verdict {
                let _ = writeln!(out, "  {} ({}): {reason}", r.id, r.protocol);
            }
        }
    }
    out
}
