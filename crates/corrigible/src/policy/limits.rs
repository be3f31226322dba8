use std::fmt;

use crate::model::Usage;

/// Bounds on one run. Counters of a kind are independent of each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Executed tool actions per run (default 8).
    pub max_actions: u32,
    /// Decision corrections per action slot (default 2: at most 3 model calls per slot).
    pub max_corrections: u32,
    /// Output-validator rejections sent back per run (default 1).
    pub output_retries: u32,
    /// Corrections of a repeated action (`repeated_action`, `repeated_failed_action`) per
    /// action slot; once they are spent, the slot's next round may only give the final answer
    /// (default 1).
    pub max_repeats: u32,
    /// Model calls per run, if limited.
    pub max_model_calls: Option<u32>,
    /// Input plus output tokens per run, if limited.
    pub max_tokens: Option<u64>,
    /// Input tokens per run, if limited.
    pub max_input_tokens: Option<u64>,
    /// Output tokens per run, if limited.
    pub max_output_tokens: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_actions: 8,
            max_corrections: 2,
            output_retries: 1,
            max_repeats: 1,
            max_model_calls: None,
            max_tokens: None,
            max_input_tokens: None,
            max_output_tokens: None,
        }
    }
}

/// A usage limit that stops a run before its next model call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsageLimitHit {
    /// Which limit: `max_model_calls`, `max_tokens`, `max_input_tokens` or `max_output_tokens`.
    pub limit: &'static str,
    /// The limit's value.
    pub allowed: u64,
    /// What was spent.
    pub spent: u64,
}

impl fmt::Display for UsageLimitHit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} reached: {} spent of {}",
            self.limit, self.spent, self.allowed
        )
    }
}

impl Limits {
    /// The first usage limit that `model_calls` and `usage` have reached, if any.
    pub fn usage_limit_hit(&self, model_calls: u32, usage: Usage) -> Option<UsageLimitHit> {
        let checks = [
            (
                "max_model_calls",
                self.max_model_calls.map(u64::from),
                u64::from(model_calls),
            ),
            ("max_tokens", self.max_tokens, usage.total()),
            (
                "max_input_tokens",
                self.max_input_tokens,
                usage.input_tokens,
            ),
            (
                "max_output_tokens",
                self.max_output_tokens,
                usage.output_tokens,
            ),
        ];
        checks.into_iter().find_map(|(limit, allowed, spent)| {
            allowed
                .filter(|allowed| spent >= *allowed)
                .map(|allowed| UsageLimitHit {
                    limit,
                    allowed,
                    spent,
                })
        })
    }
}
