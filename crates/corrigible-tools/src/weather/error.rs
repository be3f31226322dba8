//! Why a weather lookup failed, and which failures the model can fix.

use std::time::Duration;

use corrigible::ToolOutcome;

/// Which Open-Meteo API a request went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// The geocoding API (city → coordinates).
    Geocoding,
    /// The forecast API (coordinates → current conditions).
    Forecast,
}

impl std::fmt::Display for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Service::Geocoding => "weather geocoding service",
            Service::Forecast => "weather forecast service",
        })
    }
}

/// A weather lookup that did not produce a report.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WeatherError {
    /// The city name is blank.
    #[error("the city is empty: give a city name such as Delhi, London or Tokyo")]
    EmptyCity,
    /// The geocoding API knows no place of that name.
    #[error(
        "unknown city `{0}`: give a city name such as Delhi, London or Tokyo, \
         without region or country"
    )]
    UnknownCity(String),
    /// The service could not be reached (connection refused, DNS, TLS, reset).
    #[error("cannot reach the {service}: {reason}")]
    Unreachable {
        /// The API.
        service: Service,
        /// The underlying error.
        reason: String,
    },
    /// The request took longer than the configured timeout.
    #[error("the {service} did not answer within {} ms", .after.as_millis())]
    Timeout {
        /// The API.
        service: Service,
        /// The configured timeout.
        after: Duration,
    },
    /// The service answered with an error status.
    #[error("the {service} answered HTTP {status}{}", .reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    Status {
        /// The API.
        service: Service,
        /// The HTTP status code.
        status: u16,
        /// The service's own explanation, when it gave one.
        reason: Option<String>,
    },
    /// The answer is not the JSON the API documents.
    #[error("the {service} sent an unexpected answer: {reason}")]
    Malformed {
        /// The API.
        service: Service,
        /// What did not parse.
        reason: String,
    },
}

impl WeatherError {
    /// Whether the model can fix this by changing its input.
    pub fn is_input_error(&self) -> bool {
        matches!(self, WeatherError::EmptyCity | WeatherError::UnknownCity(_))
    }
}

impl From<WeatherError> for ToolOutcome {
    fn from(error: WeatherError) -> Self {
        if error.is_input_error() {
            ToolOutcome::Retry(error.to_string())
        } else {
            ToolOutcome::Failed(error.to_string())
        }
    }
}
