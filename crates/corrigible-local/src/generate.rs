//! The decoding loop over the transformer, with reuse of the cached prompt prefix.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::constraint::Constraint;
use crate::error::LocalError;
use crate::loop_guard::{MAX_CUTS, force_close, trailing_loop};
use crate::prefix_store::PrefixStore;
use crate::sampler::Sampler;
use corrigible_llama::{Llama, Sequence, Step};

use crate::batcher::{Batcher, SHARED_PREFILL_CHUNK};

/// Longest slice of the prompt fed to the model in one forward pass.
const PREFILL_CHUNK: usize = 256;

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GenerationEnd {
    /// The model produced an end-of-turn token.
    EndOfTurn,
    /// The grammar was complete.
    GrammarComplete,
    /// The token bound was reached.
    MaxTokens,
}

/// One generation's tokens and timings.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// Generated tokens, without the stop token.
    pub tokens: Vec<u32>,
    /// Prompt tokens pre-filled by this call.
    pub prefilled: usize,
    /// Prompt tokens whose keys and values were reused from the previous call.
    pub reused: usize,
    /// Why it ended.
    pub stop: GenerationEnd,
    /// The stop token that ended it, when one did (it is not in `tokens`).
    pub stop_token: Option<u32>,
    /// Time spent pre-filling the prompt.
    pub prefill_time: Duration,
    /// Time spent generating.
    pub decode_time: Duration,
    /// At each generated position, how far the chosen token's logit was above the next allowed
    /// one (infinite where only one token was allowed or the grammar forced the token): small
    /// where the model hesitated.
    pub margins: Vec<f32>,
    /// Degenerate loops rolled back to one copy (see [`crate::loop_guard`]).
    pub loops_cut: usize,
    /// Tokens the grammar forced, each fed with the token before it rather than in a forward
    /// pass of its own (those of a cut loop included).
    pub forced: usize,
}

impl Generation {
    /// The generated position where the model hesitated most among those with a choice, if
    /// any (the stop position after the last token does not count).
    pub fn least_certain(&self) -> Option<usize> {
        self.margins
            .iter()
            .take(self.tokens.len())
            .enumerate()
            .filter(|(_, m)| m.is_finite())
            .min_by(|a, b| a.1.total_cmp(b.1))
            .map(|(i, _)| i)
    }
}

/// A token refused at one position, while the output so far equals `prefix`: the smallest
/// change that turns a reply into a different one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ban {
    /// The tokens that precede the banned ones.
    pub prefix: Vec<u32>,
    /// The refused tokens.
    pub tokens: Vec<u32>,
}

/// What the decoding loop needs besides the prompt.
pub struct DecodeParams<'a> {
    /// The most tokens to generate.
    pub max_tokens: usize,
    /// Tokens that end the turn.
    pub stop_tokens: &'a [u32],
    /// Token chooser.
    pub sampler: &'a mut Sampler,
    /// The grammar the output must follow, if any.
    pub constraint: Option<Constraint>,
    /// A token refused after a given prefix, if any.
    pub ban: Option<Ban>,
    /// The tokens that close a JSON string, to end a cut loop with; `None` turns the loop
    /// guard off.
    pub closers: Option<&'a [u32]>,
}

/// Where a runner's forward passes run.
enum Engine {
    /// A model of its own.
    Own(Box<Llama>),
    /// A model shared with other runners, whose passes take every runner's step together.
    Shared(Batcher),
}

/// One sequence on the transformer: its key/value cache and the tokens it holds.
pub struct Runner {
    engine: Engine,
    sequence: Sequence,
    cached: Vec<u32>,
}

/// A pre-filled prompt prefix kept for every runner of a shared model: computed by the first
/// runner that needs it, copied by the others.
#[derive(Default)]
pub struct SharedPrefix(Mutex<Option<(Vec<u32>, Sequence)>>);

