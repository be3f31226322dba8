//! `corrigible bench` through the real binary, with the replay model (no network, no weights).

use std::io::Write;
use std::process::{Command, Output};

use serde_json::Value;

fn corrigible(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_corrigible"))
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("CORRIGIBLE_LOG")
        .output()
        .expect("the binary runs")
}

/// Every run replays these from the first line: a wrong field name, then the right call in
/// code fences, then the final answer of the suite's first task (48 × 12 = 576).
fn replay() -> tempfile::NamedTempFile {
    let lines = [
        r#"{"text": "{\"state\":\"action\",\"reason\":\"multiply\",\"tool\":\"calculator\",\"tool_input\":{\"expr\":\"48*12\"}}", "usage": {"input_tokens": 100, "output_tokens": 20}}"#,
        r#"{"text": "```json\n{\"state\":\"action\",\"reason\":\"multiply\",\"tool\":\"calculator\",\"tool_input\":{\"expression\":\"48*12\"}}\n```", "usage": {"input_tokens": 200, "output_tokens": 20}}"#,
        r#"{"text": "{\"state\":\"final\",\"satisfied\":true,\"final_summary\":\"48 times 12 is 576.\"}", "usage": {"input_tokens": 300, "output_tokens": 10}}"#,
    ];
    let mut file = tempfile::NamedTempFile::new().unwrap();
    for line in lines {
        writeln!(file, "{line}").unwrap();
    }
    file
}

fn bench_json(extra: &[&str]) -> (Value, tempfile::NamedTempFile) {
    let file = replay();
    let spec = format!("replay:{}", file.path().display());
    let mut args = vec![
        "bench", "--suite", "tools", "--limit", "3", "--model", &spec, "--json",
    ];
    args.extend_from_slice(extra);
    let out = corrigible(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    (json, file)
}

fn column<'a>(json: &'a Value, policy: &str) -> &'a Value {
    json["columns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["policy"] == policy)
        .unwrap_or_else(|| panic!("no column {policy}"))
}

