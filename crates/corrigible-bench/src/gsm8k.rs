//! GSM8K: grade-school math word problems, answered with the calculator.
//!
//! The data are the first 200 problems of the GSM8K test set (Cobbe et al., 2021; MIT
//! license), in this crate's `data/gsm8k/` with their license and attribution. They are split
//! in two: `gsm8k:dev` (problems 0–99) is for tuning, `gsm8k:test` (problems 100–199) is for
//! reporting only; `gsm8k:heldout` (test problems 200–499, from a second file) is a fresh
//! split, reported once per change. The agent is asked the problem as written, as a user would ask it; the
//! `bare` policy the problem and its own instruction. A run passes when the number its final
//! answer ends with (after `Answer:` when it says so) equals the reference answer.

use corrigible::evidence::numbers::numbers_in;
use corrigible::{RunReport, StopReason};
use serde::Deserialize;

use crate::error::BenchError;
use crate::suite::{Grade, Split, Task, TaskKind};

/// The embedded problems of the dev and test splits.
pub const DATA: &str = include_str!("../data/gsm8k/test-first200.jsonl");

/// The first 500 problems of the GSM8K train set: the worked solutions that precision is
/// measured on (the correct corpus, the arithmetic reader's tests), never a reported split.
pub const TRAIN: &str = include_str!("../data/gsm8k/train-first500.jsonl");

/// Problems of [`TRAIN`] whose worked solution states a calculation that does not hold (the
/// arithmetic reader is right about them): left out of the precision corpora.
pub const WRONG_SOLUTIONS: &[&str] = &["gsm8k-train-167", "gsm8k-train-168", "gsm8k-train-224"];

/// The embedded problems of the held-out split: GSM8K test problems 200-499.
pub const HELDOUT_DATA: &str = include_str!("../data/gsm8k/test-200-499.jsonl");

/// Problems in the dev split; the rest are the test split.
pub const DEV_PROBLEMS: usize = 100;

/// Problems in the held-out split.
pub const HELDOUT_PROBLEMS: usize = 300;

/// Executed calculator actions a problem allows: several steps, each on earlier results.
pub const MAX_ACTIONS: u32 = 6;

/// The lines of `split` in its file: 0-99 are dev (tune on these), 100-199 test (reported
/// before), and the held-out file's 300 (report once per change).
fn lines(split: Split) -> (&'static str, std::ops::Range<usize>) {
    match split {
        Split::Dev => (DATA, 0..DEV_PROBLEMS),
        Split::Test => (DATA, DEV_PROBLEMS..2 * DEV_PROBLEMS),
        Split::Heldout => (HELDOUT_DATA, 0..usize::MAX),
    }
}

/// `split` read from what follows `gsm8k:`.
pub fn parse_split(s: &str) -> Result<Split, BenchError> {
    match s {
        "dev" => Ok(Split::Dev),
        "test" => Ok(Split::Test),
        "heldout" => Ok(Split::Heldout),
        other => Err(BenchError::Usage(format!(
            "unknown GSM8K split `{other}`: expected gsm8k:dev (problems 0-99), \
             gsm8k:test (problems 100-199) or gsm8k:heldout (problems 200-499)"
        ))),
    }
}

/// A GSM8K problem's reference answer.
#[derive(Debug, Clone, PartialEq)]
pub struct GsmTask {
    /// The reference answer.
    pub answer: f64,
}

#[derive(Deserialize)]
struct Row {
    id: String,
    question: String,
    answer: String,
}

