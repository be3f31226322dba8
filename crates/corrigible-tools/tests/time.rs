mod common;

use chrono::{TimeZone, Utc};
use corrigible::ToolRegistry;
use corrigible_tools::TimeTool;
use serde_json::json;

use common::{call, ok_value, retry_message};

fn registry() -> ToolRegistry {
    let instant = Utc.with_ymd_and_hms(2026, 7, 1, 12, 30, 5).unwrap();
    let mut registry = ToolRegistry::new();
    registry.register_typed(TimeTool::fixed(instant)).unwrap();
    registry
}

async fn time(zone: &str) -> corrigible::ToolOutcome {
    call(&registry(), "time", json!({ "city": zone })).await
}

#[tokio::test]
async fn known_zones_give_local_time_with_offset() {
    assert_eq!(
        ok_value(time("Asia/Kolkata").await),
        json!({
            "timezone": "Asia/Kolkata",
            "time": "18:00",
            "local_time": "2026-07-01T18:00:05+05:30",
            "utc_offset": "+05:30"
        })
    );
    assert_eq!(
        ok_value(time("America/New_York").await)["local_time"],
        json!("2026-07-01T08:30:05-04:00")
    );
    assert_eq!(
        ok_value(time("UTC").await)["local_time"],
        json!("2026-07-01T12:30:05+00:00")
    );
}

#[tokio::test]
async fn letter_case_is_forgiven() {
    let value = ok_value(time("europe/london").await);
    assert_eq!(value["timezone"], json!("Europe/London"));
    assert_eq!(value["utc_offset"], json!("+01:00"));
}

#[tokio::test]
async fn cities_resolve_to_their_zone() {
    let value = ok_value(time("Mumbai").await);
    assert_eq!(value["timezone"], json!("Asia/Kolkata"));
    assert_eq!(value["time"], json!("18:00"));
    let value = ok_value(call(&registry(), "time", json!({"city": "São Paulo"})).await);
    assert_eq!(value["timezone"], json!("America/Sao_Paulo"));
}

#[tokio::test]
async fn utc_offsets_ask_for_the_place() {
    let message = retry_message(time("UTC+08:00").await);
    assert!(message.contains("is a UTC offset"), "{message}");
}

#[tokio::test]
async fn system_clock_gives_an_rfc3339_time() {
    let mut registry = ToolRegistry::new();
    registry.register_typed(TimeTool::new()).unwrap();
    let value = ok_value(call(&registry, "time", json!({"city": "Asia/Tokyo"})).await);
    let local = value["local_time"].as_str().unwrap();
    let parsed = chrono::DateTime::parse_from_rfc3339(local).unwrap();
    assert_eq!(parsed.offset().local_minus_utc(), 9 * 3600);
    assert!(
        (Utc::now() - parsed.with_timezone(&Utc))
            .num_seconds()
            .abs()
            < 60
    );
}

#[tokio::test]
async fn unknown_zones_list_close_matches() {
    let message = retry_message(time("Asia/Kolkat").await);
    assert!(
        message.starts_with("unknown time zone `Asia/Kolkat`"),
        "{message}"
    );
    assert!(message.contains("Asia/Kolkata"), "{message}");

    let message = retry_message(time("Europe/Lodnon").await);
    assert!(message.contains("Europe/London"), "{message}");

    let message = retry_message(time("Tokio").await);
    assert!(message.contains("Asia/Tokyo"), "{message}");

    let message = retry_message(time("Not/A_Zone_At_All_xyzzy").await);
    assert!(message.contains("IANA"), "{message}");
}

#[test]
fn suggestions_are_at_most_three() {
    for name in ["America/San", "europe", "kolkata", "new york", "Paris"] {
        let suggestions = corrigible_tools::time::suggest(name);
        assert!(!suggestions.is_empty(), "{name}");
        assert!(suggestions.len() <= 3, "{name}: {suggestions:?}");
    }
    assert_eq!(
        corrigible_tools::time::suggest("new york")[0],
        "America/New_York"
    );
}
