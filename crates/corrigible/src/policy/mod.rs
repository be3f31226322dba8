//! Bounds and resilience policies: each a small value that makes one decision.
//!
//! - [`Limits`]: actions per run, corrections per slot, output retries, usage limits.
//! - [`Backoff`]: the delays between tool execution retries, as an iterator.
//! - [`RetryPolicy`]: how many times a `Failed` tool call is retried, and with which backoff.
//! - [`BreakerPolicy`] and [`CircuitBreakers`]: per-tool circuit breakers shared by all runs,
//!   and by several processes through a [`BreakerStore`].
//! - [`ToolPolicy`]: per-tool overrides (retries, rejection budget, idempotency).
//! - [`Checks`] and [`Profile`]: which evidence rules judge a decision.

mod backoff;
mod breaker;
mod breaker_store;
mod breakers;
mod checks;
mod limits;
mod tools;

pub use backoff::{Backoff, Jitter};
pub use breaker::{BreakerDecision, BreakerPolicy, BreakerRecord, BreakerState, BreakerTransition};
pub use breaker_store::{BreakerChange, BreakerStore, BreakerStoreError};
pub use breakers::CircuitBreakers;
pub use checks::{Checks, Profile};
pub use limits::{Limits, UsageLimitHit};
pub use tools::{Policy, RetryPolicy, RetryScope, ToolPolicy};

/// A policy value is out of range.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("invalid policy `{field}`: {reason}")]
pub struct InvalidPolicy {
    /// The field at fault, e.g. `backoff.multiplier`.
    pub field: String,
    /// What is wrong with it.
    pub reason: String,
}

impl InvalidPolicy {
    pub(crate) fn new(field: &str, reason: impl Into<String>) -> Self {
        Self {
            field: field.to_string(),
            reason: reason.into(),
        }
    }
}
