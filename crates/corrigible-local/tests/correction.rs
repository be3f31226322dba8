//! With `--constrain off` the small model can answer outside the protocol; the engine's loop
//! rejects that reply and sends a correction.

mod common;

use async_trait::async_trait;
use corrigible::decision::parse_text;
use corrigible::{Agent, Category, Model, Tool, ToolContext, ToolOutcome};
use corrigible_local::Constrain;
use serde_json::{Value, json};

struct Calculator;

#[async_trait]
impl Tool for Calculator {
    fn name(&self) -> &str {
        "calculator"
    }

    fn description(&self) -> &str {
        "Evaluates an arithmetic expression."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"expression": {"type": "string"}},
            "required": ["expression"],
            "additionalProperties": false
        })
    }

    async fn call(&self, _input: Value, _ctx: &ToolContext) -> ToolOutcome {
        ToolOutcome::Ok(json!(391))
    }
}

#[test]
fn unconstrained_reply_can_break_the_protocol() {
    let Some(m) = common::model_with(|c| c.constrain = Constrain::Off) else {
        return;
    };
    let reply = m
        .complete_blocking(&common::request("What is 17 * 23?", common::tools()))
        .expect("answers");
    let text = reply.text.unwrap_or_default();
    let rejection = parse_text(&text, true).decision.err();
    assert!(
        matches!(
            rejection.as_ref().map(|r| r.category),
            Some(Category::InvalidJson | Category::DecisionSchema | Category::EmptyResponse)
        ),
        "expected a rejected reply, got {text}"
    );
    assert_eq!(reply.decoding.as_deref(), Some("greedy"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_engine_corrects_an_unconstrained_reply() {
    let Some(m) = common::model_with(|c| c.constrain = Constrain::Off) else {
        return;
    };
    let model: std::sync::Arc<dyn Model> = std::sync::Arc::new(m);
    let agent = Agent::builder_shared(model)
        .tool(Calculator)
        .build()
        .expect("agent builds");
    let report = agent
        .run("What is 17 * 23?")
        .await
        .expect("the run completes");
    let first = report
        .corrections
        .first()
        .expect("the first reply was rejected");
    assert_eq!(first.stage, "step_1");
    assert!(first.category.is_decision_rejection(), "{first:?}");
    assert!(report.usage.model_calls >= 2);
}
