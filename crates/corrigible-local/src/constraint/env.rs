//! The bridge from our tokenizer to llguidance's token trie.
//!
//! The trie is built from the tokenizer's `tokenizer.json` form, so the bridge holds whatever
//! `tokenizers` version candle uses, independent of the one llguidance was built against.

use std::sync::Arc;

use toktrie::{TokEnv, TokRxInfo, TokTrie, TokenId, TokenizerEnv};

use crate::error::LocalError;
use crate::tokenizer::Tokenizer;

/// A [`TokenizerEnv`] over our [`Tokenizer`].
pub struct GuidanceEnv {
    trie: TokTrie,
    tokenizer: Tokenizer,
}

impl GuidanceEnv {
    /// Builds the trie; `n_vocab` is the width of the model's logits.
    pub fn build(tokenizer: &Tokenizer, n_vocab: usize) -> Result<TokEnv, LocalError> {
        let json: serde_json::Value = serde_json::from_str(&tokenizer.to_json()?)
            .map_err(|e| LocalError::Tokenizer(e.to_string()))?;
        let mut words = llguidance::token_bytes_from_tokenizer_json(&json)
            .map_err(|e| LocalError::Tokenizer(e.to_string()))?;
        while words.len() < n_vocab {
            let mut name = format!(".<[{}]>", words.len()).into_bytes();
            name[0] = TokTrie::SPECIAL_TOKEN_MARKER;
            words.push(name);
        }
        let vocab_size = u32::try_from(words.len())
            .map_err(|_| LocalError::Tokenizer("vocabulary too large".into()))?;
        let stops: Vec<TokenId> = tokenizer
            .stop_tokens()
            .iter()
            .copied()
            .filter(|&t| t < vocab_size)
            .collect();
        let Some(&eos) = stops.first() else {
            return Err(LocalError::Tokenizer(
                "no stop token inside the vocabulary".into(),
            ));
        };
        let mut info = TokRxInfo::new(vocab_size, eos);
        info.tok_bos = tokenizer.bos_token().filter(|&t| t < vocab_size);
        let trie = TokTrie::from(&info, &words).with_eos_tokens(&stops);
        Ok(Arc::new(GuidanceEnv {
            trie,
            tokenizer: tokenizer.clone(),
        }))
    }
}

impl TokenizerEnv for GuidanceEnv {
    fn tok_trie(&self) -> &TokTrie {
        &self.trie
    }

    fn tokenize_bytes(&self, s: &[u8]) -> Vec<TokenId> {
        self.trie.tokenize_with_greedy_fallback(s, |text| {
            self.tokenizer.encode(text).unwrap_or_default()
        })
    }
}
