//! A real agent task on the larger embedded model, Qwen2.5-Coder-1.5B-Instruct, through the
//! binary: `--model local:qwen2.5-coder-1.5b` after `scripts/fetch-model qwen2.5-coder-1.5b`.
//!
//! Without the model the test is skipped with a message, except under CI (`CI` set), where
//! `.ci/run` fetches it and a missing model fails the test.

use std::process::Command;

use serde_json::Value;

const QUESTION: &str =
    "A pizza has 12 slices. Three friends eat 2, 3 and 4 slices. How many slices are left?";

#[test]
fn a_word_problem_is_solved_with_the_calculator() {
    if let Err(e) = corrigible_local::local_model_path("qwen2.5-coder-1.5b") {
        if std::env::var_os("CI").is_some() {
            panic!("{e}");
        }
        eprintln!("skipping: {e}");
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_corrigible"))
        .args([
            "run",
            "--json",
            "--model",
            "local:qwen2.5-coder-1.5b",
            QUESTION,
        ])
        .env("NO_COLOR", "1")
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_str(&stdout).expect("a JSON report");
    assert_eq!(report["model"], "local:qwen2.5-coder-1.5b-instruct-q4_k_m");
    assert_eq!(report["stop_reason"], "final", "{report:#}");
    assert_eq!(report["satisfied"], true, "{report:#}");
    let steps = report["steps"].as_array().expect("steps");
    let last = steps.last().expect("a tool call");
    assert_eq!(last["tool"], "calculator", "{report:#}");
    assert_eq!(last["output"].as_f64(), Some(3.0), "{report:#}");
    let answer = report["final_summary"].as_str().unwrap_or_default();
    assert!(answer.contains('3'), "{answer}");
}
