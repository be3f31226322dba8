//! One test per bound, each asserting the run report fields that prove it.

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::*;
use corrigible::context::ContextBudget;
use corrigible::policy::{Backoff, BreakerPolicy, BreakerState, CircuitBreakers, Jitter};
use corrigible::trace::{StepOutcome, StopReason};
use corrigible::{
    Agent, Allowed, Category, CorrectionContext, ModelError, Policy, Protocol, RunError,
    RunOptions, Stage, ToolPolicy,
};
use serde_json::json;

#[tokio::test]
async fn two_failed_corrections_end_the_slot_with_no_further_model_call() {
    let model = Arc::new(Scripted::texts(&[
        "nope",
        "still nope",
        "{\"state\": 1}",
        &final_answer(true, "never asked"),
    ]));
    let report = Agent::builder_shared(model.clone())
        .policy(strict())
        .tool(Calc::new())
        .build()
        .unwrap()
        .run("x")
        .await
        .unwrap();
    assert!(!report.satisfied);
    assert_eq!(report.stop_reason, StopReason::CorrectionsExhausted);
    assert_eq!(report.missing.as_deref(), Some("valid decision"));
    assert_eq!(report.final_summary, None);
    assert_eq!(report.usage.model_calls, 3);
    assert_eq!(model.remaining(), 1);
    let rows: Vec<(u32, Stage, Category, bool)> = report
        .corrections
        .iter()
        .map(|c| (c.attempt, c.stage, c.category, c.corrected))
        .collect();
    assert_eq!(
        rows,
        [
            (1, Stage::new(1, 0), Category::InvalidJson, false),
            (2, Stage::new(1, 1), Category::InvalidJson, false),
            (3, Stage::new(1, 2), Category::DecisionSchema, false),
        ]
    );
}

#[tokio::test]
async fn max_corrections_is_configurable() {
    let model = Arc::new(Scripted::texts(&["nope", &final_answer(true, "x")]));
    let mut policy = strict();
    policy.limits.max_corrections = 0;
    let report = Agent::builder_shared(model.clone())
        .policy(strict())
        .policy(policy)
        .build()
        .unwrap()
        .run("x")
        .await
        .unwrap();
    assert_eq!(report.stop_reason, StopReason::CorrectionsExhausted);
    assert_eq!(report.usage.model_calls, 1);
}

#[tokio::test]
async fn max_actions_stops_a_model_that_never_finishes() {
    let replies: Vec<String> = (0..20)
        .map(|i| action("calculator", json!({"expression": format!("{i}")})))
        .collect();
    let refs: Vec<&str> = replies.iter().map(String::as_str).collect();
    let model = Arc::new(Scripted::texts(&refs));
    let report = Agent::builder_shared(model.clone())
        .policy(strict())
        .tool(Calc::new())
        .build()
        .unwrap()
        .run("loop")
        .await
        .unwrap();
    assert_eq!(report.stop_reason, StopReason::MaxActions);
    assert_eq!(report.steps.len(), 8);
    assert_eq!(
        report.usage.model_calls,
        8 + 1 + 2,
        "eight actions, then one slot for the final answer with its two corrections"
    );
    let categories: Vec<Category> = report.corrections.iter().map(|c| c.category).collect();
    assert_eq!(categories, [Category::ActionBudgetSpent; 3]);
    assert_eq!(report.missing.as_deref(), Some("final decision"));
    assert!(!report.satisfied);
    let requests = model.requests();
    let narrowed: Vec<Allowed> = requests[9..]
        .iter()
        .map(|r| r.correction.as_ref().expect("a correction round").allowed())
        .collect();
    assert_eq!(narrowed, [Allowed::FinalOnly, Allowed::FinalOnly]);
}

