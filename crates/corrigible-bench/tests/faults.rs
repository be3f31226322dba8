//! Every fault kind is injected, and the engine either repairs or corrects it.

mod common;

use std::sync::Arc;

use common::{ByPrompt, call};
use corrigible::decision::repair::RepairKind;
use corrigible::{Agent, Category, Model, Policy, Protocol, StopReason};
use corrigible_bench::faults::{FaultKind, FaultyModel, applicable};
use corrigible_tools::Calculator;

const PROMPT: &str = "Add 40 and 2.";
const ACTION: &str =
    r#"{"state":"action","reason":"add","tool":"calculator","tool_input":{"expression":"40+2"}}"#;
const FINAL: &str = r#"{"state":"final","satisfied":true,"final_summary":"40 + 2 = 42"}"#;

/// What the engine should do with each kind on the json protocol.
fn expected(kind: FaultKind) -> Result<RepairKind, &'static [Category]> {
    match kind {
        FaultKind::CodeFence => Ok(RepairKind::CodeFence),
        FaultKind::TrailingComma => Ok(RepairKind::TrailingComma),
        FaultKind::SurroundingProse => Ok(RepairKind::SurroundingProse),
        FaultKind::WrongField => Err(&[Category::DecisionSchema]),
        FaultKind::UnknownTool => Err(&[Category::UnknownTool]),
        FaultKind::Truncated => Err(&[Category::InvalidJson, Category::DecisionSchema]),
        FaultKind::Empty => Err(&[Category::EmptyResponse]),
    }
}

#[tokio::test]
async fn each_kind_is_repaired_or_corrected_on_the_json_protocol() {
    for kind in FaultKind::ALL {
        // The script answers the same action again after a correction, then the final.
        let inner = ByPrompt::texts(&[(PROMPT, &[&[ACTION], &[FINAL]])]);
        let faulty = Arc::new(FaultyModel::scripted(inner, vec![kind]));
        let agent = Agent::builder_shared(faulty.clone() as Arc<dyn Model>)
            .typed_tool(Calculator)
            .policy(Policy::default())
            .build()
            .unwrap();
        let report = agent.run(PROMPT).await.unwrap();
        let injected = faulty.injected();
        assert_eq!(injected.len(), 1, "{kind}: {injected:?}");
        assert_eq!(injected[0].kind, kind);
        assert_eq!(injected[0].stage, "step_1");
        assert_eq!(report.stop_reason, StopReason::Final, "{kind}: {report:?}");
        assert!(report.satisfied, "{kind}");
        assert_eq!(report.steps.len(), 1, "{kind}");
        match expected(kind) {
            Ok(repair) => {
                assert!(
                    report.repairs.iter().any(|r| r.kind == repair),
                    "{kind}: {:?}",
                    report.repairs
                );
                assert!(report.corrections.is_empty(), "{kind}");
                assert_eq!(report.usage.model_calls, 2, "{kind}");
            }
            Err(categories) => {
                assert_eq!(
                    report.corrections.len(),
                    1,
                    "{kind}: {:?}",
                    report.corrections
                );
                let c = &report.corrections[0];
                assert!(categories.contains(&c.category), "{kind}: {c:?}");
                assert!(c.corrected, "{kind}");
                assert_eq!(report.usage.model_calls, 3, "{kind}");
            }
        }
    }
}

#[tokio::test]
async fn one_shot_recovers_from_no_fault_and_repair_only_from_the_repairable_ones() {
    for kind in FaultKind::ALL {
        for (policy, name) in [
            (Policy::one_shot(), "one-shot"),
            (Policy::repair_only(), "repair"),
        ] {
            let inner = ByPrompt::texts(&[(PROMPT, &[&[ACTION], &[FINAL]])]);
            let faulty = Arc::new(FaultyModel::scripted(inner, vec![kind]));
            let agent = Agent::builder_shared(faulty as Arc<dyn Model>)
                .typed_tool(Calculator)
                .policy(policy)
                .build()
                .unwrap();
            let report = agent.run(PROMPT).await.unwrap();
            let recovered = report.stop_reason == StopReason::Final;
            let repairable = expected(kind).is_ok();
            assert_eq!(recovered, name == "repair" && repairable, "{name} {kind}");
        }
    }
}

#[tokio::test]
async fn native_faults_are_corrected() {
    let native = [
        FaultKind::TrailingComma,
        FaultKind::WrongField,
        FaultKind::UnknownTool,
        FaultKind::Truncated,
        FaultKind::Empty,
    ];
    for kind in native {
        let action = call("calculator", r#"{"expression":"40+2"}"#);
        assert!(applicable(&action).contains(&kind), "{kind}");
        let done = call("final_answer", r#"{"satisfied":true,"final_summary":"42"}"#);
        let inner = ByPrompt::replies(vec![(PROMPT, vec![vec![action], vec![done]])]);
        let faulty = Arc::new(FaultyModel::scripted(inner, vec![kind]));
        let agent = Agent::builder_shared(faulty.clone() as Arc<dyn Model>)
            .typed_tool(Calculator)
            .protocol(Protocol::Native)
            .build()
            .unwrap();
        let report = agent.run(PROMPT).await.unwrap();
        assert_eq!(faulty.injected().len(), 1, "{kind}");
        assert_eq!(report.stop_reason, StopReason::Final, "{kind}: {report:?}");
        assert_eq!(report.steps.len(), 1, "{kind}");
        assert!(
            !report.repairs.is_empty() || report.corrections.iter().all(|c| c.corrected),
            "{kind}"
        );
        assert!(
            !report.repairs.is_empty() || !report.corrections.is_empty(),
            "{kind}"
        );
    }
}
