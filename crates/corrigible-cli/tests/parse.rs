//! `corrigible parse` through the real binary: one reply on stdin, one JSON object on stdout.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn parse(args: &[&str], stdin: &str) -> (Output, Value) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_corrigible"))
        .arg("parse")
        .args(args)
        .env_remove("CORRIGIBLE_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out, value)
}

#[test]
fn a_repaired_reply_prints_json_decision_and_repairs() {
    let (out, v) = parse(
        &[],
        "Sure!\n```json\n{'state': 'action', reason: 'add', 'tool': 'calculator', \
         'tool_input': {'expression': '2+2'},}\n```",
    );
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(
        v["json"],
        json!({"state": "action", "reason": "add", "tool": "calculator", "tool_input": {"expression": "2+2"}})
    );
    assert_eq!(v["decision"]["tool_input"], json!({"expression": "2+2"}));
    assert_eq!(
        v["repairs"],
        json!([
            "code_fence",
            "single_quotes",
            "unquoted_keys",
            "trailing_comma"
        ])
    );
}

#[test]
fn json_is_before_normalization() {
    let (out, v) = parse(
        &[],
        r#"{"thought": "t", "tool": "calculator", "tool_input": {}}"#,
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(v["json"]["thought"], "t");
    assert_eq!(v["decision"]["state"], "action");
    assert_eq!(v["decision"]["reason"], "t");
    assert_eq!(v["repairs"], json!([]));
}

#[test]
fn a_duplicate_key_exits_1_with_the_rejection() {
    let (out, v) = parse(
        &[],
        r#"{"state":"action","reason":"r","tool":"calculator","tool_input":{"expression":"1"},"tool_input":{"expression":"2"}}"#,
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(v["rejection"]["category"], "invalid_json");
    let message = v["rejection"]["message"].as_str().unwrap();
    assert!(
        message.contains("the key \"tool_input\" appears twice"),
        "{message}"
    );
}

#[test]
fn a_truncated_reply_is_refused_not_completed() {
    let (out, v) = parse(
        &[],
        r#"{"state":"final","satisfied":true,"final_summary":"The ans"#,
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(v["rejection"]["category"], "invalid_json");
    assert!(v.get("json").is_none());
}

#[test]
fn a_schema_error_shows_the_json_read() {
    let (out, v) = parse(&[], r#"{"state": "done"}"#);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(v["rejection"]["category"], "decision_schema");
    assert_eq!(v["json"], json!({"state": "done"}));
}

#[test]
fn no_repair_refuses_what_repair_reads() {
    let (out, v) = parse(
        &["--no-repair"],
        "{'state': 'final', 'satisfied': True, 'final_summary': 'ok'}",
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(v["rejection"]["category"], "invalid_json");
}

#[test]
fn native_reads_each_call() {
    let reply = json!({
        "text": "checking",
        "tool_calls": [
            {"id": "c1", "name": "weather", "arguments": "{'city': 'Paris'}"},
            {"id": "c2", "name": "final_answer", "arguments": "{\"satisfied\": true, \"final_summary\": \"ok\"}"}
        ]
    });
    let (out, v) = parse(&["--native"], &reply.to_string());
    assert_eq!(out.status.code(), Some(0), "{v}");
    let calls = v["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["call_id"], "c1");
    assert_eq!(calls[0]["json"], json!({"city": "Paris"}));
    assert_eq!(calls[0]["decision"]["tool"], "weather");
    assert_eq!(calls[0]["repairs"], json!(["single_quotes"]));
    assert_eq!(calls[1]["decision"]["state"], "final");
}

#[test]
fn native_duplicate_arguments_exit_1() {
    let reply = json!({"tool_calls": [
        {"id": "c1", "name": "weather", "arguments": "{\"city\": \"Paris\", \"city\": \"Rome\"}"}
    ]});
    let (out, v) = parse(&["--native"], &reply.to_string());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(v["calls"][0]["rejection"]["category"], "invalid_json");
}

#[test]
fn native_input_that_is_not_a_reply_is_a_usage_error() {
    let (out, _) = parse(&["--native"], "not json");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn empty_input_is_an_empty_response() {
    let (out, v) = parse(&[], "  \n");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(v["rejection"]["category"], "empty_response");
}