#[test]
fn json_report_has_the_expected_numbers() {
    let (json, _file) = bench_json(&[]);
    assert_eq!(json["suite"], "tools");
    assert_eq!(json["model"], "replay");
    assert_eq!(json["tasks"], 3);
    assert_eq!(json["results"].as_array().unwrap().len(), 9);

    // One-shot and repair: the wrong field is final, 1 call a task, nothing succeeds.
    for policy in ["one-shot", "repair"] {
        let c = column(&json, policy);
        assert_eq!(c["mode"], "-");
        assert_eq!(c["successes"], 0, "{policy}");
        assert_eq!(c["model_calls_per_task"], 1.0, "{policy}");
        assert_eq!(c["corrections"]["invalid_tool_input"], 3, "{policy}");
        assert_eq!(c["stop_reasons"]["corrections_exhausted"], 3, "{policy}");
        assert_eq!(c["valid_reply_rate"], 0.0, "{policy}");
    }
    // Self-correct: corrected, repaired, executed, answered: 3 calls a task; only the first
    // task's answer (576) is right.
    let c = column(&json, "self-correct");
    assert_eq!(c["successes"], 1);
    assert_eq!(c["model_calls_per_task"], 3.0);
    assert_eq!(c["corrections"]["invalid_tool_input"], 3);
    assert_eq!(c["repairs"]["code_fence"], 3);
    assert_eq!(c["stop_reasons"]["final"], 3);
    assert_eq!(c["input_tokens_per_task"], 600.0);
    assert_eq!(c["output_tokens_per_task"], 50.0);
    let first = json["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["task"] == "calc_01" && r["policy"] == "self-correct")
        .unwrap();
    assert_eq!(first["success"], true);
}

#[test]
fn faults_are_reported_by_kind() {
    let (json, _file) = bench_json(&["--faults", "1", "--seed", "7"]);
    assert_eq!(json["faults"]["rate"], 1.0);
    assert_eq!(json["faults"]["seed"], 7);
    let c = column(&json, "one-shot");
    let injected: u64 = c["faults"]["injected"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(injected, 3);
}

#[test]
fn out_writes_the_three_files_and_the_table_prints() {
    let file = replay();
    let spec = format!("replay:{}", file.path().display());
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("bench-out");
    let out = corrigible(&[
        "bench",
        "--limit",
        "2",
        "--policies",
        "one-shot,self-correct",
        "--model",
        &spec,
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("self-correct") && stdout.contains("1/2 50.0%"),
        "{stdout}"
    );
    for name in ["table.txt", "report.json", "chart.svg"] {
        let path = out_dir.join(name);
        assert!(path.is_file(), "{name}");
    }
    let svg = std::fs::read_to_string(out_dir.join("chart.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("self-correct"));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("report.json")).unwrap())
            .unwrap();
    assert_eq!(report["columns"].as_array().unwrap().len(), 2);
}

#[test]
fn bad_flags_are_usage_errors() {
    for args in [
        &["bench", "--suite", "mmlu", "--model", "replay:/nonexistent"][..],
        &["bench", "--policies", "retry"][..],
        &["bench", "--faults", "2", "--model", "replay:/nonexistent"][..],
        &[
            "bench",
            "--examples",
            "/nonexistent",
            "--model",
            "replay:/nonexistent",
        ][..],
    ] {
        let out = corrigible(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
    let out = corrigible(&["bench", "--suite", "mmlu", "--json"]);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["error"]["kind"], "usage");
}

#[test]
fn bench_model_refuses_a_model_that_is_not_local() {
    let out = corrigible(&["bench", "model", "--model", "openai:gpt-4o-mini"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("local:NAME"), "{err}");
}

#[test]
fn the_verify_policy_sends_a_proven_objection_back() {
    let lines = [
        r#"{"text": "{\"state\":\"action\",\"reason\":\"multiply\",\"tool\":\"calculator\",\"tool_input\":{\"expression\":\"48*12\"}}"}"#,
        r#"{"text": "{\"state\":\"final\",\"satisfied\":true,\"final_summary\":\"48 times 12 is 567.\"}"}"#,
        r#"{"text": "{\"state\":\"action\",\"reason\":\"The answer says 567; the result says 576.\",\"tool\":\"report\",\"tool_input\":{\"comparisons\":[{\"answer_says\":\"567\",\"quote\":\"576\",\"source_says\":\"576\"}]}}"}"#,
        r#"{"text": "{\"state\":\"final\",\"satisfied\":true,\"final_summary\":\"48 times 12 is 576.\"}"}"#,
        r#"{"text": "{\"state\":\"action\",\"reason\":\"They agree.\",\"tool\":\"report\",\"tool_input\":{\"comparisons\":[]}}"}"#,
    ];
    let mut file = tempfile::NamedTempFile::new().unwrap();
    for line in lines {
        writeln!(file, "{line}").unwrap();
    }
    let spec = format!("replay:{}", file.path().display());
    let out = corrigible(&[
        "bench",
        "--suite",
        "tools",
        "--limit",
        "1",
        "--model",
        &spec,
        "--policies",
        "self-correct,verify",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(column(&json, "self-correct")["successes"], 0);
    assert_eq!(column(&json, "verify")["successes"], 1);
    assert_eq!(
        column(&json, "verify")["corrections"]["verifier_objection"],
        1
    );
    let verified = json["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["policy"] == "verify")
        .unwrap();
    assert_eq!(verified["verifications"][0]["objected"], true);

    let out = corrigible(&["bench", "--model", &spec, "--verifier", "local"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "--verifier without the verify policy"
    );
}

#[test]
fn tasks_run_at_once_give_the_same_report() {
    let (one, _a) = bench_json(&[]);
    let (three, _b) = bench_json(&["--concurrency", "3"]);
    let strip = |json: &Value| {
        json["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["task"].clone(), r["policy"].clone(), r["success"].clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&one), strip(&three));
    let out = corrigible(&["bench", "--suite", "tools", "--concurrency", "0", "--json"]);
    assert!(!out.status.success());
}

#[test]
fn bench_model_measures_sequences_decoded_together() {
    let out = corrigible(&["bench", "model", "--sequences", "0"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--sequences"));
    if let Err(e) = corrigible_local::local_model_path(corrigible_local::SMALL_MODEL) {
        assert!(std::env::var_os("CI").is_none(), "{e}");
        eprintln!("skipping: {e}");
        return;
    }
    let out = corrigible(&[
        "bench",
        "model",
        "--model",
        &format!("local:{}", corrigible_local::SMALL_MODEL),
        "--prompt-tokens",
        "8",
        "--decode-tokens",
        "4",
        "--sequences",
        "2,1",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| w.len() == 7 && w[0].parse::<usize>().is_ok())
        .collect();
    assert_eq!(rows.len(), 2, "{text}");
    assert_eq!((rows[0][0], rows[1][0]), ("1", "2"), "{text}");
    assert!(
        rows.iter()
            .all(|r| r[2].parse::<f64>().is_ok_and(|v| v > 0.0)),
        "{text}"
    );
    assert!(
        text.contains("first token of a 8-token prompt alone"),
        "{text}"
    );
}
