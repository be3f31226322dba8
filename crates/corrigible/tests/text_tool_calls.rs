//! Tool calls written as text under the native protocol: executed when unambiguous, sent back
//! otherwise, never accepted as a satisfied final answer.

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use common::*;
use corrigible::decision::parse_text_call;
use corrigible::decision::repair::RepairKind;
use corrigible::trace::StopReason;
use corrigible::{Agent, Category, Policy, Protocol, Role, RunReport};

async fn run(model: Arc<Scripted>, calc: Arc<Calc>, policy: Policy) -> RunReport {
    Agent::builder_shared(model)
        .tool(calc)
        .protocol(Protocol::Native)
        .policy(policy)
        .build()
        .unwrap()
        .run("What is 2*(3+4)?")
        .await
        .unwrap()
}

fn final_call(id: &str, summary: &str) -> corrigible::ModelReply {
    calls(&[(
        id,
        "final_answer",
        &format!("{{\"satisfied\": true, \"final_summary\": \"{summary}\"}}"),
    )])
}

#[tokio::test]
async fn one_call_written_as_text_is_executed_and_recorded_as_a_repair() {
    let calc = Arc::new(Calc::new());
    let model = Arc::new(Scripted::script(vec![
        Ok(text(
            r#"{{"name": "calculator", "arguments": {"expression": "2*(3+4)"}}}"#,
        )),
        Ok(final_call("call_9", "14")),
    ]));
    let report = run(model.clone(), calc.clone(), Policy::default()).await;
    assert_eq!(calc.calls.load(Ordering::SeqCst), 1);
    assert!(report.satisfied);
    assert_eq!(report.final_summary.as_deref(), Some("14"));
    assert!(report.corrections.is_empty(), "{:?}", report.corrections);
    let repairs: Vec<RepairKind> = report.repairs.iter().map(|r| r.kind).collect();
    assert_eq!(repairs, [RepairKind::TextToolCall]);
    let result = model
        .request(1)
        .expect("the model was asked")
        .messages
        .last()
        .cloned()
        .unwrap();
    assert_eq!(result.role, Role::User);
    assert!(result.content.contains("14"), "{}", result.content);
}

#[tokio::test]
async fn a_call_fenced_after_its_plan_is_executed_not_taken_as_the_answer() {
    let calc = Arc::new(Calc::new());
    let model = Arc::new(Scripted::script(vec![
        Ok(text(
            "First I work out 2*(3+4) with the calculator.\n\n```json\n{\"name\": \
             \"calculator\", \"arguments\": {\"expression\": \"2*(3+4)\"}}\n```",
        )),
        Ok(final_call("call_2", "14")),
    ]));
    let report = run(model, calc.clone(), Policy::default()).await;
    assert_eq!(calc.calls.load(Ordering::SeqCst), 1);
    assert_eq!(report.final_summary.as_deref(), Some("14"));
    let repairs: Vec<RepairKind> = report.repairs.iter().map(|r| r.kind).collect();
    assert_eq!(repairs, [RepairKind::TextToolCall]);
}

#[tokio::test]
async fn a_text_answer_that_mentions_a_tool_stays_the_final_answer() {
    let calc = Arc::new(Calc::new());
    let answer = r#"I used the calculator: {"expression": "2*(3+4)"} gives 14."#;
    let model = Arc::new(Scripted::texts(&[answer]));
    let report = run(model, calc.clone(), Policy::default()).await;
    assert_eq!(calc.calls.load(Ordering::SeqCst), 0);
    assert!(report.satisfied);
    assert_eq!(report.final_summary.as_deref(), Some(answer));
    assert!(report.repairs.is_empty());
}

