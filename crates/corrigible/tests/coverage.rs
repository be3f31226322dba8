//! Coverage of the request: an answer given after looking up one of two coordinated values is
//! `uncovered_request` once per run, and the correction round is held to a call for the other.

mod common;

use std::sync::Arc;

use async_trait::async_trait;
use common::*;
use corrigible::{
    Agent, Allowed, Category, GroundedArgument, Policy, RunReport, Tool, ToolContext, ToolOutcome,
};
use serde_json::{Value, json};

/// A temperature lookup whose `city` must be copied from the conversation.
struct Temperature;

#[async_trait]
impl Tool for Temperature {
    fn name(&self) -> &str {
        "weather"
    }
    fn description(&self) -> &str {
        "Current temperature of a city."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    }
    fn grounded_arguments(&self) -> Vec<GroundedArgument> {
        vec![GroundedArgument::copied("city")]
    }
    async fn call(&self, input: Value, _ctx: &ToolContext) -> ToolOutcome {
        let celsius = if input["city"] == "Rome" { 12.6 } else { 6.2 };
        ToolOutcome::Ok(json!({"city": input["city"], "temperature_c": celsius}))
    }
}

const REQUEST: &str = "How many degrees warmer is Rome than Paris right now?";

async fn run(model: Arc<Scripted>, request: &str) -> RunReport {
    run_with(model, request, strict()).await
}

/// A run of `REQUEST` with a budget of one executed action.
async fn run_with_one_action(model: Arc<Scripted>) -> RunReport {
    let mut policy = strict();
    policy.limits.max_actions = 1;
    run_with(model, REQUEST, policy).await
}

async fn run_with(model: Arc<Scripted>, request: &str, policy: Policy) -> RunReport {
    Agent::builder_shared(model)
        .policy(strict())
        .tool(Temperature)
        .policy(policy)
        .build()
        .unwrap()
        .run(request)
        .await
        .unwrap()
}

#[tokio::test]
async fn an_answer_that_skips_a_coordinated_value_is_sent_back_for_it() {
    let model = Arc::new(Scripted::texts(&[
        &action("weather", json!({"city": "Rome"})),
        &final_answer(true, "Rome is 12.6 degrees."),
        &action("weather", json!({"city": "Paris"})),
        &final_answer(true, "Rome is 12.6 and Paris 6.2: 6.4 degrees warmer."),
    ]));
    let report = run(model.clone(), REQUEST).await;
    assert_eq!(report.corrections.len(), 1);
    let c = &report.corrections[0];
    assert_eq!(c.category, Category::UncoveredRequest);
    assert!(
        c.error.contains("call weather with city \"Paris\""),
        "{}",
        c.error
    );
    assert!(c.corrected);
    let round = model.request(2).expect("the model was asked");
    let correction = round.correction.expect("a correction round");
    assert_eq!(correction.allowed().label(), "cover(weather)");
    assert!(matches!(correction.allowed(), Allowed::Cover { ref done, .. } if done.len() == 1));
    assert_eq!(
        round.grounds.copies,
        ["Paris"],
        "held to the uncovered value"
    );
    assert_eq!(report.steps.len(), 2);
    assert!(report.satisfied);
}

#[tokio::test]
async fn coverage_is_asked_once_per_run() {
    let model = Arc::new(Scripted::texts(&[
        &action("weather", json!({"city": "Rome"})),
        &final_answer(true, "Rome is 12.6 degrees."),
        &final_answer(true, "It is 12.6 degrees in Rome."),
    ]));
    let report = run(model.clone(), REQUEST).await;
    let categories: Vec<Category> = report.corrections.iter().map(|c| c.category).collect();
    assert_eq!(categories, [Category::UncoveredRequest]);
    assert!(report.satisfied);
    assert_eq!(
        report.final_summary.as_deref(),
        Some("It is 12.6 degrees in Rome.")
    );
}

#[tokio::test]
async fn a_covered_or_unsatisfied_answer_passes() {
    for (script, request) in [
        (
            vec![
                action("weather", json!({"city": "Rome"})),
                final_answer(true, "12.6 degrees."),
            ],
            "What's the temperature in Rome, Italy?",
        ),
        (
            vec![
                action("weather", json!({"city": "Rome"})),
                final_answer(false, "Only Rome was found: 12.6 degrees."),
            ],
            REQUEST,
        ),
    ] {
        let texts: Vec<&str> = script.iter().map(String::as_str).collect();
        let report = run(Arc::new(Scripted::texts(&texts)), request).await;
        assert!(report.corrections.is_empty(), "{request}");
    }
}

#[tokio::test]
async fn with_the_action_budget_spent_a_partial_answer_is_not_sent_back_for_a_call() {
    let model = Arc::new(Scripted::texts(&[
        &action("weather", json!({"city": "Rome"})),
        &final_answer(true, "Rome is 12.6 degrees; Paris was not looked up."),
    ]));
    let report = run_with_one_action(model).await;
    assert!(
        report.corrections.is_empty(),
        "no call could take up Paris: {:?}",
        report.corrections
    );
    assert_eq!(report.stop_reason, corrigible::trace::StopReason::Final);
}

#[tokio::test]
async fn with_the_action_budget_spent_a_correction_round_takes_only_a_final_answer() {
    let model = Arc::new(Scripted::texts(&[
        &action("weather", json!({"city": "Rome"})),
        &final_answer(true, "It is warmer in Rome."),
        &final_answer(true, "12.6 degrees in Rome."),
    ]));
    let report = run_with_one_action(model.clone()).await;
    let categories: Vec<Category> = report.corrections.iter().map(|c| c.category).collect();
    assert_eq!(categories, [Category::UnstatedResult]);
    let correction = model
        .request(2)
        .expect("the model was asked")
        .correction
        .expect("a correction round");
    assert!(correction.budget_spent);
    assert_eq!(correction.allowed().label(), "final_stating(1)");
    assert!(report.satisfied);
}
