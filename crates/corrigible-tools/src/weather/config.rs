//! Where the weather tool sends its requests, and how long it waits.

use std::time::Duration;

/// Environment variable overriding the geocoding API's base URL.
pub const GEOCODING_URL_ENV: &str = "CORRIGIBLE_WEATHER_GEOCODING_URL";
/// Environment variable overriding the forecast API's base URL.
pub const FORECAST_URL_ENV: &str = "CORRIGIBLE_WEATHER_FORECAST_URL";
/// The public Open-Meteo geocoding API.
pub const DEFAULT_GEOCODING_URL: &str = "https://geocoding-api.open-meteo.com";
/// The public Open-Meteo forecast API.
pub const DEFAULT_FORECAST_URL: &str = "https://api.open-meteo.com";
/// How long one HTTP request may take by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Base URLs of the Open-Meteo APIs and the per-request timeout.
///
/// Requests go to `{geocoding_url}/v1/search` and `{forecast_url}/v1/forecast`, so tests
/// can point both at a local fake server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeatherConfig {
    /// Base URL of the geocoding API.
    pub geocoding_url: String,
    /// Base URL of the forecast API.
    pub forecast_url: String,
    /// Timeout of each HTTP request (connecting, sending and reading the body).
    pub timeout: Duration,
}

impl Default for WeatherConfig {
    fn default() -> Self {
        Self {
            geocoding_url: DEFAULT_GEOCODING_URL.to_string(),
            forecast_url: DEFAULT_FORECAST_URL.to_string(),
            timeout: DEFAULT_TIMEOUT,
        }
    }
}

impl WeatherConfig {
    /// The defaults, with base URLs from [`GEOCODING_URL_ENV`] and [`FORECAST_URL_ENV`]
    /// when they are set and not empty.
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let defaults = Self::default();
        Self {
            geocoding_url: var(GEOCODING_URL_ENV).unwrap_or(defaults.geocoding_url),
            forecast_url: var(FORECAST_URL_ENV).unwrap_or(defaults.forecast_url),
            timeout: defaults.timeout,
        }
    }

    /// Both APIs served from one base URL (as the fake server does).
    pub fn with_base_url(url: impl Into<String>) -> Self {
        let url = url.into();
        Self {
            geocoding_url: url.clone(),
            forecast_url: url,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// The same configuration with another request timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// A [`WeatherConfig`] that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WeatherConfigError {
    /// A base URL is not an absolute http(s) URL.
    #[error("invalid {which} URL `{url}`: {reason}; give an absolute http(s) URL")]
    InvalidUrl {
        /// `geocoding` or `forecast`.
        which: &'static str,
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The timeout is zero.
    #[error("the weather request timeout must be greater than zero")]
    ZeroTimeout,
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

/// Checks a base URL and returns it without a trailing slash.
pub(crate) fn base_url(which: &'static str, url: &str) -> Result<String, WeatherConfigError> {
    let invalid = |reason: String| WeatherConfigError::InvalidUrl {
        which,
        url: url.to_string(),
        reason,
    };
    let parsed = reqwest::Url::parse(url.trim()).map_err(|e| invalid(e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(invalid(format!("unsupported scheme `{}`", parsed.scheme())));
    }
    Ok(url.trim().trim_end_matches('/').to_string())
}
