//! What the bench measures: one [`TaskResult`] per run, aggregated per policy and mode into a
//! [`ColumnReport`], all of it in a [`BenchReport`].

use std::collections::BTreeMap;

use corrigible::{Category, RunReport, StopReason};
use serde::{Deserialize, Serialize};

use crate::faults::{FaultConfig, FaultKind, InjectedFault};
use crate::policy::PolicyKind;
use crate::suite::Grade;

/// Whether `category` rejects a reply (as opposed to a tool's verdict on an executed call):
/// the engine's decision rejections, plus an output validator's refusal of the final answer.
fn rejects_reply(category: Category) -> bool {
    category.is_decision_rejection() || category == Category::OutputRejected
}

/// An injected fault and whether the engine got past it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaultOutcome {
    /// What was injected.
    pub kind: FaultKind,
    /// The corrupted call's stage.
    pub stage: String,
    /// Whether the slot it hit was accepted later (by a repair, at no cost, or a correction).
    pub recovered: bool,
    /// Model calls the recovery took after the corrupted call (0 for a local repair).
    pub recovery_calls: u32,
}

/// One run of one task under one policy and mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    /// The task id.
    pub task: String,
    /// The policy.
    pub policy: PolicyKind,
    /// The constraint mode, or `-`.
    pub mode: String,
    /// Whether the grader passed the run.
    pub success: bool,
    /// Why it failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Why the run stopped (`error` when it did not complete).
    pub stop_reason: String,
    /// Whether it ended with an accepted final answer that says the request was fulfilled.
    pub satisfied: bool,
    /// Model calls made.
    pub model_calls: u32,
    /// Replies rejected (decision-level corrections, including an exhausted slot's last).
    pub rejected_replies: u32,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Wall time of the run.
    pub duration_ms: f64,
    /// Correction categories, in order.
    pub corrections: Vec<Category>,
    /// Repair kinds, in order.
    pub repairs: Vec<String>,
    /// Correction replies identical to the reply they corrected.
    pub identical_retries: u32,
    /// Calculations of the model's thoughts that the thought calculator rewrote, as
    /// `expression = stated → value`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recalculated: Vec<String>,
    /// Injected faults and their fate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultOutcome>,
    /// The final answer, when the run gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The tool calls executed, in order: `tool input → outcome`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<String>,
    /// The verifications of the run's answers (policy `verify`), with each comparison and its
    /// ruling.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verifications: Vec<corrigible::trace::VerificationRecord>,
}

impl TaskResult {
    /// The result of a completed run.
    pub fn from_report(
        task: &str,
        policy: PolicyKind,
        mode: &str,
        report: &RunReport,
        grade: Grade,
        injected: &[InjectedFault],
    ) -> Self {
        let rejected = report
            .corrections
            .iter()
            .filter(|c| rejects_reply(c.category))
            .count() as u32;
        Self {
            task: task.to_string(),
            policy,
            mode: mode.to_string(),
            success: grade.success,
            detail: grade.detail,
            stop_reason: report.stop_reason.as_str().to_string(),
            satisfied: report.satisfied && report.stop_reason == StopReason::Final,
            model_calls: report.usage.model_calls,
            rejected_replies: rejected,
            input_tokens: report.usage.input_tokens,
            output_tokens: report.usage.output_tokens,
            duration_ms: report.duration_ms,
            corrections: report.corrections.iter().map(|c| c.category).collect(),
            repairs: report
                .repairs
                .iter()
                .map(|r| r.kind.as_str().to_string())
                .collect(),
            identical_retries: report.usage.identical_retries,
            recalculated: report
                .model_calls
                .iter()
                .filter_map(|c| c.reasoning.as_ref())
                .flat_map(|r| r.recalculated.iter().map(ToString::to_string))
                .collect(),
            faults: injected.iter().map(|f| fault_outcome(report, f)).collect(),
            answer: report.final_summary.clone(),
            calls: report
                .steps
                .iter()
                .map(|s| format!("{} {} → {}", s.tool, s.input, s.outcome.as_str()))
                .collect(),
            verifications: report.verifications.clone(),
        }
    }

