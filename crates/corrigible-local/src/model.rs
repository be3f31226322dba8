//! [`LocalModel`]: the embedded model behind the engine's [`Model`] trait.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use corrigible::decision::with_grounds;
use corrigible::{
    Allowed, CorrectionContext, Message, MessageKind, Model, ModelError, ModelReply, ModelRequest,
    Protocol, Reasoning, Recalculation, Role, Usage,
};
use corrigible_llama::inference_threads;
use serde_json::Value;

use crate::batcher::{BatchCounts, Batcher};
use crate::config::{Constrain, LocalConfig};
use crate::constraint::{Guide, StringCaps, constraint_schema, narrowed_schema};
use crate::correction::CorrectionDecoding;
use crate::error::LocalError;
use crate::generate::{
    Ban, DecodeParams, Generation, GenerationEnd, Runner, SharedPrefix, Together, common_prefix,
};
use crate::pool::Pool;
use crate::prefix_store::{DEFAULT_PREFIX_STORE_BYTES, PrefixStore};
use crate::sampler::Sampler;
use crate::template::ChatTemplate;
use crate::think::{self, REASON_INSTRUCTION, Settled, Think};
use crate::tokenizer::Tokenizer;
use crate::vocabulary::Vocabulary;

/// The shortest fixed prefix worth an entry in the prefix store.
const MIN_STORED_PREFIX: usize = 64;

/// The embedded model: a llama-architecture GGUF file run on the CPU.
///
/// Cloning is cheap and shares the loaded weights. Calls are served one at a time, or, with
/// [`LocalConfig::sequences`] above one, that many at once, decoded together.
#[derive(Clone)]
pub struct LocalModel {
    inner: Arc<Inner>,
    bounds: Bounds,
}

/// How one handle decodes: its constraint mode and its token bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Bounds {
    constrain: Constrain,
    /// When a decision is preceded by a thought.
    think: Think,
    /// The most tokens of thought before a decision.
    think_tokens: usize,
    /// The most tokens of a decision.
    max_tokens: usize,
}

impl Bounds {
    /// Whether this handle thinks, as `mode` does.
    fn thinks(&self, mode: Think) -> bool {
        self.think == mode && self.think_tokens > 0
    }
}

struct Inner {
    config: LocalConfig,
    name: String,
    tokenizer: Tokenizer,
    template: ChatTemplate,
    load_time: Duration,
    /// The tokens that close a JSON string, for the loop guard.
    closers: Vec<u32>,
    /// The tokens that end a thought (see [`crate::thought::stops`]).
    thought_stops: Vec<u32>,
    /// Those and the tokens that end a line, where the thought calculator reads it.
    thought_line_stops: Vec<u32>,
    /// Where pre-filled prompt prefixes are kept between processes, if anywhere.
    prefix_store: Option<PrefixStore>,
    runners: Pool,
    /// The thread that decodes the runners' steps together, when there are several.
    batcher: Option<Batcher>,
    /// The fixed prefix one runner pre-filled, for the others, when there are several.
    shared_prefix: Option<SharedPrefix>,
    guide: Mutex<Guide>,
}

impl std::fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModel")
            .field("name", &self.inner.name)
            .field("config", &self.inner.config)
            .field("bounds", &self.bounds)
            .finish()
    }
}

fn model_name(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".to_string());
    format!("local:{stem}")
}

