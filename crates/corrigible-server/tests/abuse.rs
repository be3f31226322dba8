//! The service under the attacks of a hostile client, each printed as a PASS or FAIL line with
//! its figures: aborted POSTs (closed, reset, half-closed), slow and stalled bodies, held
//! half-open connections, and a flood of runs against a slow model.
//!
//! `cargo test -p corrigible-server --test abuse -- --nocapture` runs the short form (CI);
//! with `CORRIGIBLE_ABUSE=full` the flood lasts 10 s against a model taking 300 ms a call.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{Options, SIMPLE, TestServer, eventually_async};
use corrigible_server::store::RunStatus;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The attacks take turns, so that each measures the server under its own attack alone.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn full() -> bool {
    std::env::var("CORRIGIBLE_ABUSE").is_ok_and(|v| v == "full")
}

/// Prints the scenario's line and fails the test when `ok` is false.
fn report(scenario: &str, ok: bool, figures: String) {
    let verdict = if ok { "PASS" } else { "FAIL" };
    println!("abuse: {scenario}: {verdict} ({figures})");
    assert!(ok, "{scenario}: {figures}");
}

/// A calculator call and a final answer, each model call taking `ms`.
fn slow_model(ms: u64) -> String {
    SIMPLE
        .lines()
        .map(|line| format!("{}, \"delay_ms\": {ms}}}\n", line.trim_end_matches('}')))
        .collect()
}

fn addr(server: &TestServer) -> String {
    server.base.trim_start_matches("http://").to_string()
}

