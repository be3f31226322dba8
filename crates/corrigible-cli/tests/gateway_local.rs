//! An OpenAI Agents SDK agent, offline, on the default embedded model behind
//! `corrigible serve`'s OpenAI-compatible gateway: the model decides under the json protocol,
//! its decision comes back to the SDK as a tool call, the SDK runs its own function tool, and
//! the model answers from the result.
//!
//! Needs Qwen2.5-Coder-1.5B (`scripts/fetch-model`) and a Python with `openai-agents`
//! (`CORRIGIBLE_GATEWAY_PYTHON`); under CI a missing one fails the test, elsewhere it is
//! skipped.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `corrigible serve`, killed on drop.
struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn skip_or_fail(message: String) {
    if std::env::var_os("CI").is_some() {
        panic!("{message}");
    }
    eprintln!("skipping: {message}");
}

#[test]
fn an_agents_sdk_agent_runs_offline_on_the_embedded_model() {
    if let Err(e) = corrigible_local::local_model_path("qwen2.5-coder-1.5b") {
        return skip_or_fail(e.to_string());
    }
    let python = std::env::var("CORRIGIBLE_GATEWAY_PYTHON").unwrap_or_else(|_| "python3".into());
    let importable = Command::new(&python)
        .args(["-c", "import agents"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !importable {
        return skip_or_fail(format!(
            "{python} cannot import agents (pip install openai-agents; CORRIGIBLE_GATEWAY_PYTHON)"
        ));
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let child = Command::new(env!("CARGO_BIN_EXE_corrigible"))
        .args(["serve", "--model", "local:qwen2.5-coder-1.5b"])
        .args(["--addr", &format!("127.0.0.1:{port}")])
        .arg("--db")
        .arg(dir.path().join("runs.db"))
        .env_remove("CORRIGIBLE_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("corrigible serve starts");
    let mut serve = Serve(child);
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = serve.0.try_wait() {
            panic!("corrigible serve exited: {status}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "corrigible serve is not listening"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let script = format!(
        "{}/../corrigible-server/tests/gateway_clients/openai_agents.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = Command::new(&python)
        .arg(&script)
        .env("GATEWAY_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
        .env("OPENAI_API_KEY", "unused")
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("tool ran with city=Paris"), "{stdout}");
    let answer = stdout
        .lines()
        .find_map(|l| l.strip_prefix("final: "))
        .unwrap_or_default();
    assert!(
        answer.contains("21"),
        "the answer uses the tool's value: {stdout}"
    );
    drop(serve);
}
