//! The run store through the server: events survive a restart, and runs a crash left in
//! flight are marked `interrupted` once their instance's lease expires.

mod common;

use std::time::Duration;

use common::{Options, TWO_CORRECTIONS, TestServer, eventually_async, read_sse, slow};
use corrigible_server::open_store;
use corrigible_server::store::RunStatus;
use reqwest::StatusCode;
use serde_json::{Value, json};

#[tokio::test]
async fn a_runs_events_survive_a_restart() {
    let mut first = TestServer::start(Options::replay(TWO_CORRECTIONS)).await;
    let report: Value = first
        .post_run(&json!({"prompt": "2*(3+4)?"}))
        .await
        .json()
        .await
        .unwrap();
    let run_id = report["run_id"].as_str().unwrap().to_string();
    let db = first.db.clone();
    let _dir = first.take_dir();
    first.stop().await;

    // A new process on the same database file.
    let mut options = Options::replay(TWO_CORRECTIONS);
    options.db = Some(db.clone());
    let second = TestServer::start(options).await;
    let stored: Value = second
        .client
        .get(second.url(&format!("/v1/runs/{run_id}")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stored["status"], "finished");
    assert_eq!(stored["report"], report);
    let events = read_sse(
        second
            .client
            .get(second.url(&format!("/v1/runs/{run_id}/events")))
            .send()
            .await
            .unwrap(),
    )
    .await;
    let rejections: Vec<&Value> = events
        .iter()
        .filter(|e| e.event == "rejection")
        .map(|e| &e.data["record"]["category"])
        .collect();
    assert_eq!(rejections, [&json!("invalid_json"), &json!("unknown_tool")]);
    assert_eq!(
        events.len(),
        18,
        "with a messages event before each model call"
    );
    second.stop().await;
}

/// A server whose runtime dies mid-run (as in a crash: no shutdown, tasks dropped), then a
/// new server on the same database.
#[test]
fn a_server_crash_mid_run_leaves_an_interrupted_run_with_its_events() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crash.db").display().to_string();

    let crashing = tokio::runtime::Runtime::new().unwrap();
    let run_id = crashing.block_on(async {
        let mut options = Options::replay(&slow(60_000));
        options.db = Some(db.clone());
        let server = TestServer::start(options).await;
        let started = server
            .client
            .post(server.url("/v1/runs"))
            .header("prefer", "respond-async")
            .json(&json!({"prompt": "never finishes"}))
            .send()
            .await
            .unwrap();
        assert_eq!(started.status(), StatusCode::ACCEPTED);
        let run_id: Value = started.json().await.unwrap();
        let run_id = run_id["run_id"].as_str().unwrap().to_string();
        // Wait until the decision to call the slow tool is stored.
        let store = server.state.store().clone();
        for _ in 0..500 {
            let events = store.events(&run_id, 0).await.unwrap();
            if events.iter().any(|e| e.kind == "decision") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        std::mem::forget(server);
        run_id
    });
    crashing.shutdown_background();

    let restarted = tokio::runtime::Runtime::new().unwrap();
    restarted.block_on(async {
        let mut options = Options::replay(&slow(1));
        options.db = Some(db.clone());
        let server = TestServer::start(options).await;
        // The crashed instance's lease expires, then its run is marked interrupted.
        let store = server.state.store().clone();
        eventually_async(|| {
            let store = store.clone();
            let run_id = run_id.clone();
            async move {
                let run = store.get_run(&run_id).await.unwrap().unwrap();
                run.summary.status == RunStatus::Interrupted
            }
        })
        .await;
        let stored: Value = server
            .client
            .get(server.url(&format!("/v1/runs/{run_id}")))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(stored["status"], "interrupted");
        assert_eq!(stored["model_calls"], 1);
        let events = read_sse(
            server
                .client
                .get(server.url(&format!("/v1/runs/{run_id}/events")))
                .send()
                .await
                .unwrap(),
        )
        .await;
        let kinds: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
        assert_eq!(
            kinds,
            ["run_started", "messages", "model_call", "decision", "end"]
        );
        assert_eq!(
            events.last().unwrap().data,
            json!({"status": "interrupted"})
        );
        server.stop().await;
    });
}

#[tokio::test]
async fn an_in_memory_store_works() {
    let store = open_store("sqlite::memory:").await.unwrap();
    assert!(
        store
            .list_runs(10, None, &Default::default())
            .await
            .unwrap()
            .is_empty()
    );
}
