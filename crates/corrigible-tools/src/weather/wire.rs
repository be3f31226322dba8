//! The parts of Open-Meteo's JSON that the weather tool reads.

use serde::Deserialize;

/// `GET /v1/search`: no `results` key at all when nothing matched.
#[derive(Debug, Deserialize)]
pub(crate) struct GeocodingResponse {
    #[serde(default)]
    pub results: Option<Vec<Place>>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Place {
    pub name: String,
    pub latitude: f64,
    pub longitude: f64,
    #[serde(default)]
    pub country: Option<String>,
}

/// `GET /v1/forecast` with `current=temperature_2m,wind_speed_10m,weather_code`.
#[derive(Debug, Deserialize)]
pub(crate) struct ForecastResponse {
    #[serde(default)]
    pub utc_offset_seconds: Option<i32>,
    pub current: Current,
}

#[derive(Debug, Deserialize)]
pub(crate) struct Current {
    pub time: String,
    pub temperature_2m: f64,
    pub wind_speed_10m: f64,
    pub weather_code: f64,
}

/// The body of an Open-Meteo error answer: `{"error": true, "reason": "…"}`.
#[derive(Debug, Deserialize)]
pub(crate) struct ApiError {
    pub reason: String,
}
