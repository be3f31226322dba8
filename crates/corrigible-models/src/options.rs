//! Provider options: base URL, API key, timeouts, transport retries; filled from the environment.

use std::fmt;
use std::time::Duration;

use crate::retry::TransportRetry;
use crate::spec::Provider;

/// An API key. Its `Debug` never shows it, it has no `Display` and is never serialized.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for the request header only.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced by `[redacted]`.
    pub fn redact(&self, text: &str) -> String {
        if self.0.len() < 4 {
            return text.to_string();
        }
        text.replace(&self.0, "[redacted]")
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

/// Connect and whole-request timeouts of one HTTP attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Time allowed to open the connection (default 10 s).
    pub connect: Duration,
    /// Time allowed for one request, from sending to the end of the body (default 120 s).
    pub request: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            request: Duration::from_secs(120),
        }
    }
}

/// How to reach a provider. Unset fields are filled from the environment by
/// [`ProviderOptions::with_env`] (the factory does this) or take the provider's defaults.
#[derive(Debug, Clone, Default)]
pub struct ProviderOptions {
    /// The provider's base URL: up to and including `/v1` for OpenAI-compatible servers,
    /// the host root for Gemini and Anthropic.
    pub base_url: Option<String>,
    /// The API key.
    pub api_key: Option<ApiKey>,
    /// HTTP timeouts.
    pub timeouts: Timeouts,
    /// Transport retries (connection errors, 429, 5xx, 529).
    pub retry: TransportRetry,
    /// Maximum tokens generated per call (Anthropic requires one: default 4096).
    pub max_output_tokens: Option<u32>,
    /// Sampling temperature, when set.
    pub temperature: Option<f32>,
    /// A budget of reasoning tokens for models that think, when set: Anthropic extended
    /// thinking (at least 1024), Gemini's thinking budget with its thoughts included.
    pub think_tokens: Option<u32>,
}

impl ProviderOptions {
    /// Fills an unset base URL and API key from the process environment, for `provider`.
    pub fn with_env(self, provider: Provider) -> Self {
        self.with_env_from(provider, |name| std::env::var(name).ok())
    }

    /// Fills an unset base URL and API key from `env` (a lookup by variable name); empty
    /// values count as unset.
    pub fn with_env_from(
        mut self,
        provider: Provider,
        env: impl Fn(&str) -> Option<String>,
    ) -> Self {
        let lookup = |vars: &[&str]| {
            vars.iter()
                .filter_map(|name| env(name))
                .map(|v| v.trim().to_string())
                .find(|v| !v.is_empty())
        };
        if self.base_url.is_none() {
            self.base_url = lookup(provider.base_url_env_vars());
        }
        if self.api_key.is_none() {
            self.api_key = lookup(provider.key_env_vars()).map(ApiKey::new);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_key() {
        let options = ProviderOptions {
            api_key: Some(ApiKey::new("sk-secret-123")),
            ..ProviderOptions::default()
        };
        let shown = format!("{options:?}");
        assert!(!shown.contains("sk-secret-123"), "{shown}");
        assert!(shown.contains("[redacted]"));
    }

    #[test]
    fn env_fills_only_unset_fields() {
        let env = |name: &str| match name {
            "GEMINI_API_KEY" => Some(String::new()),
            "GOOGLE_API_KEY" => Some("g-key".to_string()),
            "GEMINI_BASE_URL" => Some("http://env".to_string()),
            _ => None,
        };
        let filled = ProviderOptions::default().with_env_from(Provider::Gemini, env);
        assert_eq!(filled.api_key, Some(ApiKey::new("g-key")));
        assert_eq!(filled.base_url.as_deref(), Some("http://env"));

        let explicit = ProviderOptions {
            base_url: Some("http://flag".into()),
            ..ProviderOptions::default()
        }
        .with_env_from(Provider::Gemini, env);
        assert_eq!(explicit.base_url.as_deref(), Some("http://flag"));
    }

    #[test]
    fn redact_replaces_the_key() {
        let key = ApiKey::new("sk-abcdef");
        assert_eq!(key.redact("bad key sk-abcdef!"), "bad key [redacted]!");
    }
}