impl LocalModel {
    /// Loads the model named by `config` (about a second for the default model).
    pub fn load(config: LocalConfig) -> Result<Self, LocalError> {
        config.validate()?;
        if let Some(n) = config.threads
            && n != inference_threads()
        {
            return Err(LocalError::Config(format!(
                "the inference thread pool is process-wide: set CANDLE_NUM_THREADS={n} in the \
                 environment instead of asking for {n} threads"
            )));
        }
        let start = Instant::now();
        let path = config.model_path.clone();
        if !path.is_file() {
            return Err(LocalError::ModelMissing {
                path,
                fetch: crate::error::FETCH_COMMAND.to_string(),
            });
        }
        let io_error = |cause| LocalError::Io {
            path: path.clone(),
            cause,
        };
        let file = corrigible_llama::MappedFile::open(&path).map_err(io_error)?;
        let content = crate::gguf::read_header(&mut file.reader()).map_err(|e| match e {
            LocalError::Unsupported(why) => {
                LocalError::Unsupported(format!("{}: {why}", path.display()))
            }
            other => other,
        })?;
        // The weights load on another thread (on one core, mostly) while this one reads the
        // vocabulary; here, after it, when that thread could not start.
        let (llama, vocabulary) = std::thread::scope(|scope| {
            let weights = std::thread::Builder::new()
                .spawn_scoped(scope, || {
                    corrigible_llama::load(&content, &file, config.weights)
                })
                .ok();
            let vocabulary = Vocabulary::from_gguf(&content);
            let llama = match weights {
                Some(handle) => handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                None => corrigible_llama::load(&content, &file, config.weights),
            };
            (llama, vocabulary)
        });
        let mut vocabulary = vocabulary?;
        let llama =
            llama.map_err(|e| LocalError::Unsupported(format!("{}: {e}", path.display())))?;
        let guide = vocabulary.take_guide(llama.vocab_size())?;
        let Vocabulary {
            tokenizer,
            template,
            closers,
            thought_stops,
            thought_line_stops,
            ..
        } = vocabulary;
        let (runners, batcher) = if config.sequences > 1 {
            let batcher = Batcher::start(llama)?;
            let runners = (0..config.sequences)
                .map(|_| Runner::shared(batcher.clone()))
                .collect();
            (Pool::new(runners), Some(batcher))
        } else {
            (Pool::new(vec![Runner::new(llama)]), None)
        };
        let prefix_store = config.prefix_cache.as_ref().and_then(|dir| {
            PrefixStore::new(dir, &path, config.weights, DEFAULT_PREFIX_STORE_BYTES)
                .inspect_err(|e| tracing::warn!(error = %e, "no prefix store"))
                .ok()
        });
        Ok(Self {
            bounds: Bounds {
                constrain: config.constrain,
                think: config.think,
                think_tokens: config.think_tokens,
                max_tokens: config.max_tokens,
            },
            inner: Arc::new(Inner {
                name: model_name(&path),
                config,
                tokenizer,
                template,
                load_time: start.elapsed(),
                closers,
                thought_stops,
                thought_line_stops,
                prefix_store,
                runners,
                shared_prefix: batcher.as_ref().map(|_| SharedPrefix::default()),
                batcher,
                guide: Mutex::new(guide),
            }),
        })
    }

    /// The configuration the model was loaded with.
    pub fn config(&self) -> &LocalConfig {
        &self.inner.config
    }

