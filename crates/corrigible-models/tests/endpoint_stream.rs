//! A streamed answer through `ChatEndpoint::post_streaming`: it may outlast the request
//! timeout while bytes keep coming, and a stall longer than the timeout cuts it.

mod common;

use std::time::{Duration, Instant};

use common::options;
use corrigible_models::ChatEndpoint;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Serves one request with a chunked body: each of `chunks` after its pause.
async fn slow_stream(chunks: Vec<(Duration, &'static str)>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = Vec::new();
        let mut buf = [0u8; 4096];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = socket.read(&mut buf).await.unwrap();
            if n == 0 {
                return;
            }
            request.extend_from_slice(&buf[..n]);
        }
        let head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        if socket.write_all(head).await.is_err() {
            return;
        }
        for (pause, data) in chunks {
            tokio::time::sleep(pause).await;
            let chunk = format!("{:x}\r\n{data}\r\n", data.len());
            if socket.write_all(chunk.as_bytes()).await.is_err() {
                return;
            }
        }
        let _ = socket.write_all(b"0\r\n\r\n").await;
    });
    format!("http://{addr}/v1")
}

fn endpoint(base: &str, timeout: Duration) -> ChatEndpoint {
    let mut options = options(base);
    options.timeouts.request = timeout;
    ChatEndpoint::new("m", options).unwrap()
}

#[tokio::test]
async fn a_stream_that_keeps_coming_outlasts_the_request_timeout() {
    let pause = Duration::from_millis(150);
    let base = slow_stream(vec![(pause, "data: {}\n\n"); 8]).await;
    let endpoint = endpoint(&base, Duration::from_millis(500));
    let started = Instant::now();
    let (mut response, _) = endpoint
        .post_streaming(&json!({"stream": true}))
        .await
        .unwrap();
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        body.extend_from_slice(&chunk);
    }
    assert_eq!(body, b"data: {}\n\n".repeat(8));
    assert!(started.elapsed() > Duration::from_millis(500));
}

#[tokio::test]
async fn a_stream_that_stalls_past_the_request_timeout_is_cut() {
    let base = slow_stream(vec![
        (Duration::ZERO, "data: {}\n\n"),
        (Duration::from_secs(5), "data: {}\n\n"),
    ])
    .await;
    let endpoint = endpoint(&base, Duration::from_millis(300));
    let (mut response, _) = endpoint
        .post_streaming(&json!({"stream": true}))
        .await
        .unwrap();
    let started = Instant::now();
    let mut outcome = Ok(());
    loop {
        match response.chunk().await {
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(e) => {
                outcome = Err(e);
                break;
            }
        }
    }
    let error = outcome.expect_err("a stalled stream is cut");
    assert!(error.is_timeout() || error.is_body(), "{error}");
    assert!(started.elapsed() < Duration::from_secs(3));
}
