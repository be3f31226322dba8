//! One test per rejection category, each asserting the run report fields that prove it.

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use common::*;
use corrigible::policy::{BreakerPolicy, CircuitBreakers};
use corrigible::trace::{StepOutcome, StopReason};
use corrigible::{Agent, Category, Policy, Protocol, Stage, ToolPolicy};
use serde_json::json;

fn agent(model: Arc<Scripted>) -> corrigible::AgentBuilder {
    Agent::builder_shared(model)
        .policy(strict())
        .tool(Calc::new())
}

#[tokio::test]
async fn empty_response_is_corrected_without_a_tool_step() {
    let model = Arc::new(Scripted::texts(&["   ", &final_answer(true, "hello")]));
    let report = agent(model.clone())
        .build()
        .unwrap()
        .run("Say hello")
        .await
        .unwrap();
    assert!(report.satisfied);
    assert_eq!(report.final_summary.as_deref(), Some("hello"));
    let c = &report.corrections[0];
    assert_eq!(
        (
            c.category,
            c.step,
            c.attempt,
            &*c.stage.to_string(),
            c.corrected
        ),
        (Category::EmptyResponse, 1, 1, "step_1", true)
    );
    assert!(report.steps.is_empty());
    let stages: Vec<Stage> = report.model_calls.iter().map(|c| c.stage).collect();
    assert_eq!(stages, ["step_1", "step_1_correction_1"]);
}

#[tokio::test]
async fn invalid_json_is_corrected() {
    let model = Arc::new(Scripted::texts(&[
        "I think the answer is 4",
        &final_answer(true, "4"),
    ]));
    let report = agent(model).build().unwrap().run("2+2?").await.unwrap();
    assert_eq!(report.corrections[0].category, Category::InvalidJson);
    assert!(report.corrections[0].corrected);
    assert_eq!(report.usage.corrections, 1);
}

#[tokio::test]
async fn a_key_named_twice_is_sent_back_and_nothing_runs() {
    let twice = r#"{"state": "action", "reason": "r", "tool": "calculator",
        "tool_input": {"expression": "2+2"}, "tool_input": {"expression": "9*9"}}"#;
    let nested = r#"{"state": "action", "reason": "r", "tool": "calculator",
        "tool_input": {"expression": "2+2", "expression": "9*9"}}"#;
    for (protocol, reply) in [
        (Protocol::Json, text(twice)),
        (Protocol::Json, text(nested)),
        (
            Protocol::Native,
            calls(&[(
                "call_1",
                "calculator",
                r#"{"expression": "2+2", "expression": "9*9"}"#,
            )]),
        ),
    ] {
        let calc = Arc::new(Calc::new());
        let done = match protocol {
            Protocol::Json => text(&final_answer(false, "stopped")),
            Protocol::Native => calls(&[(
                "call_2",
                "final_answer",
                r#"{"satisfied": false, "final_summary": "stopped"}"#,
            )]),
        };
        let model = Arc::new(Scripted::script(vec![Ok(reply), Ok(done)]));
        let report = Agent::builder_shared(model)
            .policy(strict())
            .tool(calc.clone())
            .protocol(protocol)
            .build()
            .unwrap()
            .run("2+2?")
            .await
            .unwrap();
        assert_eq!(calc.calls.load(Ordering::SeqCst), 0, "{protocol:?}");
        let c = &report.corrections[0];
        assert_eq!(c.category, Category::InvalidJson);
        assert!(c.error.contains("appears twice"), "{}", c.error);
    }
}

#[tokio::test]
async fn decision_schema_names_the_missing_field() {
    let bad = json!({"state": "action", "tool_input": {"expression": "1"}}).to_string();
    let model = Arc::new(Scripted::texts(&[&bad, &final_answer(true, "ok")]));
    let report = agent(model).build().unwrap().run("x").await.unwrap();
    let c = &report.corrections[0];
    assert_eq!(c.category, Category::DecisionSchema);
    assert_eq!(c.error, "tool: required property missing");
}

#[tokio::test]
async fn unknown_tool_lists_the_available_tools() {
    let model = Arc::new(Scripted::texts(&[
        &action("calc", json!({"expression": "2*(3+4)"})),
        &action("calculator", json!({"expression": "2*(3+4)"})),
        &final_answer(true, "14"),
    ]));
    let report = agent(model)
        .build()
        .unwrap()
        .run("What is 2*(3+4)?")
        .await
        .unwrap();
    let c = &report.corrections[0];
    assert_eq!(c.category, Category::UnknownTool);
    assert!(
        c.error.contains("available tools: calculator"),
        "{}",
        c.error
    );
    assert!(c.corrected);
    assert_eq!(report.steps.len(), 1);
    assert_eq!(report.steps[0].step, 1);
}

