//! `corrigible serve` killed with SIGKILL under load, in a loop: every event any client
//! received over SSE is in the store afterwards, and the runs the kill cut short are
//! `interrupted` with the model and tool calls their stored events show.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

/// Kill-restart rounds.
const ROUNDS: u64 = 4;
/// Clients posting runs and following their events at once.
const CLIENTS: usize = 16;

/// A run of four model calls, each taking 60 ms, so that every kill lands mid-run.
const REPLAY: &[&str] = &[
    r#"{"text": "{\"state\":\"action\",\"reason\":\"r\",\"tool\":\"calculator\",\"tool_input\":{\"expr\":\"2*(3+4)\"}}", "usage": {"input_tokens": 10, "output_tokens": 5}, "delay_ms": 60}"#,
    r#"{"text": "{\"state\":\"action\",\"reason\":\"r\",\"tool\":\"calculator\",\"tool_input\":{\"expression\":\"2*(3+4)\"}}", "usage": {"input_tokens": 20, "output_tokens": 5}, "delay_ms": 60}"#,
    r#"{"text": "{\"state\":\"action\",\"reason\":\"r\",\"tool\":\"calculator\",\"tool_input\":{\"expression\":\"14*3\"}}", "usage": {"input_tokens": 25, "output_tokens": 5}, "delay_ms": 60}"#,
    r#"{"text": "{\"state\":\"final\",\"satisfied\":true,\"final_summary\":\"42\"}", "usage": {"input_tokens": 30, "output_tokens": 5}, "delay_ms": 60}"#,
];

/// Events a client received: run id -> (seq -> data).
type Received = Arc<Mutex<BTreeMap<String, BTreeMap<u64, String>>>>;

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn start(db: &str, replay: &str, port: u16) -> Child {
    Command::new(env!("CARGO_BIN_EXE_corrigible"))
        .args([
            "serve",
            "--addr",
            &format!("127.0.0.1:{port}"),
            "--db",
            db,
            "--model",
            &format!("replay:{replay}"),
            "--tools",
            "calculator",
            "--max-concurrent-model-calls",
            "32",
        ])
        .env("NO_COLOR", "1")
        .env_remove("CORRIGIBLE_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary starts")
}

async fn wait_healthy(client: &reqwest::Client, base: &str) {
    for _ in 0..600 {
        if let Ok(r) = client.get(format!("{base}/healthz")).send().await
            && r.status().is_success()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server did not become healthy");
}

/// Parses complete SSE blocks from `buffer` into `out` (id -> data), keeping the rest.
fn take_events(buffer: &mut String, out: &mut Vec<(u64, String)>) {
    while let Some(end) = buffer.find("\n\n") {
        let block: String = buffer.drain(..end + 2).collect();
        let mut id = None;
        let mut data = Vec::new();
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("id:") {
                id = v.trim().parse::<u64>().ok();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push(v.strip_prefix(' ').unwrap_or(v).to_string());
            }
        }
        if let Some(id) = id {
            out.push((id, data.join("\n")));
        }
    }
}

/// Posts runs and follows each one's events until the server is gone or `stop` is set.
async fn client_loop(base: String, received: Received, stop: Arc<AtomicBool>) {
    let client = reqwest::Client::new();
    while !stop.load(Ordering::Relaxed) {
        let Ok(response) = client
            .post(format!("{base}/v1/runs"))
            .header("prefer", "respond-async")
            .json(&serde_json::json!({"prompt": "2*(3+4)*3?"}))
            .send()
            .await
        else {
            return;
        };
        let Ok(body) = response.json::<Value>().await else {
            return;
        };
        let Some(run_id) = body["run_id"].as_str().map(str::to_string) else {
            return;
        };
        let Ok(mut stream) = client
            .get(format!("{base}/v1/runs/{run_id}/events"))
            .send()
            .await
        else {
            return;
        };
        let mut buffer = String::new();
        loop {
            match stream.chunk().await {
                Ok(Some(chunk)) => {
                    buffer.push_str(&String::from_utf8_lossy(&chunk));
                    let mut events = Vec::new();
                    take_events(&mut buffer, &mut events);
                    let mut received = received.lock().unwrap();
                    let run = received.entry(run_id.clone()).or_default();
                    for (seq, data) in events {
                        run.insert(seq, data);
                    }
                }
                Ok(None) => break,
                Err(_) => return,
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_under_load_keeps_every_event_a_client_saw() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db").display().to_string();
    let replay_path = dir.path().join("replay.jsonl");
    let mut file = std::fs::File::create(&replay_path).unwrap();
    for line in REPLAY {
        writeln!(file, "{line}").unwrap();
    }
    let replay = replay_path.display().to_string();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let received: Received = Arc::default();

    for round in 0..ROUNDS {
        let mut server = start(&db, &replay, port);
        wait_healthy(&client, &base).await;
        let stop = Arc::new(AtomicBool::new(false));
        let clients: Vec<_> = (0..CLIENTS)
            .map(|_| tokio::spawn(client_loop(base.clone(), received.clone(), stop.clone())))
            .collect();
        tokio::time::sleep(Duration::from_millis(400 + 150 * round)).await;
        server.kill().expect("SIGKILL is sent");
        server.wait().expect("the server is reaped");
        stop.store(true, Ordering::Relaxed);
        for c in clients {
            tokio::time::timeout(Duration::from_secs(30), c)
                .await
                .expect("clients notice the dead server")
                .expect("client task ends");
        }
    }

    // A restart marks the runs the last kill cut short.
    let mut server = start(&db, &replay, port);
    wait_healthy(&client, &base).await;
    let received = received.lock().unwrap().clone();
    assert!(
        received.len() > CLIENTS,
        "too few runs to check: {}",
        received.len()
    );
    let mut interrupted = HashSet::new();
    let mut interrupted_with_calls = 0;
    let mut interrupted_with_tool_calls = 0;
    for (run_id, seen) in &received {
        let stored = client
            .get(format!("{base}/v1/runs/{run_id}/events"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let mut buffer = stored;
        let mut events = Vec::new();
        take_events(&mut buffer, &mut events);
        let stored: BTreeMap<u64, String> = events.into_iter().collect();
        for (seq, data) in seen {
            assert_eq!(
                stored.get(seq),
                Some(data),
                "run {run_id}: event {seq} was sent to a client but is not in the store"
            );
        }
        let run: Value = client
            .get(format!("{base}/v1/runs/{run_id}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let status = run["status"].as_str().unwrap();
        assert_ne!(
            status, "running",
            "run {run_id} is still running after recovery"
        );
        let count = |kind: &str| {
            stored
                .values()
                .filter(|d| d.contains(&format!("\"type\":\"{kind}\"")))
                .count() as u64
        };
        if status == "interrupted" {
            interrupted.insert(run_id.clone());
            if count("model_call") > 0 {
                interrupted_with_calls += 1;
            }
            if count("tool_call") > 0 {
                interrupted_with_tool_calls += 1;
            }
            assert_eq!(
                run["model_calls"].as_u64(),
                Some(count("model_call")),
                "{run}"
            );
            assert_eq!(
                run["tool_calls"].as_u64(),
                Some(count("tool_call")),
                "{run}"
            );
        }
    }
    assert!(!interrupted.is_empty(), "no run was cut short by the kills");
    assert!(
        interrupted_with_calls > 0,
        "no interrupted run kept a model call"
    );
    assert!(
        interrupted_with_tool_calls > 0,
        "no interrupted run kept a tool call"
    );
    server.kill().unwrap();
    server.wait().unwrap();
}
