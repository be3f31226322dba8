//! The fault cases against our own MCP server (`corrigible-mcp-fault-server`, built with rmcp's
//! server feature): `isError`, a crash mid-call, a slow call and a malformed schema, each
//! through the engine as a real run.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use corrigible::policy::{Backoff, Jitter};
use corrigible::trace::{StepOutcome, StopReason};
use corrigible::{Agent, Category, Policy, RunReport, Tool, ToolContext, ToolOutcome};
use corrigible_mcp::{McpCatalog, McpServerConfig};
use serde_json::json;

/// No test may hang: each whole test is bounded.
const TEST_BOUND: Duration = Duration::from_secs(60);

fn server() -> McpServerConfig {
    McpServerConfig::stdio(fault_server(), Vec::new()).named("faults")
}

fn policy() -> Policy {
    let mut policy = Policy::default();
    policy.retry.backoff = Backoff::new(
        Duration::from_millis(10),
        2.0,
        Duration::from_millis(50),
        Jitter::None,
    )
    .unwrap();
    policy
}

async fn run(catalog: &McpCatalog, script: Vec<String>) -> RunReport {
    let model = Scripted::texts(&script);
    let agent = catalog
        .add_to(Agent::builder(model))
        .policy(policy())
        .build()
        .unwrap();
    tokio::time::timeout(TEST_BOUND, agent.run("use the tools"))
        .await
        .expect("the run ends")
        .unwrap()
}

fn ctx() -> ToolContext {
    ToolContext {
        run_id: "test".into(),
        step: 1,
        attempt: 1,
        idempotency_key: "test:1".into(),
    }
}

#[tokio::test]
async fn a_malformed_schema_is_skipped_and_hints_decide_idempotence() {
    let catalog = McpCatalog::connect(vec![server()]).await.unwrap();
    let names: Vec<&str> = catalog.tools().iter().map(|t| t.name()).collect();
    assert_eq!(names, ["echo", "pid", "fail", "crash", "slow"]);
    let skipped = &catalog.skipped()[0];
    assert_eq!(
        (skipped.server.as_str(), skipped.tool.as_str()),
        ("faults", "broken")
    );
    assert!(
        skipped.reason.contains("invalid input schema"),
        "{}",
        skipped.reason
    );
    let idempotent: Vec<bool> = catalog.tools().iter().map(|t| t.idempotent()).collect();
    assert_eq!(idempotent, [true, true, false, false, true]);
    catalog.close().await;
}

#[tokio::test]
async fn is_error_is_a_tool_rejection_counted_by_the_tool_budget() {
    let catalog = McpCatalog::connect(vec![server()]).await.unwrap();
    let report = run(
        &catalog,
        vec![
            action("fail", json!({"reason": "first"})),
            action("fail", json!({"reason": "second"})),
            action("fail", json!({"reason": "third"})),
        ],
    )
    .await;
    let outcomes: Vec<StepOutcome> = report.steps.iter().map(|s| s.outcome).collect();
    assert_eq!(outcomes, [StepOutcome::Rejected; 3]);
    assert_eq!(report.steps[0].error.as_deref(), Some("refused: first"));
    assert!(
        report
            .corrections
            .iter()
            .all(|c| c.category == Category::ToolRejected)
    );
    assert_eq!(report.stop_reason, StopReason::ToolFatal, "{report:#?}");
    catalog.close().await;
}

#[tokio::test]
async fn inputs_are_validated_against_the_input_schema_before_any_call() {
    let catalog = McpCatalog::connect(vec![server()]).await.unwrap();
    let report = run(
        &catalog,
        vec![
            action("echo", json!({"words": "hi"})),
            action("broken", json!({"x": 1})),
            action("echo", json!({"text": "hi"})),
            final_answer(true, "the server echoed hi"),
        ],
    )
    .await;
    let categories: Vec<Category> = report.corrections.iter().map(|c| c.category).collect();
    assert_eq!(
        categories,
        [Category::InvalidToolInput, Category::UnknownTool]
    );
    assert!(
        report.corrections[0]
            .error
            .contains("tool_input.text: required property missing"),
        "{}",
        report.corrections[0].error
    );
    assert_eq!(report.steps.len(), 1);
    assert_eq!(report.steps[0].output, Some(json!({"echo": "hi"})));
    assert!(report.satisfied);
    catalog.close().await;
}

#[tokio::test]
async fn a_slow_call_times_out_as_a_failure_retried_when_idempotent() {
    let slow = server().with_call_timeout(Duration::from_millis(300));
    let catalog = McpCatalog::connect(vec![slow]).await.unwrap();
    let report = run(
        &catalog,
        vec![
            action("slow", json!({"ms": 20000})),
            action("slow", json!({"ms": 0})),
            final_answer(true, "slept 0 ms"),
        ],
    )
    .await;
    let first = &report.steps[0];
    assert_eq!(first.outcome, StepOutcome::Failed);
    assert_eq!(first.attempts, 2, "idempotent: retried once");
    assert!(
        first
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("did not answer within 300 ms"),
        "{first:?}"
    );
    assert_eq!(report.steps[1].outcome, StepOutcome::Ok);
    assert_eq!(report.steps[1].output, Some(json!("slept 0 ms")));
    catalog.close().await;
}

#[tokio::test]
async fn a_server_dying_mid_call_fails_without_rerun_and_restarts_on_next_use() {
    let catalog = McpCatalog::connect(vec![server()]).await.unwrap();
    let report = run(
        &catalog,
        vec![
            action("crash", json!({})),
            action("echo", json!({"text": "back"})),
            final_answer(true, "the server came back"),
        ],
    )
    .await;
    let crash = &report.steps[0];
    assert_eq!(crash.outcome, StepOutcome::Failed);
    assert_eq!(crash.attempts, 1, "destructive: never re-run");
    assert_eq!(report.corrections[0].category, Category::ToolFailed);
    assert_eq!(report.steps[1].output, Some(json!({"echo": "back"})));

    let pid = catalog.tools().iter().find(|t| t.name() == "pid").unwrap();
    let crash = catalog
        .tools()
        .iter()
        .find(|t| t.name() == "crash")
        .unwrap();
    let before = pid.call(json!({}), &ctx()).await;
    assert!(matches!(
        crash.call(json!({}), &ctx()).await,
        ToolOutcome::Failed(_)
    ));
    let after = pid.call(json!({}), &ctx()).await;
    match (before, after) {
        (ToolOutcome::Ok(a), ToolOutcome::Ok(b)) => assert_ne!(a, b, "a new process"),
        other => panic!("{other:?}"),
    }
    catalog.close().await;
}

#[tokio::test]
async fn a_missing_command_is_an_error_not_a_hang() {
    let missing = McpServerConfig::command("corrigible-no-such-mcp-server --flag").unwrap();
    let err = McpCatalog::connect(vec![missing]).await.unwrap_err();
    assert!(err.to_string().contains("cannot start"), "{err}");
}

#[tokio::test]
async fn a_connection_is_shared_by_runs() {
    let catalog = Arc::new(McpCatalog::connect(vec![server()]).await.unwrap());
    let pid = catalog.tools().iter().find(|t| t.name() == "pid").unwrap();
    let first = pid.call(json!({}), &ctx()).await;
    let second = pid.call(json!({}), &ctx()).await;
    assert_eq!(first, second, "the same process serves both calls");
    catalog.close().await;
}