    /// The same loaded weights, decoding with another constraint mode.
    ///
    /// Both handles share one cache and serve calls one at a time.
    pub fn with_constrain(&self, constrain: Constrain) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            bounds: Bounds {
                constrain,
                ..self.bounds
            },
        }
    }

    /// The same loaded weights, thinking up to `think_tokens` before each decision (0: not
    /// at all).
    pub fn with_think_tokens(&self, think_tokens: usize) -> Self {
        self.with_think(Think::implied_by(think_tokens), think_tokens)
    }

    /// The same loaded weights, thinking when `think` says, up to `think_tokens` a thought.
    pub fn with_think(&self, think: Think, think_tokens: usize) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            bounds: Bounds {
                think,
                think_tokens,
                ..self.bounds
            },
        }
    }

    /// The same loaded weights, generating at most `max_tokens` per decision (at least 1).
    pub fn with_max_tokens(&self, max_tokens: usize) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            bounds: Bounds {
                max_tokens: max_tokens.max(1),
                ..self.bounds
            },
        }
    }

    /// How this handle constrains its decisions.
    pub fn constrain(&self) -> Constrain {
        self.bounds.constrain
    }

    /// The most tokens this handle thinks before a decision.
    pub fn think_tokens(&self) -> usize {
        self.bounds.think_tokens
    }

    /// When this handle thinks before a decision.
    pub fn think(&self) -> Think {
        self.bounds.think
    }

    /// How long loading took.
    pub fn load_time(&self) -> Duration {
        self.inner.load_time
    }

    /// The model's tokenizer.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.inner.tokenizer
    }

    /// The prompt text for `messages`: the chat template with the assistant's turn opened.
    pub fn render(&self, messages: &[Message]) -> Result<String, LocalError> {
        self.inner.template.render(messages)
    }

    /// Forgets the cached prompt prefix, so the next call starts cold.
    pub fn reset_cache(&self) {
        self.inner.runners.each(Runner::reset);
    }

    /// Generates from the rendered `prompt` text, constrained to `schema` when given.
    ///
    /// Blocking and CPU-bound: async callers go through [`Model::complete`].
    pub fn generate(&self, prompt: &str, schema: Option<&Value>) -> Result<Generation, LocalError> {
        let tokens = self.inner.tokenizer.encode(prompt)?;
        let _runner = self.inner.runners.claim();
        self.inner
            .generate_tokens(&tokens, schema, self.bounds.max_tokens)
    }

    /// Greedy generation of up to `max_tokens` from `prompt` tokens, ignoring end-of-turn.
    pub(crate) fn generate_raw(
        &self,
        prompt: &[u32],
        max_tokens: usize,
    ) -> Result<Generation, LocalError> {
        let params = DecodeParams {
            max_tokens,
            stop_tokens: &[],
            sampler: &mut Sampler::Greedy,
            constraint: None,
            ban: None,
            closers: None,
        };
        self.inner.runners.lock().generate(prompt, params)
    }

    /// [`Runner::decode_together`] on this model's runner.
    pub(crate) fn decode_together(
        &self,
        prompts: &[Vec<u32>],
        tokens: usize,
        newcomer: Option<&[u32]>,
    ) -> Result<Together, LocalError> {
        self.inner
            .runners
            .lock()
            .decode_together(prompts, tokens, newcomer)
    }

    /// Forward passes run and sequences' steps taken so far, when calls are decoded together
    /// ([`LocalConfig::sequences`] above one): steps over passes is the mean batch.
    pub fn batch_counts(&self) -> Option<BatchCounts> {
        self.inner.batcher.as_ref().map(Batcher::counts)
    }

    /// The model's name, owned.
    pub(crate) fn name_string(&self) -> String {
        self.inner.name.clone()
    }

    /// [`Model::complete`] without the async wrapper.
    pub fn complete_blocking(&self, request: &ModelRequest) -> Result<ModelReply, LocalError> {
        self.inner.complete(request, self.bounds)
    }
}

impl Inner {
    fn sampler(&self) -> Sampler {
        let config = &self.config;
        Sampler::new(config.temperature, config.top_p, config.seed)
    }

    fn generate_tokens(
        &self,
        prompt: &[u32],
        schema: Option<&Value>,
        max_tokens: usize,
    ) -> Result<Generation, LocalError> {
        self.generate_with(prompt, schema, self.sampler(), None, max_tokens)
    }

    fn generate_with(
        &self,
        prompt: &[u32],
        schema: Option<&Value>,
        mut sampler: Sampler,
        ban: Option<Ban>,
        max_tokens: usize,
    ) -> Result<Generation, LocalError> {
        let constraint = match schema {
            Some(s) => Some(
                self.guide
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .constraint(s)?,
            ),
            None => None,
        };
        let params = DecodeParams {
            max_tokens,
            stop_tokens: self.tokenizer.stop_tokens(),
            sampler: &mut sampler,
            constraint,
            ban,
            closers: Some(&self.closers),
        };
        self.runners.lock().generate(prompt, params)
    }

    /// Free thought after `prompt` (the rendered prompt text, `tokens` once encoded), up to
    /// `think_tokens`. In a correction round, a thought that only repeats `rejected`'s (the
    /// thought of the reply sent back) is decoded again from the round's seeded samples, as a
    /// repeated decision is; when every sample repeats it too, the round decides without a
    /// thought, right after its feedback, rather than on the reasoning that was sent back.
    fn think(
        &self,
        prompt: &str,
        tokens: Vec<u32>,
        think_tokens: usize,
        rejected: Option<(&CorrectionContext, &str)>,
    ) -> Result<Thinking, LocalError> {
        let mut thinking = Thinking {
            prompt: tokens,
            reused: None,
            thought: None,
            spent: 0,
        };
        if think_tokens == 0 {
            return Ok(thinking);
        }
        let mut decoded = self.decode_thought(&thinking.prompt, think_tokens, self.sampler())?;
        thinking.reused = decoded.reused;
        thinking.spent = decoded.generated;
        let mut text = self.tokenizer.decode(&decoded.tokens)?;
        if let Some((correction, rejected)) = rejected {
            let repeats = |text: &str| text.trim() == rejected.trim();
            let mut plan = CorrectionDecoding::new(&self.config, correction);
            while repeats(&text) && plan.next_attempt() {
                decoded = self.decode_thought(&thinking.prompt, think_tokens, plan.sampler())?;
                thinking.spent += decoded.generated;
                text = self.tokenizer.decode(&decoded.tokens)?;
            }
            if repeats(&text) {
                return Ok(thinking);
            }
        }
        self.followed_by(thinking, prompt, &text, decoded)
    }

