//! Correction rounds on the real embedded model: each narrowing rule puts the narrowed grammar
//! in force, and the corrected reply never repeats the rejected one.
//!
//! Each test first takes the model's own greedy reply to a conversation, then asks for a
//! correction of exactly that reply on the same conversation: without narrowing and
//! resampling, greedy decoding would give the same reply again.

mod common;

use corrigible::correction::fingerprint::fingerprint;
use corrigible::decision::parse_text;
use corrigible::{
    Allowed, Category, CorrectionContext, CorrectionDetail, Decision, Message, MessageKind,
    ModelReply, ModelRequest, Stage,
};
use std::sync::{Mutex, MutexGuard};

use corrigible_local::{Constrain, LocalModel};

/// The tests take turns, and each starts from a cold cache, so that runs are reproducible.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    let guard = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(model) = common::model() {
        model.reset_cache();
    }
    guard
}

fn ask(model: &LocalModel, request: &ModelRequest) -> ModelReply {
    model.complete_blocking(request).expect("the model answers")
}

fn text(reply: &ModelReply) -> String {
    reply.text.clone().unwrap_or_default()
}

fn correction_of(
    request: &ModelRequest,
    category: Category,
    rejected: &str,
    tool: Option<&str>,
    failed_actions: Vec<String>,
    repeated_in_slot: u32,
) -> ModelRequest {
    let mut corrected = request.clone();
    corrected.stage = Stage::new(1, 1);
    corrected.correction = Some(CorrectionContext {
        tool: tool.map(String::from),
        failed_actions,
        repeated_in_slot,
        repeats_spent: repeated_in_slot >= 2,
        ..CorrectionContext::first_round(category, rejected)
    });
    corrected
}

fn decision(text: &str) -> Decision {
    parse_text(text, false)
        .decision
        .unwrap_or_else(|r| panic!("a narrowed reply parses without repair: {r} in {text}"))
}

fn decoding(reply: &ModelReply) -> String {
    reply.decoding.clone().unwrap_or_default()
}

/// A conversation where the calculator has just failed.
fn after_a_failed_calculation() -> ModelRequest {
    let mut request = common::request("What is 17 * 23?", common::tools());
    request.messages.push(Message::assistant(
        MessageKind::Reply,
        r#"{"state":"action","reason":"multiply","tool":"calculator","tool_input":{"expression":"17 * 23"}}"#,
        Vec::new(),
    ));
    request.messages.push(Message::user(
        MessageKind::ToolResult,
        r#"<tool_result tool="calculator" status="error">the calculator is out of service</tool_result>"#,
    ));
    request
}

#[test]
fn invalid_tool_input_allows_that_tool_with_its_exact_schema_or_a_final() {
    let _turn = serial();
    let Some(base) = common::model() else { return };
    let model = base.with_constrain(Constrain::Off);
    let request = common::request("What is 17 * 23?", common::tools());
    let rejected = text(&ask(&model, &request));
    let correction = correction_of(
        &request,
        Category::InvalidToolInput,
        &rejected,
        Some("calculator"),
        Vec::new(),
        0,
    );
    let reply = ask(&model, &correction);
    assert!(
        decoding(&reply).contains("narrowed=tool_or_final(calculator)"),
        "{}",
        decoding(&reply)
    );
    let corrected = text(&reply);
    assert_ne!(corrected.trim(), rejected.trim());
    match decision(&corrected) {
        Decision::Action(a) => {
            assert_eq!(a.tool, "calculator");
            assert!(a.input["expression"].is_string(), "{}", a.input);
        }
        Decision::Final(_) => {}
    }
}

