//! BFCL tasks through the engine: schema-only tools, validation, correction and grading.

mod common;

use std::sync::Arc;

use common::ByPrompt;
use corrigible::{Model, Protocol};
use corrigible_bench::bfcl::BfclCategory;
use corrigible_bench::{BenchConfig, ModelFactory, PolicyKind, SuiteSpec, Variant, run_bench};

const TRIANGLE: &str = "Find the area of a triangle with a base of 10 units and height of 5 units.";
const IRRELEVANT: &str = "Calculate the area of a triangle given the base is 10 meters";

fn variant() -> Variant {
    let model = ByPrompt::texts(&[
        (
            TRIANGLE,
            &[
                &[
                    // A string where the schema wants an integer: rejected before any "call".
                    r#"{"state":"action","reason":"area","tool":"calculate_triangle_area","tool_input":{"base":"10","height":5}}"#,
                    r#"{"state":"action","reason":"area","tool":"calculate_triangle_area","tool_input":{"base":10,"height":5,"unit":"units"}}"#,
                ],
                &[
                    r#"{"state":"final","satisfied":true,"final_summary":"The area is 25 square units."}"#,
                ],
            ],
        ),
        (
            IRRELEVANT,
            &[&[
                r#"{"state":"final","satisfied":false,"final_summary":"No offered function computes a triangle's area."}"#,
            ]],
        ),
    ]);
    let factory: ModelFactory = Arc::new(move || model.clone() as Arc<dyn Model>);
    Variant::single(factory)
}

fn config(category: BfclCategory) -> BenchConfig {
    BenchConfig {
        suite: SuiteSpec::Bfcl(vec![category]),
        skip: 0,
        limit: Some(1),
        policies: vec![PolicyKind::OneShot, PolicyKind::SelfCorrect],
        protocol: Protocol::Json,
        faults: None,
        progress: false,
        model_name: "by-prompt".into(),
        examples: corrigible_bench::Examples::Builtin,
        verifier: None,
        concurrency: 1,
    }
}

#[tokio::test]
async fn a_corrected_call_passes_the_checker_and_a_rejected_one_does_not() {
    let report = run_bench(&config(BfclCategory::Simple), &[variant()])
        .await
        .unwrap();
    assert_eq!(report.suite, "bfcl:simple");
    let one = &report.results[0];
    assert_eq!(one.policy, PolicyKind::OneShot);
    assert!(!one.success);
    assert_eq!(
        one.corrections,
        vec![corrigible::Category::InvalidToolInput]
    );
    assert_eq!(one.detail.as_deref(), Some("expected 1 call(s), got 0"));
    let fixed = &report.results[1];
    assert_eq!(fixed.policy, PolicyKind::SelfCorrect);
    assert!(fixed.success, "{fixed:?}");
    assert_eq!(fixed.model_calls, 3);
}

#[tokio::test]
async fn irrelevance_passes_without_a_call() {
    let report = run_bench(&config(BfclCategory::Irrelevance), &[variant()])
        .await
        .unwrap();
    assert!(
        report.results.iter().all(|r| r.success),
        "{:?}",
        report.results
    );
    assert!(
        report
            .columns
            .iter()
            .all(|c| c.unsatisfied.get("final") == Some(&1))
    );
}