    /// `thinking` with the thought `text` (as `decoded`) kept and written after `prompt`, the
    /// decision's prompt; unchanged when the thought is empty.
    fn followed_by(
        &self,
        mut thinking: Thinking,
        prompt: &str,
        text: &str,
        decoded: DecodedThought,
    ) -> Result<Thinking, LocalError> {
        let Some(reasoning) = crate::thought::reasoning(
            text,
            decoded.generated,
            decoded.truncated,
            decoded.recalculated,
        ) else {
            return Ok(thinking);
        };
        thinking.prompt = self
            .tokenizer
            .encode(&format!("{prompt}{}\n", reasoning.text))?;
        thinking.thought = Some(reasoning);
        Ok(thinking)
    }

    /// The model's reasoning on the request `asked` alone, as the bare model reasons: after
    /// the request and [`REASON_INSTRUCTION`], with no system prompt, tools or examples, up to
    /// `think_tokens`. The decision is then decoded after `prompt` (the agent's conversation,
    /// `tokens` once encoded) and that thought.
    fn reason(
        &self,
        asked: &str,
        prompt: &str,
        tokens: Vec<u32>,
        think_tokens: usize,
    ) -> Result<Thinking, LocalError> {
        let thinking = Thinking {
            prompt: tokens,
            reused: None,
            thought: None,
            spent: 0,
        };
        let alone = self
            .template
            .render(&[Message::request(format!("{asked}\n{REASON_INSTRUCTION}"))])?;
        let alone = self.tokenizer.encode(&alone)?;
        let decoded = self.decode_thought(&alone, think_tokens, self.sampler())?;
        let text = self.tokenizer.decode(&decoded.tokens)?;
        let thinking = Thinking {
            spent: decoded.generated,
            ..thinking
        };
        self.followed_by(thinking, prompt, &text, decoded)
    }

    /// One thought decoded with `sampler`: its tokens, whether it hit `think_tokens`, and the
    /// prompt tokens reused from the cache. With the thought calculator on, each line is read
    /// as it is completed, and the first calculation whose value does not hold is rewritten
    /// with the right value; the model goes on from there. The bound counts every token
    /// decoded, those a rewrite cut away included.
    fn decode_thought(
        &self,
        tokens: &[u32],
        think_tokens: usize,
        mut sampler: Sampler,
    ) -> Result<DecodedThought, LocalError> {
        let calculator = self.config.thought_calculator;
        let stops = if calculator {
            &self.thought_line_stops
        } else {
            &self.thought_stops
        };
        let mut decoded = DecodedThought::default();
        let mut checked = 0;
        loop {
            let params = DecodeParams {
                max_tokens: think_tokens.saturating_sub(decoded.generated),
                stop_tokens: stops,
                sampler: &mut sampler,
                constraint: None,
                ban: None,
                closers: Some(&[]),
            };
            let context = [tokens, decoded.tokens.as_slice()].concat();
            let generation = self.runners.lock().generate(&context, params)?;
            decoded.reused.get_or_insert(generation.reused);
            decoded.generated += generation.tokens.len();
            decoded.tokens.extend(&generation.tokens);
            let stop = generation
                .stop_token
                .filter(|t| !self.tokenizer.stop_tokens().contains(t));
            let mut ends = generation.stop == GenerationEnd::MaxTokens;
            decoded.truncated = ends;
            match stop {
                None => ends = true,
                Some(token) if !ends => {
                    let spelled = self.tokenizer.decode(&[token])?;
                    let before = self.tokenizer.decode(&decoded.tokens)?;
                    if spelled.contains('{') && crate::thought::opens_decision(&before, &spelled) {
                        ends = true;
                    } else {
                        decoded.tokens.push(token);
                        decoded.generated += 1;
                    }
                }
                Some(_) => {}
            }
            if calculator && decoded.recalculated.len() < MAX_RECALCULATIONS {
                let text = self.tokenizer.decode(&decoded.tokens)?;
                let upto = if ends {
                    text.len()
                } else {
                    text.rfind('\n').map_or(0, |newline| newline + 1)
                };
                if let Some(fix) = corrigible::arithmetic::first_wrong_value(&text[..upto], checked)
                {
                    decoded.tokens = self.tokenizer.encode(&fix.rewritten(&text))?;
                    checked = fix.at;
                    decoded.recalculated.push(Recalculation {
                        expression: fix.claim.expression,
                        stated: fix.claim.stated,
                        value: fix.value,
                    });
                    decoded.truncated = decoded.generated >= think_tokens;
                    if decoded.truncated {
                        return Ok(decoded);
                    }
                    continue;
                }
                checked = upto;
            }
            if ends {
                return Ok(decoded);
            }
            if decoded.generated >= think_tokens {
                decoded.truncated = true;
                return Ok(decoded);
            }
        }
    }

