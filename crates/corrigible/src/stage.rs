//! Stages of model calls: which action slot, and which correction round of it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// One model call's place in a run: action slot `step` (from 1) and its `correction`-th
/// correction round (0 for the slot's first call). Written `step_N` or `step_N_correction_M`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Stage {
    step: u32,
    correction: u32,
}

/// A stage name that is not `step_N` or `step_N_correction_M`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("`{0}` is not a stage: expected `step_N` or `step_N_correction_M`")]
pub struct StageParseError(String);

impl Stage {
    /// The first call of action slot `step`, or its `correction`-th correction call.
    pub fn new(step: u32, correction: u32) -> Self {
        Self { step, correction }
    }

    /// The action slot, from 1.
    pub fn step(self) -> u32 {
        self.step
    }

    /// The correction round within the slot; 0 for the slot's first call.
    pub fn correction(self) -> u32 {
        self.correction
    }

    /// Whether this call is a correction round.
    pub fn is_correction(self) -> bool {
        self.correction > 0
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.correction == 0 {
            write!(f, "step_{}", self.step)
        } else {
            write!(f, "step_{}_correction_{}", self.step, self.correction)
        }
    }
}

impl FromStr for Stage {
    type Err = StageParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let error = || StageParseError(s.to_string());
        let rest = s.strip_prefix("step_").ok_or_else(error)?;
        let (step, correction) = match rest.split_once("_correction_") {
            Some((step, correction)) => (step, Some(correction)),
            None => (rest, None),
        };
        let number = |text: &str| -> Result<u32, StageParseError> {
            if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
                return Err(error());
            }
            text.parse().map_err(|_| error())
        };
        let stage = Stage::new(
            number(step)?,
            correction.map(number).transpose()?.unwrap_or(0),
        );
        if stage.step == 0 || (correction.is_some() && stage.correction == 0) {
            return Err(error());
        }
        Ok(stage)
    }
}

impl TryFrom<String> for Stage {
    type Error = StageParseError;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        value.parse()
    }
}

impl From<Stage> for String {
    fn from(stage: Stage) -> Self {
        stage.to_string()
    }
}

impl PartialEq<&str> for Stage {
    fn eq(&self, other: &&str) -> bool {
        other.parse::<Stage>().is_ok_and(|s| s == *self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_read_back_as_written() {
        for stage in [Stage::new(1, 0), Stage::new(3, 2), Stage::new(12, 10)] {
            assert_eq!(stage.to_string().parse::<Stage>(), Ok(stage));
            let json = serde_json::to_string(&stage).unwrap();
            assert_eq!(serde_json::from_str::<Stage>(&json).unwrap(), stage);
        }
        assert_eq!(Stage::new(2, 1).to_string(), "step_2_correction_1");
        assert_eq!(serde_json::to_value(Stage::new(4, 0)).unwrap(), "step_4");
    }

    #[test]
    fn anything_else_is_refused() {
        for bad in [
            "",
            "step_",
            "step_0",
            "step_x",
            "step_1_correction_",
            "step_1_correction_0",
            "step_+1",
            "step_1_correction_1_correction_2",
            "Step_1",
            "step_99999999999",
        ] {
            assert!(bad.parse::<Stage>().is_err(), "{bad}");
        }
        assert!(serde_json::from_str::<Stage>("\"step_1_retry\"").is_err());
    }
}
