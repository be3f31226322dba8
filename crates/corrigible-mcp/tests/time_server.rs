//! `mcp-server-time` (PyPI) over stdio, through the engine: a real question answered with its
//! tools, and a bad timezone corrected as a tool rejection.

mod common;

use common::*;
use corrigible::trace::StepOutcome;
use corrigible::{Agent, Category, Policy, Tool};
use corrigible_mcp::{McpCatalog, McpServerConfig};
use serde_json::json;

fn time_server() -> Option<McpServerConfig> {
    let program = installed("mcp-server-time")?;
    Some(McpServerConfig::stdio(
        program.display().to_string(),
        vec!["--local-timezone".into(), "UTC".into()],
    ))
}

#[tokio::test]
async fn the_time_tools_are_listed_read_only() {
    let Some(config) = time_server() else {
        return;
    };
    assert_eq!(config.name, "mcp-server-time");
    let catalog = McpCatalog::connect(vec![config]).await.unwrap();
    let names: Vec<&str> = catalog.tools().iter().map(|t| t.name()).collect();
    assert_eq!(names, ["get_current_time", "convert_time"]);
    assert!(catalog.tools().iter().all(|t| t.idempotent()));
    let schema = catalog.tools()[0].input_schema();
    assert_eq!(schema["required"], json!(["timezone"]), "{schema}");
    catalog.close().await;
}

#[tokio::test]
async fn a_question_is_answered_with_the_time_tools() {
    let Some(config) = time_server() else {
        return;
    };
    let catalog = McpCatalog::connect(vec![config]).await.unwrap();
    let model = Scripted::texts(&[
        action("get_current_time", json!({"zone": "Asia/Tokyo"})),
        action("get_current_time", json!({"timezone": "Mars/Olympus_Mons"})),
        action("get_current_time", json!({"timezone": "Asia/Tokyo"})),
        action(
            "convert_time",
            json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
        ),
        final_answer(true, "12:00 UTC is 21:00 in Tokyo"),
    ]);
    let policy = Policy::default();
    let agent = catalog
        .add_to(Agent::builder(model))
        .policy(policy)
        .build()
        .unwrap();
    let report = agent
        .run("What time is it in Tokyo, and what is 12:00 UTC there?")
        .await
        .unwrap();
    assert!(report.satisfied, "{report:#?}");
    let categories: Vec<Category> = report.corrections.iter().map(|c| c.category).collect();
    assert_eq!(
        categories,
        [Category::InvalidToolInput, Category::ToolRejected],
        "{report:#?}"
    );
    let outcomes: Vec<StepOutcome> = report.steps.iter().map(|s| s.outcome).collect();
    assert_eq!(
        outcomes,
        [StepOutcome::Rejected, StepOutcome::Ok, StepOutcome::Ok]
    );
    let now = report.steps[1].output.as_ref().unwrap();
    assert_eq!(now["timezone"], "Asia/Tokyo", "{now}");
    assert!(
        now["datetime"]
            .as_str()
            .unwrap_or_default()
            .ends_with("+09:00"),
        "{now}"
    );
    let converted = report.steps[2].output.as_ref().unwrap();
    assert!(
        converted["target"]["datetime"]
            .as_str()
            .unwrap_or_default()
            .contains("T21:00"),
        "{converted}"
    );
    catalog.close().await;
}
