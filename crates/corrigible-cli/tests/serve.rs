//! `corrigible serve` as its users start it: the request log on stderr by default, the run
//! store named by the config file, and the connection flags reaching the server.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const REPLAY: &str =
    r#"{"text": "{\"state\":\"final\",\"satisfied\":true,\"final_summary\":\"42\"}"}"#;

/// A `corrigible serve` process, killed when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start(args: &[&str], dir: &tempfile::TempDir, log: Option<&str>) -> Self {
        let replay = dir.path().join("replay.jsonl");
        std::fs::write(&replay, format!("{REPLAY}\n{REPLAY}\n")).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut command = Command::new(env!("CARGO_BIN_EXE_corrigible"));
        command
            .args(["serve", "--addr", &format!("127.0.0.1:{port}")])
            .args(["--model", &format!("replay:{}", replay.display())])
            .args(args)
            .env_remove("CORRIGIBLE_API_KEY")
            .env_remove("CORRIGIBLE_CONFIG")
            .env_remove("CORRIGIBLE_LOG")
            .env_remove("NO_COLOR")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(log) = log {
            command.env("CORRIGIBLE_LOG", log);
        }
        let mut server = Self {
            child: command.spawn().expect("the binary starts"),
            port,
        };
        server.wait_healthy();
        server
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Posts a run and returns its id.
    async fn post_run(&self, client: &reqwest::Client) -> String {
        let report: Value = client
            .post(self.url("/v1/runs"))
            .json(&json!({"prompt": "6*7?"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        report["run_id"].as_str().unwrap().to_string()
    }

    fn wait_healthy(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("the server exited ({status}): {}", self.stop());
            }
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the server did not start listening");
    }

    /// Kills the server and returns what it wrote on stderr.
    fn stop(&mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut err = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            let _ = pipe.read_to_string(&mut err);
        }
        err
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn serve_logs_one_line_per_request_on_stderr_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db").display().to_string();
    let mut server = Server::start(&["--db", &db], &dir, None);
    let client = reqwest::Client::new();
    let run_id = server.post_run(&client).await;
    let missing = client
        .get(server.url("/v1/runs/nope"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let err = server.stop();
    assert!(!err.contains('\u{1b}'), "colour codes on a pipe: {err:?}");
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("access_log") && l.contains("status="))
        .collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].contains("method=POST")
            && lines[0].contains("status=200")
            && lines[0].contains(&format!("run_id=\"{run_id}\"")),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains("path=\"/v1/runs/nope\"")
            && lines[1].contains("run_id=\"nope\"")
            && lines[1].contains("status=404"),
        "{}",
        lines[1]
    );

    // CORRIGIBLE_LOG still decides.
    let mut quiet = Server::start(&["--db", &db], &dir, Some("warn"));
    let listed = client.get(quiet.url("/v1/runs")).send().await.unwrap();
    assert_eq!(listed.status(), 200);
    let err = quiet.stop();
    assert!(!err.contains("status="), "{err}");
}