#[tokio::test]
async fn a_spent_action_budget_leaves_one_slot_for_the_final_answer() {
    let calc = Arc::new(Calc::new());
    let model = Arc::new(Scripted::texts(&[
        &action("calculator", json!({"expression": "2*(3+4)"})),
        &action("calculator", json!({"expression": "2*(3+4)+1"})),
        &final_answer(true, "It is 14."),
    ]));
    let report = Agent::builder_shared(model.clone())
        .policy(strict())
        .tool(calc.clone())
        .policy(max_actions(1))
        .build()
        .unwrap()
        .run("What is 2*(3+4)?")
        .await
        .unwrap();
    assert_eq!(calc.calls.load(Ordering::SeqCst), 1, "the budget holds");
    assert_eq!(report.stop_reason, StopReason::Final);
    assert!(report.satisfied);
    assert_eq!(report.final_summary.as_deref(), Some("It is 14."));
    let rows: Vec<(Category, bool)> = report
        .corrections
        .iter()
        .map(|c| (c.category, c.corrected))
        .collect();
    assert_eq!(rows, [(Category::ActionBudgetSpent, true)]);
    assert!(
        report.corrections[0]
            .error
            .contains("budget of 1 tool actions is spent")
    );
}

#[tokio::test]
async fn a_model_repeating_a_successful_call_stops_at_the_correction_bound() {
    let calc = Arc::new(Calc::new());
    let same = action("calculator", json!({"expression": "2*(3+4)"}));
    let replies = vec![same.as_str(); 20];
    let model = Arc::new(Scripted::texts(&replies));
    let report = Agent::builder_shared(model.clone())
        .policy(strict())
        .tool(calc.clone())
        .build()
        .unwrap()
        .run("loop")
        .await
        .unwrap();
    assert_eq!(calc.calls.load(Ordering::SeqCst), 1);
    assert_eq!(report.stop_reason, StopReason::CorrectionsExhausted);
    assert_eq!(report.usage.model_calls, 4);
    assert_eq!(model.remaining(), 16);
    let categories: Vec<Category> = report.corrections.iter().map(|c| c.category).collect();
    assert_eq!(categories, [Category::RepeatedAction; 3]);
    assert!(!report.satisfied);
}

#[tokio::test]
async fn past_the_repeat_bound_a_round_may_only_give_the_final_answer() {
    for (max_repeats, spent) in [(1, [false, true]), (0, [true, true])] {
        let same = action("calculator", json!({"expression": "2*(3+4)"}));
        let model = Arc::new(Scripted::texts(&vec![same.as_str(); 20]));
        let mut policy = strict();
        policy.limits.max_repeats = max_repeats;
        let report = Agent::builder_shared(model.clone())
            .tool(Calc::new())
            .policy(policy)
            .build()
            .unwrap()
            .run("loop")
            .await
            .unwrap();
        assert_eq!(report.stop_reason, StopReason::CorrectionsExhausted);
        let requests = model.requests();
        let rounds: Vec<&CorrectionContext> = requests[2..]
            .iter()
            .map(|r| r.correction.as_ref().expect("a correction round"))
            .collect();
        let got: Vec<bool> = rounds.iter().map(|c| c.repeats_spent).collect();
        assert_eq!(got, spent, "max_repeats {max_repeats}");
        for round in rounds.iter().filter(|c| c.repeats_spent) {
            assert_eq!(round.allowed(), Allowed::FinalOnly);
        }
    }
}

#[tokio::test]
async fn parallel_calls_beyond_the_action_budget_do_not_run() {
    let calc = Arc::new(Calc::new());
    let model = Arc::new(Scripted::script(vec![
        Ok(calls(&[
            ("call_1", "calculator", "{\"expression\": \"2*(3+4)\"}"),
            ("call_2", "calculator", "{\"expression\": \"1+1\"}"),
            ("call_3", "calculator", "{\"expression\": \"2+2\"}"),
        ])),
        Ok(calls(&[(
            "call_4",
            "final_answer",
            "{\"satisfied\": true, \"final_summary\": \"14\"}",
        )])),
    ]));
    let report = Agent::builder_shared(model.clone())
        .policy(strict())
        .tool(calc.clone())
        .protocol(Protocol::Native)
        .policy(max_actions(2))
        .build()
        .unwrap()
        .run("What is 2*(3+4)?")
        .await
        .unwrap();
    assert_eq!(calc.calls.load(Ordering::SeqCst), 2);
    assert_eq!(report.steps.len(), 2);
    let categories: Vec<Category> = report.corrections.iter().map(|c| c.category).collect();
    assert_eq!(categories, [Category::ActionBudgetSpent]);
    assert_eq!(report.stop_reason, StopReason::Final);
    assert!(report.satisfied);
}

