//! A bounded thought before the decision: recorded as reasoning, counted in the output
//! tokens, cut at its bound into a decision that still parses.

mod common;

use corrigible::decision::parse_text;
use corrigible::prompt::SystemPrompt;
use corrigible::{
    Category, CorrectionContext, Message, MessageKind, ModelReply, ModelRequest, Protocol,
};
use corrigible_local::{LocalModel, Think};

const PROBLEM: &str = "A baker makes 24 muffins a day and sells them for $3 each. \
                       How much does she earn in 5 days?";

fn thinking_request(prompt: &str) -> ModelRequest {
    let tools = common::tools();
    let system = SystemPrompt::default()
        .render_for(Protocol::Json, &tools, None, true)
        .expect("renders");
    let mut request = common::request(prompt, tools);
    request.messages[0] = Message::system(system);
    request
}

fn decided(reply: &ModelReply) {
    let text = reply.text.as_deref().expect("a text reply");
    assert!(
        parse_text(text, false).decision.is_ok(),
        "not a decision: {text}"
    );
    assert!(!text.trim_start().starts_with(|c: char| c.is_alphabetic()));
}

fn thinker(think_tokens: usize) -> Option<LocalModel> {
    common::model_with(|c| {
        c.think = Think::Always;
        c.think_tokens = think_tokens;
    })
}

#[test]
fn a_thought_comes_before_the_decision_and_is_counted() {
    let Some(m) = thinker(96) else { return };
    let reply = m
        .complete_blocking(&thinking_request(PROBLEM))
        .expect("answers");
    decided(&reply);
    let reasoning = reply.reasoning.as_ref().expect("the model thought first");
    let tokens = reasoning.tokens.expect("counted") as usize;
    assert!(tokens > 0 && tokens <= 96, "{tokens} tokens");
    assert!(!reasoning.text.contains('{'), "{}", reasoning.text);
    assert_eq!(reasoning.truncated, tokens == 96);
    assert!(reply.usage.output_tokens as usize > tokens);
    let prompt = m
        .tokenizer()
        .encode(
            &m.render(&thinking_request(PROBLEM).messages)
                .expect("renders"),
        )
        .expect("encodes");
    assert_eq!(reply.usage.input_tokens as usize, prompt.len());
}

#[test]
fn a_thought_past_its_bound_is_cut_into_a_valid_decision() {
    let Some(m) = thinker(6) else { return };
    let reply = m
        .complete_blocking(&thinking_request(PROBLEM))
        .expect("answers");
    decided(&reply);
    let reasoning = reply.reasoning.as_ref().expect("the model thought first");
    assert_eq!(reasoning.tokens, Some(6));
    assert!(reasoning.truncated);
}

#[test]
fn no_thought_budget_decides_at_once() {
    let Some(m) = thinker(0) else { return };
    let reply = m
        .complete_blocking(&thinking_request(PROBLEM))
        .expect("answers");
    decided(&reply);
    assert_eq!(reply.reasoning, None);
    assert!(reply.text.as_deref().unwrap_or("").starts_with('{'));
}

#[test]
fn a_correction_round_thinks_about_its_feedback() {
    let Some(m) = thinker(48) else { return };
    let mut request = thinking_request(PROBLEM);
    let rejected = r#"{"state":"action","reason":"math","tool":"calculator","tool_input":{"expression":"24 muffins times 3 dollars times 5 days"}}"#;
    request.messages.push(
        Message::assistant(MessageKind::Reply, rejected, Vec::new()).with_reasoning(Some(
            corrigible::Reasoning::text("She earns 24 muffins times 3 dollars times 5 days."),
        )),
    );
    request.messages.push(Message::user(
        MessageKind::Feedback,
        "The calculator needs digits and operators, such as 17 * 23. Think again about the \
         request, then decide: A baker makes 24 muffins a day and sells them for $3 each. \
         How much does she earn in 5 days?",
    ));
    request.stage = corrigible::Stage::new(1, 1);
    request.correction = Some(CorrectionContext {
        tool: Some("calculator".into()),
        ..CorrectionContext::first_round(Category::InvalidToolInput, rejected)
    });
    let reply = m.complete_blocking(&request).expect("answers");
    decided(&reply);
    assert_ne!(reply.text.as_deref(), Some(rejected));
    let reasoning = reply.reasoning.as_ref().expect("the round thought first");
    assert!(reasoning.tokens.unwrap_or(0) <= 48);
}

