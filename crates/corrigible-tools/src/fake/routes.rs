//! The fake's HTTP handlers, shaped like Open-Meteo's `/v1/search` and `/v1/forecast`.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use axum::Json;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};

use super::FakeApi;
use super::cities::{FAKE_CITIES, FAKE_OBSERVATION_TIME, city_at, find_city};

/// What the fake server counts and how it misbehaves.
#[derive(Debug)]
pub(crate) struct Shared {
    pub requests: AtomicU64,
    pub geocoding_requests: AtomicU64,
    pub forecast_requests: AtomicU64,
    pub fail_remaining: AtomicU32,
    pub failure_status: StatusCode,
    pub delay: Duration,
    pub malformed: bool,
    pub failing_api: Option<FakeApi>,
}

impl Shared {
    /// Takes one pending failure for a request to `api`, if any is left.
    fn take_failure(&self, api: FakeApi) -> bool {
        if self.failing_api.is_some_and(|only| only != api) {
            return false;
        }
        self.fail_remaining
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }
}

pub(crate) fn router(shared: Arc<Shared>) -> axum::Router {
    axum::Router::new()
        .route("/v1/search", get(search))
        .route("/v1/forecast", get(forecast))
        .with_state(shared)
}

type Params = Query<HashMap<String, String>>;

/// Counts the request, waits the configured delay and answers a planned fault, if any.
async fn gate(shared: &Shared, api: FakeApi) -> Option<Response> {
    shared.requests.fetch_add(1, Ordering::SeqCst);
    let counter = match api {
        FakeApi::Geocoding => &shared.geocoding_requests,
        FakeApi::Forecast => &shared.forecast_requests,
    };
    counter.fetch_add(1, Ordering::SeqCst);
    if !shared.delay.is_zero() {
        tokio::time::sleep(shared.delay).await;
    }
    if shared.take_failure(api) {
        return Some(api_error(shared.failure_status, "simulated failure"));
    }
    if shared.malformed {
        let body = "<html><body>not the JSON you expected</body></html>";
        return Some(([(header::CONTENT_TYPE, "text/html")], body).into_response());
    }
    None
}

fn api_error(status: StatusCode, reason: &str) -> Response {
    (status, Json(json!({"error": true, "reason": reason}))).into_response()
}

async fn search(State(shared): State<Arc<Shared>>, Query(params): Params) -> Response {
    if let Some(fault) = gate(&shared, FakeApi::Geocoding).await {
        return fault;
    }
    let Some(name) = params.get("name") else {
        return api_error(StatusCode::BAD_REQUEST, "Parameter 'name' is required");
    };
    let Some(city) = find_city(name) else {
        return Json(json!({"generationtime_ms": 0.1})).into_response();
    };
    let id = FAKE_CITIES
        .iter()
        .position(|c| c.name == city.name)
        .unwrap_or_default();
    Json(json!({
        "results": [{
            "id": 1_000 + id,
            "name": city.name,
            "latitude": city.latitude,
            "longitude": city.longitude,
            "country_code": city.country_code,
            "country": city.country,
            "timezone": city.timezone,
        }],
        "generationtime_ms": 0.1
    }))
    .into_response()
}

async fn forecast(State(shared): State<Arc<Shared>>, Query(params): Params) -> Response {
    if let Some(fault) = gate(&shared, FakeApi::Forecast).await {
        return fault;
    }
    let coordinate = |key: &str| params.get(key).and_then(|v| v.parse::<f64>().ok());
    let (Some(latitude), Some(longitude)) = (coordinate("latitude"), coordinate("longitude"))
    else {
        return api_error(
            StatusCode::BAD_REQUEST,
            "Parameter 'latitude' and 'longitude' must be numbers",
        );
    };
    let (offset, zone, temperature, wind, code) = match city_at(latitude, longitude) {
        Some(c) => (
            c.utc_offset_seconds,
            c.timezone,
            c.temperature_c,
            c.wind_speed_kmh,
            c.weather_code,
        ),
        None => synthetic(latitude, longitude),
    };
    Json(forecast_body(
        latitude,
        longitude,
        offset,
        zone,
        temperature,
        wind,
        code,
    ))
    .into_response()
}

/// Stable conditions for coordinates outside the table.
fn synthetic(latitude: f64, longitude: f64) -> (i32, &'static str, f64, f64, u16) {
    let seed =
        ((latitude * 100.0).round() as i64).wrapping_mul(31) + (longitude * 100.0).round() as i64;
    let temperature = 30.0 - latitude.abs() / 2.0;
    let wind = seed.rem_euclid(30) as f64;
    (0, "GMT", (temperature * 10.0).round() / 10.0, wind, 3)
}

fn forecast_body(
    latitude: f64,
    longitude: f64,
    offset: i32,
    zone: &str,
    temperature: f64,
    wind: f64,
    code: u16,
) -> Value {
    json!({
        "latitude": latitude,
        "longitude": longitude,
        "generationtime_ms": 0.1,
        "utc_offset_seconds": offset,
        "timezone": zone,
        "elevation": 100.0,
        "current_units": {
            "time": "iso8601",
            "interval": "seconds",
            "temperature_2m": "°C",
            "wind_speed_10m": "km/h",
            "weather_code": "wmo code"
        },
        "current": {
            "time": FAKE_OBSERVATION_TIME,
            "interval": 900,
            "temperature_2m": temperature,
            "wind_speed_10m": wind,
            "weather_code": code
        }
    })
}
