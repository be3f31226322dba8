//! Model backends for corrigible: implementations of [`corrigible::Model`].
//!
//! - [`ReplayModel`] serves recorded replies from a JSONL file, in order.
//! - [`OpenAiModel`], [`GeminiModel`] and [`AnthropicModel`] call the providers' HTTP APIs
//!   with their native tool calling, or with no tools under the JSON protocol.
//! - [`ModelSpec`] parses `replay:FILE`, `openai:MODEL`, `gemini:MODEL`, `anthropic:MODEL`
//!   and `local`; [`build`] turns a spec and [`ProviderOptions`] into an `Arc<dyn Model>`,
//!   filling the API key and base URL from the environment.
//!
//! Transport failures (connection errors, 429, 5xx, 529) are retried within a
//! [`TransportRetry`], recorded in `ModelReply::transport_retries`, and never count as
//! corrections; when the retries run out the call fails with `ModelError::Transport`.
//! Other 4xx answers are `ModelError::Config` with the provider's message. API keys never
//! appear in `Debug` output, logs or error messages.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod anthropic;
mod convert;
mod error;
mod factory;
mod gemini;
mod http;
mod openai;
mod options;
pub mod replay;
mod retry;
mod spec;

pub use anthropic::{ANTHROPIC_VERSION, AnthropicModel};
pub use error::ModelsError;
pub use factory::{build, build_with_env};
pub use gemini::GeminiModel;
pub use openai::{ChatEndpoint, EndpointAnswer, OpenAiModel};
pub use options::{ApiKey, ProviderOptions, Timeouts};
pub use replay::{ReplayError, ReplayModel};
pub use retry::{InvalidTransportRetry, TransportRetry};
pub use spec::{ModelSpec, Provider};
