//! The errors of the embedded model.

use std::path::PathBuf;

use corrigible::ModelError;

/// The command that fetches the default model, as a user would type it in the repository.
pub const FETCH_COMMAND: &str = "scripts/fetch-model";

/// Why the embedded model could not be loaded or run.
#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    /// The model file is not where it was expected.
    #[error(
        "embedded model not found at {}: run `{fetch}` (or set CORRIGIBLE_MODEL to a llama or qwen2 GGUF file)",
        path.display()
    )]
    ModelMissing {
        /// Where the model was looked for.
        path: PathBuf,
        /// The command that fetches it.
        fetch: String,
    },
    /// `local:NAME` names neither a known model nor a file.
    #[error("unknown embedded model `{name}`: expected {known}, or the path of a GGUF file")]
    UnknownModel {
        /// The name given.
        name: String,
        /// The known names, listed.
        known: String,
    },
    /// Reading the file failed.
    #[error("cannot read {}: {cause}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause, part of the message (the error is also carried as text in a
        /// `ModelError`, which has no source chain).
        cause: std::io::Error,
    },
    /// The file is not a usable llama or qwen2 GGUF model.
    #[error("unsupported model file: {0}")]
    Unsupported(String),
    /// The tokenizer could not be built or could not encode/decode.
    #[error("tokenizer error: {0}")]
    Tokenizer(String),
    /// The chat template is missing or failed to render.
    #[error("chat template error: {0}")]
    Template(String),
    /// The decision schema could not be compiled into a grammar, or the grammar failed.
    #[error("constraint error: {0}")]
    Constraint(String),
    /// Inference failed inside the tensor library.
    #[error("inference error: {0}")]
    Inference(String),
    /// The prompt does not fit the model's context window.
    #[error("prompt of {prompt} tokens does not fit the context window of {context} tokens")]
    ContextOverflow {
        /// Prompt tokens.
        prompt: usize,
        /// The model's context length.
        context: usize,
    },
    /// A configuration value is invalid.
    #[error("invalid configuration: {0}")]
    Config(String),
}

impl From<candle_core::Error> for LocalError {
    fn from(e: candle_core::Error) -> Self {
        LocalError::Inference(e.to_string())
    }
}

impl From<LocalError> for ModelError {
    fn from(e: LocalError) -> Self {
        match e {
            LocalError::ModelMissing { .. }
            | LocalError::UnknownModel { .. }
            | LocalError::Io { .. }
            | LocalError::Unsupported(_)
            | LocalError::Config(_) => ModelError::Config(e.to_string()),
            other => ModelError::Other(other.to_string()),
        }
    }
}