#[tokio::test]
async fn two_calls_written_as_text_are_sent_back() {
    let calc = Arc::new(Calc::new());
    let two = "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"2*3\"}}\n\
               </tool_call>\n<tool_call>\n{\"name\": \"calculator\", \"arguments\": \
               {\"expression\": \"3+4\"}}\n</tool_call>";
    let model = Arc::new(Scripted::script(vec![
        Ok(text(two)),
        Ok(final_call("call_1", "14")),
    ]));
    let report = run(model.clone(), calc.clone(), Policy::default()).await;
    assert_eq!(calc.calls.load(Ordering::SeqCst), 0);
    assert_eq!(report.corrections[0].category, Category::DecisionSchema);
    let feedback = model
        .request(1)
        .expect("the model was asked")
        .messages
        .last()
        .cloned()
        .unwrap();
    assert!(
        feedback.content.contains("tool-calling interface"),
        "{}",
        feedback.content
    );
    assert!(report.satisfied);
}

#[tokio::test]
async fn with_repair_off_the_call_is_sent_back_and_the_round_forces_its_tool() {
    let calc = Arc::new(Calc::new());
    let model = Arc::new(Scripted::script(vec![
        Ok(text(
            "<tool_call>{\"name\": \"calculator\", \"arguments\": {\"expression\": \"2*(3+4)\"}}</tool_call>",
        )),
        Ok(text("Never mind, 14.")),
    ]));
    let policy = Policy {
        repair: false,
        ..Policy::default()
    };
    let report = run(model.clone(), calc.clone(), policy).await;
    assert_eq!(calc.calls.load(Ordering::SeqCst), 0);
    let c = &report.corrections[0];
    assert_eq!(c.category, Category::InvalidToolInput);
    let correction = model
        .request(1)
        .expect("the model was asked")
        .correction
        .unwrap();
    assert_eq!(correction.tool.as_deref(), Some("calculator"));
    assert_eq!(report.stop_reason, StopReason::Final);
}

#[tokio::test]
async fn a_text_call_of_an_unknown_tool_is_never_a_satisfied_final() {
    let calc = Arc::new(Calc::new());
    let unknown = "<tool_call>{\"name\": \"teleport\", \"arguments\": {}}</tool_call>";
    let model = Arc::new(Scripted::texts(&[unknown, unknown, unknown, unknown]));
    let report = run(model, calc, Policy::default()).await;
    assert!(!report.satisfied);
    assert_eq!(report.stop_reason, StopReason::CorrectionsExhausted);
    assert!(
        report
            .corrections
            .iter()
            .all(|c| c.category == Category::UnknownTool)
    );
}

/// Every trajectory of the correct-trajectory corpus (corrigible-bench's `data/correct/`): its
/// final answer must stay an answer (no false rejection), and each of its calls, written as a
/// bare JSON call, must be recognized as exactly that call.
#[test]
fn the_correct_corpus_has_no_false_rejection() {
    let files = corrigible_bench::correct::trajectory::BUILTIN;
    let (mut answers, mut calls) = (0, 0);
    for (file, text) in files {
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let t: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}"));
            if !t["mistake"].is_null() {
                continue;
            }
            let mut tools: Vec<String> = t["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .chain(
                    t["functions"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|f| &f["name"]),
                )
                .filter_map(|v| v.as_str().map(String::from))
                .collect();
            tools.push("final_answer".into());
            let tools: Vec<&str> = tools.iter().map(String::as_str).collect();
            let answer = t["answer"].as_str().unwrap_or_default();
            assert!(
                parse_text_call(answer, &tools, true).is_none(),
                "{file} {}: the answer {answer:?} was taken as a call",
                t["id"]
            );
            answers += 1;
            for step in t["steps"].as_array().into_iter().flatten() {
                let written = serde_json::json!({"name": step["tool"], "arguments": step["input"]});
                let parsed = parse_text_call(&written.to_string(), &tools, true)
                    .unwrap_or_else(|| panic!("{written} not recognized"));
                match parsed.decision {
                    Ok(corrigible::Decision::Action(a)) => {
                        assert_eq!(
                            (a.tool.as_str(), &a.input),
                            (step["tool"].as_str().unwrap_or_default(), &step["input"])
                        );
                    }
                    other => panic!("{written}: {other:?}"),
                }
                calls += 1;
            }
        }
    }
    let names = files.map(|(name, _)| name);
    assert!(answers >= 1000, "{answers} answers in {names:?}");
    eprintln!("{answers} answers stay answers, {calls} calls written as text recognized");
}
