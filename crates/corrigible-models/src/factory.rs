//! The factory: a [`ModelSpec`] and [`ProviderOptions`] in, an `Arc<dyn Model>` out.

use std::sync::Arc;

use corrigible::Model;

use crate::error::ModelsError;
use crate::options::ProviderOptions;
use crate::spec::{ModelSpec, Provider};
use crate::{AnthropicModel, GeminiModel, OpenAiModel, ReplayModel};

/// Builds the model of `spec`. Unset base URL and API key are read from the environment
/// (`OPENAI_API_KEY`, `GEMINI_API_KEY` or `GOOGLE_API_KEY`, `ANTHROPIC_API_KEY`;
/// `OPENAI_BASE_URL`, `GEMINI_BASE_URL`, `ANTHROPIC_BASE_URL`). A provider's own API without
/// a key is [`ModelsError::MissingKey`], before any request; an OpenAI-compatible server at
/// another base URL (llama.cpp, Ollama, vLLM) may take none. `local` is an error: the
/// embedded model is built from its own crate.
pub fn build(spec: &ModelSpec, options: ProviderOptions) -> Result<Arc<dyn Model>, ModelsError> {
    build_with_env(spec, options, |name| std::env::var(name).ok())
}

/// [`build`] with the environment given as a lookup function (for tests and embedding).
pub fn build_with_env(
    spec: &ModelSpec,
    options: ProviderOptions,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Arc<dyn Model>, ModelsError> {
    match spec {
        ModelSpec::Local { .. } => Err(ModelsError::LocalNotSupported),
        ModelSpec::Replay(path) => Ok(Arc::new(ReplayModel::from_file(path)?)),
        ModelSpec::Remote { provider, model } => {
            let options = options.with_env_from(*provider, env);
            if options.api_key.is_none() && needs_key(*provider, options.base_url.as_deref()) {
                return Err(ModelsError::MissingKey {
                    provider: *provider,
                    vars: provider.key_env_vars().join(" or "),
                });
            }
            Ok(match provider {
                Provider::OpenAi => Arc::new(OpenAiModel::new(model, options)?),
                Provider::Gemini => Arc::new(GeminiModel::new(model, options)?),
                Provider::Anthropic => Arc::new(AnthropicModel::new(model, options)?),
            })
        }
    }
}

/// Whether requests to `provider` at `base_url` need a key: every provider's own API does, an
/// OpenAI-compatible server elsewhere may not.
fn needs_key(provider: Provider, base_url: Option<&str>) -> bool {
    provider != Provider::OpenAi || provider.is_own_api(base_url)
}
