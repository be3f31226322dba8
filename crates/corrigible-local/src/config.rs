//! Configuration of the embedded model.

use std::path::PathBuf;
use std::str::FromStr;

use corrigible_llama::Weights;

use crate::error::LocalError;
use crate::think::Think;

/// How strictly the decoder is held to the decision's JSON Schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Constrain {
    /// Free generation: the reply may be anything, the engine corrects it.
    Off,
    /// The decision's shape with the registered tool names; `tool_input` is any object.
    Envelope,
    /// The full schema: each tool's input follows that tool's input schema.
    #[default]
    Schema,
}

impl Constrain {
    /// The name used on the command line.
    pub fn as_str(&self) -> &'static str {
        match self {
            Constrain::Off => "off",
            Constrain::Envelope => "envelope",
            Constrain::Schema => "schema",
        }
    }
}

impl std::fmt::Display for Constrain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Constrain {
    type Err = LocalError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "off" => Ok(Constrain::Off),
            "envelope" => Ok(Constrain::Envelope),
            "schema" => Ok(Constrain::Schema),
            other => Err(LocalError::Config(format!(
                "unknown constraint mode `{other}`: expected `schema`, `envelope` or `off`"
            ))),
        }
    }
}

/// Everything needed to load and run the embedded model.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalConfig {
    /// The GGUF file (see [`crate::resolve_model_path`]).
    pub model_path: PathBuf,
    /// Constrained decoding mode.
    pub constrain: Constrain,
    /// The most tokens generated per model call.
    pub max_tokens: usize,
    /// Sampling temperature; `None` or `0` means greedy decoding.
    pub temperature: Option<f64>,
    /// Nucleus sampling mass (only with a temperature).
    pub top_p: Option<f64>,
    /// Seed of the sampler (only with a temperature).
    pub seed: u64,
    /// Worker threads for inference; `None` uses every core.
    pub threads: Option<usize>,
    /// How the weights are held in memory.
    pub weights: Weights,
    /// Seeded samples a correction round tries after a reply that repeats the rejected one,
    /// before its fallback rule and its last resort (see [`crate::MAX_RESAMPLES`]).
    pub correction_samples: u32,
    /// When the model thinks before a decision.
    pub think: Think,
    /// The most tokens of one thought (0: decide at once, whatever [`Self::think`] says).
    pub think_tokens: usize,
    /// Whether each calculation a thought states (`20 + 80 = 110`) is checked as its line is
    /// written, and a value that does not hold replaced by the right one before the model
    /// goes on (see `docs/thinking.md`).
    pub thought_calculator: bool,
    /// The directory where the pre-filled keys and values of the prompt's fixed prefix (the
    /// system prompt and the worked examples) are kept between processes; `None` keeps them in
    /// memory only (see [`crate::PrefixStore`]).
    pub prefix_cache: Option<PathBuf>,
    /// Model calls decoded at once: with more than one, concurrent calls each get a sequence
    /// of their own and are decoded together, one forward pass a token for all of them
    /// (continuous batching); further calls wait for a sequence. Each sequence's key/value
    /// cache takes about 28 KiB a position on the default model.
    pub sequences: usize,
}

/// Most sequences decoded at once.
pub const MAX_SEQUENCES: usize = 64;

impl LocalConfig {
    /// The defaults for the model at `model_path`: schema-constrained greedy decoding of
    /// decisions of up to 256 tokens without a thought first, all cores, no prefix store.
    pub fn new(model_path: impl Into<PathBuf>) -> Self {
        Self {
            model_path: model_path.into(),
            constrain: Constrain::Schema,
            max_tokens: 256,
            temperature: None,
            top_p: None,
            seed: 0,
            threads: None,
            weights: Weights::Requantize,
            correction_samples: crate::correction::MAX_RESAMPLES,
            think: Think::default(),
            think_tokens: crate::thought::DEFAULT_THINK_TOKENS,
            thought_calculator: true,
            prefix_cache: None,
            sequences: 1,
        }
    }

    /// Checks the values that can be wrong.
    pub fn validate(&self) -> Result<(), LocalError> {
        if self.max_tokens == 0 {
            return Err(LocalError::Config("max_tokens must be at least 1".into()));
        }
        if let Some(t) = self.temperature
            && !(t.is_finite() && t >= 0.0)
        {
            return Err(LocalError::Config(format!(
                "temperature must be a finite number >= 0, got {t}"
            )));
        }
        if let Some(p) = self.top_p
            && !(p > 0.0 && p <= 1.0)
        {
            return Err(LocalError::Config(format!(
                "top_p must be in (0, 1], got {p}"
            )));
        }
        if self.threads == Some(0) {
            return Err(LocalError::Config("threads must be at least 1".into()));
        }
        if !(1..=MAX_SEQUENCES).contains(&self.sequences) {
            return Err(LocalError::Config(format!(
                "sequences must be from 1 to {MAX_SEQUENCES}, got {}",
                self.sequences
            )));
        }
        Ok(())
    }

    /// The decoding label reported in [`corrigible::ModelReply::decoding`] under `constrain`.
    pub fn decoding_label(&self, constrain: Constrain) -> String {
        let sampling = match self.temperature {
            Some(t) if t > 0.0 => match self.top_p {
                Some(p) => format!("sampled(t={t},top_p={p},seed={})", self.seed),
                None => format!("sampled(t={t},seed={})", self.seed),
            },
            _ => "greedy".to_string(),
        };
        match constrain {
            Constrain::Off => sampling,
            Constrain::Envelope => format!("{sampling}+envelope"),
            Constrain::Schema => format!("{sampling}+schema"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constrain_parses_its_names() {
        for c in [Constrain::Off, Constrain::Envelope, Constrain::Schema] {
            assert_eq!(c.as_str().parse::<Constrain>().ok(), Some(c));
        }
        assert!("strict".parse::<Constrain>().is_err());
    }

    #[test]
    fn defaults_are_greedy_schema() {
        let c = LocalConfig::new("m.gguf");
        assert_eq!(c.decoding_label(c.constrain), "greedy+schema");
        assert_eq!(c.max_tokens, 256);
        assert!(c.validate().is_ok());
    }

    #[test]
    fn bad_values_are_rejected() {
        let mut c = LocalConfig::new("m.gguf");
        c.top_p = Some(1.5);
        assert!(c.validate().is_err());
        c.top_p = None;
        c.temperature = Some(f64::NAN);
        assert!(c.validate().is_err());
        c.temperature = None;
        c.sequences = 0;
        assert!(c.validate().is_err());
        c.sequences = MAX_SEQUENCES + 1;
        assert!(c.validate().is_err());
        c.sequences = MAX_SEQUENCES;
        assert!(c.validate().is_ok());
    }
}