#[tokio::test]
async fn invalid_tool_input_never_reaches_the_tool_nor_consumes_a_step() {
    let calc = Arc::new(Calc::new());
    let model = Arc::new(Scripted::texts(&[
        &action("calculator", json!({"expr": "2*(3+4)"})),
        &action("calculator", json!({"expression": "2*(3+4)"})),
        &final_answer(true, "14"),
    ]));
    let report = Agent::builder_shared(model)
        .policy(strict())
        .tool(calc.clone())
        .build()
        .unwrap()
        .run("What is 2*(3+4)?")
        .await
        .unwrap();
    assert_eq!(calc.calls.load(Ordering::SeqCst), 1);
    let c = &report.corrections[0];
    assert_eq!(
        (c.category, c.step, c.attempt, &*c.stage.to_string()),
        (Category::InvalidToolInput, 1, 1, "step_1")
    );
    assert!(
        c.error
            .contains("tool_input.expression: required property missing"),
        "{}",
        c.error
    );
    assert!(
        c.error.contains("tool_input.expr: unexpected property"),
        "{}",
        c.error
    );
    assert!(c.corrected);
    assert_eq!(report.steps.len(), 1);
    assert_eq!(
        (report.steps[0].step, report.steps[0].output.clone()),
        (1, Some(json!(14)))
    );
    let stages: Vec<Stage> = report.model_calls.iter().map(|c| c.stage).collect();
    assert_eq!(stages, ["step_1", "step_1_correction_1", "step_2"]);
}

#[tokio::test]
async fn repeated_failed_action_is_never_executed_twice() {
    let flaky = Arc::new(Flaky::new("lookup", 100));
    let same = action("lookup", json!({"q": "x"}));
    let model = Arc::new(Scripted::texts(&[
        &same,
        &same,
        &final_answer(false, "lookup is down"),
    ]));
    let mut policy = strict();
    policy.retry.max_retries = 0;
    let report = Agent::builder_shared(model)
        .policy(strict())
        .tool(flaky.clone())
        .policy(policy)
        .build()
        .unwrap()
        .run("q")
        .await
        .unwrap();
    assert_eq!(flaky.calls.load(Ordering::SeqCst), 1);
    let categories: Vec<Category> = report.corrections.iter().map(|c| c.category).collect();
    assert_eq!(
        categories,
        [Category::ToolFailed, Category::RepeatedFailedAction]
    );
    let repeated = &report.corrections[1];
    assert_eq!(
        (
            repeated.step,
            &*repeated.stage.to_string(),
            repeated.corrected
        ),
        (2, "step_2", true)
    );
    assert_eq!(report.steps.len(), 1);
    assert!(!report.satisfied);
    assert_eq!(report.stop_reason, StopReason::Final);
}

#[tokio::test]
async fn repeated_action_is_not_run_again_and_quotes_the_result() {
    let calc = Arc::new(Calc::new());
    let same = action("calculator", json!({"expression": "2*(3+4)"}));
    let model = Arc::new(Scripted::texts(&[&same, &same, &final_answer(true, "14")]));
    let report = Agent::builder_shared(model.clone())
        .policy(strict())
        .tool(calc.clone())
        .build()
        .unwrap()
        .run("What is 2*(3+4)?")
        .await
        .unwrap();
    assert_eq!(calc.calls.load(Ordering::SeqCst), 1);
    assert_eq!(report.steps.len(), 1);
    let c = &report.corrections[0];
    assert_eq!(
        (c.category, c.step, &*c.stage.to_string(), c.corrected),
        (Category::RepeatedAction, 2, "step_2", true)
    );
    assert!(
        c.error.contains("already succeeded") && c.error.contains("14"),
        "{}",
        c.error
    );
    let correction = model
        .request(2)
        .expect("the model was asked")
        .correction
        .expect("a correction round");
    assert_eq!(
        correction.allowed(),
        corrigible::Allowed::ActionsExcept {
            actions: vec![corrigible::correction::fingerprint::fingerprint(
                "calculator",
                &json!({"expression": "2*(3+4)"})
            )]
        }
    );
    assert!(report.satisfied);
    assert_eq!(report.final_summary.as_deref(), Some("14"));
}

#[tokio::test]
async fn of_two_identical_parallel_calls_only_the_first_runs() {
    let calc = Arc::new(Calc::new());
    let args = "{\"expression\": \"2*(3+4)\"}";
    let model = Arc::new(Scripted::script(vec![
        Ok(calls(&[
            ("call_1", "calculator", args),
            ("call_2", "calculator", args),
        ])),
        Ok(calls(&[(
            "call_3",
            "final_answer",
            "{\"satisfied\": true, \"final_summary\": \"14\"}",
        )])),
    ]));
    let report = Agent::builder_shared(model.clone())
        .policy(strict())
        .tool(calc.clone())
        .protocol(Protocol::Native)
        .build()
        .unwrap()
        .run("What is 2*(3+4)?")
        .await
        .unwrap();
    assert_eq!(calc.calls.load(Ordering::SeqCst), 1);
    assert_eq!(report.steps.len(), 1);
    assert_eq!(report.corrections[0].category, Category::RepeatedAction);
    let feedback = model
        .request(1)
        .expect("the model was asked")
        .messages
        .last()
        .unwrap()
        .clone();
    assert_eq!(feedback.tool_call_id.as_deref(), Some("call_2"));
    assert!(report.satisfied);
}

