//! Grounded arguments: a made-up value is `ungrounded_argument`, never executed, and the model
//! is told which values the conversation offers; the decoder gets those values with every
//! request.

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use async_trait::async_trait;
use common::*;
use corrigible::{
    Agent, Allowed, Category, GroundedArgument, Tool, ToolContext, ToolOutcome, ToolRegistry,
};
use serde_json::{Value, json};

/// The test calculator, with its expression's numbers grounded.
struct GroundedCalc(Calc);

#[async_trait]
impl Tool for GroundedCalc {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn description(&self) -> &str {
        self.0.description()
    }
    fn input_schema(&self) -> Value {
        self.0.input_schema()
    }
    fn grounded_arguments(&self) -> Vec<GroundedArgument> {
        vec![GroundedArgument::numbers("expression")]
    }
    async fn call(&self, input: Value, ctx: &ToolContext) -> ToolOutcome {
        self.0.call(input, ctx).await
    }
}

/// A lookup whose `city` must be copied from the conversation.
struct Lookup;

#[async_trait]
impl Tool for Lookup {
    fn name(&self) -> &str {
        "lookup"
    }
    fn description(&self) -> &str {
        "Looks a city up."
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    }
    fn grounded_arguments(&self) -> Vec<GroundedArgument> {
        vec![GroundedArgument::copied("city")]
    }
    async fn call(&self, input: Value, _ctx: &ToolContext) -> ToolOutcome {
        ToolOutcome::Ok(json!({"city": input["city"], "population": 5_917_648}))
    }
}

#[tokio::test]
async fn a_made_up_number_is_rejected_and_never_executed() {
    let calc = Arc::new(GroundedCalc(Calc::new()));
    let model = Arc::new(Scripted::texts(&[
        &action("calculator", json!({"expression": "1764 * 176.4"})),
        &action("calculator", json!({"expression": "sqrt(1764)"})),
        &final_answer(true, "It is 10."),
    ]));
    let mut tools = ToolRegistry::new();
    tools.register(calc.clone()).unwrap();
    let report = Agent::builder_shared(model.clone())
        .policy(strict())
        .tools(tools)
        .build()
        .unwrap()
        .run("What is the square root of 1764?")
        .await
        .unwrap();
    let c = &report.corrections[0];
    assert_eq!(c.category, Category::UngroundedArgument);
    assert!(c.error.contains("176.4"), "{}", c.error);
    assert!(
        c.error.contains("use the numbers given: 1764"),
        "{}",
        c.error
    );
    assert!(c.corrected);
    assert_eq!(
        calc.0.calls.load(Ordering::SeqCst),
        1,
        "only the grounded call ran"
    );
    assert_eq!(report.steps.len(), 1);
    let correction = model
        .request(1)
        .expect("the model was asked")
        .correction
        .expect("a correction round");
    assert_eq!(correction.allowed(), Allowed::ActionOnly);
    assert_eq!(
        model
            .request(1)
            .expect("the model was asked")
            .grounds
            .numbers,
        ["1764"]
    );
    assert!(report.satisfied);
}

#[tokio::test]
async fn with_no_number_yet_the_correction_calls_another_tool_first() {
    let calc = Arc::new(GroundedCalc(Calc::new()));
    let model = Arc::new(Scripted::texts(&[
        &action("calculator", json!({"expression": "1234 / 8"})),
        &action("lookup", json!({"city": "London"})),
        &final_answer(true, "5917648 people live in London."),
    ]));
    let mut tools = ToolRegistry::new();
    tools.register(calc.clone()).unwrap();
    tools.register(Arc::new(Lookup)).unwrap();
    let report = Agent::builder_shared(model.clone())
        .policy(strict())
        .tools(tools)
        .build()
        .unwrap()
        .run("How many people live in London?")
        .await
        .unwrap();
    let c = &report.corrections[0];
    assert_eq!(c.category, Category::UngroundedArgument);
    assert!(c.error.contains("no number is given yet"), "{}", c.error);
    let correction = model
        .request(1)
        .expect("the model was asked")
        .correction
        .expect("a correction round");
    assert_eq!(
        correction.detail,
        corrigible::CorrectionDetail::NoNumbersYet
    );
    assert_eq!(
        correction.allowed(),
        Allowed::ActionOnOtherTools {
            tools: vec!["calculator".into()]
        }
    );
    assert_eq!(calc.0.calls.load(Ordering::SeqCst), 0);
    assert!(report.satisfied);
}

#[tokio::test]
async fn numbers_in_words_and_implied_constants_run_without_a_correction() {
    for (request, expression) in [
        ("What's 7.5 percent of 640?", "640 * 7.5 / 100"),
        ("What is two thousand divided by four?", "2000 / 4"),
        ("How many seconds are there in 3 days?", "3 * 86400"),
    ] {
        // The test calculator returns the expression's length.
        let answer = format!("It is {}.", expression.len());
        let calc = Arc::new(GroundedCalc(Calc::new()));
        let model = Arc::new(Scripted::texts(&[
            &action("calculator", json!({ "expression": expression })),
            &final_answer(true, &answer),
        ]));
        let mut tools = ToolRegistry::new();
        tools.register(calc.clone()).unwrap();
        let report = Agent::builder_shared(model)
            .policy(strict())
            .tools(tools)
            .build()
            .unwrap()
            .run(request)
            .await
            .unwrap();
        assert!(
            report.corrections.is_empty(),
            "{request}: {:?}",
            report.corrections
        );
        assert_eq!(calc.0.calls.load(Ordering::SeqCst), 1, "{request}");
    }
}

#[tokio::test]
async fn a_copied_argument_comes_from_the_request_or_an_earlier_result() {
    let model = Arc::new(Scripted::texts(&[
        &action("lookup", json!({"city": "Sydney"})),
        &action("lookup", json!({"city": "singapore"})),
        &final_answer(true, "5917648 people."),
    ]));
    let report = Agent::builder_shared(model.clone())
        .policy(strict())
        .tool(Lookup)
        .build()
        .unwrap()
        .run("How many people live in Singapore?")
        .await
        .unwrap();
    let c = &report.corrections[0];
    assert_eq!(c.category, Category::UngroundedArgument);
    assert!(c.error.contains("\"Sydney\""), "{}", c.error);
    assert_eq!(report.steps.len(), 1);
    assert!(report.satisfied);
    let copies = &model
        .request(0)
        .expect("the model was asked")
        .grounds
        .copies;
    assert!(copies.contains(&"Singapore".to_string()), "{copies:?}");
    assert!(!copies.iter().any(|c| c.starts_with("How")), "{copies:?}");
    let after = &model
        .request(2)
        .expect("the model was asked")
        .grounds
        .copies;
    assert!(after.contains(&"singapore".to_string()), "{after:?}");
}

#[tokio::test]
async fn tools_without_grounded_arguments_send_no_grounds() {
    let model = Arc::new(Scripted::texts(&[&final_answer(true, "hi")]));
    Agent::builder_shared(model.clone())
        .policy(strict())
        .tool(Calc::new())
        .build()
        .unwrap()
        .run("Say hi in 3 words")
        .await
        .unwrap();
    assert!(
        model
            .request(0)
            .expect("the model was asked")
            .grounds
            .is_empty()
    );
}