#[test]
fn unknown_tool_allows_the_registered_tools_only() {
    let _turn = serial();
    let Some(base) = common::model() else { return };
    let model = base.with_constrain(Constrain::Off);
    let request = common::request("What time is it in Tokyo?", common::tools());
    let rejected = text(&ask(&model, &request));
    let correction = correction_of(
        &request,
        Category::UnknownTool,
        &rejected,
        Some("clock"),
        Vec::new(),
        0,
    );
    let reply = ask(&model, &correction);
    assert!(decoding(&reply).contains("+envelope narrowed=any_decision"));
    let corrected = text(&reply);
    assert_ne!(corrected.trim(), rejected.trim());
    if let Decision::Action(a) = decision(&corrected) {
        assert!(["calculator", "time", "weather"].contains(&a.tool.as_str()));
    }
}

fn repeated_failure(model: &LocalModel, repeated_in_slot: u32) -> (String, ModelReply) {
    let request = after_a_failed_calculation();
    let rejected = text(&ask(model, &request));
    let Decision::Action(action) = decision(&rejected) else {
        panic!("expected the model to retry an action after the failure, got {rejected}");
    };
    let correction = correction_of(
        &request,
        Category::RepeatedFailedAction,
        &rejected,
        Some(&action.tool),
        vec![fingerprint(&action.tool, &action.input)],
        repeated_in_slot,
    );
    (rejected, ask(model, &correction))
}

#[test]
fn repeated_failed_action_allows_any_other_action_sampled_with_a_seed() {
    let _turn = serial();
    let Some(model) = common::model() else { return };
    let (rejected, reply) = repeated_failure(model, 1);
    let label = decoding(&reply);
    assert!(
        label.contains("narrowed=actions_except(1)")
            || label.contains("narrowed=tools_except(calculator)"),
        "{label}"
    );
    assert!(label.contains("repeats="), "greedy repeats here: {label}");
    let corrected = text(&reply);
    assert_ne!(corrected.trim(), rejected.trim());
    let Decision::Action(failed) = decision(&rejected) else {
        unreachable!("checked in repeated_failure")
    };
    let allowed = Allowed::ActionsExcept {
        actions: vec![fingerprint(&failed.tool, &failed.input)],
    };
    assert!(allowed.permits(&decision(&corrected)), "{corrected}");
}

/// A correction of the model's own envelope-constrained greedy reply: greedy would repeat it
/// word for word, so the round is sampled.
fn sampled_correction(model: &LocalModel) -> ModelReply {
    let model = model.with_constrain(Constrain::Envelope);
    let request = common::request("What is 17 * 23?", common::tools());
    let rejected = text(&ask(&model, &request));
    let correction = correction_of(
        &request,
        Category::InvalidJson,
        &rejected,
        None,
        Vec::new(),
        0,
    );
    let reply = ask(&model, &correction);
    assert_ne!(text(&reply).trim(), rejected.trim());
    reply
}

#[test]
fn a_sampled_correction_is_reproducible_with_its_seed() {
    let _turn = serial();
    let Some(model) = common::model() else { return };
    let first = sampled_correction(model);
    assert!(
        decoding(&first).starts_with("sampled("),
        "{}",
        decoding(&first)
    );
    assert!(
        decoding(&first).contains("repeats=1"),
        "{}",
        decoding(&first)
    );
    model.reset_cache();
    let again = sampled_correction(model);
    assert_eq!(decoding(&first), decoding(&again));
    assert_eq!(text(&first), text(&again));
    let Some(other) = common::model_with(|c| c.seed = 12345) else {
        return;
    };
    let reseeded = sampled_correction(&other);
    assert_ne!(
        decoding(&first),
        decoding(&reseeded),
        "the seed is in the label"
    );
    other.reset_cache();
    assert_eq!(text(&reseeded), text(&sampled_correction(&other)));
}

#[test]
fn a_correction_without_samples_diverges_from_the_rejected_reply() {
    let _turn = serial();
    let Some(model) = common::model_with(|c| c.correction_samples = 0) else {
        return;
    };
    let model = model.with_constrain(Constrain::Envelope);
    let request = common::request("What is 17 * 23?", common::tools());
    let rejected = text(&ask(&model, &request));
    let correction = correction_of(
        &request,
        Category::InvalidJson,
        &rejected,
        None,
        Vec::new(),
        0,
    );
    let reply = ask(&model, &correction);
    let label = decoding(&reply);
    assert!(
        label.starts_with("greedy+envelope narrowed=any_decision"),
        "{label}"
    );
    assert!(label.contains("repeats=1 diverged_at="), "{label}");
    assert_ne!(text(&reply).trim(), rejected.trim());
    decision(&text(&reply));
}

