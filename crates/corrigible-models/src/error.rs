//! Errors of building a model.

use crate::replay::ReplayError;
use crate::spec::Provider;

/// Why a model could not be built from a spec and options.
#[derive(Debug, thiserror::Error)]
pub enum ModelsError {
    /// The spec string is not one of the known forms.
    #[error("invalid model spec `{spec}`: {why}")]
    InvalidSpec {
        /// The spec as given.
        spec: String,
        /// What is wrong with it.
        why: String,
    },
    /// The replay file could not be loaded.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// The provider needs an API key and none was given.
    #[error("no API key for {provider}: set {vars} (or pass one explicitly)")]
    MissingKey {
        /// The provider.
        provider: Provider,
        /// The environment variables that were looked at.
        vars: String,
    },
    /// The base URL is not an http(s) URL.
    #[error("invalid base URL `{url}`: expected http:// or https://")]
    InvalidBaseUrl {
        /// The URL as given.
        url: String,
    },
    /// `local` is built by the CLI from the embedded-model crate, not here.
    #[error("the `local` model is not built by corrigible-models: use corrigible-local")]
    LocalNotSupported,
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}
