//! MCP servers through the binary: `--mcp`, `--mcp-url`, `--mcp-header` and `[[mcp]]`, with
//! `mcp-server-time` (PyPI). Without it the tests that need it are skipped with a message,
//! except under CI (`CI` set), where `.ci/run` installs it and its absence fails them.

use std::io::Write;
use std::process::{Command, Output};

use serde_json::Value;

const SECRET: &str = "s3cr3t-t0ken-value";

fn corrigible(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_corrigible"))
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("CORRIGIBLE_LOG")
        .env_remove("CORRIGIBLE_CONFIG")
        .output()
        .expect("the binary runs")
}

fn file(lines: &[&str]) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    for line in lines {
        writeln!(file, "{line}").unwrap();
    }
    file
}

/// Whether `mcp-server-time` is on PATH; under CI its absence fails the test.
fn time_server_installed() -> bool {
    let found = Command::new("mcp-server-time")
        .arg("--help")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        let message = "mcp-server-time is not installed (pip install mcp-server-time)";
        if std::env::var_os("CI").is_some() {
            panic!("{message}");
        }
        eprintln!("skipping: {message}");
    }
    found
}

fn report(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).expect("a JSON report")
}

const NOW_IN_TOKYO: &str = r#"{"text": "{\"state\":\"action\",\"reason\":\"r\",\"tool\":\"get_current_time\",\"tool_input\":{\"timezone\":\"Asia/Tokyo\"}}"}"#;
const NO_SUCH_ZONE: &str = r#"{"text": "{\"state\":\"action\",\"reason\":\"r\",\"tool\":\"get_current_time\",\"tool_input\":{\"timezone\":\"Tokyo\"}}"}"#;
const UNKNOWN_TOOL: &str = r#"{"text": "{\"state\":\"action\",\"reason\":\"r\",\"tool\":\"get_time\",\"tool_input\":{\"timezone\":\"Asia/Tokyo\"}}"}"#;
const ANSWER: &str = r#"{"text": "{\"state\":\"final\",\"satisfied\":true,\"final_summary\":\"It is the time in Asia/Tokyo that the tool returned.\"}"}"#;

