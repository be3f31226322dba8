//! Rules of a user's own: registered on the builder, judged after the built-in ones, their
//! rejections sent back and recorded under their name; and built-in rules left out by name.

mod common;

use std::sync::Arc;

use common::*;
use corrigible::rule::Evidence;
use corrigible::{Action, Agent, BuildError, Category, Final, Rule};
use serde_json::json;

/// Refuses a final answer that writes an email address: the application never shows one.
struct NoEmail;

impl Rule for NoEmail {
    fn name(&self) -> &str {
        "no_email"
    }

    fn check_final(&self, answer: &Final, _evidence: &Evidence<'_>) -> Option<String> {
        answer
            .summary
            .split_whitespace()
            .any(|w| w.contains('@') && w.contains('.'))
            .then(|| "the answer writes an email address: leave it out".to_string())
    }
}

/// Refuses a calculator call before any tool result exists that is not about the request's
/// own numbers: reads the request and the results through the evidence.
struct FirstCallUsesTheRequest;

impl Rule for FirstCallUsesTheRequest {
    fn name(&self) -> &str {
        "first_call_uses_the_request"
    }

    fn check_action(&self, action: &Action, evidence: &Evidence<'_>) -> Option<String> {
        if evidence.results().next().is_some() || evidence.acted() {
            return None;
        }
        let expression = action.input["expression"].as_str().unwrap_or("");
        let own = expression
            .split(|c: char| !c.is_ascii_digit())
            .filter(|n| !n.is_empty())
            .all(|n| evidence.request().contains(n));
        (!own).then(|| format!("`{expression}` uses numbers the request does not have"))
    }
}

#[tokio::test]
async fn a_rule_of_ones_own_sends_an_answer_back_and_is_recorded_by_name() {
    let model = Arc::new(Scripted::texts(&[
        &final_answer(true, "Write to bob@example.com for the report."),
        &final_answer(true, "Write to Bob for the report."),
    ]));
    let report = Agent::builder_shared(model)
        .tool(Calc::new())
        .rule(NoEmail)
        .build()
        .unwrap()
        .run("Who do I ask for the report?")
        .await
        .unwrap();
    assert!(report.satisfied);
    assert_eq!(
        report.final_summary.as_deref(),
        Some("Write to Bob for the report.")
    );
    let c = &report.corrections[0];
    assert_eq!(c.category, Category::Rule);
    assert_eq!(c.rule.as_deref(), Some("no_email"));
    assert!(c.error.contains("email address"), "{}", c.error);
    assert!(c.corrected);
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["corrections"][0]["rule"], "no_email");
    assert_eq!(json["corrections"][0]["category"], "rule");
}

#[tokio::test]
async fn an_action_rule_reads_the_request_and_refuses_before_the_tool_runs() {
    let model = Arc::new(Scripted::texts(&[
        &action("calculator", json!({"expression": "17 * 4"})),
        &action("calculator", json!({"expression": "12 * 4"})),
        &final_answer(true, "48"),
    ]));
    let report = Agent::builder_shared(model)
        .tool(Calc::new())
        .rule(FirstCallUsesTheRequest)
        .build()
        .unwrap()
        .run("What is 12 * 4?")
        .await
        .unwrap();
    assert!(report.satisfied);
    assert_eq!(report.steps.len(), 1, "the refused call never ran");
    assert_eq!(report.steps[0].input["expression"], "12 * 4");
    let c = &report.corrections[0];
    assert_eq!(
        (c.category, c.rule.as_deref(), c.tool.as_deref()),
        (
            Category::Rule,
            Some("first_call_uses_the_request"),
            Some("calculator")
        )
    );
}

#[tokio::test]
async fn a_built_in_rule_is_left_out_by_name() {
    let declines = final_answer(true, "I'm sorry, but I cannot help with that.");
    let on = Agent::builder_shared(Arc::new(Scripted::texts(&[
        &declines,
        &final_answer(false, "I cannot book flights here."),
    ])))
    .tool(Calc::new())
    .build()
    .unwrap()
    .run("Book me a flight to Rome.")
    .await
    .unwrap();
    assert_eq!(on.corrections[0].category, Category::DeclinedRequest);
    assert_eq!(on.corrections[0].rule.as_deref(), Some("declined_request"));

    let off = Agent::builder_shared(Arc::new(Scripted::texts(&[&declines])))
        .tool(Calc::new())
        .without_rule("declined_request")
        .build()
        .unwrap()
        .run("Book me a flight to Rome.")
        .await
        .unwrap();
    assert!(off.corrections.is_empty());
    assert!(off.satisfied);
}

#[test]
fn unknown_and_duplicate_rule_names_fail_the_build() {
    let model = Arc::new(Scripted::script(Vec::new()));
    let unknown = Agent::builder_shared(model.clone())
        .without_rule("no_such_rule")
        .build();
    assert!(matches!(unknown, Err(BuildError::UnknownRule(name, _)) if name == "no_such_rule"));
    let twice = Agent::builder_shared(model)
        .rule(NoEmail)
        .rule(NoEmail)
        .build();
    assert!(matches!(twice, Err(BuildError::DuplicateRule(name)) if name == "no_email"));
}
