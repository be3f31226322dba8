//! The tokenizer, built from the GGUF file's own vocabulary and merges.
//!
//! candle's GGUF converter knows a handful of `tokenizer.ggml.pre` names and falls back to
//! GPT-2 settings (which prepend a space) for the rest. SmolLM2 declares `"smollm"`; its real
//! pre-tokenizer splits every digit apart and then applies byte-level BPE without a prefix
//! space. [`Tokenizer::from_gguf`] puts that pipeline back so encode → decode round-trips.

use std::sync::Arc;

use candle_core::quantized::gguf_file;
use candle_core::quantized::tokenizer::TokenizerFromGguf;
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::processors::byte_level::ByteLevel as ByteLevelProcessor;

use crate::error::LocalError;

/// Token names that end a turn in the chat formats we meet in GGUF files.
const END_OF_TURN_NAMES: [&str; 5] = [
    "<|im_end|>",
    "<|eot_id|>",
    "<|end|>",
    "<|endoftext|>",
    "</s>",
];

/// A byte-level BPE tokenizer with the model's stop tokens; clones share one vocabulary.
#[derive(Clone)]
pub struct Tokenizer {
    inner: Arc<tokenizers::Tokenizer>,
    stop_tokens: Vec<u32>,
    eos_token: Option<u32>,
    bos_token: Option<u32>,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("vocab_size", &self.vocab_size())
            .field("stop_tokens", &self.stop_tokens)
            .finish()
    }
}

fn metadata_u32(ct: &gguf_file::Content, key: &str) -> Option<u32> {
    ct.metadata.get(key).and_then(|v| v.to_u32().ok())
}

fn metadata_str<'a>(ct: &'a gguf_file::Content, key: &str) -> Option<&'a str> {
    ct.metadata
        .get(key)
        .and_then(|v| v.to_string().ok())
        .map(String::as_str)
}

/// The file's string array `key`, when it has one.
fn metadata_strings<'a>(ct: &'a gguf_file::Content, key: &str) -> Option<Vec<&'a str>> {
    let values = ct.metadata.get(key)?.to_vec().ok()?;
    values
        .iter()
        .map(|v| v.to_string().ok().map(String::as_str))
        .collect()
}

/// Checks that every merge joins two tokens into a third of the vocabulary. The tokenizers
/// crate checks this too, but only after copying the joined pair into a buffer as long as the
/// longest token, which panics when the pair is longer.
fn check_merges(ct: &gguf_file::Content) -> Result<(), LocalError> {
    let (Some(tokens), Some(merges)) = (
        metadata_strings(ct, "tokenizer.ggml.tokens"),
        metadata_strings(ct, "tokenizer.ggml.merges"),
    ) else {
        return Ok(());
    };
    let vocab: std::collections::HashSet<&str> = tokens.into_iter().collect();
    for merge in merges {
        let Some((a, b)) = merge.split_once(' ') else {
            continue;
        };
        if !(vocab.contains(a) && vocab.contains(b) && vocab.contains(format!("{a}{b}").as_str())) {
            return Err(LocalError::Tokenizer(format!(
                "the merge `{merge}` joins tokens that are not all in the vocabulary"
            )));
        }
    }
    Ok(())
}

/// Puts back the pre-tokenizer of `pre` names that candle's converter does not know.
fn repair_pipeline(pre: &str, tokenizer: &mut tokenizers::Tokenizer) {
    if pre == "smollm" {
        let pipeline = Sequence::new(vec![
            Digits::new(true).into(),
            ByteLevel::new(false, true, true).into(),
        ]);
        tokenizer.with_pre_tokenizer(Some(pipeline));
        tokenizer.with_decoder(Some(ByteLevelDecoder::new(false, true, true)));
        tokenizer.with_post_processor(Some(ByteLevelProcessor::new(false, true, true)));
    }
}

