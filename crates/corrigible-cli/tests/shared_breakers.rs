//! Two `corrigible serve` processes on one SQLite file with `--shared-breakers`: a tool that
//! is down, met by a run on one, opens its breaker on the other too; a third process without
//! the flag keeps its own breaker.

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

const REPLAY: &[&str] = &[
    r#"{"text": "{\"state\":\"action\",\"reason\":\"look it up\",\"tool\":\"weather\",\"tool_input\":{\"city\":\"Delhi\"}}"}"#,
    r#"{"text": "{\"state\":\"final\",\"satisfied\":false,\"final_summary\":\"the weather service is down\"}"}"#,
];

struct Server {
    child: Child,
    base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// A port where nothing listens: the weather tool's requests fail at once.
fn dead_url() -> String {
    format!("http://127.0.0.1:{}", free_port())
}

fn start(db: &str, replay: &str, shared: bool) -> Server {
    let port = free_port();
    let dead = dead_url();
    let mut command = Command::new(env!("CARGO_BIN_EXE_corrigible"));
    command
        .args(["serve", "--addr", &format!("127.0.0.1:{port}"), "--db", db])
        .args(["--model", &format!("replay:{replay}"), "--tools", "weather"])
        .args(["--breaker-threshold", "2", "--breaker-reset-ms", "600000"])
        .args(["--instance-id", &format!("i{port}")])
        .env("CORRIGIBLE_WEATHER_GEOCODING_URL", &dead)
        .env("CORRIGIBLE_WEATHER_FORECAST_URL", &dead)
        .env("NO_COLOR", "1")
        .env("CORRIGIBLE_LOG", "warn")
        .env_remove("CORRIGIBLE_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if shared {
        command.arg("--shared-breakers");
    }
    Server {
        child: command.spawn().expect("the binary starts"),
        base: format!("http://127.0.0.1:{port}"),
    }
}

async fn wait_healthy(client: &reqwest::Client, server: &mut Server) {
    for _ in 0..600 {
        if let Ok(Some(status)) = server.child.try_wait() {
            let mut err = String::new();
            if let Some(mut pipe) = server.child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut pipe, &mut err);
            }
            panic!("{} exited ({status}): {err}", server.base);
        }
        if let Ok(r) = client.get(format!("{}/healthz", server.base)).send().await
            && r.status().is_success()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{} did not become healthy", server.base);
}

async fn weather_breaker(client: &reqwest::Client, server: &Server) -> String {
    let text = client
        .get(format!("{}/metrics", server.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find(|l| l.starts_with("corrigible_breaker_state{tool=\"weather\"}"))
        .unwrap_or("no weather breaker")
        .to_string()
}

async fn run(client: &reqwest::Client, server: &Server) -> Value {
    client
        .post(format!("{}/v1/runs", server.base))
        .json(&json!({"prompt": "What is the weather in Delhi?"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_tool_that_is_down_opens_its_breaker_on_every_instance() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db").display().to_string();
    let replay = dir.path().join("replay.jsonl");
    let mut file = std::fs::File::create(&replay).unwrap();
    for line in REPLAY {
        writeln!(file, "{line}").unwrap();
    }
    let replay = replay.display().to_string();
    let client = reqwest::Client::new();
    let mut a = start(&db, &replay, true);
    let mut b = start(&db, &replay, true);
    let mut own = start(&db, &replay, false);
    for server in [&mut a, &mut b, &mut own] {
        wait_healthy(&client, server).await;
    }

    // On A, the call fails on every attempt: two consecutive failures open the breaker.
    let on_a = run(&client, &a).await;
    let steps = on_a["steps"].as_array().cloned().unwrap_or_default();
    assert!(
        steps
            .iter()
            .any(|s| s["tool"] == "weather" && s["outcome"] != "ok"),
        "{on_a}"
    );
    assert!(weather_breaker(&client, &a).await.ends_with(" 2"));

    // B never called the tool, and its breaker is open: its run's call fails fast.
    assert!(weather_breaker(&client, &b).await.ends_with(" 2"));
    let on_b = run(&client, &b).await;
    let steps = on_b["steps"].as_array().cloned().unwrap_or_default();
    assert!(
        steps
            .iter()
            .any(|s| s["tool"] == "weather" && s["outcome"] == "circuit_open"),
        "{on_b}"
    );

    // Without the flag, an instance on the same database keeps its own breaker.
    assert!(!weather_breaker(&client, &own).await.ends_with(" 2"));
}
