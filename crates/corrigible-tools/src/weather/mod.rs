//! The `weather` tool: a city in, its current conditions out, through Open-Meteo.

mod config;
mod error;
mod http;
mod wire;
mod wmo;

use async_trait::async_trait;
use chrono::{FixedOffset, NaiveDateTime};
use corrigible::{GroundedArgument, ToolContext, ToolOutcome, TypedTool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use config::{
    DEFAULT_FORECAST_URL, DEFAULT_GEOCODING_URL, DEFAULT_TIMEOUT, FORECAST_URL_ENV,
    GEOCODING_URL_ENV, WeatherConfig, WeatherConfigError,
};
pub use error::{Service, WeatherError};
pub use wmo::describe as describe_weather_code;

use wire::{ForecastResponse, GeocodingResponse};

/// The weather tool's name.
pub const WEATHER: &str = "weather";

/// Input of the `weather` tool.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WeatherInput {
    /// A city name such as `Delhi`, `London` or `New York`.
    pub city: String,
}

/// Current conditions in a city, in full; the tool gives the model its [`WeatherAnswer`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WeatherReport {
    /// The city as the geocoding API names it.
    pub city: String,
    /// Its country, when known.
    pub country: Option<String>,
    /// Latitude in degrees.
    pub latitude: f64,
    /// Longitude in degrees.
    pub longitude: f64,
    /// Air temperature at 2 m, °C.
    pub temperature_c: f64,
    /// Wind speed at 10 m, km/h.
    pub wind_speed_kmh: f64,
    /// WMO weather interpretation code.
    pub weather_code: u16,
    /// The code in words, e.g. `partly cloudy`.
    pub conditions: String,
    /// Time of the observation, local to the city (ISO 8601, with offset when known).
    pub time: String,
}

/// What the `weather` tool returns to the model: only the values a question about the
/// weather asks for, named plainly (no coordinates, WMO code or observation time).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WeatherAnswer {
    /// The city as the geocoding API names it.
    pub city: String,
    /// Its country, when known.
    pub country: Option<String>,
    /// Air temperature at 2 m, °C.
    pub temperature_c: f64,
    /// Wind speed at 10 m, km/h.
    pub wind_speed_kmh: f64,
    /// The conditions in words, e.g. `partly cloudy`.
    pub conditions: String,
}

impl From<WeatherReport> for WeatherAnswer {
    fn from(report: WeatherReport) -> Self {
        Self {
            city: report.city,
            country: report.country,
            temperature_c: report.temperature_c,
            wind_speed_kmh: report.wind_speed_kmh,
            conditions: report.conditions,
        }
    }
}

/// Looks up current weather with the Open-Meteo geocoding and forecast APIs.
///
/// An unknown or blank city is a [`ToolOutcome::Retry`]; a connection error, a timeout,
/// an error status or a malformed answer is [`ToolOutcome::Failed`].
#[derive(Debug, Clone)]
pub struct WeatherTool {
    client: reqwest::Client,
    config: WeatherConfig,
}

