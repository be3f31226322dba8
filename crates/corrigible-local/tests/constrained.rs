//! Schema-constrained generation always yields a decision that parses and validates.

mod common;

use corrigible::decision::{SchemaMode, decision_schema, parse_text};
use corrigible::tool::InputValidator;
use corrigible::{Decision, ToolSpec};
use corrigible_local::{Constrain, LocalModel};

const PROMPTS: &[&str] = &[
    "What is 17 * 23?",
    "What time is it in Tokyo right now?",
    "How is the weather in Delhi today?",
];

fn check(model: &LocalModel, tools: Vec<ToolSpec>, prompt: &str, mode: SchemaMode) {
    let request = common::request(prompt, tools.clone());
    let reply = model
        .complete_blocking(&request)
        .expect("the model answers");
    let text = reply.text.expect("a text reply");
    let schema = decision_schema(&tools, mode);
    let validator = InputValidator::new("decision", &schema).expect("schema compiles");
    let value: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("not JSON ({e}) for {prompt:?}: {text}"));
    validator
        .validate(&value)
        .unwrap_or_else(|e| panic!("invalid decision for {prompt:?}: {e}\n{text}"));
    let decision = parse_text(&text, false)
        .decision
        .unwrap_or_else(|r| panic!("rejected for {prompt:?}: {r:?}\n{text}"));
    if let (Decision::Action(action), SchemaMode::Full) = (&decision, mode) {
        let tool = tools
            .iter()
            .find(|t| t.name == action.tool)
            .expect("a registered tool");
        InputValidator::new(&tool.name, &tool.parameters)
            .expect("tool schema compiles")
            .validate(&action.input)
            .unwrap_or_else(|e| panic!("invalid input for {prompt:?}: {e}\n{text}"));
    }
    assert!(reply.usage.output_tokens > 0);
}

#[test]
fn full_schema_for_each_tool_always_validates() {
    let Some(m) = common::model() else { return };
    assert_eq!(m.config().constrain, Constrain::Schema);
    for tool in common::tools() {
        for prompt in PROMPTS {
            check(m, vec![tool.clone()], prompt, SchemaMode::Full);
        }
    }
}

#[test]
fn full_schema_with_all_tools_validates() {
    let Some(m) = common::model() else { return };
    for prompt in PROMPTS {
        check(m, common::tools(), prompt, SchemaMode::Full);
    }
}

#[test]
fn envelope_always_has_the_decision_shape() {
    let Some(m) = common::model_with(|c| c.constrain = Constrain::Envelope) else {
        return;
    };
    for prompt in PROMPTS {
        check(&m, common::tools(), prompt, SchemaMode::Envelope);
    }
}

#[test]
fn replies_report_their_decoding() {
    let Some(m) = common::model() else { return };
    let reply = m
        .complete_blocking(&common::request("What is 2+2?", common::tools()))
        .expect("answers");
    let decoding = reply.decoding.unwrap_or_default();
    assert!(
        decoding == "greedy+schema" || decoding.starts_with("greedy+schema loops_cut="),
        "{decoding}"
    );
    assert!(reply.prompt_tokens_reused.is_some());
}
