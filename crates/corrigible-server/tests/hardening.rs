//! The server under hostile clients: loopback-only without a key, JSON-only bodies, `Host`
//! and `Origin` checks, security headers, JSON errors everywhere, timeouts, a connection cap
//! and one log line per request.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Options, SIMPLE, TestServer, slow};
use corrigible_models::ReplayModel;
use corrigible_server::{AppState, ServerConfig, ServerError, open_store, replay_factory};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn error_kind(response: reqwest::Response) -> (StatusCode, String) {
    let status = response.status();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    assert!(
        content_type.starts_with("application/json"),
        "{status}: {content_type}"
    );
    let body: Value = response.json().await.unwrap();
    let kind = body["error"]["kind"].as_str().unwrap().to_string();
    assert!(body["error"]["message"].is_string(), "{body}");
    (status, kind)
}

#[tokio::test]
async fn a_public_address_needs_an_api_key_or_an_explicit_opt_out() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db").display().to_string();
    let replay = ReplayModel::from_str(SIMPLE).unwrap();
    for addr in ["0.0.0.0:0", "[::]:0"] {
        let config = ServerConfig {
            addr: addr.into(),
            db: db.clone(),
            ..ServerConfig::default()
        };
        let store = open_store(&db).await.unwrap();
        let state = AppState::new(
            common::agent(&replay),
            replay_factory(replay.restarted()),
            store,
            &config,
        );
        let refused = corrigible_server::serve_until(config, state, async {}).await;
        match refused {
            Err(error @ ServerError::Insecure { .. }) => {
                assert!(error.to_string().contains("--insecure-no-auth"), "{error}");
            }
            other => panic!("{addr}: expected a refusal, got {other:?}"),
        }
    }
    // Loopback without a key is the default and is served.
    let server = TestServer::start(Options::replay(SIMPLE)).await;
    let health = server
        .client
        .get(server.url("/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn a_public_address_is_served_with_an_api_key_or_the_explicit_opt_out() {
    let mut opted_out = Options::replay(SIMPLE);
    opted_out.configure = |config| {
        config.addr = "0.0.0.0:0".into();
        config.allow_insecure = true;
    };
    let server = TestServer::start(opted_out).await;
    let run = server.post_run(&json!({"prompt": "6*7?"})).await;
    assert_eq!(run.status(), StatusCode::OK);
    server.stop().await;

    let mut with_key = Options::replay(SIMPLE);
    with_key.api_key = Some("k3y".into());
    with_key.configure = |config| config.addr = "0.0.0.0:0".into();
    let server = TestServer::start(with_key).await;
    let anonymous = server
        .client
        .get(server.url("/v1/runs"))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    let keyed = server
        .client
        .get(server.url("/v1/runs"))
        .bearer_auth("k3y")
        .send()
        .await
        .unwrap();
    assert_eq!(keyed.status(), StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn post_bodies_must_be_json() {
    let server = TestServer::start(Options::replay(SIMPLE)).await;
    let body = r#"{"prompt": "6*7?"}"#;
    for content_type in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        Some("application/jsonx"),
        None,
    ] {
        let mut request = server.client.post(server.url("/v1/runs")).body(body);
        if let Some(ct) = content_type {
            request = request.header("content-type", ct);
        }
        let (status, kind) = error_kind(request.send().await.unwrap()).await;
        assert_eq!(
            status,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{content_type:?}"
        );
        assert_eq!(kind, "unsupported_media_type");
    }
    assert!(
        server
            .state
            .store()
            .list_runs(10, None, &Default::default())
            .await
            .unwrap()
            .is_empty()
    );
    let ok = server
        .client
        .post(server.url("/v1/runs"))
        .header("content-type", "Application/JSON; charset=utf-8")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn host_and_origin_must_name_this_server() {
    let mut options = Options::replay(SIMPLE);
    options.configure = |c| c.allowed_hosts = vec!["runs.example.com".into()];
    let server = TestServer::start(options).await;
    let port = server.base.rsplit(':').next().unwrap().to_string();
    let get = |host: String, origin: Option<&'static str>| {
        let mut request = server
            .client
            .get(server.url("/v1/runs"))
            .header("host", host);
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        request.send()
    };
    // A DNS-rebinding page: the browser sends the attacker's host name.
    let (status, kind) = error_kind(get("evil.example".into(), None).await.unwrap()).await;
    assert_eq!(
        (status, kind.as_str()),
        (StatusCode::FORBIDDEN, "forbidden_host")
    );
    let (status, _) = error_kind(get(format!("evil.example:{port}"), None).await.unwrap()).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // A cross-site request: the right host, another origin.
    let cross = get(format!("localhost:{port}"), Some("http://evil.example"))
        .await
        .unwrap();
    let (status, kind) = error_kind(cross).await;
    assert_eq!(
        (status, kind.as_str()),
        (StatusCode::FORBIDDEN, "forbidden_origin")
    );
    let post = server
        .client
        .post(server.url("/v1/runs"))
        .header("origin", "null")
        .json(&json!({"prompt": "6*7?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), StatusCode::FORBIDDEN);
    // This server's own names and the allow-list pass.
    for (host, origin) in [
        (format!("localhost:{port}"), None),
        (format!("127.0.0.1:{port}"), Some("http://127.0.0.1:PORT")),
        (
            "runs.example.com".to_string(),
            Some("https://runs.example.com"),
        ),
    ] {
        let origin = origin.map(|o| &*Box::leak(o.replace("PORT", &port).into_boxed_str()));
        let response = get(host.clone(), origin).await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{host} {origin:?}");
    }
    // Load balancers probe health by IP.
    let health = server
        .client
        .get(server.url("/healthz"))
        .header("host", "10.1.2.3:8080")
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn the_dashboard_sends_security_headers() {
    let server = TestServer::start(Options::replay(SIMPLE)).await;
    // The last one is refused by the `Host` check, before any route.
    for (path, host) in [
        ("/", None),
        ("/assets/app.js", None),
        ("/v1/runs", None),
        ("/v1/runs", Some("rebound.example")),
    ] {
        let mut request = server.client.get(server.url(path));
        if let Some(host) = host {
            request = request.header("host", host);
        }
        let response = request.send().await.unwrap();
        let expected = if host.is_some() {
            StatusCode::FORBIDDEN
        } else {
            StatusCode::OK
        };
        assert_eq!(response.status(), expected, "{path}");
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .map(|v| v.to_str().unwrap().to_string())
                .unwrap_or_default()
        };
        let csp = header("content-security-policy");
        assert!(csp.contains("default-src 'none'"), "{path}: {csp}");
        assert!(csp.contains("script-src 'self'"), "{path}: {csp}");
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        assert_eq!(header("x-content-type-options"), "nosniff", "{path}");
        assert_eq!(header("x-frame-options"), "DENY", "{path}");
    }
    server.stop().await;
}

#[tokio::test]
async fn every_error_is_in_the_json_error_format() {
    let server = TestServer::start(Options::replay(SIMPLE)).await;
    let client = &server.client;
    let cases = [
        (
            client.delete(server.url("/v1/runs")),
            405,
            "method_not_allowed",
        ),
        (
            client.put(server.url("/healthz")),
            405,
            "method_not_allowed",
        ),
        (
            client.post(server.url("/v1/runs/abc")),
            405,
            "method_not_allowed",
        ),
        (
            client.get(server.url("/v1/runs/%FF%FE")),
            400,
            "invalid_request",
        ),
        (
            client.get(server.url("/v1/runs/%C3%28/events")),
            400,
            "invalid_request",
        ),
        (client.get(server.url("/no/such/%FF")), 404, "not_found"),
        (
            client.get(server.url("/v1/runs?limit=abc")),
            400,
            "invalid_request",
        ),
    ];
    for (request, status, kind) in cases {
        let (got_status, got_kind) = error_kind(request.send().await.unwrap()).await;
        assert_eq!((got_status.as_u16(), got_kind.as_str()), (status, kind));
    }
    server.stop().await;
}

/// Reads until the server closes the connection; `true` when it did within `limit`.
async fn closed_within(stream: &mut TcpStream, limit: Duration) -> bool {
    let mut buf = [0u8; 1024];
    let read = async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(limit, read).await.is_ok()
}

#[tokio::test]
async fn a_client_that_sends_headers_slowly_is_cut_off() {
    let mut options = Options::replay(SIMPLE);
    options.configure = |c| {
        c.header_read_timeout = Duration::from_millis(300);
        c.idle_timeout = Duration::from_secs(60);
    };
    let server = TestServer::start(options).await;
    let mut slowloris = TcpStream::connect(server.base.trim_start_matches("http://"))
        .await
        .unwrap();
    slowloris
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    assert!(closed_within(&mut slowloris, Duration::from_secs(5)).await);
    server.stop().await;
}

#[tokio::test]
async fn idle_connections_are_closed_but_busy_ones_are_not() {
    let mut options = Options::replay(&slow(1200));
    options.configure = |c| {
        c.header_read_timeout = Duration::from_secs(60);
        c.idle_timeout = Duration::from_millis(300);
    };
    let server = TestServer::start(options).await;
    let mut idle = TcpStream::connect(server.base.trim_start_matches("http://"))
        .await
        .unwrap();
    assert!(closed_within(&mut idle, Duration::from_secs(5)).await);
    // A request waiting 1.2 s for its run's report is not idle.
    let response = server.post_run(&json!({"prompt": "wait"})).await;
    assert_eq!(response.status(), StatusCode::OK);
    server.stop().await;
}

#[tokio::test]
async fn past_the_cap_an_idle_connection_makes_room_and_busy_ones_are_kept() {
    let mut options = Options::replay(&slow(1500));
    options.configure = |c| {
        c.max_connections = 2;
        c.header_read_timeout = Duration::from_secs(60);
        c.idle_timeout = Duration::from_secs(60);
    };
    let server = TestServer::start(options).await;
    let addr = server.base.trim_start_matches("http://").to_string();
    // Two connections that never send a request hold both places.
    let mut first = TcpStream::connect(&addr).await.unwrap();
    let _second = TcpStream::connect(&addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    // A third client is served at once: the connection idle the longest is closed for it.
    let served = reqwest::Client::new()
        .get(server.url("/healthz"))
        .timeout(Duration::from_secs(2))
        .send()
        .await
        .unwrap();
    assert_eq!(served.status(), StatusCode::OK);
    assert!(closed_within(&mut first, Duration::from_secs(2)).await);
    // With both places taken by requests in progress, a new connection gets a 503 at once.
    let busy: Vec<_> = (0..2)
        .map(|_| {
            let url = server.url("/v1/runs");
            tokio::spawn(async move {
                reqwest::Client::new()
                    .post(url)
                    .json(&json!({"prompt": "wait"}))
                    .send()
                    .await
                    .map(|r| r.status())
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let refused = reqwest::Client::new()
        .get(server.url("/healthz"))
        .timeout(Duration::from_secs(2))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.headers()["retry-after"], "1");
    let (status, kind) = error_kind(refused).await;
    assert_eq!(
        (status.as_u16(), kind.as_str()),
        (503, "too_many_connections")
    );
    for run in busy {
        assert_eq!(run.await.unwrap().unwrap(), StatusCode::OK);
    }
    server.stop().await;
}

#[tokio::test]
async fn two_host_headers_are_refused() {
    let server = TestServer::start(Options::replay(SIMPLE)).await;
    let addr = server.base.trim_start_matches("http://").to_string();
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    let request = format!(
        "GET /v1/info HTTP/1.1\r\nHost: {addr}\r\nHost: evil.example\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("more than one Host header"), "{answer}");
    server.stop().await;
}

#[tokio::test]
async fn a_blank_api_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db").display().to_string();
    let replay = ReplayModel::from_str(SIMPLE).unwrap();
    for key in ["", "   ", "\t\n"] {
        let config = ServerConfig {
            addr: "127.0.0.1:0".into(),
            db: db.clone(),
            api_key: Some(key.into()),
            ..ServerConfig::default()
        };
        assert!(matches!(
            corrigible_server::check_config(&config).await,
            Err(ServerError::EmptyApiKey)
        ));
        let store = open_store(&db).await.unwrap();
        let state = AppState::new(
            common::agent(&replay),
            replay_factory(replay.restarted()),
            store,
            &config,
        );
        let refused = corrigible_server::serve_until(config, state, async {}).await;
        assert!(
            matches!(refused, Err(ServerError::EmptyApiKey)),
            "{key:?}: {refused:?}"
        );
    }
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// Captures this thread's `INFO` logs until the guard is dropped.
    fn install() -> (Self, tracing::subscriber::DefaultGuard) {
        let captured = Self::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::INFO)
            .finish();
        (captured, tracing::subscriber::set_default(subscriber))
    }
}

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn each_request_logs_one_line_with_its_run_id() {
    let (captured, _guard) = Captured::install();
    let server = TestServer::start(Options::replay(SIMPLE)).await;
    let report: Value = server
        .post_run(&json!({"prompt": "6*7?"}))
        .await
        .json()
        .await
        .unwrap();
    let run_id = report["run_id"].as_str().unwrap().to_string();
    let fetched = server
        .client
        .get(server.url(&format!("/v1/runs/{run_id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(fetched.status(), StatusCode::OK);
    let missing = server
        .client
        .delete(server.url("/v1/runs"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), StatusCode::METHOD_NOT_ALLOWED);
    server.stop().await;
    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("request"))
        .filter(|l| l.contains("status="))
        .collect();
    assert_eq!(lines.len(), 3, "{text:?}");
    assert!(
        lines[0].contains("method=POST") && lines[0].contains("status=200"),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].contains(&format!("run_id=\"{run_id}\"")),
        "{}",
        lines[0]
    );
    assert!(lines[1].contains("method=GET") && lines[1].contains(&format!("run_id=\"{run_id}\"")));
    assert!(lines[2].contains("method=DELETE") && lines[2].contains("status=405"));
}

#[tokio::test]
async fn a_server_failure_shows_the_client_an_id_and_the_log_the_cause() {
    let (captured, _guard) = Captured::install();
    let server = TestServer::start(Options::replay(SIMPLE)).await;
    // The server reads its runs at start (leases); it serves only once that is done, so a
    // first answer means the tables may now go.
    let ready = server
        .client
        .get(server.url("/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
    // Break the store under the server: its table is gone.
    let pool = sqlx::SqlitePool::connect(&format!("sqlite:{}", server.db))
        .await
        .unwrap();
    sqlx::query("DROP TABLE events")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("DROP TABLE runs").execute(&pool).await.unwrap();
    let response = server
        .client
        .get(server.url("/v1/runs"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
    let header_id = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_string();
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["kind"], "internal");
    assert_eq!(body["error"]["request_id"], header_id.as_str());
    let text = body.to_string();
    assert!(
        !text.contains("runs") && !text.contains("table") && !text.contains("sqlite"),
        "the body shows internals: {text}"
    );
    server.stop().await;
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let cause = log
        .lines()
        .find(|l| l.contains("internal error"))
        .unwrap_or_else(|| panic!("no cause logged: {log}"));
    assert!(
        cause.contains(&header_id) && cause.contains("no such table"),
        "{cause}"
    );
}

#[tokio::test]
async fn a_request_the_client_abandons_is_logged() {
    let (captured, _guard) = Captured::install();
    let server = TestServer::start(Options::replay(&slow(300))).await;
    let addr = server.base.trim_start_matches("http://").to_string();
    let body = json!({"prompt": "wait"}).to_string();
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    let request = format!(
        "POST /v1/runs HTTP/1.1\r\nHost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(stream);
    // The run goes on, detached, and ends.
    common::eventually_async(|| async {
        let runs = server
            .state
            .store()
            .list_runs(5, None, &Default::default())
            .await
            .unwrap();
        runs.len() == 1 && runs[0].finished_at.is_some()
    })
    .await;
    server.stop().await;
    let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let line = log
        .lines()
        .find(|l| l.contains("request aborted before its response"))
        .unwrap_or_else(|| panic!("no line for the abandoned request: {log}"));
    assert!(
        line.contains("method=POST") && line.contains("request_id="),
        "{line}"
    );
}