#[tokio::test]
async fn a_repeatable_tool_runs_the_same_call_again() {
    let mut status = Flaky::new("job_status", 0);
    status.repeatable = true;
    let status = Arc::new(status);
    let same = action("job_status", json!({"q": "job-7"}));
    let model = Arc::new(Scripted::texts(&[
        &same,
        &same,
        &final_answer(true, "the answer is 42"),
    ]));
    let report = Agent::builder_shared(model)
        .policy(strict())
        .tool(status.clone())
        .build()
        .unwrap()
        .run("Poll job-7")
        .await
        .unwrap();
    assert_eq!(status.calls.load(Ordering::SeqCst), 2);
    assert!(report.corrections.is_empty(), "{:?}", report.corrections);
    assert_eq!(report.steps.len(), 2);
}

#[tokio::test]
async fn the_policy_declares_a_tool_repeatable() {
    let calc = Arc::new(Calc::new());
    let same = action("calculator", json!({"expression": "2*(3+4)"}));
    let model = Arc::new(Scripted::texts(&[&same, &same, &final_answer(true, "14")]));
    let report = Agent::builder_shared(model)
        .policy(strict())
        .tool(calc.clone())
        .tool_policy(
            "calculator",
            ToolPolicy {
                repeatable: Some(true),
                ..Default::default()
            },
        )
        .build()
        .unwrap()
        .run("What is 2*(3+4)?")
        .await
        .unwrap();
    assert_eq!(calc.calls.load(Ordering::SeqCst), 2);
    assert!(report.corrections.is_empty(), "{:?}", report.corrections);
}

#[tokio::test]
async fn repeated_action_with_reordered_keys_and_respelled_numbers_is_caught() {
    let flaky = Arc::new(Flaky::new("lookup", 100));
    let model = Arc::new(Scripted::texts(&[
        r#"{"state":"action","reason":"r","tool":"lookup","tool_input":{"q":"x","n":2}}"#,
        r#"{"tool_input":{"n":2.0,"q":"x"},"tool":"lookup","state":"action","reason":"again"}"#,
        &final_answer(false, "down"),
    ]));
    let mut policy = strict();
    policy.retry.max_retries = 0;
    let report = Agent::builder_shared(model)
        .policy(strict())
        .tool(flaky.clone())
        .policy(policy)
        .build()
        .unwrap()
        .run("q")
        .await
        .unwrap();
    assert_eq!(flaky.calls.load(Ordering::SeqCst), 1);
    assert_eq!(
        report.corrections[1].category,
        Category::RepeatedFailedAction
    );
}

#[tokio::test]
async fn ungrounded_final_is_corrected() {
    let flaky = Arc::new(Flaky::new("lookup", 100));
    let model = Arc::new(Scripted::texts(&[
        &action("lookup", json!({"q": "x"})),
        &final_answer(true, "the answer is 42"),
        &final_answer(false, "lookup failed"),
    ]));
    let mut policy = strict();
    policy.retry.max_retries = 0;
    let report = Agent::builder_shared(model)
        .policy(strict())
        .tool(flaky)
        .policy(policy)
        .build()
        .unwrap()
        .run("q")
        .await
        .unwrap();
    let c = report
        .corrections
        .iter()
        .find(|c| c.category == Category::UngroundedFinal)
        .unwrap();
    assert_eq!(
        (c.step, &*c.stage.to_string(), c.corrected),
        (2, "step_2", true)
    );
    assert!(!report.satisfied);
    assert_eq!(report.final_summary.as_deref(), Some("lookup failed"));
}

#[tokio::test]
async fn a_claimed_action_with_no_tool_able_to_act_is_corrected_to_an_honest_refusal() {
    let model = Arc::new(Scripted::texts(&[
        &final_answer(
            true,
            "I have sent an email to your boss saying you are sick today.",
        ),
        &final_answer(false, "I cannot send emails here: no tool sends mail."),
    ]));
    let report = agent(model.clone())
        .policy(Policy::default())
        .build()
        .unwrap()
        .run("Send an email to my boss saying I am sick today.")
        .await
        .unwrap();
    let c = &report.corrections[0];
    assert_eq!(
        (c.category, c.step, c.corrected),
        (Category::ClaimedAction, 1, true)
    );
    assert!(c.error.contains("`i have sent`"), "{}", c.error);
    assert!(c.error.contains("no tool ran"), "{}", c.error);
    assert!(
        c.error.contains("no available tool can send"),
        "{}",
        c.error
    );
    assert!(!report.satisfied);
    assert!(report.steps.is_empty());
}