    /// The result of a run that ended in an infrastructure error (e.g. a replay exhausted).
    pub fn from_error(
        task: &str,
        policy: PolicyKind,
        mode: &str,
        error: String,
        duration_ms: f64,
        injected: &[InjectedFault],
    ) -> Self {
        Self {
            task: task.to_string(),
            policy,
            mode: mode.to_string(),
            success: false,
            detail: Some(error),
            stop_reason: "error".into(),
            satisfied: false,
            model_calls: 0,
            rejected_replies: 0,
            input_tokens: 0,
            output_tokens: 0,
            duration_ms,
            corrections: Vec::new(),
            repairs: Vec::new(),
            identical_retries: 0,
            recalculated: Vec::new(),
            faults: injected
                .iter()
                .map(|f| FaultOutcome {
                    kind: f.kind,
                    stage: f.stage.to_string(),
                    recovered: false,
                    recovery_calls: 0,
                })
                .collect(),
            answer: None,
            calls: Vec::new(),
            verifications: Vec::new(),
        }
    }
}

/// A fault is recovered when its slot was accepted: the slot executed an action, or it is the
/// slot of the run's accepted final answer. Its cost is the slot's model calls after it.
fn fault_outcome(report: &RunReport, fault: &InjectedFault) -> FaultOutcome {
    let (slot, round) = (fault.stage.step(), fault.stage.correction());
    let last_slot = report.model_calls.iter().map(|c| c.stage.step()).max();
    let final_slot = matches!(report.stop_reason, StopReason::Final) && last_slot == Some(slot);
    let recovered = final_slot || report.steps.iter().any(|s| s.step == slot);
    let recovery_calls = if recovered {
        report
            .model_calls
            .iter()
            .filter(|c| c.stage.step() == slot && c.stage.correction() > round)
            .count() as u32
    } else {
        0
    };
    FaultOutcome {
        kind: fault.kind,
        stage: fault.stage.to_string(),
        recovered,
        recovery_calls,
    }
}

/// Injected faults of a column, by kind, and what became of them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultStats {
    /// Faults injected, by kind.
    pub injected: BTreeMap<FaultKind, u32>,
    /// Faults whose slot was accepted later, by kind.
    pub recovered: BTreeMap<FaultKind, u32>,
    /// Model calls spent on recoveries, by kind.
    pub recovery_model_calls: BTreeMap<FaultKind, u32>,
    /// Runs hit by at least one fault.
    pub runs_with_faults: u32,
    /// Of those, runs that still succeeded.
    pub runs_with_faults_succeeded: u32,
}

/// The metrics of one policy (× constraint mode) over all tasks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColumnReport {
    /// The policy.
    pub policy: PolicyKind,
    /// The constraint mode of the embedded model, or `-`.
    pub mode: String,
    /// Runs.
    pub tasks: u32,
    /// Runs the grader passed.
    pub successes: u32,
    /// `successes / tasks`.
    pub success_rate: f64,
    /// Share of model replies that were accepted (not rejected as a decision or input).
    pub valid_reply_rate: f64,
    /// Mean model calls per task.
    pub model_calls_per_task: f64,
    /// Mean prompt tokens per task.
    pub input_tokens_per_task: f64,
    /// Mean generated tokens per task.
    pub output_tokens_per_task: f64,
    /// Median run wall time.
    pub latency_p50_ms: f64,
    /// 95th percentile run wall time.
    pub latency_p95_ms: f64,
    /// Corrections by category.
    pub corrections: BTreeMap<String, u32>,
    /// Repairs by kind.
    pub repairs: BTreeMap<String, u32>,
    /// Correction replies identical to the reply they corrected.
    pub identical_retries: u32,
    /// Thought calculations the thought calculator rewrote, over all runs.
    #[serde(default)]
    pub recalculated: u32,
    /// Runs by stop reason (`error` for infrastructure failures).
    pub stop_reasons: BTreeMap<String, u32>,
    /// Runs that did not end with a satisfied, accepted final answer, by stop reason.
    pub unsatisfied: BTreeMap<String, u32>,
    /// Injected faults, when fault injection is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<FaultStats>,
}

