use std::time::Duration;

use rand::{Rng, SeedableRng, rngs::StdRng};

use super::InvalidPolicy;

/// How much randomness is added to each delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Jitter {
    /// Exact delays.
    None,
    /// "Full jitter": a uniform delay between zero and the computed delay.
    #[default]
    Full,
}

/// An exponential backoff schedule: `initial`, then ×`multiplier`, capped at `max`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    initial: Duration,
    multiplier: f64,
    max: Duration,
    jitter: Jitter,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(500),
            multiplier: 2.0,
            max: Duration::from_secs(30),
            jitter: Jitter::Full,
        }
    }
}

impl Backoff {
    /// A validated schedule: the multiplier is at least 1 and `initial <= max`.
    pub fn new(
        initial: Duration,
        multiplier: f64,
        max: Duration,
        jitter: Jitter,
    ) -> Result<Self, InvalidPolicy> {
        if !(multiplier.is_finite() && multiplier >= 1.0) {
            return Err(InvalidPolicy::new(
                "backoff.multiplier",
                "must be a number >= 1",
            ));
        }
        if initial > max {
            return Err(InvalidPolicy::new(
                "backoff.initial",
                "must not exceed backoff.max",
            ));
        }
        Ok(Self {
            initial,
            multiplier,
            max,
            jitter,
        })
    }

    /// The same schedule with jitter `jitter`.
    pub fn with_jitter(self, jitter: Jitter) -> Self {
        Self { jitter, ..self }
    }

    /// The first delay.
    pub fn initial(&self) -> Duration {
        self.initial
    }

    /// The cap.
    pub fn max(&self) -> Duration {
        self.max
    }

    /// The growth factor.
    pub fn multiplier(&self) -> f64 {
        self.multiplier
    }

    /// The jitter mode.
    pub fn jitter(&self) -> Jitter {
        self.jitter
    }

    /// The capped delay before retry `n` (from 0), before jitter.
    pub fn base_delay(&self, n: u32) -> Duration {
        let factor = self.multiplier.powi(n.min(64) as i32);
        let secs = (self.initial.as_secs_f64() * factor).min(self.max.as_secs_f64());
        Duration::from_secs_f64(secs)
    }

    /// The delay before retry `n` (from 0), with jitter drawn from `rng`.
    pub fn delay<R: Rng + ?Sized>(&self, n: u32, rng: &mut R) -> Duration {
        let base = self.base_delay(n);
        match self.jitter {
            Jitter::None => base,
            Jitter::Full => Duration::from_secs_f64(rng.random_range(0.0..=base.as_secs_f64())),
        }
    }

    /// The delays before each retry, endless; jitter drawn from a generator seeded with `seed`.
    pub fn delays(&self, seed: u64) -> impl Iterator<Item = Duration> + use<> {
        let backoff = *self;
        let mut rng = StdRng::seed_from_u64(seed);
        (0u32..).map(move |n| backoff.delay(n, &mut rng))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_then_capped() {
        let b = Backoff::new(
            Duration::from_millis(500),
            2.0,
            Duration::from_secs(3),
            Jitter::None,
        )
        .unwrap();
        let d: Vec<u128> = b.delays(0).take(5).map(|d| d.as_millis()).collect();
        assert_eq!(d, vec![500, 1000, 2000, 3000, 3000]);
    }

    #[test]
    fn full_jitter_stays_under_the_base_and_is_seeded() {
        let b = Backoff::default();
        let a: Vec<Duration> = b.delays(7).take(6).collect();
        let again: Vec<Duration> = b.delays(7).take(6).collect();
        assert_eq!(a, again);
        for (n, d) in a.iter().enumerate() {
            assert!(*d <= b.base_delay(n as u32));
        }
    }

    #[test]
    fn rejects_bad_values() {
        assert!(
            Backoff::new(
                Duration::from_secs(1),
                0.5,
                Duration::from_secs(2),
                Jitter::None
            )
            .is_err()
        );
        assert!(
            Backoff::new(
                Duration::from_secs(3),
                2.0,
                Duration::from_secs(2),
                Jitter::None
            )
            .is_err()
        );
    }
}