#[tokio::test]
async fn a_claimed_action_is_never_accepted_once_the_corrections_are_spent() {
    let claim = final_answer(true, "The lights in your living room have been turned off.");
    let model = Arc::new(Scripted::texts(&[&claim, &claim, &claim, &claim, &claim]));
    let report = agent(model)
        .policy(Policy::default())
        .build()
        .unwrap()
        .run("Turn off the lights in my living room.")
        .await
        .unwrap();
    assert!(!report.satisfied);
    assert_ne!(report.stop_reason, StopReason::Final);
    assert!(
        report
            .corrections
            .iter()
            .all(|c| c.category == Category::ClaimedAction && !c.corrected)
    );
}

#[tokio::test]
async fn an_answer_that_promises_a_call_is_sent_back_for_the_call() {
    let model = Arc::new(Scripted::texts(&[
        &final_answer(
            true,
            "Now, I will use the calculator to find the product of 1234 and 5678.",
        ),
        &action("calculator", json!({"expression": "1234 * 5678"})),
        &final_answer(true, "1234 * 5678 = 7006652."),
    ]));
    let report = agent(model)
        .policy(Policy::default())
        .build()
        .unwrap()
        .run("What is 1234 * 5678? Use the calculator.")
        .await
        .unwrap();
    let c = &report.corrections[0];
    assert_eq!(c.category, Category::ClaimedAction);
    assert!(
        c.error.contains("`i will use the calculator`"),
        "{}",
        c.error
    );
    assert!(c.error.contains("call `calculator` now"), "{}", c.error);
    assert!(report.satisfied);
    assert_eq!(report.steps.len(), 1);
}

#[tokio::test]
async fn a_promise_that_names_the_tool_as_a_tool_is_sent_back_for_that_tool() {
    let model = Arc::new(Scripted::texts(&[
        &final_answer(
            true,
            "Now, I will proceed to calculate the product using the calculator tool.",
        ),
        &final_answer(false, "I could not compute it."),
    ]));
    let report = agent(model)
        .policy(Policy::default())
        .build()
        .unwrap()
        .run("What is 1234 * 5678? Use the calculator.")
        .await
        .unwrap();
    let c = &report.corrections[0];
    assert_eq!(c.category, Category::ClaimedAction);
    assert!(c.error.contains("call `calculator` now"), "{}", c.error);
}

#[tokio::test]
async fn a_decline_sent_as_satisfied_is_corrected_to_an_honest_refusal() {
    let model = Arc::new(Scripted::texts(&[
        &final_answer(true, "I'm sorry, but I cannot play music."),
        &final_answer(
            false,
            "I can't play music: none of my tools can reach a speaker.",
        ),
    ]));
    let report = agent(model)
        .policy(Policy::default())
        .build()
        .unwrap()
        .run("Play some relaxing jazz music.")
        .await
        .unwrap();
    let c = &report.corrections[0];
    assert_eq!(
        (c.category, c.step, c.corrected),
        (Category::DeclinedRequest, 1, true)
    );
    assert!(c.error.contains("satisfied false"), "{}", c.error);
    assert!(!report.satisfied);
    assert_eq!(
        report.final_summary.as_deref(),
        Some("I can't play music: none of my tools can reach a speaker.")
    );
}

#[tokio::test]
async fn a_decline_that_a_tool_could_answer_is_sent_back_for_the_call() {
    let model = Arc::new(Scripted::texts(&[
        &final_answer(
            true,
            "I'm sorry, but I can't provide that without a tool call.",
        ),
        &action("calculator", json!({"expression": "2*(3+4)"})),
        &final_answer(true, "2*(3+4) is 14."),
    ]));
    let report = agent(model)
        .policy(Policy::default())
        .build()
        .unwrap()
        .run("What is 2*(3+4)?")
        .await
        .unwrap();
    assert_eq!(report.corrections[0].category, Category::DeclinedRequest);
    assert!(report.satisfied);
    assert_eq!(report.steps.len(), 1);
}

#[tokio::test]
async fn an_answer_that_only_hedges_is_not_a_decline() {
    let model = Arc::new(Scripted::texts(&[&final_answer(
        true,
        "I can't be sure, but the capital of Australia is Canberra.",
    )]));
    let report = agent(model)
        .policy(Policy::default())
        .build()
        .unwrap()
        .run("What is the capital of Australia?")
        .await
        .unwrap();
    assert!(report.corrections.is_empty(), "{:?}", report.corrections);
    assert!(report.satisfied);
}

#[tokio::test]
async fn a_claimed_action_after_a_read_only_tool_names_the_tools_that_ran() {
    let model = Arc::new(Scripted::texts(&[
        &action("calculator", json!({"expression": "2*(3+4)"})),
        &final_answer(true, "It is 14. I've paid the bill of 14 dollars."),
        &final_answer(true, "It is 14."),
    ]));
    let report = agent(model)
        .policy(Policy::default())
        .build()
        .unwrap()
        .run("What is 2*(3+4)? Then pay my bill with it.")
        .await
        .unwrap();
    let c = &report.corrections[0];
    assert_eq!(c.category, Category::ClaimedAction);
    assert!(
        c.error
            .contains("the tools that ran (calculator) only look things up"),
        "{}",
        c.error
    );
    assert!(report.satisfied);
}

