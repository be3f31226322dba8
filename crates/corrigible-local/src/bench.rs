//! Speed measurement of the embedded model: prefill and decode tokens per second, peak memory,
//! and the aggregate decode speed of many sequences decoded together.

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

/// Sequence counts measured together by default.
pub const DEFAULT_SEQUENCES: [usize; 5] = [1, 2, 4, 8, 16];

/// One count of sequences decoded together.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchCase {
    /// Sequences decoded together.
    pub sequences: usize,
    /// Tokens each decoded.
    pub generated_tokens: usize,
    /// Time to pre-fill every prompt, one after the other.
    pub prefill: Duration,
    /// Time to decode, every sequence in each pass.
    pub decode: Duration,
    /// Bytes of the sequences' key/value caches at the end.
    pub cache_bytes: usize,
    /// Peak resident memory of the process so far (VmHWM), when the platform reports it.
    pub peak_rss_mib: Option<f64>,
    /// Time from a new sequence's arrival to its first token while these decode: its prompt
    /// fed in the shared passes' chunks beside their steps.
    pub newcomer_first_token: Duration,
}

impl BatchCase {
    /// Decoded tokens per second, every sequence's counted (each needs one pass, except the
    /// first).
    pub fn decode_tokens_per_s(&self) -> f64 {
        per_second(
            self.sequences * self.generated_tokens.saturating_sub(1),
            self.decode,
        )
    }
}

/// The result of [`bench_sequences`].
#[derive(Debug, Clone, PartialEq)]
pub struct BatchReport {
    /// The model's name.
    pub model: String,
    /// Inference threads.
    pub threads: usize,
    /// Prompt tokens of each sequence.
    pub prompt_tokens: usize,
    /// One entry per count of sequences, in increasing order.
    pub cases: Vec<BatchCase>,
    /// Time to the first token of one prompt of `prompt_tokens` fed alone, in full chunks.
    pub first_token_alone: Duration,
}

impl fmt::Display for BatchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "model {}  threads {}  prompt tokens {} each",
            self.model, self.threads, self.prompt_tokens
        )?;
        writeln!(
            f,
            "{:>10} {:>10} {:>15} {:>13} {:>12} {:>14} {:>18}",
            "sequences",
            "generated",
            "decode tok/s",
            "vs 1 alone",
            "cache MiB",
            "peak RSS MiB",
            "newcomer 1st ms"
        )?;
        let alone = self
            .cases
            .iter()
            .find(|c| c.sequences == 1)
            .map(BatchCase::decode_tokens_per_s);
        for c in &self.cases {
            let ratio = alone.filter(|a| *a > 0.0).map_or("".to_string(), |a| {
                format!("{:.2}x", c.decode_tokens_per_s() / a)
            });
            let rss = c
                .peak_rss_mib
                .map_or("?".to_string(), |m| format!("{m:.0}"));
            writeln!(
                f,
                "{:>10} {:>10} {:>15.1} {:>13} {:>12.1} {:>14} {:>18.0}",
                c.sequences,
                c.generated_tokens,
                c.decode_tokens_per_s(),
                ratio,
                c.cache_bytes as f64 / (1024.0 * 1024.0),
                rss,
                c.newcomer_first_token.as_secs_f64() * 1000.0
            )?;
        }
        write!(
            f,
            "first token of a {}-token prompt alone: {:.0} ms",
            self.prompt_tokens,
            self.first_token_alone.as_secs_f64() * 1000.0
        )
    }
}

/// Loads the model of `config` and, for each count of `sequences` (in increasing order),
/// pre-fills that many different prompts of `prompt_tokens` tokens and decodes
/// `decode_tokens` greedy tokens for all of them together.
pub fn bench_sequences(
    config: LocalConfig,
    prompt_tokens: usize,
    decode_tokens: usize,
    sequences: &[usize],
) -> Result<BatchReport, LocalError> {
    let model = LocalModel::load(config)?;
    let mut counts: Vec<usize> = sequences.iter().map(|&n| n.max(1)).collect();
    counts.sort_unstable();
    counts.dedup();
    let most = counts.last().copied().unwrap_or(1);
    let prompt_tokens = prompt_tokens.max(1);
    let mut text = String::new();
    let mut filler = Vec::new();
    while filler.len() < prompt_tokens + most + 1 {
        text.push_str(FILLER);
        filler = model.tokenizer().encode(&text)?;
    }
    let prompts: Vec<Vec<u32>> = (0..=most)
        .map(|i| filler[i..i + prompt_tokens].to_vec())
        .collect();
    let newcomer = &prompts[most];
    model.decode_together(&prompts[..1], 2, None)?;
    let first_token_alone = model.decode_together(&prompts[..1], 1, None)?.prefill;
    let mut cases = Vec::new();
    for n in counts {
        let together =
            model.decode_together(&prompts[..n], decode_tokens.max(1), Some(newcomer))?;
        cases.push(BatchCase {
            sequences: n,
            generated_tokens: decode_tokens.max(1),
            prefill: together.prefill,
            decode: together.decode,
            cache_bytes: together.cache_bytes,
            peak_rss_mib: peak_rss_mib(),
            newcomer_first_token: together.first_token.unwrap_or_default(),
        });
    }
    Ok(BatchReport {
        model: model.name_string(),
        threads: inference_threads(),
        prompt_tokens,
        cases,
        first_token_alone,
    })
}