    /// Makes the cache hold the prompt's fixed prefix, the system prompt and the worked
    /// examples, from another runner's copy or the prefix store when there is one. Returns the
    /// positions pre-filled.
    fn warm(&self, messages: &[Message], tokens: &[u32]) -> Result<usize, LocalError> {
        let (store, shared) = (self.prefix_store.as_ref(), self.shared_prefix.as_ref());
        if store.is_none() && shared.is_none() {
            return Ok(0);
        }
        let fixed = messages
            .iter()
            .take_while(|m| matches!(m.kind, MessageKind::System | MessageKind::Example))
            .count();
        let Ok(text) = self.template.render_turns(&messages[..fixed]) else {
            return Ok(0);
        };
        let prefix = self.tokenizer.encode(&text)?;
        let len = common_prefix(&prefix, tokens).min(tokens.len().saturating_sub(1));
        if len < MIN_STORED_PREFIX {
            return Ok(0);
        }
        self.runners.lock().warm(&tokens[..len], store, shared)
    }

    fn complete(&self, request: &ModelRequest, bounds: Bounds) -> Result<ModelReply, LocalError> {
        let _runner = self.runners.claim();
        if request.protocol == Protocol::Native {
            return Err(LocalError::Config(
                "the embedded model has no native tool calling: use --protocol json".into(),
            ));
        }
        let messages = if bounds.think == Think::Off || bounds.think_tokens == 0 {
            request.messages.clone()
        } else {
            crate::thought::fold(&request.messages, bounds.think == Think::Always)
        };
        let prompt = self.template.render(&messages)?;
        let prompt_tokens = self.tokenizer.encode(&prompt)?;
        let input_tokens = prompt_tokens.len();
        let warmed = self.warm(&messages, &prompt_tokens)?;
        let reasons_first = bounds
            .thinks(Think::Auto)
            .then(|| think::first_request(request))
            .flatten()
            .map(|asked| (asked, prompt_tokens.clone()));
        let think_tokens = if bounds.thinks(Think::Always) {
            bounds.think_tokens
        } else {
            0
        };
        let Thinking {
            prompt: tokens,
            mut reused,
            mut thought,
            mut spent,
        } = self.think(
            &prompt,
            prompt_tokens,
            think_tokens,
            rejected_thought(request),
        )?;
        let mut reply = match &request.correction {
            None => self.decide(request, &tokens, bounds, false)?,
            Some(correction) => self.correct(request, correction, &tokens, bounds)?,
        };
        if let Some((asked, tokens)) = reasons_first
            && let Some(reach) = think::reach(request, asked, reply.text.as_deref().unwrap_or(""))
        {
            let reasoned = self.reason(asked, &prompt, tokens, bounds.think_tokens)?;
            spent += reasoned.spent;
            if let Some(reasoning) = reasoned.thought {
                let before = reply.text.clone().unwrap_or_default();
                let mut settled = Settled::between(&before, &reasoning.text, None);
                if settled != Settled::Agreed {
                    let computing = reach == think::Reach::Computation;
                    let after = self.decide(request, &reasoned.prompt, bounds, computing)?;
                    settled = Settled::between(&before, &reasoning.text, after.text.as_deref());
                    if settled == Settled::Kept {
                        reply.usage.output_tokens += after.usage.output_tokens;
                    } else {
                        let set_aside = reply.usage.output_tokens;
                        reply = after;
                        reply.usage.output_tokens += set_aside;
                        reused = None;
                    }
                }
                let label = settled.label();
                reply.decoding = reply.decoding.map(|d| format!("{d} {label}"));
                thought = Some(Reasoning {
                    set_aside: settled != Settled::Reasoned,
                    ..reasoning
                });
            }
        }
        reply.usage.input_tokens = input_tokens as u64;
        if let Some(reused) = reused {
            reply.prompt_tokens_reused = Some(reused as u64);
        }
        if let Some(reused) = &mut reply.prompt_tokens_reused {
            *reused = reused.saturating_sub(warmed as u64);
        }
        reply.usage.output_tokens += spent as u64;
        reply.reasoning = thought;
        Ok(reply)
    }

