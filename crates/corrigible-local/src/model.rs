//! [`LocalModel`]: the embedded model behind the engine's [`Model`] trait.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use candle_core::quantized::gguf_file;
use corrigible::decision::with_grounds;
use corrigible::{
    Allowed, CorrectionContext, Message, Model, ModelError, ModelReply, ModelRequest, Protocol,
    Usage,
};
use serde_json::Value;

use crate::config::{Constrain, LocalConfig};
use crate::constraint::{Guide, StringCaps, constraint_schema, narrowed_schema};
use crate::correction::CorrectionDecoding;
use crate::error::LocalError;
use crate::generate::{Ban, DecodeParams, Generation, Runner};
use crate::sampler::Sampler;
use crate::template::ChatTemplate;
use crate::tokenizer::Tokenizer;

/// The embedded model: a llama-architecture GGUF file run on the CPU.
///
/// Cloning is cheap and shares the loaded weights. Calls are served one at a time.
#[derive(Clone)]
pub struct LocalModel {
    inner: Arc<Inner>,
    constrain: Constrain,
}

struct Inner {
    config: LocalConfig,
    name: String,
    tokenizer: Tokenizer,
    template: ChatTemplate,
    load_time: Duration,
    /// The tokens that close a JSON string, for the loop guard.
    closers: Vec<u32>,
    state: Mutex<State>,
}

struct State {
    runner: Runner,
    guide: Guide,
}

impl std::fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModel")
            .field("name", &self.inner.name)
            .field("config", &self.inner.config)
            .field("constrain", &self.constrain)
            .finish()
    }
}

/// The inference threads (the caller and its helpers): `CANDLE_NUM_THREADS`, else
/// `RAYON_NUM_THREADS`, else all cores. The pool is process-wide and created on first use.
pub fn inference_threads() -> usize {
    std::env::var("CANDLE_NUM_THREADS")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(candle_core::utils::get_num_threads)
}

fn token_spelling(tokenizer: &Tokenizer, id: Option<u32>) -> String {
    id.and_then(|id| tokenizer.token_name(id))
        .unwrap_or_default()
}

