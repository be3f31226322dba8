//! Picking the next token from the logits: greedy, or temperature and nucleus with a seed.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// How the next token is chosen.
#[derive(Debug)]
pub enum Sampler {
    /// The most likely token; ties go to the lowest id.
    Greedy,
    /// Sampled from the softmax at `temperature`, restricted to the `top_p` mass.
    Random {
        /// Softmax temperature (> 0).
        temperature: f64,
        /// Nucleus mass in (0, 1].
        top_p: f64,
        /// The generator, seeded per call.
        rng: Box<StdRng>,
    },
}

impl Sampler {
    /// Greedy when `temperature` is absent or zero.
    pub fn new(temperature: Option<f64>, top_p: Option<f64>, seed: u64) -> Self {
        match temperature {
            Some(t) if t > 0.0 => Sampler::Random {
                temperature: t,
                top_p: top_p.unwrap_or(1.0),
                rng: Box::new(StdRng::seed_from_u64(seed)),
            },
            _ => Sampler::Greedy,
        }
    }

    /// The chosen token, or `None` when every logit is negative infinity or NaN.
    pub fn pick(&mut self, logits: &[f32]) -> Option<u32> {
        match self {
            Sampler::Greedy => argmax(logits),
            Sampler::Random {
                temperature,
                top_p,
                rng,
            } => sample(logits, *temperature, *top_p, rng),
        }
    }
}

fn argmax(logits: &[f32]) -> Option<u32> {
    let mut best: Option<(usize, f32)> = None;
    for (i, &l) in logits.iter().enumerate() {
        if l.is_finite() && best.is_none_or(|(_, b)| l > b) {
            best = Some((i, l));
        }
    }
    best.and_then(|(i, _)| u32::try_from(i).ok())
}

fn sample(logits: &[f32], temperature: f64, top_p: f64, rng: &mut StdRng) -> Option<u32> {
    let max = logits
        .iter()
        .copied()
        .filter(|l| l.is_finite())
        .fold(f32::NEG_INFINITY, f32::max);
    if !max.is_finite() {
        return None;
    }
    let mut probs: Vec<(usize, f64)> = logits
        .iter()
        .enumerate()
        .filter(|(_, l)| l.is_finite())
        .map(|(i, &l)| (i, ((l - max) as f64 / temperature).exp()))
        .collect();
    probs.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let total: f64 = probs.iter().map(|p| p.1).sum();
    let mut kept = 0.0;
    let mut cut = probs.len();
    for (n, p) in probs.iter().enumerate() {
        kept += p.1 / total;
        if kept >= top_p {
            cut = n + 1;
            break;
        }
    }
    probs.truncate(cut);
    let mass: f64 = probs.iter().map(|p| p.1).sum();
    let mut target = rng.random::<f64>() * mass;
    for &(i, p) in &probs {
        if target < p {
            return u32::try_from(i).ok();
        }
        target -= p;
    }
    probs.last().and_then(|&(i, _)| u32::try_from(i).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_takes_the_largest_finite_logit() {
        let mut s = Sampler::new(None, None, 0);
        assert_eq!(s.pick(&[0.1, f32::NEG_INFINITY, 2.0, f32::NAN]), Some(2));
        assert_eq!(s.pick(&[f32::NEG_INFINITY]), None);
    }

    #[test]
    fn sampling_is_reproducible_with_a_seed() {
        let logits: Vec<f32> = (0..50).map(|i| (i % 7) as f32).collect();
        let run = |seed| {
            let mut s = Sampler::new(Some(1.0), Some(0.9), seed);
            (0..20).map(|_| s.pick(&logits)).collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
    }

    #[test]
    fn a_tiny_top_p_is_greedy() {
        let mut s = Sampler::new(Some(1.0), Some(1e-9), 3);
        assert_eq!(s.pick(&[0.0, 5.0, 1.0]), Some(1));
    }

    #[test]
    fn sampling_never_picks_a_masked_token() {
        let mut s = Sampler::new(Some(2.0), None, 1);
        for _ in 0..100 {
            assert_eq!(
                s.pick(&[f32::NEG_INFINITY, 0.0, f32::NEG_INFINITY]),
                Some(1)
            );
        }
    }
}