/// The problems of `split`, in order.
pub fn load(split: Split) -> Result<Vec<Task>, BenchError> {
    let mut tasks = Vec::new();
    let (data, range) = lines(split);
    for (i, line) in data.lines().enumerate() {
        if !range.contains(&i) {
            continue;
        }
        let error = |message: String| BenchError::Suite {
            suite: "gsm8k".to_string(),
            line: i + 1,
            message,
        };
        let row: Row = serde_json::from_str(line).map_err(|e| error(e.to_string()))?;
        let answer = row
            .answer
            .replace(',', "")
            .trim()
            .parse::<f64>()
            .map_err(|e| error(format!("answer `{}`: {e}", row.answer)))?;
        tasks.push(Task {
            id: row.id,
            prompt: row.question,
            max_actions: MAX_ACTIONS,
            kind: TaskKind::Gsm8k(GsmTask { answer }),
        });
    }
    let expected = match split {
        Split::Heldout => HELDOUT_PROBLEMS,
        Split::Dev | Split::Test => DEV_PROBLEMS,
    };
    if tasks.len() != expected {
        return Err(BenchError::Usage(format!(
            "gsm8k:{}: expected {expected} problems, found {}",
            split.as_str(),
            tasks.len()
        )));
    }
    Ok(tasks)
}

/// The number an answer gives: the first number after its last `Answer:`, else its last
/// number.
pub fn final_number(text: &str) -> Option<f64> {
    let lower = text.to_ascii_lowercase();
    if let Some(at) = lower.rfind("answer:")
        && let Some(&n) = numbers_in(&text[at + "answer:".len()..]).first()
    {
        return Some(n);
    }
    numbers_in(text).last().copied()
}

impl GsmTask {
    /// Passes when the run ends with an accepted, satisfied final answer whose number equals
    /// the reference answer.
    pub fn grade(&self, report: &RunReport) -> Grade {
        if report.stop_reason != StopReason::Final {
            return Grade::fail(format!("no final answer ({})", report.stop_reason.as_str()));
        }
        if !report.satisfied {
            return Grade::fail("the final answer is unsatisfied");
        }
        let summary = report.final_summary.as_deref().unwrap_or("");
        match final_number(summary) {
            Some(got) if (got - self.answer).abs() <= 1e-6 * self.answer.abs().max(1.0) => {
                Grade::pass()
            }
            Some(got) => Grade::fail(format!("answered {got}, expected {}", self.answer)),
            None => Grade::fail(format!("no number in the answer, expected {}", self.answer)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_splits_are_disjoint_halves() {
        let dev = load(Split::Dev).unwrap();
        let test = load(Split::Test).unwrap();
        assert_eq!(dev.len(), 100);
        assert_eq!(test.len(), 100);
        assert_eq!(dev[0].id, "gsm8k-test-0");
        assert_eq!(test[0].id, "gsm8k-test-100");
        assert!(dev.iter().all(|d| test.iter().all(|t| t.id != d.id)));
        let TaskKind::Gsm8k(first) = &dev[0].kind else {
            panic!("not a GSM8K task")
        };
        assert_eq!(first.answer, 18.0);
        let heldout = load(parse_split("heldout").unwrap()).unwrap();
        assert_eq!(heldout.len(), 300);
        assert_eq!(heldout[0].id, "gsm8k-test-200");
        assert_eq!(heldout[299].id, "gsm8k-test-499");
    }

    #[test]
    fn the_agent_is_asked_the_problem_as_written() {
        let data: Vec<Row> = DATA
            .lines()
            .take(3)
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let dev = load(Split::Dev).unwrap();
        for (task, row) in dev.iter().zip(&data) {
            assert_eq!(task.prompt, row.question);
        }
    }

    #[test]
    fn the_final_number_follows_answer_or_ends_the_text() {
        assert_eq!(final_number("9 eggs at $2 each.\nAnswer: $18"), Some(18.0));
        assert_eq!(final_number("She makes $18 a day from 9 eggs"), Some(9.0));
        assert_eq!(final_number("Answer: 1,200 dollars, not 5"), Some(1200.0));
        assert_eq!(final_number("answer: none. It is 7"), Some(7.0));
        assert_eq!(final_number("no number"), None);
        assert!(parse_split("train").is_err());
    }
}
