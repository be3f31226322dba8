//! Model specs: `local`, `replay:FILE`, `openai:MODEL`, `gemini:MODEL`, `anthropic:MODEL`.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use crate::error::ModelsError;

/// An HTTP provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Provider {
    /// OpenAI Chat Completions and compatible servers (Ollama, vLLM, llama.cpp, gateways).
    OpenAi,
    /// Google Gemini `generateContent`.
    Gemini,
    /// Anthropic Messages.
    Anthropic,
}

impl Provider {
    /// The spec prefix: `openai`, `gemini` or `anthropic`.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Gemini => "gemini",
            Provider::Anthropic => "anthropic",
        }
    }

    /// Environment variables read for the API key, in order of preference.
    pub fn key_env_vars(self) -> &'static [&'static str] {
        match self {
            Provider::OpenAi => &["OPENAI_API_KEY"],
            Provider::Gemini => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
            Provider::Anthropic => &["ANTHROPIC_API_KEY"],
        }
    }

    /// Environment variables read for the base URL, in order of preference.
    pub fn base_url_env_vars(self) -> &'static [&'static str] {
        match self {
            Provider::OpenAi => &["OPENAI_BASE_URL"],
            Provider::Gemini => &["GEMINI_BASE_URL", "GOOGLE_GEMINI_BASE_URL"],
            Provider::Anthropic => &["ANTHROPIC_BASE_URL"],
        }
    }

    /// The base URL used when none is configured.
    pub fn default_base_url(self) -> &'static str {
        match self {
            Provider::OpenAi => "https://api.openai.com/v1",
            Provider::Gemini => "https://generativelanguage.googleapis.com",
            Provider::Anthropic => "https://api.anthropic.com",
        }
    }

    /// Whether `base_url` (unset or empty: the default) is the provider's own API rather than
    /// a compatible server elsewhere; a trailing `/` is ignored.
    pub fn is_own_api(self, base_url: Option<&str>) -> bool {
        base_url
            .map(|url| url.trim().trim_end_matches('/'))
            .is_none_or(|url| url.is_empty() || url == self.default_base_url())
    }

    /// A readable name for messages.
    pub fn display_name(self) -> &'static str {
        match self {
            Provider::OpenAi => "OpenAI-compatible server",
            Provider::Gemini => "Gemini",
            Provider::Anthropic => "Anthropic",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which model to use, as written on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSpec {
    /// The embedded model (`local`, or `local:ARG`); built by the CLI, not by this crate.
    Local {
        /// Whatever followed `local:`, if anything (e.g. a weights file).
        arg: Option<String>,
    },
    /// Replies replayed from a JSONL file (`replay:FILE`).
    Replay(PathBuf),
    /// An HTTP provider and a model name (`openai:MODEL`, `gemini:MODEL`, `anthropic:MODEL`).
    Remote {
        /// The provider.
        provider: Provider,
        /// The provider's model name, passed through verbatim.
        model: String,
    },
}

impl FromStr for ModelSpec {
    type Err = ModelsError;

    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        let spec = spec.trim();
        let (kind, rest) = match spec.split_once(':') {
            Some((kind, rest)) => (kind, Some(rest)),
            None => (spec, None),
        };
        let invalid = |why: &str| ModelsError::InvalidSpec {
            spec: spec.to_string(),
            why: why.to_string(),
        };
        let required = |what: &str| match rest.map(str::trim) {
            Some(v) if !v.is_empty() => Ok(v.to_string()),
            _ => Err(invalid(&format!("`{kind}:` needs {what} after the colon"))),
        };
        match kind {
            "local" => Ok(ModelSpec::Local {
                arg: rest
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from),
            }),
            "replay" => Ok(ModelSpec::Replay(PathBuf::from(required("a file")?))),
            "openai" | "gemini" | "anthropic" => {
                let provider = match kind {
                    "openai" => Provider::OpenAi,
                    "gemini" => Provider::Gemini,
                    _ => Provider::Anthropic,
                };
                Ok(ModelSpec::Remote {
                    provider,
                    model: required("a model name")?,
                })
            }
            _ => Err(invalid(
                "expected `local`, `replay:FILE`, `openai:MODEL`, `gemini:MODEL` or `anthropic:MODEL`",
            )),
        }
    }
}

impl fmt::Display for ModelSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelSpec::Local { arg: None } => f.write_str("local"),
            ModelSpec::Local { arg: Some(arg) } => write!(f, "local:{arg}"),
            ModelSpec::Replay(path) => write!(f, "replay:{}", path.display()),
            ModelSpec::Remote { provider, model } => write!(f, "{provider}:{model}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        assert_eq!(
            "local".parse::<ModelSpec>().unwrap(),
            ModelSpec::Local { arg: None }
        );
        assert_eq!(
            "replay:runs/a.jsonl".parse::<ModelSpec>().unwrap(),
            ModelSpec::Replay("runs/a.jsonl".into())
        );
        assert_eq!(
            "openai:qwen2.5:7b".parse::<ModelSpec>().unwrap(),
            ModelSpec::Remote {
                provider: Provider::OpenAi,
                model: "qwen2.5:7b".into()
            }
        );
        for s in [
            "gemini:gemini-2.5-flash",
            "anthropic:claude-sonnet-4-5",
            "local:w.gguf",
        ] {
            assert_eq!(s.parse::<ModelSpec>().unwrap().to_string(), s);
        }
    }

    #[test]
    fn rejects_bad_specs() {
        for s in [
            "openai",
            "openai:",
            "gemini: ",
            "replay",
            "gpt-4o",
            "ollama:llama3",
        ] {
            let err = s.parse::<ModelSpec>().unwrap_err();
            assert!(err.to_string().contains("model spec"), "{err}");
        }
    }
}