#[tokio::test]
async fn a_claimed_action_after_a_tool_able_to_act_is_accepted() {
    let mailer = Arc::new(Flaky::new("send_email", 0));
    let model = Arc::new(Scripted::texts(&[
        &action("send_email", json!({"q": "boss: sick today"})),
        &final_answer(
            true,
            "I have sent an email to your boss saying you are sick today.",
        ),
    ]));
    let report = Agent::builder_shared(model)
        .tool(mailer)
        .build()
        .unwrap()
        .run("Send an email to my boss saying I am sick today.")
        .await
        .unwrap();
    assert!(report.satisfied, "{:?}", report.corrections);
    assert!(report.corrections.is_empty());
}

#[tokio::test]
async fn an_answer_that_states_no_tool_result_is_corrected() {
    let model = Arc::new(Scripted::texts(&[
        &action("calculator", json!({"expression": "2*(3+4)"})),
        &final_answer(true, "I computed it."),
        &final_answer(true, "2*(3+4) is 14."),
    ]));
    let report = agent(model.clone())
        .build()
        .unwrap()
        .run("What is 2*(3+4)?")
        .await
        .unwrap();
    let c = &report.corrections[0];
    assert_eq!(c.category, Category::UnstatedResult);
    assert_eq!((&*c.stage.to_string(), c.corrected), ("step_2", true));
    assert!(c.error.contains("result of calculator: 14"), "{}", c.error);
    assert!(report.satisfied);
    assert_eq!(report.final_summary.as_deref(), Some("2*(3+4) is 14."));
}

fn thought(reasoning: &str, reply: &str) -> Result<corrigible::ModelReply, corrigible::ModelError> {
    Ok(corrigible::ModelReply {
        reasoning: Some(corrigible::Reasoning::text(reasoning)),
        ..text(reply)
    })
}

#[tokio::test]
async fn an_answer_resting_on_a_slip_in_the_reasoning_is_corrected() {
    let model = Arc::new(Scripted::script(vec![
        thought(
            "Seattle has 20 sheep, Charleston 80 and Toulouse 160, so 20 + 80 + 160 = 460.",
            &final_answer(true, "They have 460 sheep together."),
        ),
        thought(
            "20 + 80 + 160 = 260.",
            &final_answer(true, "They have 260 sheep together."),
        ),
    ]));
    let report = Agent::builder_shared(model.clone())
        .build()
        .unwrap()
        .run("How many sheep do Toulouse, Charleston and Seattle have together?")
        .await
        .unwrap();
    let c = &report.corrections[0];
    assert_eq!(c.category, Category::WrongArithmetic);
    assert_eq!((&*c.stage.to_string(), c.corrected), ("step_1", true));
    assert!(
        c.error.contains("`20 + 80 + 160 is 260, not 460`"),
        "{}",
        c.error
    );
    assert!(report.satisfied);
    assert_eq!(
        report.final_summary.as_deref(),
        Some("They have 260 sheep together.")
    );
    let feedback = model
        .request(1)
        .expect("the model was asked")
        .correction
        .unwrap();
    assert_eq!(feedback.category, Category::WrongArithmetic);
}

#[tokio::test]
async fn a_slip_the_answer_does_not_use_is_left_alone() {
    let model = Arc::new(Scripted::script(vec![thought(
        "12 * 3 = 38, no: 12 * 3 = 36, and 36 * 2 = 72.",
        &final_answer(true, "They pay $72."),
    )]));
    let report = Agent::builder_shared(model)
        .build()
        .unwrap()
        .run("Two friends each buy 3 tickets at $12. What do they pay?")
        .await
        .unwrap();
    assert!(report.satisfied && report.corrections.is_empty());
}

#[tokio::test]
async fn a_thought_set_aside_is_not_read_by_the_rules() {
    let aside = corrigible::ModelReply {
        reasoning: Some(corrigible::Reasoning {
            set_aside: true,
            ..corrigible::Reasoning::text("20 + 80 + 160 = 460.")
        }),
        ..text(&final_answer(true, "They have 460 sheep together."))
    };
    let model = Arc::new(Scripted::script(vec![Ok(aside)]));
    let report = Agent::builder_shared(model)
        .build()
        .unwrap()
        .run("How many sheep do the three towns have?")
        .await
        .unwrap();
    assert!(report.corrections.is_empty(), "{:?}", report.corrections);
    let reasoning = report.model_calls[0].reasoning.as_ref().expect("recorded");
    assert!(reasoning.set_aside);
}