    /// A decision decoded after `tokens` under the request's schema; with `computing`, held
    /// to a call of a tool that only computes.
    fn decide(
        &self,
        request: &ModelRequest,
        tokens: &[u32],
        bounds: Bounds,
        computing: bool,
    ) -> Result<ModelReply, LocalError> {
        let caps = StringCaps::fitting(bounds.max_tokens);
        let tools = with_grounds(&request.tools, &request.grounds, false);
        let schema = if computing {
            let computing: Vec<_> = tools.into_iter().filter(|t| t.computes).collect();
            constraint_schema(&computing, bounds.constrain, caps).map(think::calls_only)
        } else {
            constraint_schema(&tools, bounds.constrain, caps)
        };
        let generation = self.generate_tokens(tokens, schema.as_ref(), bounds.max_tokens)?;
        let text = self.tokenizer.decode(&generation.tokens)?;
        Ok(reply(
            text,
            tokens,
            &generation,
            generation.tokens.len(),
            self.config.decoding_label(bounds.constrain),
        ))
    }

    /// A correction round: decoded under the narrowed schema, and never a repeat of the
    /// rejected reply while a seeded sample can avoid it.
    fn correct(
        &self,
        request: &ModelRequest,
        correction: &CorrectionContext,
        tokens: &[u32],
        bounds: Bounds,
    ) -> Result<ModelReply, LocalError> {
        let constrain = bounds.constrain;
        let caps = StringCaps::fitting(bounds.max_tokens);
        let mut allowed = correction.allowed();
        let mut plan = CorrectionDecoding::new(&self.config, correction);
        let mut output_tokens = 0;
        let mut greedy_repeat = None;
        let tools = if correction.budget_spent {
            Vec::new()
        } else {
            with_grounds(&request.tools, &request.grounds, correction.holds_numbers())
        };
        loop {
            let schema = narrowed_schema(&tools, constrain, &allowed, caps);
            let greedy = matches!(plan.sampler(), Sampler::Greedy);
            let generation = self.generate_with(
                tokens,
                Some(&schema),
                plan.sampler(),
                None,
                bounds.max_tokens,
            )?;
            output_tokens += generation.tokens.len();
            let text = self.tokenizer.decode(&generation.tokens)?;
            let done = if !correction.repeats(&text) {
                true
            } else if plan.next_attempt() {
                false
            } else if let Some(stricter) = allowed.fallback().filter(|_| !plan.fell_back()) {
                allowed = stricter;
                plan.fall_back();
                false
            } else {
                true
            };
            let identical = text.trim() == correction.rejected_reply.trim();
            if identical && greedy && greedy_repeat.is_none() {
                greedy_repeat = Some((generation.clone(), schema.clone()));
            }
            if done {
                if identical && let Some((repeat, schema)) = greedy_repeat.take() {
                    return self.diverge(
                        tokens,
                        &repeat,
                        &schema,
                        output_tokens,
                        plan,
                        bounds,
                        &allowed,
                    );
                }
                let label = plan.label(constrain, &allowed);
                return Ok(reply(text, tokens, &generation, output_tokens, label));
            }
        }
    }

