//! Trajectories: a request and the replies a model gave to it, step by step, then its answer.

use serde::Deserialize;
use serde_json::Value;

use crate::bfcl::FunctionDef;
use crate::error::BenchError;

/// The built-in corpus files: correct work (hand-written, GSM8K solutions, BFCL ground truth)
/// and mistakes: real ones of the embedded models (wrong answers of bench runs, slips in a
/// thought before the answer, and a worked example's answer copied for another question), and
/// hand-written claims of actions no tool carried out. Each is its file name under this
/// crate's `data/correct/` and its text.
pub const BUILTIN: [(&str, &str); 8] = [
    ("hand.jsonl", include_str!("../../data/correct/hand.jsonl")),
    (
        "gsm8k.jsonl",
        include_str!("../../data/correct/gsm8k.jsonl"),
    ),
    ("bfcl.jsonl", include_str!("../../data/correct/bfcl.jsonl")),
    (
        "mistakes.jsonl",
        include_str!("../../data/correct/mistakes.jsonl"),
    ),
    (
        "claims.jsonl",
        include_str!("../../data/correct/claims.jsonl"),
    ),
    (
        "slips.jsonl",
        include_str!("../../data/correct/slips.jsonl"),
    ),
    (
        "echoes.jsonl",
        include_str!("../../data/correct/echoes.jsonl"),
    ),
    (
        "declines.jsonl",
        include_str!("../../data/correct/declines.jsonl"),
    ),
];

/// One tool call of a trajectory.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Why the model made the call (the JSON decision's `reason`).
    #[serde(default)]
    pub reason: Option<String>,
    /// The tool called (a BFCL function by its declared name).
    pub tool: String,
    /// The call's input.
    pub input: Value,
}

/// What was wrong with a trajectory of the mistakes corpus: its last reply.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mistake {
    /// What is wrong, in words.
    pub note: String,
    /// The model that made it.
    #[serde(default)]
    pub model: Option<String>,
}

/// A request, the calls a model made for it and its final answer: correct work, or (with
/// `mistake`) a real wrong reply that a rule should send back.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trajectory {
    /// A stable id.
    pub id: String,
    /// Where it comes from: `hand`, `gsm8k`, `bfcl:simple`, `tools`, …
    pub source: String,
    /// The kind of reply it exercises (`percent_decimal`, `twelve_hour`, …).
    #[serde(default)]
    pub pattern: Option<String>,
    /// The user request.
    pub request: String,
    /// The built-in tools offered (`calculator`, `time`, `weather`).
    #[serde(default)]
    pub tools: Vec<String>,
    /// BFCL functions offered instead, as schema-only tools.
    #[serde(default)]
    pub functions: Vec<FunctionDef>,
    /// The calls, in order.
    pub steps: Vec<Step>,
    /// The reasoning written before the final answer, as a thinking model sends it.
    #[serde(default)]
    pub reasoning: Option<String>,
    /// The final answer.
    pub answer: String,
    /// Whether the final answer says the request was fulfilled.
    pub satisfied: bool,
    /// Set on the mistakes corpus: the trajectory is wrong and should be sent back.
    #[serde(default)]
    pub mistake: Option<Mistake>,
}

impl Trajectory {
    /// Whether this is correct work (no `mistake`).
    pub fn is_correct(&self) -> bool {
        self.mistake.is_none()
    }
}

/// Parses a corpus file: one trajectory a line, blank lines skipped.
pub fn parse(label: &str, text: &str) -> Result<Vec<Trajectory>, BenchError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let trajectory: Trajectory = serde_json::from_str(line).map_err(|e| BenchError::Suite {
            suite: label.to_string(),
            line: i + 1,
            message: e.to_string(),
        })?;
        if !trajectory.tools.is_empty() && !trajectory.functions.is_empty() {
            return Err(BenchError::Suite {
                suite: label.to_string(),
                line: i + 1,
                message: "give either `tools` or `functions`, not both".into(),
            });
        }
        out.push(trajectory);
    }
    Ok(out)
}

/// The built-in corpus: every file of [`BUILTIN`] (`data/correct/` in this crate).
pub fn builtin() -> Result<Vec<Trajectory>, BenchError> {
    let mut all = Vec::new();
    for (label, text) in BUILTIN {
        all.extend(parse(label, text)?);
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_corpus_has_300_correct_trajectories_and_unique_ids() {
        let all = builtin().unwrap();
        let correct = all.iter().filter(|t| t.is_correct()).count();
        assert!(correct >= 300, "{correct}");
        let hand = all.iter().filter(|t| t.source == "hand").count();
        assert!(hand >= 100, "{hand}");
        let mut ids: Vec<&str> = all.iter().map(|t| t.id.as_str()).collect();
        ids.sort_unstable();
        let before = ids.len();
        ids.dedup();
        assert_eq!(ids.len(), before, "duplicate ids");
    }

    #[test]
    fn both_tools_and_functions_is_refused() {
        let line = r#"{"id":"x","source":"hand","request":"r","tools":["calculator"],"functions":[{"name":"f","parameters":{}}],"steps":[],"answer":"a","satisfied":true}"#;
        assert!(parse("t", line).is_err());
    }
}
