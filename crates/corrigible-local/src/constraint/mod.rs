//! Constrained decoding: a token mask from llguidance, applied to the logits at each step.

mod env;
mod schema;

use std::collections::HashMap;

use llguidance::api::TopLevelGrammar;
use llguidance::{Matcher, ParserFactory};
use serde_json::Value;

pub use schema::{StringCaps, constraint_schema, narrowed_schema};

use crate::error::LocalError;
use crate::tokenizer::Tokenizer;

/// Compiles decision schemas into matchers, once per distinct schema.
pub struct Guide {
    factory: ParserFactory,
    compiled: HashMap<String, Matcher>,
}

impl std::fmt::Debug for Guide {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guide")
            .field("compiled", &self.compiled.len())
            .finish()
    }
}

fn constraint_error(e: impl std::fmt::Display) -> LocalError {
    LocalError::Constraint(e.to_string())
}

impl Guide {
    /// Builds the parser factory for `tokenizer` and logits of width `n_vocab` (about 0.6 s for
    /// Qwen's 151,936 tokens).
    pub fn new(tokenizer: &Tokenizer, n_vocab: usize) -> Result<Self, LocalError> {
        let env = env::GuidanceEnv::build(tokenizer, n_vocab)?;
        let mut factory = ParserFactory::new_simple(&env).map_err(constraint_error)?;
        factory.quiet();
        Ok(Self {
            factory,
            compiled: HashMap::new(),
        })
    }

    /// A fresh constraint for `schema`; the compiled grammar is cached by the schema's text.
    pub fn constraint(&mut self, schema: &Value) -> Result<Constraint, LocalError> {
        let key = schema.to_string();
        if let Some(m) = self.compiled.get(&key) {
            return Ok(Constraint { matcher: m.clone() });
        }
        let grammar = TopLevelGrammar::from_json_schema(schema.clone());
        let matcher = Matcher::new(self.factory.create_parser(grammar));
        if let Some(e) = matcher.get_error() {
            return Err(LocalError::Constraint(format!(
                "the decision schema does not compile: {e}"
            )));
        }
        self.compiled.insert(key, matcher.clone());
        Ok(Constraint { matcher })
    }
}

/// The state of one constrained generation.
pub struct Constraint {
    matcher: Matcher,
}

impl Constraint {
    /// Sets the logits of every token the grammar forbids now to negative infinity.
    pub fn mask(&mut self, logits: &mut [f32]) -> Result<(), LocalError> {
        let allowed = self
            .matcher
            .compute_mask_or_eos()
            .map_err(constraint_error)?;
        let width = allowed.len();
        for (tok, logit) in logits.iter_mut().enumerate() {
            let ok = tok < width && u32::try_from(tok).is_ok_and(|t| allowed.is_allowed(t));
            if !ok {
                *logit = f32::NEG_INFINITY;
            }
        }
        Ok(())
    }

    /// Advances the grammar by `token`.
    pub fn commit(&mut self, token: u32) -> Result<(), LocalError> {
        self.matcher.consume_token(token).map_err(constraint_error)
    }

    /// Advances the grammar over the tokens it forces next, at most `limit` of them, and
    /// returns them: none where it leaves the model a choice.
    pub fn fast_forward(&mut self, limit: usize) -> Result<Vec<u32>, LocalError> {
        let mut forced = self.matcher.compute_ff_tokens();
        forced.truncate(limit);
        if !forced.is_empty() {
            self.matcher
                .consume_tokens(&forced)
                .map_err(constraint_error)?;
        }
        Ok(forced)
    }

    /// Takes back the last `n` tokens.
    pub fn rollback(&mut self, n: usize) -> Result<(), LocalError> {
        self.matcher.rollback(n).map_err(constraint_error)
    }

    /// Whether the grammar is complete and admits nothing more.
    pub fn is_stopped(&self) -> bool {
        self.matcher.is_stopped()
    }
}
