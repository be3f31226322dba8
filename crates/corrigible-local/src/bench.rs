//! Speed measurement of the embedded model: prefill and decode tokens per second, peak memory.

use std::fmt;
use std::time::Duration;

use crate::config::LocalConfig;
use crate::error::LocalError;
use corrigible_llama::inference_threads;

use crate::model::LocalModel;

/// Prompt lengths measured by default, in tokens.
pub const DEFAULT_PROMPT_TOKENS: [usize; 2] = [40, 500];

/// Tokens generated per measurement by default.
pub const DEFAULT_DECODE_TOKENS: usize = 128;

const FILLER: &str = "The agent reads the request, chooses a tool, checks the answer and \
    corrects itself when the application rejects a reply. Each step is bounded, each \
    correction is recorded, and every number in the report can be checked against the trace. ";

/// One prompt length's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchCase {
    /// Prompt tokens pre-filled (cold cache).
    pub prompt_tokens: usize,
    /// Tokens generated.
    pub generated_tokens: usize,
    /// Time to pre-fill the prompt.
    pub prefill: Duration,
    /// Time to generate.
    pub decode: Duration,
}

impl BenchCase {
    /// Prompt tokens per second.
    pub fn prefill_tokens_per_s(&self) -> f64 {
        per_second(self.prompt_tokens, self.prefill)
    }

    /// Generated tokens per second (each needs one forward pass, except the first).
    pub fn decode_tokens_per_s(&self) -> f64 {
        per_second(self.generated_tokens.saturating_sub(1), self.decode)
    }
}

fn per_second(n: usize, d: Duration) -> f64 {
    let s = d.as_secs_f64();
    if s > 0.0 { n as f64 / s } else { 0.0 }
}

/// The result of [`bench_model`].
#[derive(Debug, Clone, PartialEq)]
pub struct BenchReport {
    /// The model's name.
    pub model: String,
    /// Inference threads.
    pub threads: usize,
    /// How the weights were held.
    pub weights: String,
    /// Time to load the model.
    pub load: Duration,
    /// One entry per prompt length.
    pub cases: Vec<BenchCase>,
    /// Peak resident memory of the process (VmHWM), when the platform reports it.
    pub peak_rss_mib: Option<f64>,
}

impl fmt::Display for BenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "model {}  weights {}  threads {}  load {:.2} s",
            self.model,
            self.weights,
            self.threads,
            self.load.as_secs_f64()
        )?;
        writeln!(
            f,
            "{:>14} {:>16} {:>10} {:>15}",
            "prompt tokens", "prefill tok/s", "generated", "decode tok/s"
        )?;
        for c in &self.cases {
            writeln!(
                f,
                "{:>14} {:>16.1} {:>10} {:>15.1}",
                c.prompt_tokens,
                c.prefill_tokens_per_s(),
                c.generated_tokens,
                c.decode_tokens_per_s()
            )?;
        }
        match self.peak_rss_mib {
            Some(m) => write!(f, "peak RSS {m:.0} MiB"),
            None => write!(f, "peak RSS unknown"),
        }
    }
}

/// Peak resident memory of this process in MiB, from `VmHWM` in `/proc/self/status`.
pub fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Loads the model of `config` and measures, for each prompt length (cold cache), the prefill
/// and the greedy generation of `decode_tokens` tokens (end-of-turn ignored).
pub fn bench_model(
    config: LocalConfig,
    prompt_tokens: &[usize],
    decode_tokens: usize,
) -> Result<BenchReport, LocalError> {
    let weights = format!("{:?}", config.weights).to_lowercase();
    let model = LocalModel::load(config)?;
    let longest = prompt_tokens.iter().copied().max().unwrap_or(1).max(1);
    let mut text = String::new();
    let mut filler = Vec::new();
    while filler.len() < longest {
        text.push_str(FILLER);
        filler = model.tokenizer().encode(&text)?;
    }
    model.generate_raw(&filler[..8.min(filler.len())], 2)?;
    let mut cases = Vec::new();
    for &n in prompt_tokens {
        let n = n.max(1);
        model.reset_cache();
        let g = model.generate_raw(&filler[..n], decode_tokens.max(1))?;
        cases.push(BenchCase {
            prompt_tokens: n,
            generated_tokens: g.tokens.len(),
            prefill: g.prefill_time,
            decode: g.decode_time,
        });
    }
    Ok(BenchReport {
        model: model.name_string(),
        threads: inference_threads(),
        weights,
        load: model.load_time(),
        cases,
        peak_rss_mib: peak_rss_mib(),
    })
}