/// The tokens whose text begins with `"`, which close a JSON string; a token that does not
/// decode on its own (part of a UTF-8 sequence) is none.
fn string_closers(tokenizer: &Tokenizer) -> Vec<u32> {
    let vocab: Vec<(u32, String)> = (0..tokenizer.vocab_size())
        .filter_map(|id| u32::try_from(id).ok())
        .filter_map(|id| tokenizer.decode(&[id]).ok().map(|text| (id, text)))
        .collect();
    crate::loop_guard::closers(vocab.iter().map(|(id, text)| (*id, text.as_str())))
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
        let io_error = |source| LocalError::Io {
            path: path.clone(),
            source,
        };
        let file = crate::llama::MappedFile::open(&path).map_err(io_error)?;
        let content = gguf_file::Content::read(&mut file.reader())
            .map_err(|e| LocalError::Unsupported(format!("{}: {e}", path.display())))?;
        let tokenizer = Tokenizer::from_gguf(&content)?;
        let template = ChatTemplate::from_gguf(
            &content,
            &token_spelling(&tokenizer, tokenizer.bos_token()),
            &token_spelling(&tokenizer, tokenizer.eos_token()),
        )?;
        let llama = crate::llama::load(&content, &file, config.weights)
            .map_err(|e| LocalError::Unsupported(format!("{}: {e}", path.display())))?;
        let guide = Guide::new(&tokenizer, llama.vocab_size())?;
        let closers = string_closers(&tokenizer);
        Ok(Self {
            constrain: config.constrain,
            inner: Arc::new(Inner {
                name: model_name(&path),
                config,
                tokenizer,
                template,
                load_time: start.elapsed(),
                closers,
                state: Mutex::new(State {
                    runner: Runner::new(llama),
                    guide,
                }),
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
            constrain,
        }
    }

    /// How this handle constrains its decisions.
    pub fn constrain(&self) -> Constrain {
        self.constrain
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
        self.inner.lock().runner.reset();
    }

    /// Generates from the rendered `prompt` text, constrained to `schema` when given.
    ///
    /// Blocking and CPU-bound: async callers go through [`Model::complete`].
    pub fn generate(&self, prompt: &str, schema: Option<&Value>) -> Result<Generation, LocalError> {
        let tokens = self.inner.tokenizer.encode(prompt)?;
        self.inner.generate_tokens(&tokens, schema)
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
            sampler: Sampler::Greedy,
            constraint: None,
            ban: None,
            closers: None,
        };
        self.inner.lock().runner.generate(prompt, params)
    }

    /// The model's name, owned.
    pub(crate) fn name_string(&self) -> String {
        self.inner.name.clone()
    }

    /// [`Model::complete`] without the async wrapper.
    pub fn complete_blocking(&self, request: &ModelRequest) -> Result<ModelReply, LocalError> {
        self.inner.complete(request, self.constrain)
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(guard) => guard,
            Err(poisoned) => {
                let mut guard = poisoned.into_inner();
                guard.runner.reset();
                guard
            }
        }
    }

    fn generate_tokens(
        &self,
        prompt: &[u32],
        schema: Option<&Value>,
    ) -> Result<Generation, LocalError> {
        let config = &self.config;
        let sampler = Sampler::new(config.temperature, config.top_p, config.seed);
        self.generate_with(prompt, schema, sampler, None)
    }

    fn generate_with(
        &self,
        prompt: &[u32],
        schema: Option<&Value>,
        sampler: Sampler,
        ban: Option<Ban>,
    ) -> Result<Generation, LocalError> {
        let mut state = self.lock();
        let constraint = match schema {
            Some(s) => Some(state.guide.constraint(s)?),
            None => None,
        };
        let params = DecodeParams {
            max_tokens: self.config.max_tokens,
            stop_tokens: self.tokenizer.stop_tokens(),
            sampler,
            constraint,
            ban,
            closers: Some(&self.closers),
        };
        state.runner.generate(prompt, params)
    }

    fn caps(&self) -> StringCaps {
        StringCaps::fitting(self.config.max_tokens)
    }

    fn complete(
        &self,
        request: &ModelRequest,
        constrain: Constrain,
    ) -> Result<ModelReply, LocalError> {
        if request.protocol == Protocol::Native {
            return Err(LocalError::Config(
                "the embedded model has no native tool calling: use --protocol json".into(),
            ));
        }
        let prompt = self.template.render(&request.messages)?;
        let tokens = self.tokenizer.encode(&prompt)?;
        let Some(correction) = &request.correction else {
            let tools = with_grounds(&request.tools, &request.grounds, false);
            let schema = constraint_schema(&tools, constrain, self.caps());
            let generation = self.generate_tokens(&tokens, schema.as_ref())?;
            let text = self.tokenizer.decode(&generation.tokens)?;
            return Ok(reply(
                text,
                &tokens,
                &generation,
                generation.tokens.len(),
                self.config.decoding_label(constrain),
            ));
        };
        self.correct(request, correction, &tokens, constrain)
    }

    /// A correction round: decoded under the narrowed schema, and never a repeat of the
    /// rejected reply while a seeded sample can avoid it.
    fn correct(
        &self,
        request: &ModelRequest,
        correction: &CorrectionContext,
        tokens: &[u32],
        constrain: Constrain,
    ) -> Result<ModelReply, LocalError> {
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
            let schema = narrowed_schema(&tools, constrain, &allowed, self.caps());
            let greedy = matches!(plan.sampler(), Sampler::Greedy);
            let generation = self.generate_with(tokens, Some(&schema), plan.sampler(), None)?;
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
                        constrain,
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
        constrain: Constrain,
        allowed: &Allowed,
    ) -> Result<ModelReply, LocalError> {
        let label = plan.label(constrain, allowed);
        let Some(at) = repeat.least_certain() else {
            // Every token was forced by the grammar: no other reply exists.
            let text = self.tokenizer.decode(&repeat.tokens)?;
            return Ok(reply(text, tokens, repeat, output_tokens, label));
        };
        let ban = Ban {
            prefix: repeat.tokens[..at].to_vec(),
            tokens: self.spellings(&repeat.tokens[at..])?,
        };
        let generation = self.generate_with(tokens, Some(schema), Sampler::Greedy, Some(ban))?;
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
    }
}

#[async_trait]
impl Model for LocalModel {
    fn name(&self) -> &str {
        &self.inner.name
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let inner = Arc::clone(&self.inner);
        let request = request.clone();
        let constrain = self.constrain;
        tokio::task::spawn_blocking(move || inner.complete(&request, constrain))
            .await
            .map_err(|e| ModelError::Other(format!("the inference task failed: {e}")))?
            .map_err(ModelError::from)
    }

    fn count_tokens(&self, text: &str) -> Option<usize> {
        self.inner.tokenizer.encode(text).ok().map(|t| t.len())
    }
}
