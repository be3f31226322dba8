use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::InvalidPolicy;

/// When a tool's breaker opens and how long it stays open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BreakerPolicy {
    threshold: u32,
    reset: Duration,
}

impl Default for BreakerPolicy {
    fn default() -> Self {
        Self {
            threshold: 5,
            reset: Duration::from_secs(60),
        }
    }
}

impl BreakerPolicy {
    /// Opens after `threshold` consecutive failures (0 disables the breaker), half-opens after `reset`.
    pub fn new(threshold: u32, reset: Duration) -> Result<Self, InvalidPolicy> {
        if threshold > 0 && reset.is_zero() {
            return Err(InvalidPolicy::new(
                "breaker.reset_ms",
                "must be greater than 0",
            ));
        }
        Ok(Self { threshold, reset })
    }

    /// Consecutive failures that open the breaker; 0 means never.
    pub fn threshold(&self) -> u32 {
        self.threshold
    }

    /// Time spent open before one probe call is let through.
    pub fn reset(&self) -> Duration {
        self.reset
    }
}

/// The state of one tool's breaker.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum BreakerState {
    /// Calls go through.
    #[default]
    Closed,
    /// Calls fail fast.
    Open,
    /// One probe call is allowed; its result closes or re-opens the breaker.
    HalfOpen,
}

/// A change of a breaker's state, for the trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakerTransition {
    /// The tool whose breaker changed.
    pub tool: String,
    /// The state before.
    pub from: BreakerState,
    /// The state after.
    pub to: BreakerState,
    /// Consecutive failures counted when it changed.
    pub failures: u32,
}

/// Whether a call may go through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BreakerDecision {
    /// The breaker is closed.
    Allow,
    /// The breaker is half-open and this call is its single probe.
    Probe,
    /// The breaker is open: fail fast.
    Reject {
        /// Time until a probe is allowed.
        retry_in: Duration,
    },
}

/// One tool's breaker as a value: its state, its consecutive failures, and the time it
/// opened or let its probe through, in milliseconds on the clock of whoever keeps it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BreakerRecord {
    /// The state.
    pub state: BreakerState,
    /// Consecutive failures counted.
    pub failures: u32,
    /// When it opened (open) or let its probe through (half-open), in milliseconds; 0 when
    /// closed.
    pub since_ms: i64,
}

impl BreakerRecord {
    /// Decides whether a call of `tool` may go through at `now_ms`. An open breaker whose
    /// reset time has passed becomes half-open and lets this call through as its probe; a
    /// half-open one whose probe was never reported within the reset time (its caller died)
    /// lets one more probe through.
    pub fn acquire(
        &mut self,
        tool: &str,
        now_ms: i64,
        policy: BreakerPolicy,
    ) -> (BreakerDecision, Option<BreakerTransition>) {
        if policy.threshold == 0 {
            return (BreakerDecision::Allow, None);
        }
        let reset = i64::try_from(policy.reset.as_millis()).unwrap_or(i64::MAX);
        let elapsed = now_ms.saturating_sub(self.since_ms).max(0);
        let wait = || BreakerDecision::Reject {
            retry_in: Duration::from_millis(u64::try_from(reset - elapsed).unwrap_or(0)),
        };
        match self.state {
            BreakerState::Closed => (BreakerDecision::Allow, None),
            BreakerState::Open if elapsed >= reset => {
                let transition = self.change(tool, BreakerState::HalfOpen, self.failures, now_ms);
                (BreakerDecision::Probe, transition)
            }
            BreakerState::HalfOpen if elapsed >= reset => {
                self.since_ms = now_ms;
                (BreakerDecision::Probe, None)
            }
            BreakerState::Open | BreakerState::HalfOpen => (wait(), None),
        }
    }

    /// Records the result of a call of `tool` that went through, at `now_ms`; returns the
    /// transition it caused.
    pub fn record(
        &mut self,
        tool: &str,
        success: bool,
        now_ms: i64,
        policy: BreakerPolicy,
    ) -> Option<BreakerTransition> {
        if policy.threshold == 0 {
            return None;
        }
        let failures = self.failures.saturating_add(1);
        match (self.state, success) {
            (_, true) => self.change(tool, BreakerState::Closed, 0, now_ms),
            (BreakerState::Closed, false) if failures < policy.threshold => {
                self.failures = failures;
                None
            }
            (_, false) => self.change(tool, BreakerState::Open, failures, now_ms),
        }
    }

    fn change(
        &mut self,
        tool: &str,
        to: BreakerState,
        failures: u32,
        now_ms: i64,
    ) -> Option<BreakerTransition> {
        let from = self.state;
        *self = Self {
            state: to,
            failures,
            since_ms: if to == BreakerState::Closed {
                0
            } else {
                now_ms
            },
        };
        (from != to).then(|| BreakerTransition {
            tool: tool.to_string(),
            from,
            to,
            failures,
        })
    }
}

impl BreakerState {
    /// The state's name as stored and shown: `closed`, `open` or `half_open`.
    pub fn as_str(self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half_open",
        }
    }

    /// The state named `name` ([`as_str`](Self::as_str)), if any.
    pub fn parse(name: &str) -> Option<Self> {
        [Self::Closed, Self::Open, Self::HalfOpen]
            .into_iter()
            .find(|state| state.as_str() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(threshold: u32, reset_ms: u64) -> BreakerPolicy {
        BreakerPolicy::new(threshold, Duration::from_millis(reset_ms)).unwrap()
    }

    #[test]
    fn opens_after_the_threshold_and_waits_out_the_reset() {
        let p = policy(2, 1000);
        let mut b = BreakerRecord::default();
        assert!(b.record("w", false, 0, p).is_none());
        let t = b.record("w", false, 10, p).unwrap();
        assert_eq!(
            (t.from, t.to, t.failures),
            (BreakerState::Closed, BreakerState::Open, 2)
        );
        assert_eq!(
            b.acquire("w", 400, p).0,
            BreakerDecision::Reject {
                retry_in: Duration::from_millis(610)
            }
        );
        let (gate, t) = b.acquire("w", 1010, p);
        assert_eq!(gate, BreakerDecision::Probe);
        assert_eq!(t.unwrap().to, BreakerState::HalfOpen);
    }

    #[test]
    fn a_probe_that_never_reports_is_replaced_after_the_reset() {
        let p = policy(1, 1000);
        let mut b = BreakerRecord::default();
        b.record("w", false, 0, p);
        assert_eq!(b.acquire("w", 1000, p).0, BreakerDecision::Probe);
        assert!(matches!(
            b.acquire("w", 1500, p).0,
            BreakerDecision::Reject { .. }
        ));
        assert_eq!(b.acquire("w", 2000, p), (BreakerDecision::Probe, None));
    }

    #[test]
    fn a_clock_that_goes_back_never_underflows() {
        let p = policy(1, 1000);
        let mut b = BreakerRecord::default();
        b.record("w", false, i64::MAX, p);
        assert!(matches!(
            b.acquire("w", i64::MIN, p).0,
            BreakerDecision::Reject { .. }
        ));
    }

    #[test]
    fn state_names_read_back() {
        for state in [
            BreakerState::Closed,
            BreakerState::Open,
            BreakerState::HalfOpen,
        ] {
            assert_eq!(BreakerState::parse(state.as_str()), Some(state));
        }
        assert_eq!(BreakerState::parse("ajar"), None);
    }
}