#[tokio::test]
async fn corrections_do_not_consume_actions() {
    let mut replies = Vec::new();
    for i in 0..3 {
        replies.push("bad".to_string());
        replies.push(action("calculator", json!({"expression": format!("{i}")})));
    }
    replies.push(final_answer(true, "The last result is 2."));
    let refs: Vec<&str> = replies.iter().map(String::as_str).collect();
    let report = Agent::builder_shared(Arc::new(Scripted::texts(&refs)))
        .tool(Calc::new())
        .policy(max_actions(3))
        .build()
        .unwrap()
        .run("x")
        .await
        .unwrap();
    assert_eq!(report.steps.len(), 3);
    assert_eq!(report.usage.corrections, 3);
    assert_eq!(report.stop_reason, StopReason::Final);
    assert!(report.satisfied);
}

fn max_actions(n: u32) -> Policy {
    let mut policy = strict();
    policy.limits.max_actions = n;
    policy
}

fn exact_backoff(retries: u32) -> Policy {
    let mut policy = strict();
    policy.retry.max_retries = retries;
    policy.retry.backoff = Backoff::new(
        Duration::from_millis(500),
        2.0,
        Duration::from_secs(30),
        Jitter::None,
    )
    .unwrap();
    policy
}

#[tokio::test(start_paused = true)]
async fn a_tool_failing_twice_is_recovered_with_two_retries_not_one() {
    for (retries, expected) in [(2, StepOutcome::Ok), (1, StepOutcome::Failed)] {
        let flaky = Arc::new(Flaky::new("lookup", 2));
        let model = Arc::new(Scripted::texts(&[
            &action("lookup", json!({"q": "x"})),
            &final_answer(true, "42"),
            &final_answer(false, "lookup is down"),
        ]));
        let started = tokio::time::Instant::now();
        let report = Agent::builder_shared(model)
            .policy(strict())
            .tool(flaky.clone())
            .policy(exact_backoff(retries))
            .build()
            .unwrap()
            .run("q")
            .await
            .unwrap();
        let step = &report.steps[0];
        assert_eq!(step.outcome, expected, "retries {retries}");
        assert_eq!(step.attempts, retries + 1);
        let delays: Vec<Option<f64>> = step.attempt_errors.iter().map(|a| a.delay_ms).collect();
        if retries == 2 {
            assert_eq!(delays, [Some(500.0), Some(1000.0)]);
            assert_eq!(started.elapsed(), Duration::from_millis(1500));
        } else {
            assert_eq!(delays, [Some(500.0), None]);
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_non_idempotent_tool_is_called_once_after_a_failure() {
    let mut email = Flaky::new("send_email", 1);
    email.idempotent = false;
    let email = Arc::new(email);
    let model = Arc::new(Scripted::texts(&[
        &action("send_email", json!({"q": "hi"})),
        &final_answer(false, "not sent"),
    ]));
    let report = Agent::builder_shared(model)
        .policy(strict())
        .tool(email.clone())
        .policy(exact_backoff(3))
        .build()
        .unwrap()
        .run("q")
        .await
        .unwrap();
    assert_eq!(email.calls.load(Ordering::SeqCst), 1);
    assert_eq!(report.steps[0].attempts, 1);
    assert_eq!(report.steps[0].outcome, StepOutcome::Failed);
}

#[tokio::test(start_paused = true)]
async fn per_tool_retry_override() {
    let flaky = Arc::new(Flaky::new("lookup", 1));
    let model = Arc::new(Scripted::texts(&[
        &action("lookup", json!({"q": "x"})),
        &final_answer(false, "down"),
    ]));
    let report = Agent::builder_shared(model)
        .policy(strict())
        .tool(flaky.clone())
        .policy(exact_backoff(3))
        .tool_policy(
            "lookup",
            ToolPolicy {
                max_retries: Some(0),
                ..Default::default()
            },
        )
        .build()
        .unwrap()
        .run("q")
        .await
        .unwrap();
    assert_eq!(report.steps[0].attempts, 1);
}

#[tokio::test]
async fn usage_limit_on_model_calls_ends_the_run_cleanly() {
    let model = Arc::new(Scripted::texts(&["bad", "bad", &final_answer(true, "x")]));
    let mut policy = strict();
    policy.limits.max_model_calls = Some(2);
    let report = Agent::builder_shared(model)
        .policy(strict())
        .policy(policy)
        .build()
        .unwrap()
        .run("x")
        .await
        .unwrap();
    assert_eq!(report.stop_reason, StopReason::UsageLimit);
    assert_eq!(report.usage.model_calls, 2);
    assert_eq!(
        report.missing.as_deref(),
        Some("max_model_calls reached: 2 spent of 2")
    );
}

#[tokio::test]
async fn usage_limit_on_tokens() {
    let model = Arc::new(Scripted::texts(&["bad", "bad", &final_answer(true, "x")]));
    let mut policy = strict();
    policy.limits.max_tokens = Some(150);
    let report = Agent::builder_shared(model)
        .policy(strict())
        .policy(policy)
        .build()
        .unwrap()
        .run("x")
        .await
        .unwrap();
    assert_eq!(report.stop_reason, StopReason::UsageLimit);
    assert_eq!(report.usage.model_calls, 2);
    assert_eq!(report.usage.input_tokens + report.usage.output_tokens, 220);
}

#[tokio::test]
async fn usage_sums_over_all_rounds() {
    let model = Arc::new(Scripted::texts(&[
        "bad",
        &action("calculator", json!({"expression": "2*(3+4)"})),
        &final_answer(true, "14"),
    ]));
    let report = Agent::builder_shared(model)
        .policy(strict())
        .tool(Calc::new())
        .build()
        .unwrap()
        .run("x")
        .await
        .unwrap();
    assert_eq!(
        (
            report.usage.model_calls,
            report.usage.input_tokens,
            report.usage.output_tokens
        ),
        (3, 300, 30)
    );
    let per_call: u64 = report.model_calls.iter().map(|c| c.input_tokens).sum();
    assert_eq!(per_call, 300);
}

#[tokio::test]
async fn feedback_escapes_untrusted_text_and_repeats_the_request() {
    let model = Arc::new(Scripted::texts(&[
        "<b>oops</b> & </untrusted>",
        &final_answer(true, "ok"),
    ]));
    let agent = Agent::builder_shared(model.clone())
        .policy(strict())
        .build()
        .unwrap();
    agent.run("Is 2 < 3 & 4 > 1?").await.unwrap();
    let second = model.request(1).expect("the model was asked");
    let feedback = &second.messages.last().unwrap().content;
    assert!(
        feedback.contains("<request>Is 2 &lt; 3 &amp; 4 &gt; 1?</request>"),
        "{feedback}"
    );
    assert!(!feedback.contains("<b>oops"), "{feedback}");
    assert!(
        feedback.contains("<untrusted kind=\"rejection\">"),
        "{feedback}"
    );
    let evidence = &second.messages[second.messages.len() - 2];
    assert_eq!(
        evidence.content, "<b>oops</b> & </untrusted>",
        "the rejected reply stays in the history"
    );
}

#[tokio::test]
async fn a_custom_feedback_template_is_used() {
    let model = Arc::new(Scripted::texts(&["bad", &final_answer(true, "ok")]));
    let agent = Agent::builder_shared(model.clone())
        .policy(strict())
        .feedback_template(
            "FIX {{ category }} {{ attempt }}/{{ max_attempts }}: {{ error }} | {{ request }}",
        )
        .build()
        .unwrap();
    agent.run("R").await.unwrap();
    let text = model
        .request(1)
        .expect("the model was asked")
        .messages
        .last()
        .unwrap()
        .content
        .clone();
    assert!(
        text.starts_with("FIX invalid_json 1/2: not valid JSON"),
        "{text}"
    );
    assert!(text.ends_with("| R"), "{text}");
}

#[tokio::test]
async fn a_transport_error_is_not_a_correction() {
    let model = Arc::new(Scripted::script(vec![Err(ModelError::Transport(
        "connection refused".into(),
    ))]));
    let err = Agent::builder_shared(model)
        .policy(strict())
        .build()
        .unwrap()
        .run("x")
        .await
        .unwrap_err();
    assert_eq!(err, RunError::Transport("connection refused".into()));
}

#[tokio::test(start_paused = true)]
async fn breakers_are_shared_across_concurrent_runs() {
    let flaky = Arc::new(Flaky::new("lookup", 100));
    let breakers = Arc::new(CircuitBreakers::new(
        BreakerPolicy::new(2, Duration::from_secs(60)).unwrap(),
    ));
    let mut policy = strict();
    policy.retry.max_retries = 0;
    let make = |q: &str| {
        Arc::new(Scripted::texts(&[
            &action("lookup", json!({"q": q})),
            &action("lookup", json!({"q": format!("{q}2")})),
            &final_answer(false, "down"),
        ]))
    };
    let a = Agent::builder_shared(make("a"))
        .policy(strict())
        .tool(flaky.clone())
        .policy(policy.clone())
        .breakers(breakers.clone())
        .build()
        .unwrap();
    let b = Agent::builder_shared(make("b"))
        .policy(strict())
        .tool(flaky.clone())
        .policy(policy)
        .breakers(breakers.clone())
        .build()
        .unwrap();
    let (ra, rb) = tokio::join!(a.run("q"), b.run("q"));
    let (ra, rb) = (ra.unwrap(), rb.unwrap());
    assert_eq!(
        flaky.calls.load(Ordering::SeqCst),
        2,
        "the breaker opened after two failures, across runs"
    );
    let open: usize = [&ra, &rb]
        .iter()
        .flat_map(|r| &r.steps)
        .filter(|s| s.outcome == StepOutcome::CircuitOpen)
        .count();
    assert_eq!(open, 2);
    assert_eq!(breakers.state("lookup").await, BreakerState::Open);
}

#[tokio::test(start_paused = true)]
async fn a_run_that_overrides_the_policy_applies_its_own_breaker_threshold() {
    let flaky = Arc::new(Flaky::new("lookup", 100));
    let model = Arc::new(Scripted::texts(&[
        &action("lookup", json!({"q": "a"})),
        &action("lookup", json!({"q": "b"})),
        &final_answer(false, "down"),
    ]));
    let agent = Agent::builder_shared(model)
        .tool(flaky.clone())
        .policy(strict())
        .build()
        .unwrap();
    assert_eq!(agent.breakers().policy().threshold(), 5);
    let mut policy = strict();
    policy.retry.max_retries = 0;
    policy.breaker = BreakerPolicy::new(1, Duration::from_secs(60)).unwrap();
    let options = RunOptions {
        policy: Some(policy),
        ..RunOptions::default()
    };
    let report = agent.run_with("q", options).await.unwrap();
    assert_eq!(
        flaky.calls.load(Ordering::SeqCst),
        1,
        "the run's threshold of one failure opened the breaker"
    );
    assert_eq!(report.steps[1].outcome, StepOutcome::CircuitOpen);
    assert_eq!(agent.breakers().state("lookup").await, BreakerState::Open);
}

#[tokio::test]
async fn the_context_budget_trims_old_turns_and_says_so() {
    let mut replies: Vec<String> = (0..6)
        .map(|i| {
            action(
                "calculator",
                json!({"expression": format!("{i} {}", "x".repeat(400))}),
            )
        })
        .collect();
    replies.push(final_answer(true, "the last length is 402"));
    let refs: Vec<&str> = replies.iter().map(String::as_str).collect();
    let model = Arc::new(Scripted::texts(&refs));
    Agent::builder_shared(model.clone())
        .policy(strict())
        .tool(Calc::new())
        .context_budget(ContextBudget { max_tokens: 800 })
        .build()
        .unwrap()
        .run("the request")
        .await
        .unwrap();
    let last = model.request(6).expect("the model was asked");
    let request = last
        .messages
        .iter()
        .find(|m| m.kind == corrigible::MessageKind::Request)
        .unwrap();
    assert!(request.content.starts_with("the request"));
    assert!(
        request.content.contains("context note"),
        "{}",
        request.content
    );
    assert_eq!(last.messages[0].role, corrigible::Role::System);
}

#[tokio::test]
async fn identical_retries_are_counted() {
    let model = Arc::new(Scripted::texts(&[
        "17 * 23 = 310",
        "17 * 23 = 310",
        &final_answer(true, "391"),
    ]));
    let report = Agent::builder_shared(model)
        .policy(strict())
        .build()
        .unwrap()
        .run("17*23?")
        .await
        .unwrap();
    assert_eq!(report.usage.identical_retries, 1);
    assert!(report.model_calls[1].identical_retry);
}
