mod common;

use std::time::{Duration, Instant};

use corrigible::ToolRegistry;
use corrigible_tools::fake::{
    FAKE_CITIES, FAKE_OBSERVATION_TIME, FakeApi, FakeOpenMeteo, FakeOptions,
};
use corrigible_tools::{WeatherConfig, WeatherError, WeatherTool};
use serde_json::json;

use common::{call, failed_message, ok_value, retry_message};

fn registry(config: WeatherConfig) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    registry
        .register_typed(WeatherTool::new(config).unwrap())
        .unwrap();
    registry
}

async fn weather(config: WeatherConfig, city: &str) -> corrigible::ToolOutcome {
    call(&registry(config), "weather", json!({ "city": city })).await
}

#[tokio::test]
async fn known_city_gives_only_the_values_questions_ask_for() {
    let server = FakeOpenMeteo::start(FakeOptions::default()).unwrap();
    let value = ok_value(weather(server.weather_config(), "Delhi").await);
    assert_eq!(
        value,
        json!({
            "city": "Delhi",
            "country": "India",
            "temperature_c": 21.4,
            "wind_speed_kmh": 6.1,
            "conditions": "clear sky"
        })
    );
    assert_eq!(server.geocoding_request_count(), 1);
    assert_eq!(server.forecast_request_count(), 1);
}

#[tokio::test]
async fn every_fake_city_is_found_in_any_letter_case() {
    let server = FakeOpenMeteo::start(FakeOptions::default()).unwrap();
    let tool = WeatherTool::new(server.weather_config()).unwrap();
    assert!(FAKE_CITIES.len() >= 15);
    for city in FAKE_CITIES {
        let report = tool.current(&city.name.to_uppercase()).await.unwrap();
        assert_eq!(report.city, city.name);
        assert_eq!(report.temperature_c, city.temperature_c);
        assert_eq!(report.weather_code, city.weather_code);
        assert!(
            report.time.starts_with(FAKE_OBSERVATION_TIME),
            "{}",
            report.time
        );
    }
    let report = tool.current("sao paulo, Brazil").await.unwrap();
    assert_eq!(report.city, "São Paulo");
    assert_eq!(report.conditions, "moderate rain");
}

#[tokio::test]
async fn unknown_city_is_a_retry() {
    let server = FakeOpenMeteo::start(FakeOptions::default()).unwrap();
    let message = retry_message(weather(server.weather_config(), "Atlantis").await);
    assert!(message.starts_with("unknown city `Atlantis`"), "{message}");
    assert!(message.contains("such as Delhi"), "{message}");
    assert_eq!(server.forecast_request_count(), 0);

    let message = retry_message(weather(server.weather_config(), "  ").await);
    assert!(message.contains("city is empty"), "{message}");
}

#[tokio::test]
async fn service_unavailable_is_failed_then_recovers() {
    let server = FakeOpenMeteo::start(FakeOptions::default().fail_first(1).status(503)).unwrap();
    let message = failed_message(weather(server.weather_config(), "London").await);
    assert!(message.contains("HTTP 503"), "{message}");
    assert!(message.contains("geocoding"), "{message}");
    assert_eq!(server.request_count(), 1);

    let value = ok_value(weather(server.weather_config(), "London").await);
    assert_eq!(value["city"], json!("London"));
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn forecast_failure_is_failed() {
    let options = FakeOptions::default()
        .status(500)
        .failing_only(FakeApi::Forecast);
    let server = FakeOpenMeteo::start(options).unwrap();
    let tool = WeatherTool::new(server.weather_config()).unwrap();
    tool.current("Tokyo").await.unwrap();
    server.fail_next(1);
    let error = tool.current("Tokyo").await.unwrap_err();
    assert!(
        matches!(
            error,
            WeatherError::Status {
                status: 500,
                service: corrigible_tools::weather::Service::Forecast,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(server.failures_left(), 0);
    assert_eq!(server.geocoding_request_count(), 2);
    assert_eq!(server.forecast_request_count(), 2);
}

#[tokio::test]
async fn client_errors_are_failed_with_their_status() {
    let server = FakeOpenMeteo::start(FakeOptions::default().fail_first(1).status(429)).unwrap();
    let message = failed_message(weather(server.weather_config(), "Paris").await);
    assert!(message.contains("HTTP 429: simulated failure"), "{message}");

    let wrong_path = WeatherConfig::with_base_url(format!("{}/nowhere", server.url()));
    let message = failed_message(weather(wrong_path, "Paris").await);
    assert!(message.contains("HTTP 404"), "{message}");
}

#[tokio::test]
async fn connection_refused_is_failed() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let config = WeatherConfig::with_base_url(format!("http://127.0.0.1:{port}"));
    let message = failed_message(weather(config, "Delhi").await);
    assert!(
        message.starts_with("cannot reach the weather geocoding service"),
        "{message}"
    );
}

#[tokio::test]
async fn slow_answers_time_out_as_failed() {
    let server =
        FakeOpenMeteo::start(FakeOptions::default().delay(Duration::from_secs(5))).unwrap();
    let config = server.weather_config().timeout(Duration::from_millis(200));
    let started = Instant::now();
    let message = failed_message(weather(config, "Delhi").await);
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(
        message.contains("did not answer within 200 ms"),
        "{message}"
    );
}

#[tokio::test]
async fn malformed_bodies_are_failed() {
    let server = FakeOpenMeteo::start(FakeOptions::default().malformed()).unwrap();
    let message = failed_message(weather(server.weather_config(), "Delhi").await);
    assert!(message.contains("unexpected answer"), "{message}");
}

#[test]
fn fake_server_serves_sync_callers_and_stops_on_drop() {
    let server = FakeOpenMeteo::start(FakeOptions::default()).unwrap();
    let addr = server.addr();
    let [(geo_var, geo_url), (forecast_var, forecast_url)] = server.env_vars();
    assert_eq!(geo_var, corrigible_tools::GEOCODING_URL_ENV);
    assert_eq!(forecast_var, corrigible_tools::FORECAST_URL_ENV);
    assert_eq!(geo_url, format!("http://{addr}"));
    assert_eq!(forecast_url, server.forecast_url());
    assert!(std::net::TcpStream::connect(addr).is_ok());
    drop(server);
    assert!(std::net::TcpStream::connect(addr).is_err());
}

#[test]
fn invalid_failure_status_is_refused() {
    assert!(FakeOpenMeteo::start(FakeOptions::default().status(42)).is_err());
}
