//! corrigible-local: the embedded model of corrigible.
//!
//! [`LocalModel`] runs a llama or qwen2 GGUF file (by default Qwen2.5-Coder-1.5B-Instruct,
//! fetched by `scripts/fetch-model`; [`KNOWN_MODELS`] lists the others it fetches, among them
//! the small [`SMALL_MODEL`]) on the CPU and implements [`corrigible::Model`] for the JSON
//! decision protocol. A reply is decoded greedily (or sampled with a seed), optionally
//! constrained token by token to the decision's JSON Schema ([`Constrain`]), and a correction
//! round reuses the cached keys and values of the prompt prefix it shares with the previous
//! call; with a [`PrefixStore`], a new process loads the pre-filled system prompt and examples
//! from disk. [`LocalConfig`] holds the settings, [`resolve_model_path`] finds the file, and
//! [`bench`] measures prefill and decode speed.
//! The forward pass, its kernels and thread pool are the `corrigible-llama` crate.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod batcher;
pub mod bench;
mod config;
mod constraint;
mod correction;
mod error;
mod generate;
mod gguf;
mod loop_guard;
mod model;
mod path;
mod pool;
mod prefix_store;
mod sampler;
mod template;
mod think;
mod thought;
mod tokenizer;
mod vocabulary;

pub use batcher::BatchCounts;
pub use config::{Constrain, LocalConfig, MAX_SEQUENCES};
pub use constraint::{StringCaps, constraint_schema, narrowed_schema};
pub use correction::{CORRECTION_TEMPERATURE, CORRECTION_TOP_P, MAX_RESAMPLES, correction_seed};
pub use corrigible_llama::{Weights, inference_threads};
pub use error::{FETCH_COMMAND, LocalError};
pub use generate::{Generation, GenerationEnd};
pub use gguf::{check_gguf, read_header};
pub use model::LocalModel;
pub use path::{
    CACHE_DIR_ENV, DEFAULT_MODEL_FILE, DEFAULT_MODEL_SHA256, KNOWN_MODELS, KnownModel,
    MODEL_DIR_ENV, MODEL_ENV, SMALL_MODEL, cache_dir, default_prefix_cache_dir, local_model_path,
    model_dir, model_path_from_env, resolve_model_path,
};
pub use prefix_store::{DEFAULT_PREFIX_STORE_BYTES, PrefixStore};
pub use template::{CHATML_TEMPLATE, ChatTemplate};
pub use think::{REASON_INSTRUCTION, Think};
pub use thought::{DEFAULT_THINK_TOKENS, SUGGESTED_THINK_TOKENS};
pub use tokenizer::Tokenizer;