impl ColumnReport {
    /// Aggregates the results of one policy and mode.
    pub fn aggregate(
        policy: PolicyKind,
        mode: &str,
        results: &[&TaskResult],
        faults_on: bool,
    ) -> Self {
        let n = results.len().max(1) as f64;
        let calls: u32 = results.iter().map(|r| r.model_calls).sum();
        let rejected: u32 = results.iter().map(|r| r.rejected_replies).sum();
        let mut latencies: Vec<f64> = results.iter().map(|r| r.duration_ms).collect();
        latencies.sort_by(f64::total_cmp);
        let mut corrections = BTreeMap::new();
        let mut repairs = BTreeMap::new();
        let mut stop_reasons = BTreeMap::new();
        let mut unsatisfied = BTreeMap::new();
        for r in results {
            for c in &r.corrections {
                *corrections.entry(c.as_str().to_string()).or_insert(0) += 1;
            }
            for k in &r.repairs {
                *repairs.entry(k.clone()).or_insert(0) += 1;
            }
            *stop_reasons.entry(r.stop_reason.clone()).or_insert(0) += 1;
            if !r.satisfied {
                *unsatisfied.entry(r.stop_reason.clone()).or_insert(0) += 1;
            }
        }
        let faults = faults_on.then(|| {
            let mut stats = FaultStats::default();
            for r in results {
                if !r.faults.is_empty() {
                    stats.runs_with_faults += 1;
                    if r.success {
                        stats.runs_with_faults_succeeded += 1;
                    }
                }
                for f in &r.faults {
                    *stats.injected.entry(f.kind).or_insert(0) += 1;
                    if f.recovered {
                        *stats.recovered.entry(f.kind).or_insert(0) += 1;
                        *stats.recovery_model_calls.entry(f.kind).or_insert(0) += f.recovery_calls;
                    }
                }
            }
            stats
        });
        let successes = results.iter().filter(|r| r.success).count() as u32;
        Self {
            policy,
            mode: mode.to_string(),
            tasks: results.len() as u32,
            successes,
            success_rate: successes as f64 / n,
            valid_reply_rate: if calls == 0 {
                0.0
            } else {
                (calls.saturating_sub(rejected)) as f64 / calls as f64
            },
            model_calls_per_task: calls as f64 / n,
            input_tokens_per_task: results.iter().map(|r| r.input_tokens).sum::<u64>() as f64 / n,
            output_tokens_per_task: results.iter().map(|r| r.output_tokens).sum::<u64>() as f64 / n,
            latency_p50_ms: percentile(&latencies, 0.50),
            latency_p95_ms: percentile(&latencies, 0.95),
            corrections,
            repairs,
            identical_retries: results.iter().map(|r| r.identical_retries).sum(),
            recalculated: results.iter().map(|r| r.recalculated.len() as u32).sum(),
            stop_reasons,
            unsatisfied,
            faults,
        }
    }
}

/// Nearest-rank percentile of sorted values (0 when empty).
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The whole bench: what ran, one column per policy and mode, and every run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    /// The suite (`tools`, `bfcl:simple`, …).
    pub suite: String,
    /// The model's name.
    pub model: String,
    /// The decision protocol.
    pub protocol: corrigible::Protocol,
    /// Tasks in the suite (after `--limit`).
    pub tasks: u32,
    /// Fault injection, when on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faults: Option<FaultConfig>,
    /// One column per policy and mode, in run order.
    pub columns: Vec<ColumnReport>,
    /// Every run.
    pub results: Vec<TaskResult>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        let v = [1.0, 2.0, 3.0, 4.0, 100.0];
        assert_eq!(percentile(&v, 0.5), 3.0);
        assert_eq!(percentile(&v, 0.95), 100.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }
}
