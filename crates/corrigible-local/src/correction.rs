//! How a correction round is decoded: greedy under the narrowed schema first, then seeded
//! samples while the reply would repeat what was rejected, then greedy again under the
//! stricter fallback rule (see [`corrigible::Allowed::fallback`]).

use corrigible::{Allowed, CorrectionContext};

use crate::config::{Constrain, LocalConfig};
use crate::sampler::Sampler;

/// Seeded samples tried, by default, after a correction reply that repeats the rejected one.
pub const MAX_RESAMPLES: u32 = 2;

/// Temperature of a correction round's samples.
pub const CORRECTION_TEMPERATURE: f64 = 0.8;

/// Nucleus mass of a correction round's samples.
pub const CORRECTION_TOP_P: f64 = 0.95;

/// The seed of sample `attempt` (from 1) of correction round `round`: a pure function of the
/// configured seed, so a sampled correction is reproducible.
pub fn correction_seed(seed: u64, round: u32, attempt: u32) -> u64 {
    let mix = (u64::from(round) << 32) | u64::from(attempt);
    seed ^ mix.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The decoding plan of one correction round.
pub(crate) struct CorrectionDecoding<'a> {
    config: &'a LocalConfig,
    round: u32,
    attempt: u32,
    repeats: u32,
    fell_back: bool,
}

impl<'a> CorrectionDecoding<'a> {
    pub fn new(config: &'a LocalConfig, correction: &CorrectionContext) -> Self {
        Self {
            config,
            round: correction.round,
            attempt: 0,
            repeats: 0,
            fell_back: false,
        }
    }

    fn sampled(&self) -> bool {
        self.attempt > 0 || self.config.temperature.is_some_and(|t| t > 0.0)
    }

    fn seed(&self) -> u64 {
        if self.attempt == 0 {
            self.config.seed
        } else {
            correction_seed(self.config.seed, self.round, self.attempt)
        }
    }

    fn temperature(&self) -> f64 {
        match self.config.temperature {
            Some(t) if t > 0.0 => t,
            _ => CORRECTION_TEMPERATURE,
        }
    }

    /// The sampler of the current attempt.
    pub fn sampler(&self) -> Sampler {
        if self.sampled() {
            let top_p = self.config.top_p.unwrap_or(CORRECTION_TOP_P);
            Sampler::new(Some(self.temperature()), Some(top_p), self.seed())
        } else {
            Sampler::Greedy
        }
    }

    /// Moves to the next seeded sample after a repeat; `false` when the samples are used up.
    pub fn next_attempt(&mut self) -> bool {
        self.repeats += 1;
        if self.attempt >= self.config.correction_samples || self.fell_back {
            return false;
        }
        self.attempt += 1;
        true
    }

    /// Starts over greedily under the stricter fallback rule.
    pub fn fall_back(&mut self) {
        self.fell_back = true;
        self.attempt = 0;
    }

    /// Whether the fallback rule is in force.
    pub fn fell_back(&self) -> bool {
        self.fell_back
    }

    /// How the accepted attempt was decoded, e.g.
    /// `sampled(t=0.8,top_p=0.95,seed=…)+schema narrowed=tool_or_final(calculator) repeats=1`.
    pub fn label(&self, constrain: Constrain, allowed: &Allowed) -> String {
        let sampling = if self.sampled() {
            let top_p = self.config.top_p.unwrap_or(CORRECTION_TOP_P);
            format!(
                "sampled(t={},top_p={top_p},seed={})",
                self.temperature(),
                self.seed()
            )
        } else {
            "greedy".to_string()
        };
        let grammar = match constrain {
            Constrain::Schema => "schema",
            Constrain::Envelope | Constrain::Off => "envelope",
        };
        let mut label = format!("{sampling}+{grammar} narrowed={allowed}");
        if self.repeats > 0 {
            label.push_str(&format!(" repeats={}", self.repeats));
        }
        label
    }
}

#[cfg(test)]
mod tests {
    use corrigible::Category;

    use super::*;

    fn context() -> CorrectionContext {
        CorrectionContext {
            round: 2,
            ..CorrectionContext::first_round(Category::InvalidJson, "x")
        }
    }

    #[test]
    fn greedy_first_then_distinct_seeds() {
        let config = LocalConfig::new("m.gguf");
        let mut plan = CorrectionDecoding::new(&config, &context());
        assert!(matches!(plan.sampler(), Sampler::Greedy));
        assert_eq!(
            plan.label(Constrain::Off, &Allowed::AnyDecision),
            "greedy+envelope narrowed=any_decision"
        );
        let mut seeds = Vec::new();
        while plan.next_attempt() {
            assert!(matches!(plan.sampler(), Sampler::Random { .. }));
            seeds.push(plan.seed());
        }
        assert_eq!(seeds.len() as u32, MAX_RESAMPLES);
        seeds.dedup();
        assert_eq!(seeds.len() as u32, MAX_RESAMPLES);
        assert!(
            plan.label(Constrain::Schema, &Allowed::FinalOnly)
                .ends_with(&format!(
                    "+schema narrowed=final_only repeats={}",
                    MAX_RESAMPLES + 1
                ))
        );
    }

    #[test]
    fn the_fallback_starts_greedy_and_keeps_counting_repeats() {
        let config = LocalConfig::new("m.gguf");
        let mut plan = CorrectionDecoding::new(&config, &context());
        while plan.next_attempt() {}
        plan.fall_back();
        assert!(plan.fell_back());
        assert!(matches!(plan.sampler(), Sampler::Greedy));
        assert!(!plan.next_attempt());
        let allowed = Allowed::ToolsExcept {
            tools: vec!["calculator".into()],
        };
        assert_eq!(
            plan.label(Constrain::Schema, &allowed),
            format!(
                "greedy+schema narrowed=tools_except(calculator) repeats={}",
                MAX_RESAMPLES + 2
            )
        );
    }

    #[test]
    fn seeds_depend_on_seed_round_and_attempt_only() {
        assert_eq!(correction_seed(7, 1, 1), correction_seed(7, 1, 1));
        assert_ne!(correction_seed(7, 1, 1), correction_seed(7, 2, 1));
        assert_ne!(correction_seed(7, 1, 1), correction_seed(7, 1, 2));
        assert_ne!(correction_seed(7, 1, 1), correction_seed(8, 1, 1));
    }
}
