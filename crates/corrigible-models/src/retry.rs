//! The transport retry policy: which failures are retried, how often, and how long to wait.

use std::time::Duration;

use corrigible::policy::{Backoff, Jitter};

/// A retry policy that cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid retry policy: {0}")]
pub struct InvalidTransportRetry(String);

/// Transport retries of one model call: the engine's exponential [`Backoff`] (doubling, full
/// jitter), honouring `Retry-After` up to a cap. Never counted as corrections.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TransportRetry {
    max_retries: u32,
    backoff: Backoff,
    retry_after_cap: Duration,
}

impl Default for TransportRetry {
    /// 2 retries, 500 ms doubling up to 30 s, with jitter; `Retry-After` honoured up to 60 s.
    fn default() -> Self {
        Self {
            max_retries: 2,
            backoff: Backoff::default(),
            retry_after_cap: Duration::from_secs(60),
        }
    }
}

impl TransportRetry {
    /// `max_retries` retries (0 disables them), waiting `initial_backoff`, doubling, at most
    /// `max_backoff`.
    pub fn new(
        max_retries: u32,
        initial_backoff: Duration,
        max_backoff: Duration,
    ) -> Result<Self, InvalidTransportRetry> {
        if max_backoff < initial_backoff {
            return Err(InvalidTransportRetry(format!(
                "max_backoff ({max_backoff:?}) is shorter than initial_backoff ({initial_backoff:?})"
            )));
        }
        let backoff = Backoff::new(initial_backoff, 2.0, max_backoff, Jitter::Full)
            .map_err(|e| InvalidTransportRetry(e.to_string()))?;
        Ok(Self {
            max_retries,
            backoff,
            ..Self::default()
        })
    }

    /// No transport retries at all.
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// The longest `Retry-After` wait honoured; longer ones are cut to this.
    pub fn with_retry_after_cap(mut self, cap: Duration) -> Self {
        self.retry_after_cap = cap;
        self
    }

    /// Whether backoff waits are randomized (uniformly between zero and the nominal wait).
    pub fn with_jitter(mut self, jitter: bool) -> Self {
        self.backoff = self
            .backoff
            .with_jitter(if jitter { Jitter::Full } else { Jitter::None });
        self
    }

    /// How many retries a call may make.
    pub fn max_retries(&self) -> u32 {
        self.max_retries
    }

    /// The nominal waits before each retry, without jitter.
    pub fn schedule(&self) -> impl Iterator<Item = Duration> + use<> {
        let backoff = self.backoff;
        (0..self.max_retries).map(move |n| backoff.base_delay(n))
    }

    /// After `retries_done` retries, with the server's `Retry-After` if it sent one: how long to
    /// wait before the next retry, or `None` when the retries are spent.
    pub fn next_delay(&self, retries_done: u32, retry_after: Option<Duration>) -> Option<Duration> {
        if retries_done >= self.max_retries {
            return None;
        }
        if let Some(wait) = retry_after {
            return Some(wait.min(self.retry_after_cap));
        }
        Some(self.backoff.delay(retries_done, &mut rand::rng()))
    }
}

/// Parses a `Retry-After` header given in seconds (an HTTP date is ignored).
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    let secs: f64 = value.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(86_400.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_doubles_up_to_the_cap() {
        let p = TransportRetry::new(4, Duration::from_millis(500), Duration::from_secs(1)).unwrap();
        let waits: Vec<_> = p.schedule().collect();
        assert_eq!(
            waits,
            [500, 1000, 1000, 1000].map(Duration::from_millis).to_vec()
        );
    }

    #[test]
    fn next_delay_stops_after_the_budget() {
        let p = TransportRetry::default().with_jitter(false);
        assert_eq!(p.next_delay(0, None), Some(Duration::from_millis(500)));
        assert_eq!(p.next_delay(1, None), Some(Duration::from_secs(1)));
        assert_eq!(p.next_delay(2, None), None);
        assert_eq!(TransportRetry::none().next_delay(0, None), None);
    }

    #[test]
    fn jitter_stays_under_the_nominal_wait() {
        let p = TransportRetry::default();
        for _ in 0..50 {
            assert!(p.next_delay(1, None).unwrap() <= Duration::from_secs(1));
        }
    }

    #[test]
    fn retry_after_is_honoured_and_capped() {
        let p = TransportRetry::default().with_retry_after_cap(Duration::from_secs(5));
        assert_eq!(
            p.next_delay(0, Some(Duration::from_secs(3))),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            p.next_delay(0, Some(Duration::from_secs(90))),
            Some(Duration::from_secs(5))
        );
        assert_eq!(parse_retry_after(" 2 "), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }

    #[test]
    fn rejects_inverted_bounds() {
        assert!(TransportRetry::new(1, Duration::from_secs(2), Duration::from_secs(1)).is_err());
    }
}
