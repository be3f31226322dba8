//! Stage names of model calls: `step_N` and `step_N_correction_M`.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The name of one model call within a run.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Stage(String);

impl Stage {
    /// The first call of action slot `step`, or its `correction`-th correction call.
    pub fn new(step: u32, correction: u32) -> Self {
        if correction == 0 {
            Self(format!("step_{step}"))
        } else {
            Self(format!("step_{step}_correction_{correction}"))
        }
    }

    /// The stage name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether this call is a correction round.
    pub fn is_correction(&self) -> bool {
        self.0.contains("_correction_")
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
