//! Several server instances on one store (a SQLite file, and Postgres when configured): a
//! run started on one is listed, fetched and streamed live from another; a crashed
//! instance's runs are marked `interrupted` by the others once its lease expires, and never
//! while it is alive.

mod common;

use std::time::Duration;

use common::{Options, TestServer, read_sse, slow};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::runtime::Runtime;

fn options(db: &str, replay: &str) -> Options {
    let mut options = Options::replay(replay);
    options.db = Some(db.to_string());
    options.lease = Duration::from_millis(900);
    options
}

async fn start_async_run(server: &TestServer, prompt: &str) -> String {
    let started = server
        .client
        .post(server.url("/v1/runs"))
        .header("prefer", "respond-async")
        .json(&json!({ "prompt": prompt }))
        .send()
        .await
        .unwrap();
    assert_eq!(started.status(), StatusCode::ACCEPTED);
    let body: Value = started.json().await.unwrap();
    body["run_id"].as_str().unwrap().to_string()
}

async fn run(server: &TestServer, id: &str) -> Value {
    server
        .client
        .get(server.url(&format!("/v1/runs/{id}")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Each instance in its own runtime, so one can crash (its runtime dropped) while the other
/// goes on.
fn shared_store_suite(db: &str) {
    let runtime_a = Runtime::new().unwrap();
    let runtime_b = Runtime::new().unwrap();
    let a = runtime_a.block_on(TestServer::start(options(db, &slow(1500))));
    let b = runtime_b.block_on(TestServer::start(options(db, &slow(1500))));
    assert_ne!(a.state.instance_id(), b.state.instance_id());

    // Started on A, seen live from B.
    runtime_b.block_on(async {
        let id = start_async_run(&a, "slow on A").await;
        let listed: Value = b
            .client
            .get(b.url("/v1/runs"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert!(
            listed["runs"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["run_id"] == id.as_str())
        );
        assert_eq!(run(&b, &id).await["status"], "running");
        let streamed = read_sse(
            b.client
                .get(b.url(&format!("/v1/runs/{id}/events")))
                .send()
                .await
                .unwrap(),
        )
        .await;
        let kinds: Vec<&str> = streamed.iter().map(|e| e.event.as_str()).collect();
        assert_eq!(kinds.first(), Some(&"run_started"));
        assert!(kinds.contains(&"tool_call"), "{kinds:?}");
        assert_eq!(kinds.last(), Some(&"end"));
        assert_eq!(streamed.last().unwrap().data, json!({"status": "finished"}));
        let ids: Vec<u64> = streamed
            .iter()
            .filter_map(|e| e.id.as_ref().map(|i| i.parse().unwrap()))
            .collect();
        assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>());
        assert_eq!(run(&b, &id).await["status"], "finished");
    });

    // A live owner keeps its run past several leases: B never takes it.
    let long = runtime_b.block_on(async {
        let id = start_async_run(&a, "long on A").await;
        tokio::time::sleep(Duration::from_millis(1200)).await;
        assert_eq!(run(&b, &id).await["status"], "running");
        id
    });
    runtime_b.block_on(async {
        for _ in 0..200 {
            if run(&b, &long).await["status"] != "running" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(run(&b, &long).await["status"], "finished");
    });

    // A crashes mid-run: B marks the run interrupted once A's lease expires.
    let orphan = runtime_b.block_on(async {
        let id = start_async_run(&a, "cut short on A").await;
        for _ in 0..200 {
            let events = b.state.store().events(&id, 0).await.unwrap();
            if events.iter().any(|e| e.kind == "model_call") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        id
    });
    std::mem::forget(a);
    runtime_a.shutdown_background();
    runtime_b.block_on(async {
        let mut status = Value::Null;
        for _ in 0..300 {
            let record = run(&b, &orphan).await;
            status = record["status"].clone();
            if status == "interrupted" {
                assert_eq!(record["model_calls"], 1, "{record}");
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(status, "interrupted");
        b.stop().await;
    });
}

#[test]
fn instances_share_a_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shared.db").display().to_string();
    shared_store_suite(&db);
}

#[cfg(feature = "postgres")]
#[test]
fn instances_share_a_postgres_database() {
    let setup = Runtime::new().unwrap();
    let Some(url) = setup.block_on(common::postgres::fresh_database()) else {
        return;
    };
    shared_store_suite(&url);
}
