//! What the model's calls need of its vocabulary, read from the GGUF header alone, so that it
//! is built on one core while the weights load on another.

use candle_core::quantized::gguf_file;

use crate::constraint::Guide;
use crate::error::LocalError;
use crate::template::ChatTemplate;
use crate::tokenizer::Tokenizer;

/// The tokenizer, the chat template, the constraint's parser factory and the token lists
/// the loop guard and the thought reader stop on.
pub(crate) struct Vocabulary {
    pub(crate) tokenizer: Tokenizer,
    pub(crate) template: ChatTemplate,
    /// The parser factory with the width of logits it was built for: the rows of the file's
    /// embedding table, which the loaded weights confirm (`None` when the header has none).
    pub(crate) guide: Option<(usize, Result<Guide, LocalError>)>,
    /// The tokens that close a JSON string, for the loop guard.
    pub(crate) closers: Vec<u32>,
    /// The tokens that end a thought (see [`crate::thought::stops`]).
    pub(crate) thought_stops: Vec<u32>,
    /// Those and the tokens that end a line, where the thought calculator reads it.
    pub(crate) thought_line_stops: Vec<u32>,
}

impl Vocabulary {
    /// Reads it all from the header `content`.
    pub(crate) fn from_gguf(content: &gguf_file::Content) -> Result<Self, LocalError> {
        let tokenizer = Tokenizer::from_gguf(content)?;
        let template = ChatTemplate::from_gguf(
            content,
            &token_spelling(&tokenizer, tokenizer.bos_token()),
            &token_spelling(&tokenizer, tokenizer.eos_token()),
        )?;
        let width = content
            .tensor_infos
            .get("token_embd.weight")
            .and_then(|t| t.shape.dims().first().copied());
        // The token lists on another thread while this one builds the parser factory; here,
        // after it, when that thread could not start.
        let (guide, lists) = std::thread::scope(|scope| {
            let lists = std::thread::Builder::new()
                .spawn_scoped(scope, || closers_and_thought_stops(&tokenizer))
                .ok();
            let guide = width.map(|n| (n, Guide::new(&tokenizer, n)));
            let lists = match lists {
                Some(handle) => handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                None => closers_and_thought_stops(&tokenizer),
            };
            (guide, lists)
        });
        let (closers, thought_stops, thought_line_stops) = lists;
        Ok(Self {
            tokenizer,
            template,
            guide,
            closers,
            thought_stops,
            thought_line_stops,
        })
    }

    /// The parser factory for logits of width `n_vocab`: the one built, or a new one when it
    /// was built for another width.
    pub(crate) fn take_guide(&mut self, n_vocab: usize) -> Result<Guide, LocalError> {
        match self.guide.take() {
            Some((n, guide)) if n == n_vocab => guide,
            _ => Guide::new(&self.tokenizer, n_vocab),
        }
    }
}

fn token_spelling(tokenizer: &Tokenizer, id: Option<u32>) -> String {
    id.and_then(|id| tokenizer.token_name(id))
        .unwrap_or_default()
}

/// The tokens whose text begins with `"`, which close a JSON string, the tokens that end a
/// thought, and those together with the tokens that end a line of it; a token that does not
/// decode on its own (part of a UTF-8 sequence) is none of them.
fn closers_and_thought_stops(tokenizer: &Tokenizer) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let vocab: Vec<(u32, String)> = (0..tokenizer.vocab_size())
        .filter_map(|id| u32::try_from(id).ok())
        .filter_map(|id| tokenizer.decode(&[id]).ok().map(|text| (id, text)))
        .collect();
    let pairs = || vocab.iter().map(|(id, text)| (*id, text.as_str()));
    (
        crate::loop_guard::closers(pairs()),
        crate::thought::stops(pairs(), tokenizer.stop_tokens()),
        crate::thought::line_stops(pairs(), tokenizer.stop_tokens()),
    )
}