#[test]
fn a_second_repeated_failure_allows_only_a_final() {
    let _turn = serial();
    let Some(model) = common::model() else { return };
    let (_, reply) = repeated_failure(model, 2);
    assert!(decoding(&reply).contains("narrowed=final_only"));
    assert!(matches!(decision(&text(&reply)), Decision::Final(_)));
}

#[test]
fn a_spent_action_budget_allows_only_a_final() {
    let _turn = serial();
    let Some(model) = common::model() else { return };
    let mut request = common::request("What is 17 * 23?", common::tools());
    let first = r#"{"state":"action","reason":"multiply","tool":"calculator","tool_input":{"expression":"17 * 23"}}"#;
    request
        .messages
        .push(Message::assistant(MessageKind::Reply, first, Vec::new()));
    request.messages.push(Message::user(
        MessageKind::ToolResult,
        r#"<tool_result tool="calculator">391</tool_result>"#,
    ));
    let rejected = r#"{"state":"action","reason":"check","tool":"calculator","tool_input":{"expression":"391 / 23"}}"#;
    let correction = correction_of(
        &request,
        Category::ActionBudgetSpent,
        rejected,
        Some("calculator"),
        Vec::new(),
        0,
    );
    let reply = ask(model, &correction);
    assert!(
        decoding(&reply).contains("narrowed=final_only"),
        "{}",
        decoding(&reply)
    );
    let corrected = text(&reply);
    assert_ne!(corrected.trim(), rejected);
    assert!(
        matches!(decision(&corrected), Decision::Final(_)),
        "{corrected}"
    );
}

#[test]
fn ungrounded_final_allows_an_action_or_an_unsatisfied_final() {
    let _turn = serial();
    let Some(model) = common::model() else { return };
    let request = after_a_failed_calculation();
    let rejected =
        r#"{"state":"final","satisfied":true,"final_summary":"17 * 23 = 391."}"#.to_string();
    let correction = correction_of(
        &request,
        Category::UngroundedFinal,
        &rejected,
        None,
        Vec::new(),
        0,
    );
    let reply = ask(model, &correction);
    assert!(decoding(&reply).contains("narrowed=action_or_unsatisfied_final"));
    let corrected = text(&reply);
    assert_ne!(corrected.trim(), rejected.trim());
    if let Decision::Final(f) = decision(&corrected) {
        assert!(!f.satisfied, "{corrected}");
    }
}

#[test]
fn unstated_result_allows_a_final_that_begins_with_a_fact() {
    let _turn = serial();
    let Some(model) = common::model() else { return };
    let mut request = common::request("What time is it in Dubai?", common::tools());
    request.messages.push(Message::assistant(
        MessageKind::Reply,
        r#"{"state":"action","reason":"clock","tool":"time","tool_input":{"timezone":"Asia/Dubai"}}"#,
        Vec::new(),
    ));
    request.messages.push(Message::user(
        MessageKind::ToolResult,
        r#"<tool_result tool="time">{"time":"16:00","timezone":"Asia/Dubai","utc_offset":"+04:00"}</tool_result>"#,
    ));
    let rejected =
        r#"{"state":"final","satisfied":true,"final_summary":"The time tool knows the time."}"#;
    let mut correction = correction_of(
        &request,
        Category::UnstatedResult,
        rejected,
        None,
        Vec::new(),
        0,
    );
    if let Some(c) = correction.correction.as_mut() {
        c.detail = CorrectionDetail::UnstatedResult {
            facts: vec!["16:00".into(), "+04:00".into()],
        };
    }
    let reply = ask(model, &correction);
    assert!(
        decoding(&reply).contains("narrowed=final_stating(2)"),
        "{}",
        decoding(&reply)
    );
    let corrected = text(&reply);
    assert_ne!(corrected.trim(), rejected);
    if let Decision::Final(f) = decision(&corrected) {
        assert!(
            f.summary.starts_with("16:00") || f.summary.starts_with("+04:00"),
            "{corrected}"
        );
    }

    if let Some(c) = correction.correction.as_mut() {
        c.budget_spent = true;
    }
    let spent = text(&ask(model, &correction));
    let Decision::Final(f) = decision(&spent) else {
        panic!("with the action budget spent, only a final answer: {spent}");
    };
    assert!(
        f.summary.starts_with("16:00") || f.summary.starts_with("+04:00"),
        "{spent}"
    );
}