/// How many leading tokens `a` and `b` share.
pub fn common_prefix(a: &[u32], b: &[u32]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

impl Runner {
    /// A runner on a freshly loaded model of its own.
    pub fn new(llama: Llama) -> Self {
        Self {
            sequence: llama.sequence(),
            engine: Engine::Own(Box::new(llama)),
            cached: Vec::new(),
        }
    }

    /// A runner on the model that `batcher` shares.
    pub fn shared(batcher: Batcher) -> Self {
        let sequence = batcher.model().sequence();
        Self {
            sequence,
            engine: Engine::Shared(batcher),
            cached: Vec::new(),
        }
    }

    /// Forgets the cached prefix; the next call pre-fills everything.
    pub fn reset(&mut self) {
        self.sequence.truncate(0);
        self.cached.clear();
    }

    fn context_length(&self) -> usize {
        match &self.engine {
            Engine::Own(llama) => llama.hyper().context_length,
            Engine::Shared(batcher) => batcher.context_length(),
        }
    }

    /// Runs `f` on the model with this runner's sequence as the model's own.
    fn with_model<R>(&mut self, f: impl FnOnce(&mut Llama) -> R) -> R {
        let sequence = &mut self.sequence;
        let on = |llama: &mut Llama| {
            llama.swap_sequence(sequence);
            let out = f(llama);
            llama.swap_sequence(sequence);
            out
        };
        match &mut self.engine {
            Engine::Own(llama) => on(llama),
            Engine::Shared(batcher) => on(&mut batcher.model()),
        }
    }

    /// Feeds `tokens` and copies the logits after the last one into `logits`.
    fn feed(&mut self, tokens: &[u32], logits: &mut Vec<f32>) -> Result<(), LocalError> {
        match &mut self.engine {
            Engine::Own(llama) => {
                let out = llama.forward_batch(&mut [Step {
                    sequence: &mut self.sequence,
                    tokens,
                }])?;
                logits.clear();
                logits.extend_from_slice(out);
            }
            Engine::Shared(batcher) => *logits = batcher.forward(&mut self.sequence, tokens)?,
        }
        self.cached.extend_from_slice(tokens);
        Ok(())
    }

    /// Keeps the first `held` cached positions, which must be `tokens[..held]`, feeds the rest
    /// of `tokens` a chunk at a time, and returns the logits after the last one (none when
    /// nothing was fed). On a shared model, while other runners generate, the chunks are
    /// shorter, so that their steps are not held up long.
    fn prefill(&mut self, tokens: &[u32], held: usize) -> Result<Vec<f32>, LocalError> {
        self.sequence.truncate(held);
        self.cached.truncate(held);
        let mut logits = Vec::new();
        let mut fed = held;
        while fed < tokens.len() {
            let chunk = match &self.engine {
                Engine::Shared(batcher) if batcher.generating_now() > 1 => SHARED_PREFILL_CHUNK,
                _ => PREFILL_CHUNK,
            };
            let end = (fed + chunk).min(tokens.len());
            self.feed(&tokens[fed..end], &mut logits)?;
            fed = end;
        }
        Ok(logits)
    }

    /// Makes the cache hold `prefix`: kept when it already does, otherwise copied from
    /// `shared` (the prefix another runner of the same model pre-filled), loaded from `store`,
    /// or, on a miss, pre-filled, then saved to both. Returns the positions pre-filled. While
    /// one runner pre-fills, others warming with the same `shared` wait for it, so that a
    /// prefix is computed once.
    pub fn warm(
        &mut self,
        prefix: &[u32],
        store: Option<&PrefixStore>,
        shared: Option<&SharedPrefix>,
    ) -> Result<usize, LocalError> {
        let held = common_prefix(&self.cached, prefix);
        if held == prefix.len() {
            return Ok(0);
        }
        let mut slot = shared.map(|s| s.0.lock().unwrap_or_else(|p| p.into_inner()));
        if let Some(Some((tokens, sequence))) = slot.as_deref()
            && tokens == prefix
        {
            self.sequence = sequence.clone();
            self.cached = prefix.to_vec();
            return Ok(0);
        }
        let start = Instant::now();
        let mut filled = 0;
        if store.is_some_and(|store| self.with_model(|llama| store.load(prefix, llama))) {
            self.cached = prefix.to_vec();
            tracing::debug!(tokens = prefix.len(), elapsed = ?start.elapsed(), "loaded a pre-filled prefix");
        } else {
            let held = held.min(self.sequence.len());
            if let Err(e) = self.prefill(prefix, held) {
                self.reset();
                return Err(e);
            }
            if let Some(store) = store {
                self.with_model(|llama| store.save(prefix, llama));
            }
            tracing::debug!(tokens = prefix.len(), elapsed = ?start.elapsed(), "pre-filled a prefix");
            filled = prefix.len() - held;
        }
        if let Some(slot) = slot.as_deref_mut() {
            let mut sequence = self.sequence.clone();
            sequence.truncate(prefix.len());
            *slot = Some((prefix.to_vec(), sequence));
        }
        Ok(filled)
    }

    /// Pre-fills each of `prompts` into a sequence of its own, then decodes `tokens` greedy
    /// tokens for all of them together, one forward pass a token for every sequence; then, if
    /// given, has `newcomer` join them. The runner's own cache is left as it was.
    pub fn decode_together(
        &mut self,
        prompts: &[Vec<u32>],
        tokens: usize,
        newcomer: Option<&[u32]>,
    ) -> Result<Together, LocalError> {
        self.with_model(|llama| decode_together(llama, prompts, tokens, newcomer))
    }

    /// Generates a reply to `prompt`; on any error the cache is dropped.
    pub fn generate(
        &mut self,
        prompt: &[u32],
        params: DecodeParams<'_>,
    ) -> Result<Generation, LocalError> {
        let generating = match &self.engine {
            Engine::Shared(batcher) => Some(batcher.generating()),
            Engine::Own(_) => None,
        };
        let result = self.generate_inner(prompt, params);
        drop(generating);
        if result.is_err() {
            self.reset();
        }
        result
    }

    fn generate_inner(
        &mut self,
        prompt: &[u32],
        mut params: DecodeParams<'_>,
    ) -> Result<Generation, LocalError> {
        let context = self.context_length();
        if prompt.is_empty() || prompt.len() + 1 > context {
            return Err(LocalError::ContextOverflow {
                prompt: prompt.len(),
                context,
            });
        }
        let max_tokens = params.max_tokens.min(context - prompt.len());

        let start = Instant::now();
        // What the grammar forces before the model's first choice is fed with the prompt.
        let mut tokens = forced_tokens(&mut params, 0, max_tokens)?;
        let mut forced = tokens.len();
        let mut margins = vec![f32::INFINITY; tokens.len()];
        let opening = [prompt, &tokens].concat();
        // At least one token is fed, so that there are logits to start from.
        let reused = common_prefix(&self.cached, &opening)
            .min(opening.len() - 1)
            .min(prompt.len());
        let mut logits = self.prefill(&opening, reused)?;
        if logits.is_empty() {
            return Err(LocalError::Inference("empty prefill".into()));
        }
        let prefill_time = start.elapsed();

        let start = Instant::now();
        let mut loops_cut = 0;
        let mut cut_restart: Option<u32> = None;
        let mut stop_token = None;
        let stop = loop {
            if params
                .constraint
                .as_ref()
                .is_some_and(Constraint::is_stopped)
            {
                break GenerationEnd::GrammarComplete;
            }
            if tokens.len() >= max_tokens {
                break GenerationEnd::MaxTokens;
            }
            if let Some(c) = params.constraint.as_mut() {
                c.mask(&mut logits)?;
            }
            if let Some(ban) = &params.ban
                && ban.prefix == tokens
            {
                for &refused in &ban.tokens {
                    if let Some(l) = logits.get_mut(refused as usize) {
                        *l = f32::NEG_INFINITY;
                    }
                }
            }
            if let Some(restart) = cut_restart.take()
                && !params
                    .closers
                    .is_some_and(|closers| force_close(&mut logits, closers))
                && let Some(l) = logits.get_mut(restart as usize)
            {
                *l = f32::NEG_INFINITY;
            }
            margins.push(top_margin(&logits));
            let Some(token) = params.sampler.pick(&logits) else {
                return Err(LocalError::Constraint(
                    "no token is allowed at this point of the output".into(),
                ));
            };
            if params.stop_tokens.contains(&token) {
                stop_token = Some(token);
                break GenerationEnd::EndOfTurn;
            }
            tokens.push(token);
            if let Some(c) = params.constraint.as_mut() {
                c.commit(token)?;
            }
            if params
                .constraint
                .as_ref()
                .is_some_and(Constraint::is_stopped)
            {
                break GenerationEnd::GrammarComplete;
            }
            if tokens.len() >= max_tokens {
                break GenerationEnd::MaxTokens;
            }
            if params.closers.is_some()
                && loops_cut < MAX_CUTS
                && let Some(found) = trailing_loop(&tokens)
            {
                let keep = found.keep();
                let dropped = tokens.len() - keep;
                if let Some(c) = params.constraint.as_mut() {
                    c.rollback(dropped)?;
                }
                tokens.truncate(keep);
                margins.truncate(keep);
                // The last kept token is fed again for the logits after it.
                let fed = prompt.len() + keep - 1;
                self.sequence.truncate(fed);
                self.cached.truncate(fed);
                self.feed(&tokens[keep - 1..], &mut logits)?;
                cut_restart = Some(tokens[found.start]);
                loops_cut += 1;
                continue;
            }
            // The tokens the grammar forces after this one are fed with it, in one pass.
            let after = forced_tokens(&mut params, tokens.len(), max_tokens)?;
            tokens.extend_from_slice(&after);
            margins.resize(tokens.len(), f32::INFINITY);
            forced += after.len();
            self.feed(&[&[token], after.as_slice()].concat(), &mut logits)?;
        };
        Ok(Generation {
            tokens,
            prefilled: prompt.len() - reused,
            reused,
            stop,
            stop_token,
            prefill_time,
            decode_time: start.elapsed(),
            margins,
            loops_cut,
            forced,
        })
    }
}

/// [`Runner::decode_together`] on `llama`.
fn decode_together(
    llama: &mut Llama,
    prompts: &[Vec<u32>],
    tokens: usize,
    newcomer: Option<&[u32]>,
) -> Result<Together, LocalError> {
    let mut sequences: Vec<_> = prompts.iter().map(|_| llama.sequence()).collect();
    let mut next = Vec::with_capacity(prompts.len());
    let start = Instant::now();
    for (sequence, prompt) in sequences.iter_mut().zip(prompts) {
        let mut logits = Vec::new();
        for chunk in prompt.chunks(PREFILL_CHUNK) {
            logits = llama
                .forward_batch(&mut [Step {
                    sequence,
                    tokens: chunk,
                }])?
                .to_vec();
        }
        next.push(vec![Sampler::Greedy.pick(&logits).unwrap_or(0)]);
    }
    let prefill = start.elapsed();
    let start = Instant::now();
    for _ in 1..tokens {
        decode_step(llama, &mut sequences, &mut next, None)?;
    }
    let decode = start.elapsed();
    let cache_bytes = sequences.iter().map(|s| s.bytes()).sum();
    let first_token = match newcomer {
        Some(prompt) => {
            let start = Instant::now();
            let mut joining = llama.sequence();
            for chunk in prompt.chunks(SHARED_PREFILL_CHUNK) {
                let step = Step {
                    sequence: &mut joining,
                    tokens: chunk,
                };
                decode_step(llama, &mut sequences, &mut next, Some(step))?;
            }
            Some(start.elapsed())
        }
        None => None,
    };
    Ok(Together {
        prefill,
        decode,
        cache_bytes,
        first_token,
    })
}

/// One pass over every sequence's `next` token, and `joining` beside them, if any: each
/// sequence's next token becomes its greedy choice.
fn decode_step(
    llama: &mut Llama,
    sequences: &mut [Sequence],
    next: &mut [Vec<u32>],
    joining: Option<Step<'_>>,
) -> Result<(), LocalError> {
    let vocab = llama.vocab_size();
    let mut steps: Vec<Step<'_>> = sequences
        .iter_mut()
        .zip(next.iter())
        .map(|(sequence, input)| Step {
            sequence,
            tokens: input,
        })
        .chain(joining)
        .collect();
    let logits = llama.forward_batch(&mut steps)?;
    for (input, row) in next.iter_mut().zip(logits.chunks_exact(vocab)) {
        input[0] = Sampler::Greedy.pick(row).unwrap_or(0);
    }
    Ok(())
}

/// What [`Runner::decode_together`] measured.
#[derive(Debug, Clone, Copy)]
pub struct Together {
    /// Time to pre-fill every prompt, one after the other.
    pub prefill: Duration,
    /// Time to decode, every sequence in each pass.
    pub decode: Duration,
    /// Bytes of the sequences' key/value caches at the end of decoding.
    pub cache_bytes: usize,
    /// Time for a newcomer's prompt, fed in shared-pass chunks beside the others' decoding,
    /// to give its first logits.
    pub first_token: Option<Duration>,
}

/// The tokens the grammar forces after the `made` tokens generated so far, advanced over:
/// within `max_tokens`, and never past a pending ban's position, where the model must choose.
fn forced_tokens(
    params: &mut DecodeParams<'_>,
    made: usize,
    max_tokens: usize,
) -> Result<Vec<u32>, LocalError> {
    let Some(constraint) = params.constraint.as_mut() else {
        return Ok(Vec::new());
    };
    let mut limit = max_tokens.saturating_sub(made);
    if let Some(ban) = &params.ban
        && ban.prefix.len() >= made
    {
        limit = limit.min(ban.prefix.len() - made);
    }
    constraint.fast_forward(limit)
}

/// The largest finite logit minus the second largest (infinite with fewer than two).
fn top_margin(logits: &[f32]) -> f32 {
    let (mut first, mut second) = (f32::NEG_INFINITY, f32::NEG_INFINITY);
    for &l in logits {
        if l > first {
            second = first;
            first = l;
        } else if l > second {
            second = l;
        }
    }
    if second.is_finite() {
        first - second
    } else {
        f32::INFINITY
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn margins_and_the_least_certain_position() {
        assert_eq!(top_margin(&[1.0, 3.5, f32::NEG_INFINITY, 2.0]), 1.5);
        assert_eq!(top_margin(&[f32::NEG_INFINITY, 4.0]), f32::INFINITY);
        let generation = Generation {
            tokens: vec![1, 2, 3],
            prefilled: 0,
            reused: 0,
            stop: GenerationEnd::EndOfTurn,
            stop_token: None,
            prefill_time: Duration::ZERO,
            decode_time: Duration::ZERO,
            margins: vec![f32::INFINITY, 0.7, 0.2, 0.1],
            loops_cut: 0,
            forced: 0,
        };
        assert_eq!(generation.least_certain(), Some(2));
        let forced = Generation {
            margins: vec![f32::INFINITY, f32::INFINITY, f32::INFINITY, 0.1],
            ..generation
        };
        assert_eq!(forced.least_certain(), None);
    }

    #[test]
    fn common_prefix_counts_equal_leading_tokens() {
        assert_eq!(common_prefix(&[1, 2, 3], &[1, 2, 4, 5]), 2);
        assert_eq!(common_prefix(&[], &[1]), 0);
        assert_eq!(common_prefix(&[1, 2], &[1, 2]), 2);
    }
}
