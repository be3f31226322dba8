//! Verification of satisfied answers: a scripted verifier's comparisons, ruled on by the
//! engine from the run's own text.

mod common;

use std::sync::Arc;

use common::*;
use corrigible::trace::StopReason;
use corrigible::verify::{Dropped, ObjectionKind};
use corrigible::{Agent, Category, ModelError, Protocol, RunReport, Verifier};
use serde_json::json;

const REQUEST: &str = "What is 2*(3+4)?";

fn report(comparisons: serde_json::Value) -> String {
    json!({"state": "action", "reason": "compared", "tool": "report",
           "tool_input": {"comparisons": comparisons}})
    .to_string()
}

async fn run(model: Arc<Scripted>, verifier: Arc<Scripted>, max: u32) -> RunReport {
    Agent::builder_shared(model)
        .tool(Calc::new())
        .verifier(
            Verifier::new()
                .with_model(verifier, Protocol::Json)
                .max_per_run(max),
        )
        .build()
        .unwrap()
        .run(REQUEST)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_misstated_result_is_sent_back_and_the_fixed_answer_accepted() {
    let model = Arc::new(Scripted::texts(&[
        &action("calculator", json!({"expression": "2*(3+4)"})),
        &final_answer(true, "2*(3+4) is 41."),
        &final_answer(true, "2*(3+4) is 14."),
    ]));
    let verifier = Arc::new(Scripted::texts(&[
        &report(json!([{"answer_says": "41", "quote": "14", "source_says": "14"}])),
        &report(json!([{"answer_says": "14", "quote": "14", "source_says": "14"}])),
    ]));
    let report = run(model.clone(), verifier.clone(), 2).await;
    assert!(report.satisfied);
    assert_eq!(report.final_summary.as_deref(), Some("2*(3+4) is 14."));
    assert_eq!(report.corrections.len(), 1);
    let correction = &report.corrections[0];
    assert_eq!(correction.category, Category::VerifierObjection);
    assert!(
        correction
            .error
            .contains("the result of calculator says `14`")
    );
    assert!(correction.error.contains("the answer says 41 instead"));
    assert!(correction.error.contains("give it again unchanged"));
    assert_eq!(report.verifications.len(), 2);
    assert!(report.verifications[0].objected);
    assert_eq!(
        report.verifications[0].comparisons[0].objection,
        Some(ObjectionKind::Contradicts)
    );
    assert!(!report.verifications[1].objected);
    assert_eq!(
        report.verifications[1].comparisons[0].dropped,
        Some(Dropped::ValueInAnswer)
    );
    assert_eq!(report.usage.verifications, 2);
    assert_eq!(report.usage.verifier_input_tokens, 200);
    assert_eq!(
        report.usage.model_calls, 3,
        "the verifier's calls are apart"
    );
    let asked = verifier.request(0).expect("the model was asked");
    assert_eq!(asked.tools.len(), 1);
    assert_eq!(asked.tools[0].name, "report");
    let evidence = &asked.messages.last().unwrap().content;
    assert!(evidence.contains("<request>What is 2*(3+4)?</request>"));
    assert!(evidence.contains("<answer>2*(3+4) is 41.</answer>"));
    assert!(evidence.contains(r#"<tool_result tool="calculator">14</tool_result>"#));
}

#[tokio::test]
async fn an_answer_given_again_unchanged_is_accepted_without_another_check() {
    let model = Arc::new(Scripted::texts(&[
        &action("calculator", json!({"expression": "2*(3+4)"})),
        &final_answer(true, "It is 41."),
        &final_answer(true, "It is 41."),
    ]));
    let verifier = Arc::new(Scripted::texts(&[&report(
        json!([{"answer_says": "41", "quote": "14", "source_says": "14"}]),
    )]));
    let report = run(model, verifier.clone(), 2).await;
    assert!(report.satisfied);
    assert_eq!(report.stop_reason, StopReason::Final);
    assert_eq!(report.verifications.len(), 1);
    assert_eq!(
        report.usage.identical_retries, 0,
        "keeping the answer is allowed"
    );
    assert_eq!(verifier.remaining(), 0);
}

#[tokio::test]
async fn comparisons_the_evidence_does_not_prove_are_dropped_and_recorded() {
    let model = Arc::new(Scripted::texts(&[
        &action("calculator", json!({"expression": "2*(3+4)"})),
        &final_answer(true, "2*(3+4) is 14."),
    ]));
    let verifier = Arc::new(Scripted::texts(&[&report(json!([
        {"answer_says": "14", "quote": "the result is 15", "source_says": "15"},
        {"answer_says": "99", "quote": "14", "source_says": "14"},
        {"answer_says": "14", "quote": "", "source_says": ""}
    ]))]));
    let report = run(model, verifier, 2).await;
    assert!(report.satisfied);
    assert!(report.corrections.is_empty());
    let dropped: Vec<Option<Dropped>> = report.verifications[0]
        .comparisons
        .iter()
        .map(|c| c.dropped)
        .collect();
    assert_eq!(
        dropped,
        [
            Some(Dropped::QuoteNotFound),
            Some(Dropped::NotInAnswer),
            Some(Dropped::ValueInEvidence)
        ]
    );
}

#[tokio::test]
async fn a_failed_or_unreadable_verifier_accepts_the_answer_and_says_why() {
    for reply in [
        Err(ModelError::Transport("connection reset".into())),
        Ok(text("I think it is fine.")),
    ] {
        let model = Arc::new(Scripted::texts(&[
            &action("calculator", json!({"expression": "2*(3+4)"})),
            &final_answer(true, "2*(3+4) is 14."),
        ]));
        let verifier = Arc::new(Scripted::script(vec![reply]));
        let report = run(model, verifier, 2).await;
        assert!(report.satisfied);
        assert!(report.verifications[0].error.is_some());
    }
}

#[tokio::test]
async fn answers_without_tool_results_and_past_the_bound_are_not_checked() {
    let model = Arc::new(Scripted::texts(&[&final_answer(true, "It is 14.")]));
    let verifier = Arc::new(Scripted::script(Vec::new()));
    let report = run(model, verifier, 2).await;
    assert!(report.satisfied);
    assert!(report.verifications.is_empty());

    let model = Arc::new(Scripted::texts(&[
        &action("calculator", json!({"expression": "2*(3+4)"})),
        &final_answer(true, "It is 41."),
        &final_answer(true, "It is 42."),
    ]));
    let verifier = Arc::new(Scripted::texts(&[&report_json_41()]));
    let report = run(model, verifier, 1).await;
    assert!(report.satisfied, "the second answer is past the bound");
    assert_eq!(report.final_summary.as_deref(), Some("It is 42."));
    assert_eq!(report.verifications.len(), 1);
}

fn report_json_41() -> String {
    report(json!([{"answer_says": "41", "quote": "14", "source_says": "14"}]))
}

#[tokio::test]
async fn a_native_verifier_reports_through_a_tool_call() {
    let model = Arc::new(Scripted::texts(&[
        &action("calculator", json!({"expression": "2*(3+4)"})),
        &final_answer(true, "It is 41."),
        &final_answer(true, "It is 14."),
    ]));
    let verifier = Arc::new(Scripted::script(vec![
        Ok(calls(&[(
            "v1",
            "report",
            r#"{"comparisons": [{"answer_says": "41", "quote": "14", "source_says": "14"}]}"#,
        )])),
        Ok(calls(&[("v2", "report", r#"{"comparisons": []}"#)])),
    ]));
    let report = Agent::builder_shared(model)
        .tool(Calc::new())
        .verifier(Verifier::new().with_model(verifier.clone(), Protocol::Native))
        .build()
        .unwrap()
        .run(REQUEST)
        .await
        .unwrap();
    assert_eq!(report.final_summary.as_deref(), Some("It is 14."));
    assert_eq!(report.corrections[0].category, Category::VerifierObjection);
    assert_eq!(
        verifier.request(0).expect("the model was asked").protocol,
        Protocol::Native
    );
}

mod never_panics {
    use corrigible::verify::Comparison;
    use corrigible::verify::objection::comparisons_in;
    use corrigible::verify::proof::{Evidence, prove};
    use proptest::prelude::*;

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[0-9:+\\-T. ]{0,24}",
            "\\PC{0,40}",
            Just("\"time\":\"07:00\"".to_string()),
            Just("2026-01-15T07:00:00-05:00".to_string()),
        ]
    }

    proptest! {
        #[test]
        fn on_any_comparison_or_evidence(
            says in text(), quote in text(), source in text(),
            request in text(), result in text(), answer in text(),
        ) {
            let results = vec![("tool".to_string(), result)];
            let comparison = Comparison { answer_says: says, quote, source_says: source };
            let evidence = Evidence { request: &request, results: &results, answer: &answer };
            let _ = prove(&comparison, &evidence);
            let _ = comparisons_in(&serde_json::json!({"comparisons": [comparison]}));
        }
    }
}