impl WeatherTool {
    /// A weather tool for `config`, whose URLs and timeout are checked here.
    pub fn new(config: WeatherConfig) -> Result<Self, WeatherConfigError> {
        if config.timeout.is_zero() {
            return Err(WeatherConfigError::ZeroTimeout);
        }
        let config = WeatherConfig {
            geocoding_url: config::base_url("geocoding", &config.geocoding_url)?,
            forecast_url: config::base_url("forecast", &config.forecast_url)?,
            timeout: config.timeout,
        };
        let client = reqwest::Client::builder()
            .timeout(config.timeout)
            .user_agent(concat!("corrigible-tools/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| WeatherConfigError::Client(e.to_string()))?;
        Ok(Self { client, config })
    }

    /// The configuration in use, with base URLs normalized.
    pub fn config(&self) -> &WeatherConfig {
        &self.config
    }

    /// The current conditions in `city`.
    pub async fn current(&self, city: &str) -> Result<WeatherReport, WeatherError> {
        let name = city.split(',').next().unwrap_or(city).trim();
        if name.is_empty() {
            return Err(WeatherError::EmptyCity);
        }
        let places: GeocodingResponse = http::get_json(
            &self.client,
            self.config.timeout,
            Service::Geocoding,
            &format!("{}/v1/search", self.config.geocoding_url),
            &[
                ("name", name.to_string()),
                ("count", "1".to_string()),
                ("language", "en".to_string()),
                ("format", "json".to_string()),
            ],
        )
        .await?;
        let place = places
            .results
            .and_then(|r| r.into_iter().next())
            .ok_or_else(|| WeatherError::UnknownCity(city.trim().to_string()))?;
        let forecast: ForecastResponse = http::get_json(
            &self.client,
            self.config.timeout,
            Service::Forecast,
            &format!("{}/v1/forecast", self.config.forecast_url),
            &[
                ("latitude", place.latitude.to_string()),
                ("longitude", place.longitude.to_string()),
                (
                    "current",
                    "temperature_2m,wind_speed_10m,weather_code".to_string(),
                ),
                ("timezone", "auto".to_string()),
            ],
        )
        .await?;
        let current = forecast.current;
        let weather_code = weather_code(current.weather_code).ok_or(WeatherError::Malformed {
            service: Service::Forecast,
            reason: format!("weather code {} is not a WMO code", current.weather_code),
        })?;
        Ok(WeatherReport {
            city: place.name,
            country: place.country,
            latitude: place.latitude,
            longitude: place.longitude,
            temperature_c: current.temperature_2m,
            wind_speed_kmh: current.wind_speed_10m,
            weather_code,
            conditions: wmo::describe(weather_code),
            time: with_offset(&current.time, forecast.utc_offset_seconds),
        })
    }
}

fn weather_code(raw: f64) -> Option<u16> {
    (raw.fract() == 0.0 && (0.0..=f64::from(u16::MAX)).contains(&raw)).then_some(raw as u16)
}

/// `2026-11-29T22:15` and 19800 s become `2026-11-29T22:15+05:30`; anything else is kept.
fn with_offset(time: &str, offset_seconds: Option<i32>) -> String {
    let parsed = NaiveDateTime::parse_from_str(time, "%Y-%m-%dT%H:%M").ok();
    let offset = offset_seconds.and_then(FixedOffset::east_opt);
    match (parsed, offset) {
        (Some(t), Some(o)) => format!("{}{o}", t.format("%Y-%m-%dT%H:%M")),
        _ => time.to_string(),
    }
}

#[async_trait]
impl TypedTool for WeatherTool {
    type Input = WeatherInput;

    fn name(&self) -> &str {
        WEATHER
    }

    fn read_only(&self) -> bool {
        true
    }

    fn description(&self) -> &str {
        "Returns the current weather in a city: temperature (°C), wind speed (km/h) and \
         conditions. Give the city name only, e.g. Delhi or New York."
    }

    fn grounded_arguments(&self) -> Vec<GroundedArgument> {
        vec![GroundedArgument::copied("city")]
    }

    async fn call(&self, input: WeatherInput, _ctx: &ToolContext) -> ToolOutcome {
        match self.current(&input.city).await {
            Ok(report) => ToolOutcome::ok(WeatherAnswer::from(report)),
            Err(e) => e.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observation_time_gets_its_offset() {
        assert_eq!(
            with_offset("2026-11-29T22:15", Some(19_800)),
            "2026-11-29T22:15+05:30"
        );
        assert_eq!(
            with_offset("2026-11-29T22:15", Some(0)),
            "2026-11-29T22:15+00:00"
        );
        assert_eq!(with_offset("yesterday", Some(0)), "yesterday");
        assert_eq!(with_offset("2026-11-29T22:15", None), "2026-11-29T22:15");
    }

    #[test]
    fn weather_codes_must_be_whole() {
        assert_eq!(weather_code(3.0), Some(3));
        assert_eq!(weather_code(2.5), None);
        assert_eq!(weather_code(-1.0), None);
    }

    #[test]
    fn bad_urls_and_timeouts_are_refused() {
        let bad = WeatherConfig::with_base_url("ftp://example.invalid");
        assert!(matches!(
            WeatherTool::new(bad),
            Err(WeatherConfigError::InvalidUrl { .. })
        ));
        let zero = WeatherConfig::default().timeout(std::time::Duration::ZERO);
        assert_eq!(
            WeatherTool::new(zero).unwrap_err(),
            WeatherConfigError::ZeroTimeout
        );
        let trailing = WeatherConfig::with_base_url("http://127.0.0.1:9/");
        let tool = WeatherTool::new(trailing).unwrap();
        assert_eq!(tool.config().forecast_url, "http://127.0.0.1:9");
    }
}