#[tokio::test]
async fn failures_grounding_accepts_an_answer_that_states_no_result() {
    let model = Arc::new(Scripted::texts(&[
        &action("calculator", json!({"expression": "2*(3+4)"})),
        &final_answer(true, "I computed it."),
    ]));
    let policy = Policy {
        checks: corrigible::Checks::STRICT.with_grounding(corrigible::Grounding::Failures),
        ..strict()
    };
    let report = agent(model)
        .policy(policy)
        .build()
        .unwrap()
        .run("What is 2*(3+4)?")
        .await
        .unwrap();
    assert!(report.corrections.is_empty());
    assert!(report.satisfied);
}

#[tokio::test]
async fn mixed_failed_and_successful_results_are_never_overruled() {
    let flaky = Arc::new(Flaky::new("lookup", 1));
    let model = Arc::new(Scripted::texts(&[
        &action("lookup", json!({"q": "a"})),
        &action("lookup", json!({"q": "b"})),
        &final_answer(true, "42"),
    ]));
    let mut policy = strict();
    policy.retry.max_retries = 0;
    let report = Agent::builder_shared(model)
        .policy(strict())
        .tool(flaky)
        .policy(policy)
        .build()
        .unwrap()
        .run("q")
        .await
        .unwrap();
    assert!(report.satisfied);
    assert!(
        report
            .corrections
            .iter()
            .all(|c| c.category != Category::UngroundedFinal)
    );
}

#[tokio::test]
async fn direct_final_answer_needs_no_tool() {
    let model = Arc::new(Scripted::texts(&[&final_answer(true, "Hello!")]));
    let report = agent(model)
        .build()
        .unwrap()
        .run("Say hello")
        .await
        .unwrap();
    assert!(report.satisfied);
    assert!(report.corrections.is_empty() && report.steps.is_empty());
}

#[tokio::test]
async fn output_rejected_is_corrected_in_the_next_round() {
    let model = Arc::new(Scripted::texts(&[
        &final_answer(true, "fourteen"),
        &final_answer(true, "14"),
    ]));
    let report = agent(model)
        .validator(|answer: &corrigible::Final| {
            if answer.summary.chars().any(|c| c.is_ascii_digit()) {
                Ok(())
            } else {
                Err("answer with digits".to_string())
            }
        })
        .build()
        .unwrap()
        .run("What is 2*(3+4)?")
        .await
        .unwrap();
    let c = &report.corrections[0];
    assert_eq!(
        (c.category, &*c.stage.to_string(), c.corrected),
        (Category::OutputRejected, "step_1", true)
    );
    assert_eq!(report.final_summary.as_deref(), Some("14"));
    assert_eq!(report.usage.model_calls, 2);
    assert_eq!(report.usage.input_tokens, 200);
}

#[tokio::test]
async fn output_retries_run_out() {
    let model = Arc::new(Scripted::texts(&[
        &final_answer(true, "a"),
        &final_answer(true, "b"),
        &final_answer(true, "c"),
    ]));
    let report = agent(model.clone())
        .validator(|_: &corrigible::Final| Err("never good".to_string()))
        .build()
        .unwrap()
        .run("x")
        .await
        .unwrap();
    assert_eq!(report.stop_reason, StopReason::OutputRejected);
    assert!(!report.satisfied);
    assert_eq!(report.usage.model_calls, 2);
    assert_eq!(model.remaining(), 1);
}

#[tokio::test]
async fn tool_rejected_goes_back_as_the_tool_result() {
    let model = Arc::new(Scripted::texts(&[
        &action("calculator", json!({"expression": "1/0"})),
        &action("calculator", json!({"expression": "2*(3+4)"})),
        &final_answer(true, "14"),
    ]));
    let report = agent(model.clone())
        .build()
        .unwrap()
        .run("x")
        .await
        .unwrap();
    assert_eq!(report.steps[0].outcome, StepOutcome::Rejected);
    let c = &report.corrections[0];
    assert_eq!(
        (c.category, c.step, c.attempt, c.corrected),
        (Category::ToolRejected, 1, 1, true)
    );
    let second = model.request(1).expect("the model was asked");
    let last = second.messages.last().unwrap();
    assert!(
        last.content.contains(
            "<tool_result tool=\"calculator\" status=\"error\">division by zero</tool_result>"
        ),
        "{}",
        last.content
    );
}

#[tokio::test]
async fn a_rejection_budget_of_zero_is_terminal() {
    let model = Arc::new(Scripted::texts(&[
        &action("calculator", json!({"expression": "1/0"})),
        &final_answer(true, "x"),
    ]));
    let report = agent(model.clone())
        .tool_policy(
            "calculator",
            ToolPolicy {
                max_rejections: Some(0),
                ..Default::default()
            },
        )
        .build()
        .unwrap()
        .run("x")
        .await
        .unwrap();
    assert_eq!(report.stop_reason, StopReason::ToolFatal);
    assert!(
        report
            .missing
            .as_deref()
            .unwrap()
            .contains("division by zero")
    );
    assert_eq!(
        model.remaining(),
        1,
        "no model call after a terminal rejection"
    );
}