/// The calculator as the built-in tool declares it: its expression's numbers are grounded.
fn grounded_calculator() -> Vec<corrigible::ToolSpec> {
    let mut tools = common::tools();
    tools[0].grounded = vec![corrigible::GroundedArgument::numbers("expression")];
    tools
}

#[test]
fn ungrounded_argument_allows_an_action_on_the_conversations_numbers() {
    let _turn = serial();
    let Some(model) = common::model() else { return };
    let prompt = "What is the square root of 1764?";
    let mut request = common::request(prompt, grounded_calculator());
    let grounded: Vec<_> = request
        .tools
        .iter()
        .flat_map(|t| t.grounded.clone())
        .collect();
    request.grounds = corrigible::evidence::provenance::Sources::new(prompt, []).grounds(&grounded);
    // Recorded from the bench (calc_05): the model's first call made up 176.4.
    let rejected = r#"{"state":"action","reason":"root","tool":"calculator","tool_input":{"expression":"1764 * 176.4"}}"#;
    let correction = correction_of(
        &request,
        Category::UngroundedArgument,
        rejected,
        Some("calculator"),
        Vec::new(),
        0,
    );
    let reply = ask(model, &correction);
    assert!(
        decoding(&reply).contains("narrowed=action_only"),
        "{}",
        decoding(&reply)
    );
    let corrected = text(&reply);
    assert_ne!(corrected.trim(), rejected);
    let Decision::Action(action) = decision(&corrected) else {
        panic!("only an action is allowed: {corrected}");
    };
    if action.tool == "calculator" {
        let expression = action.input["expression"].as_str().unwrap_or_default();
        for n in corrigible::evidence::numbers::numbers_in(expression) {
            assert_eq!(
                n.abs(),
                1764.0,
                "{expression} holds only the request's number"
            );
        }
    }
}