    /// The tokens that begin the text of `rest`: `rest[0]` and every other token that spells
    /// a beginning of the same text (`12` where the reply had `1` then `2`), so that refusing
    /// them all makes the text differ, not only the tokens.
    fn spellings(&self, rest: &[u32]) -> Result<Vec<u32>, LocalError> {
        let text = self.tokenizer.decode(rest)?;
        let mut tokens: Vec<u32> = rest.first().copied().into_iter().collect();
        for id in 0..self.tokenizer.vocab_size() {
            let Ok(id) = u32::try_from(id) else { break };
            let spelled = self.tokenizer.decode(&[id])?;
            if !spelled.is_empty() && text.starts_with(&spelled) && !tokens.contains(&id) {
                tokens.push(id);
            }
        }
        Ok(tokens)
    }

    /// The last resort of a correction round whose every attempt repeated the rejected reply:
    /// the greedy reply again, with its token refused where the model hesitated most, so the
    /// reply differs as little as possible but differs.
    #[allow(clippy::too_many_arguments)]
    fn diverge(
        &self,
        tokens: &[u32],
        repeat: &Generation,
        schema: &Value,
        mut output_tokens: usize,
        plan: CorrectionDecoding<'_>,
        bounds: Bounds,
        allowed: &Allowed,
    ) -> Result<ModelReply, LocalError> {
        let label = plan.label(bounds.constrain, allowed);
        let Some(at) = repeat.least_certain() else {
            // Every token was forced by the grammar: no other reply exists.
            let text = self.tokenizer.decode(&repeat.tokens)?;
            return Ok(reply(text, tokens, repeat, output_tokens, label));
        };
        let ban = Ban {
            prefix: repeat.tokens[..at].to_vec(),
            tokens: self.spellings(&repeat.tokens[at..])?,
        };
        let generation = self.generate_with(
            tokens,
            Some(schema),
            Sampler::Greedy,
            Some(ban),
            bounds.max_tokens,
        )?;
        output_tokens += generation.tokens.len();
        let text = self.tokenizer.decode(&generation.tokens)?;
        Ok(reply(
            text,
            tokens,
            &generation,
            output_tokens,
            format!("{label} diverged_at={at}"),
        ))
    }
}

fn reply(
    text: String,
    prompt: &[u32],
    generation: &Generation,
    output_tokens: usize,
    decoding: String,
) -> ModelReply {
    ModelReply {
        text: Some(text),
        tool_calls: Vec::new(),
        usage: Usage {
            input_tokens: prompt.len() as u64,
            output_tokens: output_tokens as u64,
        },
        prompt_tokens_reused: Some(generation.reused as u64),
        transport_retries: 0,
        decoding: Some(match generation.loops_cut {
            0 => decoding,
            n => format!("{decoding} loops_cut={n}"),
        }),
        reasoning: None,
    }
}

/// What the thought phase leaves for the decision: the prompt to decode it from (the thought
/// and its closing newline appended, when there is one), the prompt tokens reused from the
/// cache, the thought, and every token decoded for it (discarded repeats included).
struct Thinking {
    prompt: Vec<u32>,
    reused: Option<usize>,
    thought: Option<Reasoning>,
    spent: usize,
}

/// A thought as decoded, before it is read.
#[derive(Default)]
struct DecodedThought {
    tokens: Vec<u32>,
    /// Tokens decoded, those a recalculation cut away included.
    generated: usize,
    truncated: bool,
    reused: Option<usize>,
    recalculated: Vec<Recalculation>,
}

/// The most calculations one thought may have rewritten.
const MAX_RECALCULATIONS: usize = 16;

/// In a correction round, the rejected reply and its thought: the last assistant turn's.
fn rejected_thought(request: &ModelRequest) -> Option<(&CorrectionContext, &str)> {
    let correction = request.correction.as_ref()?;
    let reply = request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)?;
    Some((correction, reply.reasoning.as_ref()?.text.as_str()))
}

#[async_trait]
impl Model for LocalModel {
    fn name(&self) -> &str {
        &self.inner.name
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let inner = Arc::clone(&self.inner);
        let request = request.clone();
        let bounds = self.bounds;
        tokio::task::spawn_blocking(move || inner.complete(&request, bounds))
            .await
            .map_err(|e| ModelError::Other(format!("the inference task failed: {e}")))?
            .map_err(ModelError::from)
    }

    fn count_tokens(&self, text: &str) -> Option<usize> {
        self.inner.tokenizer.encode(text).ok().map(|t| t.len())
    }

    fn thinks(&self) -> bool {
        self.bounds.thinks(Think::Always)
    }
}
