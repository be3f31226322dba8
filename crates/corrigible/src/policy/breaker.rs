use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakerState {
    /// Calls go through.
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

#[derive(Debug, Clone, Copy)]
enum Inner {
    Closed { failures: u32 },
    Open { since: Instant, failures: u32 },
    HalfOpen { failures: u32 },
}

impl Inner {
    fn state(&self) -> BreakerState {
        match self {
            Inner::Closed { .. } => BreakerState::Closed,
            Inner::Open { .. } => BreakerState::Open,
            Inner::HalfOpen { .. } => BreakerState::HalfOpen,
        }
    }
}

/// Per-tool circuit breakers, shared by every run of a process (wrap in `Arc`).
#[derive(Debug)]
pub struct CircuitBreakers {
    policy: BreakerPolicy,
    tools: Mutex<HashMap<String, Inner>>,
}

impl Default for CircuitBreakers {
    fn default() -> Self {
        Self::new(BreakerPolicy::default())
    }
}

impl CircuitBreakers {
    /// Breakers that follow `policy`.
    pub fn new(policy: BreakerPolicy) -> Self {
        Self {
            policy,
            tools: Mutex::new(HashMap::new()),
        }
    }

    /// The policy in force.
    pub fn policy(&self) -> BreakerPolicy {
        self.policy
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Inner>> {
        self.tools
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Decides whether a call of `tool` may go through now; an open breaker whose reset time
    /// has passed becomes half-open and lets this one call through as its probe.
    pub fn acquire(&self, tool: &str) -> (BreakerDecision, Option<BreakerTransition>) {
        self.acquire_under(tool, self.policy)
    }

    /// [`acquire`](Self::acquire) with `policy`'s threshold and reset time instead of the
    /// breakers' own: a run whose policy overrides them shares the state, not the settings.
    pub fn acquire_under(
        &self,
        tool: &str,
        policy: BreakerPolicy,
    ) -> (BreakerDecision, Option<BreakerTransition>) {
        if policy.threshold == 0 {
            return (BreakerDecision::Allow, None);
        }
        let mut tools = self.lock();
        let inner = tools
            .entry(tool.to_string())
            .or_insert(Inner::Closed { failures: 0 });
        match *inner {
            Inner::Closed { .. } => (BreakerDecision::Allow, None),
            Inner::HalfOpen { .. } => (
                BreakerDecision::Reject {
                    retry_in: policy.reset,
                },
                None,
            ),
            Inner::Open { since, failures } => {
                let elapsed = since.elapsed();
                if elapsed >= policy.reset {
                    *inner = Inner::HalfOpen { failures };
                    let transition = BreakerTransition {
                        tool: tool.to_string(),
                        from: BreakerState::Open,
                        to: BreakerState::HalfOpen,
                        failures,
                    };
                    (BreakerDecision::Probe, Some(transition))
                } else {
                    (
                        BreakerDecision::Reject {
                            retry_in: policy.reset - elapsed,
                        },
                        None,
                    )
                }
            }
        }
    }

    /// Records the result of a call that went through; returns the transition it caused.
    pub fn record(&self, tool: &str, success: bool) -> Option<BreakerTransition> {
        self.record_under(tool, success, self.policy)
    }

    /// [`record`](Self::record) with `policy`'s threshold instead of the breakers' own.
    pub fn record_under(
        &self,
        tool: &str,
        success: bool,
        policy: BreakerPolicy,
    ) -> Option<BreakerTransition> {
        if policy.threshold == 0 {
            return None;
        }
        let mut tools = self.lock();
        let inner = tools
            .entry(tool.to_string())
            .or_insert(Inner::Closed { failures: 0 });
        let before = *inner;
        let next = match (before, success) {
            (_, true) => Inner::Closed { failures: 0 },
            (Inner::Closed { failures }, false) if failures + 1 >= policy.threshold => {
                Inner::Open {
                    since: Instant::now(),
                    failures: failures + 1,
                }
            }
            (Inner::Closed { failures }, false) => Inner::Closed {
                failures: failures + 1,
            },
            (Inner::HalfOpen { failures } | Inner::Open { failures, .. }, false) => Inner::Open {
                since: Instant::now(),
                failures: failures + 1,
            },
        };
        *inner = next;
        let failures = match next {
            Inner::Closed { failures }
            | Inner::Open { failures, .. }
            | Inner::HalfOpen { failures } => failures,
        };
        (before.state() != next.state()).then(|| BreakerTransition {
            tool: tool.to_string(),
            from: before.state(),
            to: next.state(),
            failures,
        })
    }

    /// The current state of `tool`'s breaker.
    pub fn state(&self, tool: &str) -> BreakerState {
        self.lock()
            .get(tool)
            .map(Inner::state)
            .unwrap_or(BreakerState::Closed)
    }

    /// Every known breaker and its state, sorted by tool name.
    pub fn states(&self) -> Vec<(String, BreakerState)> {
        let mut all: Vec<(String, BreakerState)> = self
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), v.state()))
            .collect();
        all.sort();
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn opens_probes_and_closes() {
        let b = CircuitBreakers::new(BreakerPolicy::new(2, Duration::from_secs(60)).unwrap());
        assert_eq!(b.acquire("w").0, BreakerDecision::Allow);
        assert!(b.record("w", false).is_none());
        let t = b.record("w", false).unwrap();
        assert_eq!((t.from, t.to), (BreakerState::Closed, BreakerState::Open));
        assert!(matches!(b.acquire("w").0, BreakerDecision::Reject { .. }));
        tokio::time::advance(Duration::from_secs(61)).await;
        assert_eq!(b.acquire("w").0, BreakerDecision::Probe);
        assert!(
            matches!(b.acquire("w").0, BreakerDecision::Reject { .. }),
            "only one probe"
        );
        let t = b.record("w", true).unwrap();
        assert_eq!(
            (t.from, t.to),
            (BreakerState::HalfOpen, BreakerState::Closed)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn failed_probe_reopens() {
        let b = CircuitBreakers::new(BreakerPolicy::new(1, Duration::from_secs(5)).unwrap());
        b.record("w", false);
        tokio::time::advance(Duration::from_secs(5)).await;
        assert_eq!(b.acquire("w").0, BreakerDecision::Probe);
        let t = b.record("w", false).unwrap();
        assert_eq!(t.to, BreakerState::Open);
    }
}