#[tokio::test(start_paused = true)]
async fn tool_failed_after_its_retries() {
    let flaky = Arc::new(Flaky::new("lookup", 100));
    let model = Arc::new(Scripted::texts(&[
        &action("lookup", json!({"q": "x"})),
        &final_answer(false, "down"),
    ]));
    let report = Agent::builder_shared(model)
        .policy(strict())
        .tool(flaky.clone())
        .build()
        .unwrap()
        .run("q")
        .await
        .unwrap();
    let step = &report.steps[0];
    assert_eq!((step.outcome, step.attempts), (StepOutcome::Failed, 2));
    assert_eq!(step.attempt_errors.len(), 2);
    assert!(step.attempt_errors[0].delay_ms.is_some());
    assert_eq!(report.usage.tool_retries, 1);
    assert_eq!(report.corrections[0].category, Category::ToolFailed);
}

#[tokio::test]
async fn tool_fatal_ends_the_run_with_its_cause() {
    let mut flaky = Flaky::new("lookup", 100);
    flaky.fatal = true;
    let model = Arc::new(Scripted::texts(&[
        &action("lookup", json!({"q": "x"})),
        &final_answer(true, "x"),
    ]));
    let report = Agent::builder_shared(model)
        .policy(strict())
        .tool(flaky)
        .build()
        .unwrap()
        .run("q")
        .await
        .unwrap();
    assert_eq!(report.stop_reason, StopReason::ToolFatal);
    assert_eq!(report.steps[0].attempts, 1);
    assert!(report.missing.unwrap().contains("credentials revoked"));
}

#[tokio::test]
async fn circuit_open_fails_fast_without_calling_the_tool() {
    let flaky = Arc::new(Flaky::new("lookup", 100));
    let model = Arc::new(Scripted::texts(&[
        &action("lookup", json!({"q": "a"})),
        &action("lookup", json!({"q": "b"})),
        &final_answer(false, "lookup is unavailable"),
    ]));
    let mut policy = strict();
    policy.retry.max_retries = 0;
    let breakers = Arc::new(CircuitBreakers::new(
        BreakerPolicy::new(1, std::time::Duration::from_secs(60)).unwrap(),
    ));
    let report = Agent::builder_shared(model.clone())
        .policy(strict())
        .tool(flaky.clone())
        .policy(policy)
        .breakers(breakers)
        .build()
        .unwrap()
        .run("q")
        .await
        .unwrap();
    assert_eq!(flaky.calls.load(Ordering::SeqCst), 1);
    assert_eq!(report.steps[1].outcome, StepOutcome::CircuitOpen);
    assert_eq!(report.steps[1].attempts, 0);
    assert_eq!(report.corrections[1].category, Category::CircuitOpen);
    assert_eq!(report.breaker_events.len(), 1);
    let told = model.request(2).expect("the model was asked");
    assert!(
        told.messages
            .last()
            .unwrap()
            .content
            .contains("circuit breaker is open")
    );
}