#[test]
fn an_earlier_thought_is_shown_before_its_decision_only_to_a_thinker() {
    let (Some(thinking), Some(plain)) = (thinker(4), thinker(0)) else {
        return;
    };
    let action = r#"{"state":"action","reason":"math","tool":"calculator","tool_input":{"expression":"17 * 23"}}"#;
    let thought = "17 * 23 needs the calculator.";
    let with = |reasoning: Option<corrigible::Reasoning>| {
        let mut request = thinking_request("What is 17 * 23?");
        request.messages.push(
            Message::assistant(MessageKind::Reply, action, Vec::new()).with_reasoning(reasoning),
        );
        request.messages.push(Message::user(
            MessageKind::ToolResult,
            r#"<tool_result tool="calculator">391</tool_result>"#,
        ));
        request
    };
    let input = |m: &LocalModel, request: &ModelRequest| {
        m.complete_blocking(request)
            .expect("answers")
            .usage
            .input_tokens as usize
    };
    let shown = input(&thinking, &with(Some(corrigible::Reasoning::text(thought))));
    let bare = input(&thinking, &with(None));
    let thought_tokens = thinking.tokenizer().encode(thought).expect("encodes").len();
    assert!(
        shown >= bare + thought_tokens,
        "{shown} prompt tokens with the thought, {bare} without"
    );
    let hidden = input(&plain, &with(Some(corrigible::Reasoning::text(thought))));
    assert_eq!(hidden, input(&plain, &with(None)));
}

#[test]
fn a_correction_thought_that_repeats_the_rejected_one_is_not_kept() {
    let Some(m) = thinker(8) else { return };
    let rejected = r#"{"state":"final","satisfied":true,"final_summary":"She earns $300."}"#;
    let request = |thought: &str, correction: bool| {
        let mut request = thinking_request(PROBLEM);
        request.messages.push(
            Message::assistant(MessageKind::Reply, rejected, Vec::new())
                .with_reasoning(Some(corrigible::Reasoning::text(thought))),
        );
        request.messages.push(Message::user(
            MessageKind::Feedback,
            "the answer rests on a wrong calculation: `24 * 3 * 5 is 360, not 300`; redo the \
             calculation, then answer again",
        ));
        request.stage = corrigible::Stage::new(1, 1);
        request.correction =
            correction.then(|| CorrectionContext::first_round(Category::WrongArithmetic, rejected));
        request
    };
    let greedy = |thought: &str| {
        m.complete_blocking(&request(thought, false))
            .expect("answers")
            .reasoning
            .expect("a thought")
            .text
    };
    // A thought that greedy decoding writes again after itself, as a small model does.
    let mut thought = "She earns 24 * 3 * 5 dollars.".to_string();
    for _ in 0..4 {
        let next = greedy(&thought);
        if next == thought {
            break;
        }
        thought = next;
    }
    assert_eq!(greedy(&thought), thought, "no thought repeats itself");
    let reply = m
        .complete_blocking(&request(&thought, true))
        .expect("answers");
    decided(&reply);
    let again = reply.reasoning.as_ref().map(|r| r.text.as_str());
    assert_ne!(
        again,
        Some(thought.as_str()),
        "the rejected thought came back"
    );
    let repeated = m.tokenizer().encode(&thought).expect("encodes").len() as u64;
    assert!(
        reply.usage.output_tokens > repeated,
        "the discarded thought is not counted: {} output tokens",
        reply.usage.output_tokens
    );
}

