//! Fault injection: a [`Model`] wrapper that corrupts a fraction of replies with realistic
//! malformations, deterministically for a seed, so correction efficacy can be measured apart
//! from model skill.

mod corrupt;
mod model;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use corrupt::{applicable, corrupt};
pub use model::{FaultyModel, InjectedFault};

/// A kind of injected malformation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// The JSON wrapped in a markdown code fence.
    CodeFence,
    /// A comma before the closing brace.
    TrailingComma,
    /// Prose before and after the JSON.
    SurroundingProse,
    /// A field renamed (`tool_input` → `arguments`, `final_summary` → `answer`).
    WrongField,
    /// A tool that does not exist.
    UnknownTool,
    /// The reply cut off midway.
    Truncated,
    /// No text and no tool call.
    Empty,
}

impl FaultKind {
    /// Every kind.
    pub const ALL: [FaultKind; 7] = [
        FaultKind::CodeFence,
        FaultKind::TrailingComma,
        FaultKind::SurroundingProse,
        FaultKind::WrongField,
        FaultKind::UnknownTool,
        FaultKind::Truncated,
        FaultKind::Empty,
    ];

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::CodeFence => "code_fence",
            FaultKind::TrailingComma => "trailing_comma",
            FaultKind::SurroundingProse => "surrounding_prose",
            FaultKind::WrongField => "wrong_field",
            FaultKind::UnknownTool => "unknown_tool",
            FaultKind::Truncated => "truncated",
            FaultKind::Empty => "empty",
        }
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The name of the tool an [`FaultKind::UnknownTool`] fault calls.
pub const UNKNOWN_TOOL: &str = "search_everything";

/// How often to inject faults, and the seed that makes them reproducible.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FaultConfig {
    /// Fraction of replies corrupted, in `[0, 1]`.
    pub rate: f64,
    /// The seed; each task derives its own stream from it.
    pub seed: u64,
}

impl FaultConfig {
    /// A validated configuration: `rate` must be within `[0, 1]`.
    pub fn new(rate: f64, seed: u64) -> Result<Self, String> {
        if !(0.0..=1.0).contains(&rate) {
            return Err(format!("--faults {rate}: must be between 0 and 1"));
        }
        Ok(Self { rate, seed })
    }

    /// The seed of `task`'s stream: the same for every policy, so each policy meets the same
    /// first faults.
    pub fn task_seed(&self, task: usize) -> u64 {
        // SplitMix64 of seed and task index.
        let mut z = self
            .seed
            .wrapping_add((task as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl FromStr for FaultKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FaultKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown fault kind `{s}`"))
    }
}