#[test]
fn mcp_tools_are_corrected_like_built_ins() {
    if !time_server_installed() {
        return;
    }
    let replay = file(&[UNKNOWN_TOOL, NO_SUCH_ZONE, NOW_IN_TOKYO, ANSWER]);
    let model = format!("replay:{}", replay.path().display());
    let out = corrigible(&[
        "run",
        "--json",
        "--model",
        &model,
        "--grounding",
        "failures",
        "--mcp",
        "mcp-server-time --local-timezone UTC",
        "--mcp-timeout-ms",
        "20000",
        "What time is it in Tokyo?",
    ]);
    let report = report(&out);
    let corrections: Vec<&str> = report["corrections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["category"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(corrections, ["unknown_tool", "tool_rejected"], "{report:#}");
    let unknown = report["corrections"][0]["error"]
        .as_str()
        .unwrap_or_default();
    assert!(unknown.contains("closest: get_current_time"), "{unknown}");
    let steps = report["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{report:#}");
    assert_eq!(steps[1]["outcome"], "ok");
    assert_eq!(steps[1]["output"]["timezone"], "Asia/Tokyo", "{report:#}");
    assert_eq!(report["stop_reason"], "final");
}

#[test]
fn the_embedded_model_answers_with_mcp_server_time() {
    if !time_server_installed() {
        return;
    }
    // The small model: what is tested is the MCP path, not the model's skill.
    if let Err(e) = corrigible_local::local_model_path(corrigible_local::SMALL_MODEL) {
        if std::env::var_os("CI").is_some() {
            panic!("{e}");
        }
        eprintln!("skipping: {e}");
        return;
    }
    let out = corrigible(&[
        "run",
        "--json",
        "--model",
        "local:smollm2-135m",
        "--mcp",
        "mcp-server-time --local-timezone UTC",
        "What is the current time in the Asia/Tokyo timezone?",
    ]);
    let report = report(&out);
    let steps = report["steps"].as_array().expect("steps");
    let call = steps
        .iter()
        .find(|s| s["tool"] == "get_current_time" && s["outcome"] == "ok")
        .unwrap_or_else(|| panic!("a get_current_time call: {report:#}"));
    assert_eq!(call["input"]["timezone"], "Asia/Tokyo", "{report:#}");
    let datetime = call["output"]["datetime"].as_str().unwrap_or_default();
    assert!(datetime.ends_with("+09:00"), "{report:#}");
    assert_eq!(report["stop_reason"], "final", "{report:#}");
}

#[test]
fn config_show_hides_header_values_and_bad_tables_name_their_key() {
    let config = file(&[
        "[[mcp]]",
        "name = \"remote\"",
        "url = \"http://127.0.0.1:9/mcp\"",
        &format!("headers = {{ Authorization = \"Bearer {SECRET}\" }}"),
        "timeout_ms = 2000",
    ]);
    let path = config.path().to_str().unwrap();
    let out = corrigible(&["config", "show", "--config", path]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains("[[mcp]]") && shown.contains("***"),
        "{shown}"
    );
    assert!(!shown.contains(SECRET), "{shown}");

    let bad = file(&[
        "[[mcp]]",
        "command = \"x\"",
        "url = \"http://127.0.0.1:9/mcp\"",
    ]);
    let out = corrigible(&["config", "check", bad.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mcp[0]"), "{err}");
}

#[test]
fn an_unreachable_server_is_a_usage_error_that_hides_the_header() {
    let replay = file(&[ANSWER]);
    let model = format!("replay:{}", replay.path().display());
    let header = format!("Authorization: Bearer {SECRET}");
    let out = corrigible(&[
        "run",
        "--json",
        "--model",
        &model,
        "--mcp-url",
        "http://127.0.0.1:9/mcp",
        "--mcp-header",
        &header,
        "hi",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("127_0_0_1_9"), "{text}");
    assert!(!text.contains(SECRET), "{text}");

    let out = corrigible(&[
        "run",
        "--model",
        &model,
        "--mcp",
        "corrigible-no-such-mcp-server",
        "hi",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot start"), "{err}");
}

/// `corrigible-mcp-fault-server`, built beside the `corrigible` binary by the workspace build.
fn fault_server() -> std::path::PathBuf {
    let path = std::path::Path::new(env!("CARGO_BIN_EXE_corrigible")).with_file_name(format!(
        "corrigible-mcp-fault-server{}",
        std::env::consts::EXE_SUFFIX
    ));
    assert!(
        path.is_file(),
        "{} is missing: build the workspace (cargo test --workspace)",
        path.display()
    );
    path
}

const PID: &str =
    r#"{"text": "{\"state\":\"action\",\"reason\":\"r\",\"tool\":\"pid\",\"tool_input\":{}}"}"#;
const CRASH: &str =
    r#"{"text": "{\"state\":\"action\",\"reason\":\"r\",\"tool\":\"crash\",\"tool_input\":{}}"}"#;
const DONE: &str = r#"{"text": "{\"state\":\"final\",\"satisfied\":false,\"final_summary\":\"The server crashed once.\"}"}"#;

/// Each run asks the server's process id, crashes the server, and asks again.
#[tokio::test]
async fn the_service_keeps_an_mcp_server_across_runs_and_restarts_it_after_it_dies() {
    let replay = file(&[PID, CRASH, PID, DONE]);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_corrigible"))
        .args([
            "serve",
            "--addr",
            &format!("127.0.0.1:{port}"),
            "--db",
            "sqlite::memory:",
            "--model",
            &format!("replay:{}", replay.path().display()),
            "--mcp",
            &fault_server().display().to_string(),
        ])
        .env("NO_COLOR", "1")
        .env_remove("CORRIGIBLE_API_KEY")
        .env_remove("CORRIGIBLE_CONFIG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the binary starts");
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let mut healthy = false;
    for _ in 0..400 {
        if let Ok(r) = client.get(format!("{base}/healthz")).send().await
            && r.status().is_success()
        {
            healthy = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let mut pids = Vec::new();
    for _ in 0..2 {
        if !healthy {
            break;
        }
        let report: Value = client
            .post(format!("{base}/v1/runs"))
            .json(&serde_json::json!({"prompt": "Which process serves the tools?"}))
            .send()
            .await
            .expect("the run is answered")
            .json()
            .await
            .expect("a JSON report");
        let steps = report["steps"].as_array().cloned().unwrap_or_default();
        let outcomes: Vec<&str> = steps.iter().filter_map(|s| s["outcome"].as_str()).collect();
        assert_eq!(outcomes, ["ok", "failed", "ok"], "{report}");
        pids.push((steps[0]["output"].clone(), steps[2]["output"].clone()));
    }
    let _ = server.kill();
    let _ = server.wait();
    assert!(healthy, "the server did not become healthy");
    let [(first, restarted), (kept, again)] = pids.as_slice() else {
        panic!("two runs: {pids:?}");
    };
    assert_ne!(
        first, restarted,
        "a crashed server is started again on next use"
    );
    assert_eq!(
        restarted, kept,
        "the connection outlives the run that opened it"
    );
    assert_ne!(kept, again);
}