#[test]
fn a_copied_argument_is_one_of_the_requests_spans() {
    let _turn = serial();
    let Some(model) = common::model() else { return };
    let prompt = "I'm joining a meeting hosted in Tehran. What's the weather there?";
    let mut request = common::request(prompt, common::tools());
    request.tools[2].grounded = vec![corrigible::GroundedArgument::copied("city")];
    let grounded = request.tools[2].grounded.clone();
    request.grounds = corrigible::evidence::provenance::Sources::new(prompt, []).grounds(&grounded);
    let reply = text(&ask(model, &request));
    if let Decision::Action(action) = decision(&reply)
        && action.tool == "weather"
    {
        let city = action.input["city"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(request.grounds.copies.contains(&city), "{city}: {reply}");
    }
}

#[test]
fn uncovered_request_allows_only_a_call_for_the_uncovered_value() {
    let _turn = serial();
    let Some(model) = common::model() else { return };
    let prompt = "How many degrees warmer is Rome than Paris right now?";
    let mut request = common::request(prompt, common::tools());
    request.tools[2].grounded = vec![corrigible::GroundedArgument::copied("city")];
    let rome = serde_json::json!({"city": "Rome"});
    request.messages.push(Message::assistant(
        MessageKind::Reply,
        r#"{"state":"action","reason":"look up Rome","tool":"weather","tool_input":{"city":"Rome"}}"#,
        Vec::new(),
    ));
    request.messages.push(Message::user(
        MessageKind::ToolResult,
        r#"<tool_result tool="weather">{"city":"Rome","temperature_c":12.6}</tool_result>"#,
    ));
    // Recorded from the bench (weather_14): the model answered after looking up Rome alone.
    let rejected =
        r#"{"state":"final","satisfied":true,"final_summary":"12.6 degrees warmer than Paris."}"#;
    let mut correction = correction_of(
        &request,
        Category::UncoveredRequest,
        rejected,
        None,
        Vec::new(),
        0,
    );
    if let Some(c) = correction.correction.as_mut() {
        c.detail = CorrectionDetail::UncoveredRequest {
            tools: vec!["weather".into()],
            done: vec![fingerprint("weather", &rome)],
        };
    }
    correction.grounds.copies = vec!["Paris".into()];
    let reply = ask(model, &correction);
    assert!(
        decoding(&reply).contains("narrowed=cover(weather)"),
        "{}",
        decoding(&reply)
    );
    let corrected = text(&reply);
    let Decision::Action(action) = decision(&corrected) else {
        panic!("only an action is allowed: {corrected}");
    };
    assert_eq!(action.tool, "weather");
    assert_eq!(action.input["city"], "Paris", "{corrected}");
}

#[test]
fn repeated_action_allows_neither_call_made_and_holds_the_numbers() {
    let _turn = serial();
    let Some(model) = common::model() else { return };
    let prompt = "How many degrees warmer is Rome than Paris right now?";
    let mut request = common::request(prompt, grounded_calculator());
    request.tools[2].grounded = vec![corrigible::GroundedArgument::copied("city")];
    let rome = serde_json::json!({"city": "Rome"});
    let paris = serde_json::json!({"city": "Paris"});
    let mut results = Vec::new();
    for (city, celsius) in [("Rome", 12.6), ("Paris", 6.2)] {
        request.messages.push(Message::assistant(
            MessageKind::Reply,
            format!(
                r#"{{"state":"action","reason":"look up {city}","tool":"weather","tool_input":{{"city":"{city}"}}}}"#
            ),
            Vec::new(),
        ));
        let result = serde_json::json!({"city": city, "temperature_c": celsius});
        request.messages.push(Message::user(
            MessageKind::ToolResult,
            format!(r#"<tool_result tool="weather">{result}</tool_result>"#),
        ));
        results.push(result);
    }
    let grounded: Vec<_> = request
        .tools
        .iter()
        .flat_map(|t| t.grounded.clone())
        .collect();
    request.grounds =
        corrigible::evidence::provenance::Sources::new(prompt, &results).grounds(&grounded);
    // Recorded from the bench (weather_14): after both lookups the model asked for Rome again.
    let rejected = r#"{"state":"action","reason":"look up Rome","tool":"weather","tool_input":{"city":"Rome"}}"#;
    let mut correction = correction_of(
        &request,
        Category::RepeatedAction,
        rejected,
        Some("weather"),
        Vec::new(),
        1,
    );
    let done = vec![
        fingerprint("weather", &rome),
        fingerprint("weather", &paris),
    ];
    if let Some(c) = correction.correction.as_mut() {
        c.detail = CorrectionDetail::RepeatedAction { done: done.clone() };
    }
    let reply = ask(model, &correction);
    assert!(
        decoding(&reply).contains("narrowed=actions_except(2)"),
        "{}",
        decoding(&reply)
    );
    let corrected = text(&reply);
    assert_ne!(corrected.trim(), rejected);
    let decided = decision(&corrected);
    assert!(
        Allowed::ActionsExcept { actions: done }.permits(&decided),
        "{corrected}"
    );
    if let Decision::Action(action) = decided
        && action.tool == "calculator"
    {
        let expression = action.input["expression"].as_str().unwrap_or_default();
        for n in corrigible::evidence::numbers::numbers_in(expression) {
            assert!(
                [12.6, 6.2].contains(&n.abs()),
                "{expression} holds only the readings"
            );
        }
    }
}
