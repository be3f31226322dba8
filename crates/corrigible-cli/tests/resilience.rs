//! Real network retries: the weather tool against a local fake Open-Meteo server that fails a
//! chosen number of times, driven through `corrigible run`.

use std::io::Write;
use std::process::Command;

use corrigible_tools::fake::{FakeOpenMeteo, FakeOptions};
use serde_json::Value;

const SCRIPT: &[&str] = &[
    r#"{"text": "{\"state\":\"action\",\"reason\":\"r\",\"tool\":\"weather\",\"tool_input\":{\"city\":\"Delhi\"}}"}"#,
    r#"{"text": "{\"state\":\"final\",\"satisfied\":true,\"final_summary\":\"It is 21.4 °C in Delhi.\"}"}"#,
    r#"{"text": "{\"state\":\"final\",\"satisfied\":false,\"final_summary\":\"the weather service is down\"}"}"#,
];

fn run_with_retries(retries: &str, fail_first: u32) -> (Value, u64) {
    let fake =
        FakeOpenMeteo::start(FakeOptions::default().fail_first(fail_first).status(503)).unwrap();
    let mut replay = tempfile::NamedTempFile::new().unwrap();
    for line in SCRIPT {
        writeln!(replay, "{line}").unwrap();
    }
    let out = Command::new(env!("CARGO_BIN_EXE_corrigible"))
        .args([
            "run",
            "--json",
            "--model",
            &format!("replay:{}", replay.path().display()),
            "--tools",
            "weather",
            "--weather-geocoding-url",
            &fake.geocoding_url(),
            "--weather-forecast-url",
            &fake.forecast_url(),
            "--tool-retries",
            retries,
            "--backoff-initial-ms",
            "1",
            "--backoff-max-ms",
            "5",
            "What is the weather in Delhi?",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        serde_json::from_slice(&out.stdout).unwrap(),
        fake.request_count(),
    )
}

#[test]
fn two_failures_are_recovered_with_two_retries() {
    let (report, _) = run_with_retries("2", 2);
    let step = &report["steps"][0];
    assert_eq!(step["outcome"], "ok");
    assert_eq!(step["attempts"], 3);
    assert_eq!(step["attempt_errors"].as_array().unwrap().len(), 2);
    assert!(
        step["attempt_errors"][0]["error"]
            .as_str()
            .unwrap()
            .contains("503")
    );
    assert_eq!(report["usage"]["tool_retries"], 2);
    assert_eq!(report["satisfied"], true);
}

#[test]
fn two_failures_are_not_recovered_with_one_retry() {
    let (report, requests) = run_with_retries("1", 2);
    let step = &report["steps"][0];
    assert_eq!(step["outcome"], "failed");
    assert_eq!(step["attempts"], 2);
    assert_eq!(requests, 2, "one request per attempt, no more");
    assert_eq!(report["corrections"][0]["category"], "tool_failed");
    assert_eq!(report["corrections"][1]["category"], "ungrounded_final");
    assert_eq!(report["satisfied"], false);
}

#[test]
fn a_breaker_threshold_opens_the_circuit_within_a_run() {
    let fake = FakeOpenMeteo::start(FakeOptions::default().fail_first(100).status(503)).unwrap();
    let mut replay = tempfile::NamedTempFile::new().unwrap();
    for city in ["Delhi", "Paris"] {
        writeln!(replay, r#"{{"text": "{{\"state\":\"action\",\"reason\":\"r\",\"tool\":\"weather\",\"tool_input\":{{\"city\":\"{city}\"}}}}"}}"#).unwrap();
    }
    writeln!(replay, "{}", SCRIPT[2]).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_corrigible"))
        .args([
            "run",
            "--json",
            "--model",
            &format!("replay:{}", replay.path().display()),
            "--tools",
            "weather",
        ])
        .args([
            "--weather-geocoding-url",
            &fake.geocoding_url(),
            "--weather-forecast-url",
            &fake.forecast_url(),
        ])
        .args([
            "--tool-retries",
            "0",
            "--breaker-threshold",
            "1",
            "weather in Delhi or Paris?",
        ])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["steps"][1]["outcome"], "circuit_open");
    assert_eq!(report["steps"][1]["attempts"], 0);
    assert_eq!(
        fake.request_count(),
        1,
        "the open breaker kept the second call off the network"
    );
    assert_eq!(report["breaker_events"][0]["to"], "open");
}