#[test]
fn the_thought_calculator_rewrites_a_wrong_value_before_the_model_goes_on() {
    let copy = "Copy this line exactly, then answer: 17 + 25 = 43";
    let thought = |calculator: bool| {
        let m = common::model_with(|c| {
            c.think = Think::Always;
            c.think_tokens = 40;
            c.thought_calculator = calculator;
        })?;
        let reply = m
            .complete_blocking(&thinking_request(copy))
            .expect("answers");
        decided(&reply);
        Some(reply.reasoning.expect("the model thought first"))
    };
    let Some(checked) = thought(true) else { return };
    assert_eq!(
        checked.recalculated,
        [corrigible::Recalculation {
            expression: "17 + 25".into(),
            stated: "43".into(),
            value: "42".into(),
        }]
    );
    assert!(checked.text.starts_with("17 + 25 = 42"), "{}", checked.text);
    let unchecked = thought(false).expect("the model loads");
    assert!(unchecked.recalculated.is_empty());
    assert!(
        unchecked.text.starts_with("17 + 25 = 43"),
        "{}",
        unchecked.text
    );
}

fn auto_thinker() -> Option<LocalModel> {
    common::model_with(|c| {
        c.think = Think::Auto;
        c.think_tokens = 96;
    })
}

#[test]
fn auto_reasons_first_when_the_first_decision_reaches_for_the_calculator() {
    let Some(m) = auto_thinker() else { return };
    let request = common::request(PROBLEM, common::tools());
    let at_once = m
        .with_think(Think::Off, 0)
        .complete_blocking(&request)
        .expect("answers");
    let first = parse_text(at_once.text.as_deref().unwrap_or(""), false).decision;
    let Ok(corrigible::Decision::Action(call)) = first else {
        panic!("the model no longer reaches for the calculator at once: {at_once:?}")
    };
    assert_eq!(call.tool, "calculator");
    let reply = m.complete_blocking(&request).expect("answers");
    decided(&reply);
    let reasoning = reply.reasoning.as_ref().expect("it reasoned first");
    assert!(reasoning.tokens.is_some_and(|t| t > 0 && t <= 96));
    let label = reply.decoding.as_deref().and_then(|d| d.rsplit(' ').next());
    match label {
        Some("reasoned_first") => assert!(!reasoning.set_aside),
        Some("reasoned_agrees" | "reasoned_kept") => {
            assert!(reasoning.set_aside);
            assert_eq!(reply.text, at_once.text);
        }
        other => panic!("the decoding says how the thought settled: {other:?}"),
    }
    let Ok(corrigible::Decision::Action(after)) =
        parse_text(reply.text.as_deref().unwrap_or(""), false).decision
    else {
        panic!("after reasoning, the decision is held to a calculator call: {reply:?}")
    };
    assert_eq!(after.tool, "calculator");
    assert!(reply.usage.output_tokens > at_once.usage.output_tokens + 1);
}

#[test]
fn auto_decides_at_once_when_no_tool_only_computes_or_a_result_is_in() {
    let Some(m) = auto_thinker() else { return };
    let at_once = m.with_think(Think::Off, 0);
    let lookups: Vec<_> = common::tools()
        .into_iter()
        .filter(|t| !t.computes)
        .collect();
    let mut answered = common::request(PROBLEM, common::tools());
    answered.messages.push(Message::assistant(
        MessageKind::Reply,
        r#"{"state":"action","reason":"earnings","tool":"calculator","tool_input":{"expression":"24 * 3 * 5"}}"#,
        Vec::new(),
    ));
    answered
        .messages
        .push(Message::user(MessageKind::ToolResult, "360"));
    for request in [common::request(PROBLEM, lookups), answered] {
        let reply = m.complete_blocking(&request).expect("answers");
        let expected = at_once.complete_blocking(&request).expect("answers");
        assert_eq!(reply.reasoning, None);
        assert_eq!(reply.text, expected.text);
    }
}