#[tokio::test]
async fn native_broken_arguments_are_corrected_through_the_call_id() {
    let model = Arc::new(Scripted::script(vec![
        Ok(calls(&[("call_1", "calculator", "{\"expression\": ")])),
        Ok(calls(&[(
            "call_2",
            "calculator",
            "{\"expression\": \"2*(3+4)\"}",
        )])),
        Ok(calls(&[(
            "call_3",
            "final_answer",
            "{\"satisfied\": true, \"final_summary\": \"14\"}",
        )])),
    ]));
    let report = agent(model.clone())
        .protocol(Protocol::Native)
        .build()
        .unwrap()
        .run("What is 2*(3+4)?")
        .await
        .unwrap();
    assert!(report.satisfied);
    assert_eq!(report.corrections[0].category, Category::InvalidJson);
    let second = model.request(1).expect("the model was asked");
    assert!(second.tools.iter().any(|t| t.name == "final_answer"));
    let feedback = second.messages.last().unwrap();
    assert_eq!(feedback.tool_call_id.as_deref(), Some("call_1"));
    assert!(feedback.is_error);
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Answer {
    value: i64,
}

#[tokio::test]
async fn a_typed_output_rejects_a_summary_that_does_not_match_and_keeps_the_parsed_value() {
    let model = Arc::new(Scripted::texts(&[
        &final_answer(true, "fourteen"),
        &final_answer(true, "{\"value\": 14}"),
    ]));
    let report = agent(model)
        .output::<Answer>()
        .build()
        .unwrap()
        .run("What is 2*(3+4)?")
        .await
        .unwrap();
    let c = &report.corrections[0];
    assert_eq!((c.category, c.corrected), (Category::OutputRejected, true));
    assert!(c.error.starts_with("final_summary"), "{}", c.error);
    assert_eq!(report.output, Some(json!({"value": 14})));
}

#[tokio::test]
async fn our_own_feedback_repeated_back_is_an_echo_and_never_satisfied() {
    let model = Arc::new(Scripted::texts(&[
        "",
        &final_answer(
            true,
            "Your previous reply was rejected (empty_response; correction 1 of 2). Reply again \
             with one corrected decision.",
        ),
        &action("calculator", json!({"expression": "1234 * 5678"})),
        &final_answer(true, "1234 * 5678 is 7006652."),
    ]));
    let report = agent(model)
        .policy(Policy::default())
        .build()
        .unwrap()
        .run("What is 1234 * 5678? Use the calculator.")
        .await
        .unwrap();
    let categories: Vec<Category> = report.corrections.iter().map(|c| c.category).collect();
    assert_eq!(categories, [Category::EmptyResponse, Category::Echo]);
    let echo = &report.corrections[1];
    assert!(
        echo.error
            .contains("`your previous reply was rejected empty response correction`"),
        "{}",
        echo.error
    );
    assert!(report.satisfied);
    assert_eq!(
        report.final_summary.as_deref(),
        Some("1234 * 5678 is 7006652.")
    );
}

#[tokio::test]
async fn the_budget_message_repeated_back_is_never_a_success() {
    let parroted = final_answer(
        true,
        "The run's budget of 1 tool actions is spent, so no tool can run any more.",
    );
    let model = Arc::new(Scripted::texts(&[
        &action("calculator", json!({"expression": "1 + 1"})),
        &action("calculator", json!({"expression": "2 + 2"})),
        &parroted,
        &parroted,
        &parroted,
    ]));
    let mut policy = Policy::default();
    policy.limits.max_actions = 1;
    let report = agent(model)
        .policy(policy)
        .build()
        .unwrap()
        .run("Add 1 and 1, then 2 and 2.")
        .await
        .unwrap();
    assert!(!report.satisfied);
    assert!(
        report
            .corrections
            .iter()
            .any(|c| c.category == Category::Echo),
        "{:?}",
        report.corrections
    );
}

#[tokio::test]
async fn an_idempotent_call_returning_the_same_result_again_is_marked_and_a_fifth_is_corrected() {
    let calc = Arc::new(Calc::new());
    let same = action("calculator", json!({"expression": "2*(3+4)"}));
    let model = Arc::new(Scripted::texts(&[
        &same,
        &same,
        &same,
        &same,
        &same,
        &final_answer(true, "14"),
    ]));
    let report = Agent::builder_shared(model.clone())
        .policy(Policy::default())
        .tool(calc.clone())
        .build()
        .unwrap()
        .run("What is 2*(3+4)?")
        .await
        .unwrap();
    assert_eq!(
        calc.calls.load(Ordering::SeqCst),
        4,
        "the fifth call never ran"
    );
    let same_result: Vec<bool> = report.steps.iter().map(|s| s.same_result).collect();
    assert_eq!(same_result, [false, true, true, true]);
    let third = &model.request(2).expect("the model was asked").messages;
    let result = &third.last().unwrap().content;
    assert!(
        result.contains("14") && result.contains("the same result as this exact call"),
        "{result}"
    );
    let c = &report.corrections[0];
    assert_eq!(
        (c.category, c.step, c.corrected),
        (Category::RepeatedAction, 5, true)
    );
    assert!(c.error.contains("already succeeded") && c.error.contains("14"));
    assert!(report.satisfied);
}

#[tokio::test]
async fn an_idempotent_call_whose_answer_changed_runs_again() {
    let flaky = Arc::new(Polled::default());
    let same = action("status", json!({"q": "job 7"}));
    let model = Arc::new(Scripted::texts(&[
        &same,
        &same,
        &same,
        &same,
        &same,
        &same,
        &final_answer(true, "done"),
    ]));
    let report = Agent::builder_shared(model)
        .policy(Policy::default())
        .tool(flaky.clone())
        .build()
        .unwrap()
        .run("Wait for job 7.")
        .await
        .unwrap();
    assert_eq!(flaky.calls.load(Ordering::SeqCst), 6);
    assert!(report.steps.iter().all(|s| !s.same_result));
    assert!(report.corrections.is_empty(), "{:?}", report.corrections);
}

/// A job status that changes on every call.
#[derive(Default)]
struct Polled {
    calls: std::sync::atomic::AtomicU32,
}

#[async_trait::async_trait]
impl corrigible::Tool for Polled {
    fn name(&self) -> &str {
        "status"
    }
    fn description(&self) -> &str {
        "A job's status."
    }
    fn input_schema(&self) -> serde_json::Value {
        json!({"type": "object"})
    }
    async fn call(
        &self,
        _input: serde_json::Value,
        _ctx: &corrigible::ToolContext,
    ) -> corrigible::ToolOutcome {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        corrigible::ToolOutcome::Ok(json!({"polls": n}))
    }
}