/// `(runs_in_flight from /healthz, corrigible_runs_in_flight from /metrics)`.
async fn in_flight(server: &TestServer) -> (u64, u64) {
    let health: Value = server
        .client
        .get(server.url("/healthz"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let metrics = server
        .client
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let gauge = metrics
        .lines()
        .find_map(|l| l.strip_prefix("corrigible_runs_in_flight "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or(-1.0);
    (health["runs_in_flight"].as_u64().unwrap(), gauge as u64)
}

/// How a client lets go of its connection.
#[derive(Debug, Clone, Copy)]
enum Abort {
    Close,
    Reset,
    HalfClose,
}

async fn let_go(stream: TcpStream, how: Abort) {
    match how {
        Abort::Close => drop(stream),
        Abort::Reset => {
            stream.set_zero_linger().unwrap();
            drop(stream);
        }
        Abort::HalfClose => {
            let mut stream = stream;
            let _ = stream.shutdown().await;
            tokio::time::sleep(Duration::from_millis(50)).await;
            drop(stream);
        }
    }
}

#[tokio::test]
async fn aborted_posts_strand_no_run() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let mut options = Options::replay(&slow_model(30));
    options.deadline = Duration::from_secs(30);
    let server = TestServer::start(options).await;
    let target = addr(&server);
    let body = json!({"prompt": "What is 6*7?"}).to_string();
    let aborts: Vec<_> = (0..300)
        .map(|i| {
            let how = [Abort::Close, Abort::Reset, Abort::HalfClose][i % 3];
            let whole_body = (i / 3) % 2 == 1;
            let target = target.clone();
            let body = body.clone();
            tokio::spawn(async move {
                let mut stream = TcpStream::connect(&target).await.unwrap();
                let head = format!(
                    "POST /v1/runs HTTP/1.1\r\nHost: {target}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                );
                stream.write_all(head.as_bytes()).await.unwrap();
                let sent = if whole_body { body.len() } else { body.len() / 2 };
                stream.write_all(&body.as_bytes()[..sent]).await.unwrap();
                tokio::time::sleep(Duration::from_millis(if whole_body { 15 } else { 5 })).await;
                let_go(stream, how).await;
            })
        })
        .collect();
    for abort in aborts {
        abort.await.unwrap();
    }
    let settled = Instant::now();
    eventually_async(|| async { in_flight(&server).await == (0, 0) }).await;
    let settle_ms = settled.elapsed().as_millis();
    let runs = server
        .state
        .store()
        .list_runs(500, None, &Default::default())
        .await
        .unwrap();
    let running = runs
        .iter()
        .filter(|r| r.status == RunStatus::Running)
        .count();
    let finished = runs
        .iter()
        .filter(|r| r.status == RunStatus::Finished)
        .count();
    let (health, gauge) = in_flight(&server).await;
    let stopping = Instant::now();
    server.stop().await;
    let stop_ms = stopping.elapsed().as_millis();
    report(
        "aborted POSTs",
        running == 0 && finished == runs.len() && health == gauge && stop_ms < 3_000,
        format!(
            "300 aborted (close, reset, half-close; mid-body and mid-run): {} runs stored, \
             {finished} finished, {running} running; in flight {health} (health) = {gauge} \
             (gauge), settled {settle_ms} ms after the last abort; shutdown {stop_ms} ms",
            runs.len()
        ),
    );
}

/// Reads until the server closes; `Some(what it sent)` when it closed within `limit`.
async fn answer_within(stream: &mut TcpStream, limit: Duration) -> Option<String> {
    let mut got = Vec::new();
    let read = async {
        let mut buf = [0u8; 1024];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(limit, read).await.ok()?;
    Some(String::from_utf8_lossy(&got).into_owned())
}

#[tokio::test]
async fn slow_and_stalled_bodies_are_cut_off() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let mut options = Options::replay(SIMPLE);
    options.configure = |c| {
        c.body_read_timeout = Duration::from_millis(800);
        c.max_connections = 8;
    };
    let server = TestServer::start(options).await;
    let target = addr(&server);
    let head = format!(
        "POST /v1/runs HTTP/1.1\r\nHost: {target}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n"
    );
    let mut held = Vec::new();
    let mut trickler = None;
    for i in 0..8 {
        let mut stream = TcpStream::connect(&target).await.unwrap();
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(b"{").await.unwrap();
        if i == 0 {
            // A trickle: one byte every 200 ms, for as long as the server listens.
            trickler = Some(tokio::spawn(async move {
                let started = Instant::now();
                let mut trickle = stream;
                while trickle.write_all(b" ").await.is_ok() && started.elapsed().as_secs() < 10 {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                started.elapsed()
            }));
        } else {
            held.push(stream);
        }
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let mut first_ok = None;
    while started.elapsed() < Duration::from_secs(5) {
        let probe = reqwest::Client::new()
            .get(server.url("/healthz"))
            .timeout(Duration::from_millis(500))
            .send()
            .await;
        if probe.is_ok_and(|r| r.status() == StatusCode::OK) {
            first_ok = Some(started.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut cut = 0;
    let mut timeouts = 0;
    for mut stream in held {
        if let Some(answer) = answer_within(&mut stream, Duration::from_secs(3)).await {
            cut += 1;
            if answer.starts_with("HTTP/1.1 408") {
                timeouts += 1;
            }
        }
    }
    let trickled = trickler.expect("a trickler").await.unwrap();
    let runs = server
        .state
        .store()
        .list_runs(10, None, &Default::default())
        .await
        .unwrap();
    server.stop().await;
    report(
        "slow bodies",
        first_ok.is_some_and(|t| t < Duration::from_secs(2))
            && cut == 7
            && timeouts == 7
            && trickled < Duration::from_secs(3)
            && runs.is_empty(),
        format!(
            "8 bodies held (7 stalled, 1 trickling a byte every 200 ms) with --max-connections 8 \
             and a 0.8 s body timeout: {cut}/7 stalled connections closed, {timeouts} with 408; \
             the trickle cut off after {} ms; /healthz served after {first_ok:?}; {} runs stored",
            trickled.as_millis(),
            runs.len()
        ),
    );
}

#[tokio::test]
async fn held_connections_do_not_keep_others_out() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let mut options = Options::replay(SIMPLE);
    options.configure = |c| {
        c.max_connections = 16;
        c.header_read_timeout = Duration::from_secs(30);
        c.idle_timeout = Duration::from_secs(60);
    };
    let server = TestServer::start(options).await;
    let target = addr(&server);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let opened = Arc::new(AtomicUsize::new(0));
    // The attacker keeps opening connections that never send a byte, 200 at a time.
    let attacker = tokio::spawn({
        let (target, stop, opened) = (target.clone(), stop.clone(), opened.clone());
        async move {
            let mut held = std::collections::VecDeque::new();
            while !stop.load(Ordering::Relaxed) {
                if let Ok(stream) = TcpStream::connect(&target).await {
                    held.push_back(stream);
                    opened.fetch_add(1, Ordering::Relaxed);
                }
                if held.len() > 200 {
                    held.pop_front();
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut served = 0;
    let mut worst = Duration::ZERO;
    for _ in 0..40 {
        let client = reqwest::Client::new();
        let started = Instant::now();
        let response = client
            .post(server.url("/v1/runs"))
            .json(&json!({"prompt": "What is 6*7?"}))
            .timeout(Duration::from_secs(3))
            .send()
            .await;
        worst = worst.max(started.elapsed());
        if response.is_ok_and(|r| r.status() == StatusCode::OK) {
            served += 1;
        }
    }
    stop.store(true, Ordering::Relaxed);
    attacker.await.unwrap();
    server.stop().await;
    report(
        "held connections",
        served == 40 && worst < Duration::from_secs(2),
        format!(
            "{} idle connections opened against --max-connections 16: {served}/40 runs served, \
             the slowest in {} ms",
            opened.load(Ordering::Relaxed),
            worst.as_millis()
        ),
    );
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Clients posting runs as fast as they are answered: more than the runs in flight and
/// waiting together, so that some are refused.
const FLOODERS: usize = 128;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_runs_is_bounded_and_runs_finish_at_the_models_rate() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let (call_ms, flood) = if full() {
        (300, Duration::from_secs(10))
    } else {
        (50, Duration::from_secs(3))
    };
    let mut options = Options::replay(&slow_model(call_ms));
    options.deadline = Duration::from_secs(2);
    options.configure = |c| {
        c.max_runs = 16;
        c.max_queued_runs = 32;
        c.queue_timeout = Duration::from_secs(2);
    };
    let server = Arc::new(TestServer::start(options).await);
    let rss_before = rss_kib();
    let accepted = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let retry_after = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let flooders: Vec<_> = (0..FLOODERS)
        .map(|_| {
            let (server, accepted, refused, retry_after) = (
                server.clone(),
                accepted.clone(),
                refused.clone(),
                retry_after.clone(),
            );
            tokio::spawn(async move {
                while started.elapsed() < flood {
                    let response = server
                        .client
                        .post(server.url("/v1/runs"))
                        .header("prefer", "respond-async")
                        .json(&json!({"prompt": "What is 6*7?"}))
                        .send()
                        .await;
                    match response.map(|r| (r.status(), r.headers().contains_key("retry-after"))) {
                        Ok((StatusCode::ACCEPTED, _)) => accepted.fetch_add(1, Ordering::Relaxed),
                        Ok((StatusCode::SERVICE_UNAVAILABLE, has_retry)) => {
                            retry_after.fetch_add(usize::from(has_retry), Ordering::Relaxed);
                            refused.fetch_add(1, Ordering::Relaxed)
                        }
                        other => panic!("unexpected answer under the flood: {other:?}"),
                    };
                }
            })
        })
        .collect();
    // Meanwhile: the gauges stay within the bounds, health answers, a synchronous run is
    // answered (its report, or a quick 503).
    let mut peak_in_flight = 0;
    let mut peak_queued = 0;
    let mut slowest_health = Duration::ZERO;
    let mut sync_answers = Vec::new();
    while started.elapsed() < flood {
        let asked = Instant::now();
        let health: Value = server
            .client
            .get(server.url("/healthz"))
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        slowest_health = slowest_health.max(asked.elapsed());
        peak_in_flight = peak_in_flight.max(health["runs_in_flight"].as_u64().unwrap());
        peak_queued = peak_queued.max(health["runs_queued"].as_u64().unwrap());
        let asked = Instant::now();
        let sync = server
            .client
            .post(server.url("/v1/runs"))
            .json(&json!({"prompt": "What is 6*7?"}))
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .map(|r| r.status());
        sync_answers.push((sync.ok(), asked.elapsed()));
    }
    for flooder in flooders {
        flooder.await.unwrap();
    }
    let flood_secs = started.elapsed().as_secs_f64();
    let rss_after = rss_kib();
    let runs = server
        .state
        .store()
        .list_runs(500, None, &Default::default())
        .await
        .unwrap();
    let finished_during = runs
        .iter()
        .filter(|r| r.finished_at.is_some_and(|t| t > 0))
        .count();
    eventually_async(|| async { server.state.runs_in_flight() == 0 }).await;
    let stopping = Instant::now();
    match Arc::try_unwrap(server) {
        Ok(server) => server.stop().await,
        Err(_) => panic!("the flooders still hold the server"),
    }
    let stop_ms = stopping.elapsed().as_millis();
    let accepted = accepted.load(Ordering::Relaxed);
    let refused = refused.load(Ordering::Relaxed);
    let retry_after = retry_after.load(Ordering::Relaxed);
    let sync_answered = sync_answers
        .iter()
        .filter(|(status, took)| {
            matches!(
                status,
                Some(StatusCode::OK | StatusCode::SERVICE_UNAVAILABLE)
            ) && *took < Duration::from_secs(5)
        })
        .count();
    let sync_ok = sync_answers
        .iter()
        .filter(|(status, _)| *status == Some(StatusCode::OK))
        .count();
    // Two model calls a run, 8 calls at once: the model's rate in runs per second.
    let model_rate = 8.0 / (2.0 * call_ms as f64 / 1000.0);
    let run_rate = finished_during as f64 / flood_secs;
    report(
        "flood",
        peak_in_flight <= 16
            && peak_queued <= 32
            && refused > 0
            && retry_after == refused
            && sync_answered == sync_answers.len()
            && run_rate >= 0.5 * model_rate
            && slowest_health < Duration::from_secs(1)
            && stop_ms < 3_000,
        format!(
            "{flood_secs:.1} s of {FLOODERS} clients against a {call_ms} ms model, --max-runs 16, \
             --max-queued-runs 32: {accepted} accepted, {refused} refused with 503 \
             ({retry_after} with Retry-After); {finished_during} runs finished, {run_rate:.1}/s \
             against the model's {model_rate:.1}/s; peak in flight {peak_in_flight}, queued \
             {peak_queued}; {sync_answered}/{} synchronous runs answered within 5 s ({sync_ok} \
             with a report); slowest /healthz {} ms; RSS {} -> {} MiB; shutdown {stop_ms} ms",
            sync_answers.len(),
            slowest_health.as_millis(),
            rss_before / 1024,
            rss_after / 1024,
        ),
    );
}
