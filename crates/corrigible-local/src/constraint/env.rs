//! The bridge from our tokenizer to llguidance's token trie.
//!
//! The trie is built from the parts of the tokenizer's `tokenizer.json` form that spell the
//! tokens, so the bridge holds whatever `tokenizers` version candle uses, independent of the
//! one llguidance was built against.

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
        let mut words = llguidance::token_bytes_from_tokenizer_json(&tokenizer.spelling_json()?)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::{KNOWN_MODELS, local_model_path};

    /// Each fetched model's tokenizer, or a failure under CI (`CI` set) when one is missing.
    fn tokenizers() -> Vec<(String, Tokenizer)> {
        KNOWN_MODELS
            .iter()
            .filter_map(|known| {
                let path = match local_model_path(known.name) {
                    Ok(path) => path,
                    Err(e) if std::env::var_os("CI").is_some() => panic!("{e}"),
                    Err(e) => {
                        eprintln!("skipping {}: {e}", known.name);
                        return None;
                    }
                };
                let file = corrigible_llama::MappedFile::open(&path).expect("opens");
                let content = crate::gguf::read_header(&mut file.reader()).expect("a header");
                let tokenizer = Tokenizer::from_gguf(&content).expect("a tokenizer");
                Some((known.name.to_string(), tokenizer))
            })
            .collect()
    }

    #[test]
    fn the_spelling_parts_spell_every_token_as_the_whole_form_does() {
        for (name, tokenizer) in tokenizers() {
            let whole: serde_json::Value =
                serde_json::from_str(&tokenizer.to_json().expect("serializes")).expect("JSON");
            let from_whole = llguidance::token_bytes_from_tokenizer_json(&whole).expect("words");
            let spelling = tokenizer.spelling_json().expect("the spelling parts");
            let from_parts = llguidance::token_bytes_from_tokenizer_json(&spelling).expect("words");
            assert_eq!(from_parts.len(), tokenizer.vocab_size(), "{name}");
            assert!(from_parts == from_whole, "{name}: the words differ");
        }
    }
}
