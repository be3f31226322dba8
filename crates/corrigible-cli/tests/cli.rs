//! The `corrigible run` contract through the real binary.

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

fn replay(lines: &[&str]) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    for line in lines {
        writeln!(file, "{line}").unwrap();
    }
    file
}

fn spec(file: &tempfile::NamedTempFile) -> String {
    format!("replay:{}", file.path().display())
}

const BAD_FIELD: &str = r#"{"text": "{\"state\":\"action\",\"reason\":\"r\",\"tool\":\"calculator\",\"tool_input\":{\"expr\":\"2*(3+4)\"}}", "usage": {"input_tokens": 10, "output_tokens": 5}}"#;
const GOOD_CALL: &str = r#"{"text": "{\"state\":\"action\",\"reason\":\"r\",\"tool\":\"calculator\",\"tool_input\":{\"expression\":\"2*(3+4)\"}}", "usage": {"input_tokens": 20, "output_tokens": 5}}"#;
const FINAL: &str = r#"{"text": "{\"state\":\"final\",\"satisfied\":true,\"final_summary\":\"14\"}", "usage": {"input_tokens": 30, "output_tokens": 5}}"#;

#[test]
fn json_report_follows_the_contract() {
    let file = replay(&[BAD_FIELD, GOOD_CALL, FINAL]);
    let out = corrigible(&[
        "run",
        "--model",
        &spec(&file),
        "--json",
        "--tools",
        "calculator",
        "What is 2*(3+4)?",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value =
        serde_json::from_slice(&out.stdout).expect("stdout is only the JSON report");
    assert_eq!(report["satisfied"], true);
    assert_eq!(report["final_summary"], "14");
    assert_eq!(report["missing"], Value::Null);
    assert_eq!(report["stop_reason"], "final");
    let step = &report["steps"][0];
    assert_eq!(
        (
            step["step"].as_u64(),
            step["tool"].as_str(),
            step["outcome"].as_str()
        ),
        (Some(1), Some("calculator"), Some("ok"))
    );
    assert_eq!(step["output"], 14);
    assert_eq!(step["input"]["expression"], "2*(3+4)");
    assert_eq!(step["attempts"], 1);
    assert!(step["latency_ms"].is_number());
    let c = &report["corrections"][0];
    assert_eq!(c["category"], "invalid_tool_input");
    assert_eq!(
        (
            c["step"].as_u64(),
            c["attempt"].as_u64(),
            c["stage"].as_str(),
            c["corrected"].as_bool()
        ),
        (Some(1), Some(1), Some("step_1"), Some(true))
    );
    let stages: Vec<&str> = report["model_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["stage"].as_str().unwrap())
        .collect();
    assert_eq!(stages, ["step_1", "step_1_correction_1", "step_2"]);
    let usage = &report["usage"];
    assert_eq!(
        (
            usage["model_calls"].as_u64(),
            usage["input_tokens"].as_u64(),
            usage["output_tokens"].as_u64()
        ),
        (Some(3), Some(60), Some(15))
    );
    assert_eq!(
        (
            usage["tool_calls"].as_u64(),
            usage["corrections"].as_u64(),
            usage["tool_retries"].as_u64()
        ),
        (Some(1), Some(1), Some(0))
    );
    assert!(report["repairs"].as_array().unwrap().is_empty());
    assert!(report["run_id"].as_str().is_some_and(|id| !id.is_empty()));
}

#[test]
fn human_output_shows_the_timeline_and_totals() {
    let file = replay(&[BAD_FIELD, GOOD_CALL, FINAL]);
    let out = corrigible(&[
        "run",
        "--model",
        &spec(&file),
        "--tools",
        "calculator",
        "What is 2*(3+4)?",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "step_1 ",
        "✗ rejected invalid_tool_input [calculator]: tool_input.expr: unexpected property",
        "step_1_correction_1",
        "✓ next reply accepted",
        "tool calculator (step 1, 1 attempt(s)",
        "ok 14",
        "final (satisfied): 14",
        "stop: final",
        "model calls 3",
        "actions 1 (tool attempts 1, retries 0)",
        "corrections 1 (1 followed by an accepted reply)",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}

#[test]
fn a_model_calls_reasoning_is_shown_under_it_and_kept_in_the_report() {
    let thinking = r#"{"text": "{\"state\":\"action\",\"reason\":\"r\",\"tool\":\"calculator\",\"tool_input\":{\"expression\":\"2*(3+4)\"}}", "reasoning": "Seven doubled: the calculator computes 2*(3+4)."}"#;
    let file = replay(&[thinking, FINAL]);
    let args = [
        "run",
        "--model",
        &spec(&file),
        "--tools",
        "calculator",
        "What is 2*(3+4)?",
    ];
    let out = corrigible(&args);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("… thought (reasoning): Seven doubled: the calculator computes 2*(3+4)."),
        "{text}"
    );
    assert_eq!(text.matches("… thought").count(), 1, "{text}");
    let out = corrigible(&[&args[..5], &["--json", args[5]]].concat());
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["model_calls"][0]["reasoning"]["text"],
        "Seven doubled: the calculator computes 2*(3+4)."
    );
    assert_eq!(report["model_calls"][1]["reasoning"], Value::Null);
}

#[test]
fn a_thoughts_recalculations_are_shown_under_it() {
    let thinking = r#"{"text": "{\"state\":\"final\",\"satisfied\":true,\"final_summary\":\"260 sheep\"}", "reasoning": {"text": "20 + 80 + 160 = 260 sheep.", "tokens": 12, "recalculated": [{"expression": "20 + 80 + 160", "stated": "460", "value": "260"}]}}"#;
    let file = replay(&[thinking]);
    let out = corrigible(&["run", "--model", &spec(&file), "How many sheep?"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("… thought (12 tokens): 20 + 80 + 160 = 260 sheep."),
        "{text}"
    );
    assert!(
        text.contains("= recalculated 20 + 80 + 160 = 460 → 260"),
        "{text}"
    );
}

#[test]
fn a_thought_set_aside_is_marked_so() {
    let thinking = r#"{"text": "{\"state\":\"final\",\"satisfied\":true,\"final_summary\":\"4\"}", "reasoning": {"text": "2 + 2 = 4. Answer: 4", "tokens": 9, "set_aside": true}}"#;
    let file = replay(&[thinking]);
    let out = corrigible(&["run", "--model", &spec(&file), "--json", "What is 2 + 2?"]);
    assert_eq!(out.status.code(), Some(0));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["model_calls"][0]["reasoning"]["set_aside"], true);
    let out = corrigible(&["run", "--model", &spec(&file), "What is 2 + 2?"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("… thought (9 tokens, set aside): 2 + 2 = 4. Answer: 4"),
        "{text}"
    );
}

#[test]
fn the_example_replay_repairs_and_corrects() {
    // The replay of corrigible's example (`cargo run -p corrigible --example agent`), read
    // where it lives when the test runs in this repository.
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../corrigible/examples/replays/correction.jsonl"
    );
    let out = corrigible(&[
        "run",
        "--model",
        &format!("replay:{path}"),
        "--json",
        "What is 2*(3+4)?",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["final_summary"], "2*(3+4) = 14");
    let kinds: Vec<&str> = report["repairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["code_fence", "trailing_comma"]);
    assert_eq!(report["repairs"][0]["stage"], "step_2");
}

#[test]
fn a_transport_error_exits_3_with_a_json_error() {
    let file = replay(&[r#"{"transport_error": "connection refused"}"#]);
    let out = corrigible(&["run", "--model", &spec(&file), "--json", "hi"]);
    assert_eq!(out.status.code(), Some(3));
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["error"]["kind"], "transport");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("connection refused")
    );
}

#[test]
fn an_exhausted_replay_is_a_transport_error() {
    let file = replay(&[BAD_FIELD]);
    let out = corrigible(&["run", "--model", &spec(&file), "hi"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("replay exhausted"));
}

#[test]
fn usage_errors_exit_2() {
    let file = replay(&[FINAL]);
    for args in [
        vec!["run", "--model", "nonsense:x", "hi"],
        vec![
            "run",
            "--model",
            spec(&file).leak(),
            "--tools",
            "calculator,teleport",
            "hi",
        ],
        vec![
            "run",
            "--model",
            spec(&file).leak(),
            "--protocol",
            "xml",
            "hi",
        ],
        vec!["run", "--model", "replay:/definitely/not/here.jsonl", "hi"],
        vec!["run", "--max-actions", "-1", "hi"],
        vec!["run", "--model", "openai:m", "--temperature", "2.5", "hi"],
        vec!["run", "--model", "openai:m", "--temperature", "NaN", "hi"],
        vec!["run", "--model", "local", "--temperature", "0", "hi"],
        vec![
            "run",
            "--model",
            spec(&file).leak(),
            "--max-verifications",
            "2",
            "hi",
        ],
        vec![
            "run",
            "--model",
            spec(&file).leak(),
            "--verify",
            "--max-verifications",
            "0",
            "hi",
        ],
        vec![
            "run",
            "--model",
            spec(&file).leak(),
            "--verifier",
            "nonsense:x",
            "hi",
        ],
    ] {
        let out = corrigible(&args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.stderr.is_empty());
    }
}

#[test]
fn a_missing_named_model_names_its_fetch_command() {
    let empty = tempfile::tempdir().unwrap();
    let model = "local:qwen2.5-coder-1.5b";
    for args in [
        &["run", "--model", model, "What is 17 * 23?"][..],
        &["bench", "model", "--model", model][..],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_corrigible"))
            .args(args)
            .env("CORRIGIBLE_MODEL_DIR", empty.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("scripts/fetch-model qwen2.5-coder-1.5b"),
            "{err}"
        );
        assert!(
            err.contains("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
            "{err}"
        );
    }
}

#[test]
fn a_missing_embedded_model_names_the_fetch_command() {
    let out = Command::new(env!("CARGO_BIN_EXE_corrigible"))
        .args(["run", "What is 17 * 23?"])
        .env("CORRIGIBLE_MODEL", "/nonexistent/model.gguf")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("scripts/fetch-model"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn bounds_flags_reach_the_engine() {
    let file = replay(&[r#"{"text": "nope"}"#, r#"{"text": "nope"}"#, FINAL]);
    let out = corrigible(&[
        "run",
        "--model",
        &spec(&file),
        "--json",
        "--max-corrections",
        "1",
        "hi",
    ]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["stop_reason"], "corrections_exhausted");
    assert_eq!(report["missing"], "valid decision");
    assert_eq!(report["usage"]["model_calls"], 2);
}

#[test]
fn the_transcript_has_one_line_per_model_call() {
    let file = replay(&[BAD_FIELD, GOOD_CALL, FINAL]);
    let transcript = tempfile::NamedTempFile::new().unwrap();
    let out = corrigible(&[
        "run",
        "--model",
        &spec(&file),
        "--json",
        "--transcript",
        transcript.path().to_str().unwrap(),
        "What is 2*(3+4)?",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = std::fs::read_to_string(transcript.path()).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[1]["stage"], "step_1_correction_1");
    let messages = lines[1]["request"]["messages"].as_array().unwrap();
    assert!(
        messages.last().unwrap()["content"]
            .as_str()
            .unwrap()
            .contains("<request>What is 2*(3+4)?</request>")
    );
    assert!(
        lines[0]["request"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "calculator")
    );
    assert!(
        lines[2]["reply"]["text"]
            .as_str()
            .unwrap()
            .contains("final")
    );
}

#[test]
fn a_correct_tip_is_left_alone_by_default_and_sent_back_under_strict() {
    const TIP: &str = r#"{"text": "{\"state\":\"action\",\"reason\":\"18% as a decimal\",\"tool\":\"calculator\",\"tool_input\":{\"expression\":\"64.50 * 0.18\"}}"}"#;
    const ANSWER: &str = r#"{"text": "{\"state\":\"final\",\"satisfied\":true,\"final_summary\":\"An 18% tip on $64.50 is $11.61.\"}"}"#;
    let categories = |profile: Option<&str>| {
        let file = replay(&[TIP, ANSWER, TIP, ANSWER]);
        let model = spec(&file);
        let mut args = vec!["run", "--model", &model, "--json", "--tools", "calculator"];
        if let Some(p) = profile {
            args.extend(["--profile", p]);
        }
        args.push("What's an 18% tip on a $64.50 bill?");
        let out = corrigible(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        report["corrections"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["category"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert!(categories(None).is_empty());
    assert!(categories(Some("precise")).is_empty());
    assert_eq!(categories(Some("strict")), vec!["ungrounded_argument"]);
}

#[test]
fn a_second_run_loads_the_pre_filled_system_prompt_from_disk() {
    let model = match corrigible_local::local_model_path(corrigible_local::SMALL_MODEL) {
        Ok(path) => path,
        Err(e) if std::env::var_os("CI").is_some() => panic!("{e}"),
        Err(e) => return eprintln!("skipping: {e}"),
    };
    let cache = tempfile::tempdir().unwrap();
    let run = |request: &str, extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_corrigible"))
            .args(["run", "--json", "--tools", "calculator"])
            .args(extra)
            .arg(request)
            .env("CORRIGIBLE_CACHE_DIR", cache.path())
            .env("CORRIGIBLE_MODEL", &model)
            .env("NO_COLOR", "1")
            .env_remove("CORRIGIBLE_LOG")
            .env_remove("CORRIGIBLE_CONFIG")
            .output()
            .expect("the binary runs");
        let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
        });
        let first = &report["model_calls"][0];
        let reused = first["prompt_tokens_reused"]
            .as_u64()
            .expect("reports reuse");
        (reused, first["input_tokens"].as_u64().unwrap_or(0), report)
    };
    let store = cache.path().join("prefixes");
    let entries = || std::fs::read_dir(&store).map_or(0, |d| d.count());

    let (reused, _, _) = run("What is 6 * 7?", &["--no-prefix-cache"]);
    assert_eq!(
        (reused, entries()),
        (0, 0),
        "--no-prefix-cache stores nothing"
    );

    let (reused, _, cold) = run("What is 6 * 7?", &[]);
    assert_eq!((reused, entries()), (0, 1));

    let (reused, input, warm) = run("What is 6 * 7?", &[]);
    assert!(reused > input / 2 && reused < input, "{reused} of {input}");
    assert_eq!(warm["final_summary"], cold["final_summary"]);

    let (reused, _, _) = run("What is 12 / 4?", &[]);
    assert!(
        reused > input / 2,
        "another request, the same system prompt"
    );
    assert_eq!(entries(), 1);
}

#[test]
fn the_request_can_come_from_stdin_or_a_file() {
    let file = replay(&[FINAL]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_corrigible"))
        .args(["run", "--model", &spec(&file), "--json", "-"])
        .env("NO_COLOR", "1")
        .env_remove("CORRIGIBLE_LOG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"What is 2*(3+4)?\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["prompt"], "What is 2*(3+4)?");

    let file = replay(&[FINAL]);
    let mut request = tempfile::NamedTempFile::new().unwrap();
    writeln!(request, "What is 2*(3+4)?\nShow the product.").unwrap();
    let out = corrigible(&[
        "run",
        "--model",
        &spec(&file),
        "--json",
        "--prompt-file",
        &request.path().display().to_string(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["prompt"], "What is 2*(3+4)?\nShow the product.");

    for args in [
        vec!["run", "--model", &spec(&file)],
        vec![
            "run",
            "--model",
            &spec(&file),
            "--prompt-file",
            "/definitely/not/here.txt",
        ],
        vec!["run", "--model", &spec(&file), "   "],
    ] {
        let out = corrigible(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn usage_errors_say_what_to_do() {
    let out = corrigible(&["run", "--max-actions", "-1", "What is 2+2?"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("invalid value '-1'"), "{err}");
    assert!(!err.contains("-- -1"), "{err}");

    let out = corrigible(&["run", "--model", "local:nonexistent", "What is 2+2?"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown embedded model `nonexistent`"),
        "{err}"
    );
    assert!(
        err.contains("smollm2-135m") && err.contains("qwen2.5-coder-1.5b"),
        "{err}"
    );
}

#[test]
fn help_is_grouped_under_headings() {
    let out = corrigible(&["run", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    for heading in [
        "Model:",
        "Tools:",
        "Tools from MCP servers:",
        "Bounds:",
        "Rules:",
        "Output:",
    ] {
        assert!(help.contains(heading), "no {heading:?} in:\n{help}");
    }
    let model = help.find("Model:").unwrap();
    let bounds = help.find("Bounds:").unwrap();
    let max_actions = help.find("--max-actions").unwrap();
    let temperature = help.find("--temperature").unwrap();
    assert!(model < temperature && temperature < bounds && bounds < max_actions);

    let out = corrigible(&["serve", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    let service = help.find("Service:").expect("a Service heading");
    assert!(service < help.find("--max-runs").unwrap(), "{help}");
}

#[test]
fn completions_and_man_pages_come_from_the_same_flags() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = corrigible(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}");
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(script.contains("max-actions"), "{shell}: {script}");
    }
    let out = corrigible(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));

    let out = corrigible(&["man"]);
    assert_eq!(out.status.code(), Some(0));
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(page.contains(".TH corrigible 1"), "{page}");
    assert!(page.contains("completions"), "{page}");

    let out = corrigible(&["man", "run"]);
    assert_eq!(out.status.code(), Some(0));
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(page.contains(".TH corrigible-run 1"), "{page}");
    assert!(page.contains("max\\-actions"), "{page}");

    let out = corrigible(&["man", "teleport"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("teleport") && err.contains("run"), "{err}");
}

#[test]
fn the_cache_follows_xdg_and_one_variable_moves_it() {
    let home = tempfile::tempdir().unwrap();
    let show = |env: &[(&str, &str)]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_corrigible"));
        command
            .args(["config", "show"])
            .env("HOME", home.path())
            .env_remove("XDG_CACHE_HOME")
            .env_remove("CORRIGIBLE_CACHE_DIR")
            .env_remove("CORRIGIBLE_MODEL_DIR")
            .env_remove("CORRIGIBLE_CONFIG");
        for (name, value) in env {
            command.env(name, value);
        }
        let out = command.output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8(out.stdout).unwrap()
    };
    let home_cache = home.path().join(".cache/corrigible");
    let shown = show(&[]);
    assert!(
        shown.contains(&format!("# cache directory: {}", home_cache.display())),
        "{shown}"
    );
    assert!(
        shown.contains(&format!(
            "# embedded models: {}",
            home_cache.join("models").display()
        )),
        "{shown}"
    );
    let shown = show(&[("XDG_CACHE_HOME", "/srv/cache")]);
    assert!(
        shown.contains("# cache directory: /srv/cache/corrigible"),
        "{shown}"
    );
    let shown = show(&[("XDG_CACHE_HOME", "relative/ignored")]);
    assert!(
        shown.contains(&format!("# cache directory: {}", home_cache.display())),
        "{shown}"
    );
    let shown = show(&[
        ("XDG_CACHE_HOME", "/srv/cache"),
        ("CORRIGIBLE_CACHE_DIR", "/data/c"),
    ]);
    assert!(shown.contains("# cache directory: /data/c"), "{shown}");
    assert!(
        shown.contains("# embedded models: /data/c/models"),
        "{shown}"
    );

    let script = Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scripts/cache-dir"
    ))
    .env("HOME", home.path())
    .env("XDG_CACHE_HOME", "/srv/cache")
    .env_remove("CORRIGIBLE_CACHE_DIR")
    .output()
    .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&script.stdout).trim(),
        "/srv/cache/corrigible"
    );
}

#[test]
fn config_show_fills_in_what_a_run_would_use() {
    let out = Command::new(env!("CARGO_BIN_EXE_corrigible"))
        .args(["config", "show"])
        .env_remove("CORRIGIBLE_CONFIG")
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    for line in [
        "# configuration file: none, the defaults",
        "model = \"local\"",
        "profile = \"precise\"",
        "think = \"off\"",
        "think_tokens = 448",
        "max_actions = 8",
    ] {
        assert!(shown.contains(line), "no {line:?} in:\n{shown}");
    }
    assert!(
        shown.contains("\"calculator\"") && shown.contains("\"weather\""),
        "{shown}"
    );

    let file = replay(&["model = \"openai:gpt-4o-mini\"", "tools = [\"time\"]"]);
    let path = file.path().to_str().unwrap();
    let out = corrigible(&["config", "show", "--config", path]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains(&format!("# configuration file: {path}")),
        "{shown}"
    );
    assert!(shown.contains("model = \"openai:gpt-4o-mini\""), "{shown}");
    assert!(shown.contains("profile = \"precise\""), "{shown}");
    assert!(
        !shown.contains("think_tokens") && !shown.contains("think ="),
        "{shown}"
    );
    assert!(!shown.contains("\"calculator\""), "{shown}");
}

#[test]
fn errors_are_caught_before_any_request_and_said_once() {
    let out = Command::new(env!("CARGO_BIN_EXE_corrigible"))
        .args(["run", "--model", "openai:gpt-4o-mini", "hi"])
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("CORRIGIBLE_CONFIG")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no API key for openai: set OPENAI_API_KEY"),
        "{err}"
    );

    let out = corrigible(&["run", "--model", "replay:/definitely/not/here.jsonl", "hi"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
    assert!(err.contains("/definitely/not/here.jsonl"), "{err}");

    let out = corrigible(&[
        "run",
        "--model",
        "local",
        "--model-path",
        file!(),
        "--think",
        "sometimes",
        "hi",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--think:") && err.contains("unknown thinking mode `sometimes`"),
        "{err}"
    );
}

#[test]
fn serve_refuses_an_open_address_before_saying_it_serves() {
    let db = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_corrigible"))
        .args(["serve", "--addr", "0.0.0.0:0", "--model"])
        .arg(spec(&replay(&[FINAL])))
        .arg("--db")
        .arg(db.path().join("runs.db"))
        .env_remove("CORRIGIBLE_API_KEY")
        .env_remove("CORRIGIBLE_CONFIG")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("serving on"), "{err}");
    assert!(
        err.contains("--insecure-no-auth") || err.contains("api-key"),
        "{err}"
    );
}

#[test]
fn verify_sends_a_proven_objection_back_and_shows_the_check() {
    let wrong = r#"{"text": "{\"state\":\"final\",\"satisfied\":true,\"final_summary\":\"2*(3+4) is 41\"}"}"#;
    let report = r#"{"text": "{\"state\":\"action\",\"reason\":\"The answer says 41; the result says 14.\",\"tool\":\"report\",\"tool_input\":{\"comparisons\":[{\"answer_says\":\"41\",\"quote\":\"14\",\"source_says\":\"14\"}]}}"}"#;
    let agrees = r#"{"text": "{\"state\":\"action\",\"reason\":\"They agree.\",\"tool\":\"report\",\"tool_input\":{\"comparisons\":[]}}"}"#;
    let file = replay(&[GOOD_CALL, wrong, report, FINAL, agrees]);
    let out = corrigible(&[
        "run",
        "--model",
        &spec(&file),
        "--verify",
        "--json",
        "What is 2*(3+4)?",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["final_summary"], "14");
    assert_eq!(json["corrections"][0]["category"], "verifier_objection");
    assert_eq!(json["usage"]["verifications"], 2);
    assert_eq!(json["verifications"][0]["objected"], true);
    assert_eq!(
        json["verifications"][0]["comparisons"][0]["objection"],
        "contradicts"
    );
    assert_eq!(json["verifications"][1]["objected"], false);

    let file = replay(&[GOOD_CALL, wrong, report, FINAL, agrees]);
    let out = corrigible(&[
        "run",
        "--model",
        &spec(&file),
        "--verify",
        "What is 2*(3+4)?",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("? check"), "{text}");
    assert!(text.contains("objection proven, sent back"), "{text}");
    assert!(text.contains("verifier_objection"), "{text}");
    assert!(text.contains("nothing proven wrong, accepted"), "{text}");
}
