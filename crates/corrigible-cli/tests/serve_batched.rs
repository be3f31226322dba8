//! `corrigible serve --max-sequences N` on the default embedded model: concurrent runs are
//! decoded together and each gets the report it gets from a server that decodes one call at a
//! time (greedy decoding, the same calls, the same answers).
//!
//! Needs Qwen2.5-Coder-1.5B (`scripts/fetch-model`); under CI a missing file fails the test,
//! elsewhere it is skipped.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const PROMPTS: [&str; 3] = [
    "What is 17 * 23?",
    "What is 987 - 654?",
    "What is 3.5 * 42?",
];

/// `corrigible serve`, killed on drop.
struct Serve {
    child: Child,
    port: u16,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    fn start(sequences: usize, dir: &tempfile::TempDir) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let child = Command::new(env!("CARGO_BIN_EXE_corrigible"))
            .args(["serve", "--model", "local:qwen2.5-coder-1.5b"])
            .args(["--addr", &format!("127.0.0.1:{port}")])
            .args(["--max-sequences", &sequences.to_string()])
            .arg("--db")
            .arg(dir.path().join(format!("runs-{sequences}.db")))
            .env_remove("CORRIGIBLE_API_KEY")
            .env_remove("CORRIGIBLE_CONFIG")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("corrigible serve starts");
        let mut serve = Self { child, port };
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = serve.child.try_wait() {
                panic!("corrigible serve exited: {status}");
            }
            assert!(
                started.elapsed() < Duration::from_secs(180),
                "corrigible serve is not listening"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        serve
    }

    /// Posts every prompt at once and returns each run's tool calls and final answer.
    async fn run_all(&self) -> Vec<(Vec<Value>, String)> {
        let client = reqwest::Client::new();
        let url = format!("http://127.0.0.1:{}/v1/runs", self.port);
        let runs = PROMPTS.iter().map(|prompt| {
            let (client, url) = (client.clone(), url.clone());
            async move {
                let response = client
                    .post(&url)
                    .json(&json!({"prompt": prompt}))
                    .timeout(Duration::from_secs(600))
                    .send()
                    .await
                    .expect("the run is answered");
                assert_eq!(response.status(), 200, "{prompt}");
                let report: Value = response.json().await.expect("a report");
                let calls = report["steps"]
                    .as_array()
                    .map(|steps| steps.iter().map(|s| s["input"].clone()).collect())
                    .unwrap_or_default();
                let answer = report["final_summary"].as_str().unwrap_or("").to_string();
                assert_eq!(report["satisfied"], true, "{prompt}: {report}");
                (calls, answer)
            }
        });
        join_all(runs).await
    }
}

async fn join_all<F>(futures: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut out = Vec::new();
    for handle in handles {
        out.push(handle.await.expect("the task"));
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_runs_decoded_together_get_what_each_gets_one_call_at_a_time() {
    if let Err(e) = corrigible_local::local_model_path("qwen2.5-coder-1.5b") {
        if std::env::var_os("CI").is_some() {
            panic!("{e}");
        }
        eprintln!("skipping: {e}");
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let one_at_a_time = {
        let serve = Serve::start(1, &dir);
        serve.run_all().await
    };
    let together = {
        let serve = Serve::start(PROMPTS.len(), &dir);
        serve.run_all().await
    };
    for ((prompt, a), b) in PROMPTS.iter().zip(&one_at_a_time).zip(&together) {
        assert!(!a.0.is_empty(), "{prompt}: no tool call");
        assert_eq!(a, b, "{prompt}");
    }
}