#[tokio::test]
async fn the_config_files_database_url_selects_the_run_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("from-config.db").display().to_string();
    let config = dir.path().join("corrigible.toml");
    std::fs::write(&config, format!("database_url = {db:?}\n")).unwrap();
    let config = config.display().to_string();
    let client = reqwest::Client::new();
    let mut server = Server::start(&["--config", &config], &dir, Some("warn"));
    let run_id = server.post_run(&client).await;
    server.stop();
    assert!(std::path::Path::new(&db).exists(), "{db} was not created");

    // Another server given the same file as --db finds the run there.
    let mut other = Server::start(&["--db", &db], &dir, Some("warn"));
    let run = client
        .get(other.url(&format!("/v1/runs/{run_id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(run.status(), 200);
    other.stop();
}

#[test]
fn the_header_read_timeout_flag_cuts_off_a_slow_client() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db").display().to_string();
    let mut server = Server::start(
        &["--db", &db, "--header-read-timeout", "1"],
        &dir,
        Some("warn"),
    );
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: ")
        .unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let started = Instant::now();
    let mut rest = Vec::new();
    let closed = stream.read_to_end(&mut rest);
    let waited = started.elapsed();
    assert!(closed.is_ok(), "the connection was not closed: {closed:?}");
    assert!(
        waited >= Duration::from_millis(500) && waited < Duration::from_secs(8),
        "closed after {waited:?}"
    );
    server.stop();
}

/// Runs `corrigible serve` with `args` to its end (a refusal) and returns its stderr.
fn refused(args: &[&str], dir: &tempfile::TempDir) -> String {
    let replay = dir.path().join("replay.jsonl");
    std::fs::write(&replay, format!("{REPLAY}\n")).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_corrigible"))
        .arg("serve")
        .args(["--model", &format!("replay:{}", replay.display())])
        .args(["--db", &dir.path().join("runs.db").display().to_string()])
        .args(args)
        .env_remove("CORRIGIBLE_API_KEY")
        .env_remove("CORRIGIBLE_CONFIG")
        .output()
        .expect("the binary runs");
    assert!(!output.status.success(), "{args:?} was served");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn refusals_come_before_any_serving_line() {
    let dir = tempfile::tempdir().unwrap();
    let exposed = refused(&["--addr", "0.0.0.0:0"], &dir);
    assert!(exposed.contains("--insecure-no-auth"), "{exposed}");
    let blank_key = refused(&["--addr", "127.0.0.1:0", "--api-key", "   "], &dir);
    assert!(blank_key.contains("API key is empty"), "{blank_key}");
    let blank_file = dir.path().join("blank.key");
    std::fs::write(&blank_file, "\n").unwrap();
    let from_file = refused(
        &[
            "--addr",
            "127.0.0.1:0",
            "--api-key-file",
            &blank_file.display().to_string(),
        ],
        &dir,
    );
    assert!(from_file.contains("API key is empty"), "{from_file}");
    for stderr in [exposed, blank_key, from_file] {
        assert!(!stderr.contains("serving on"), "{stderr}");
    }
}

#[tokio::test]
async fn the_key_file_and_the_admission_flags_reach_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db").display().to_string();
    let key_file = dir.path().join("api.key");
    std::fs::write(&key_file, "s3cret-from-a-file\n").unwrap();
    let mut server = Server::start(
        &[
            "--db",
            &db,
            "--api-key-file",
            &key_file.display().to_string(),
            "--max-runs",
            "3",
            "--max-queued-runs",
            "5",
            "--queue-timeout",
            "2",
            "--body-read-timeout",
            "1",
        ],
        &dir,
        Some("warn"),
    );
    let client = reqwest::Client::new();
    let without = client
        .post(server.url("/v1/runs"))
        .json(&json!({"prompt": "6*7?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(without.status(), 401);
    let with = client
        .post(server.url("/v1/runs"))
        .bearer_auth("s3cret-from-a-file")
        .json(&json!({"prompt": "6*7?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(with.status(), 200);
    let health: Value = client
        .get(server.url("/healthz"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["runs_queued"], 0);
    // A body that stops after its first byte is answered 408 after the 1 s timeout.
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    write!(
        stream,
        "POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nauthorization: Bearer s3cret-from-a-file\r\ncontent-type: application/json\r\ncontent-length: 50\r\n\r\n{{",
        server.port
    )
    .unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let stderr = server.stop();
    assert!(stderr.contains("serving on http://127.0.0.1:"), "{stderr}");
}

/// `serve` with `args` that must fail before it listens: its exit code and stderr.
fn serve_fails(args: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_corrigible"))
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--model",
            "replay:unused.jsonl",
        ])
        .args(args)
        .env_remove("CORRIGIBLE_CONFIG")
        .env_remove("PGSSLMODE")
        .output()
        .expect("the binary runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_database_off_loopback_in_clear_text_needs_the_opt_in_flag() {
    let db = "postgres://corrigible:secret@db.example.invalid:5432/corrigible?sslmode=disable";
    let (code, stderr) = serve_fails(&["--db", db]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("refusing to connect to the database at db.example.invalid"),
        "{stderr}"
    );
    assert!(stderr.contains("--insecure-db-plaintext"), "{stderr}");
    assert!(!stderr.contains("secret"), "{stderr}");

    // With the flag the check passes, and connecting fails on the name.
    let (code, stderr) = serve_fails(&["--db", db, "--insecure-db-plaintext"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(!stderr.contains("refusing"), "{stderr}");
    assert!(stderr.contains("run store"), "{stderr}");

    let (code, stderr) = serve_fails(&["--db", db, "--db-pool-size", "0"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("--db-pool-size: must be at least 1"),
        "{stderr}"
    );
}