impl Tokenizer {
    /// Builds the tokenizer from the GGUF metadata (`tokenizer.ggml.*`).
    pub fn from_gguf(ct: &gguf_file::Content) -> Result<Self, LocalError> {
        check_merges(ct)?;
        let mut inner = tokenizers::Tokenizer::from_gguf(ct)
            .map_err(|e| LocalError::Tokenizer(e.to_string()))?;
        if let Some(pre) = metadata_str(ct, "tokenizer.ggml.pre") {
            repair_pipeline(pre, &mut inner);
        }
        let eos_token = metadata_u32(ct, "tokenizer.ggml.eos_token_id");
        let bos_token = metadata_u32(ct, "tokenizer.ggml.bos_token_id");
        let mut stop_tokens: Vec<u32> = eos_token.into_iter().collect();
        for name in END_OF_TURN_NAMES {
            if let Some(id) = inner.token_to_id(name)
                && !stop_tokens.contains(&id)
            {
                stop_tokens.push(id);
            }
        }
        if stop_tokens.is_empty() {
            return Err(LocalError::Tokenizer(
                "the model declares no end-of-sequence or end-of-turn token".into(),
            ));
        }
        Ok(Self {
            inner: Arc::new(inner),
            stop_tokens,
            eos_token,
            bos_token,
        })
    }

    /// Encodes `text`; special tokens written in the text (`<|im_start|>`) become their ids.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, LocalError> {
        self.inner
            .encode(text, false)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| LocalError::Tokenizer(e.to_string()))
    }

    /// Decodes `ids` back to text, special tokens included.
    pub fn decode(&self, ids: &[u32]) -> Result<String, LocalError> {
        self.inner
            .decode(ids, false)
            .map_err(|e| LocalError::Tokenizer(e.to_string()))
    }

    /// The id of the token spelled `name`, if it exists.
    pub fn token_id(&self, name: &str) -> Option<u32> {
        self.inner.token_to_id(name)
    }

    /// The spelling of the token `id`, if it exists.
    pub fn token_name(&self, id: u32) -> Option<String> {
        self.inner.id_to_token(id)
    }

    /// The tokens that end generation: the end-of-sequence token and any end-of-turn tokens.
    pub fn stop_tokens(&self) -> &[u32] {
        &self.stop_tokens
    }

    /// The declared end-of-sequence token.
    pub fn eos_token(&self) -> Option<u32> {
        self.eos_token
    }

    /// The declared beginning-of-sequence token.
    pub fn bos_token(&self) -> Option<u32> {
        self.bos_token
    }

    /// The number of token ids, added tokens included.
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// The tokenizer in HuggingFace's `tokenizer.json` format.
    pub fn to_json(&self) -> Result<String, LocalError> {
        self.inner
            .to_string(false)
            .map_err(|e| LocalError::Tokenizer(e.to_string()))
    }

    /// The parts of the `tokenizer.json` form that spell the tokens: the decoder, the added
    /// tokens and the model's vocabulary, without the merges and the rest of the pipeline.
    pub(crate) fn spelling_json(&self) -> Result<serde_json::Value, LocalError> {
        let decoder = serde_json::to_value(self.inner.get_decoder())
            .map_err(|e| LocalError::Tokenizer(e.to_string()))?;
        let mut added: Vec<_> = self.inner.get_added_tokens_decoder().into_iter().collect();
        added.sort_unstable_by_key(|&(id, _)| id);
        let added: Vec<serde_json::Value> = added
            .into_iter()
            .map(
                |(id, t)| serde_json::json!({"id": id, "content": t.content, "special": t.special}),
            )
            .collect();
        let vocab: serde_json::Map<String, serde_json::Value> = self
            .inner
            .get_vocab(false)
            .into_iter()
            .map(|(name, id)| (name, id.into()))
            .collect();
        Ok(serde_json::json!({
            "decoder": decoder,
            "added_tokens": added,
            "model": {"vocab": vocab},
        }))
    }
}
