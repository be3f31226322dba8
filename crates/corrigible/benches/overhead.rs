//! The engine's own cost per run: parsing, validation, feedback, fingerprints and trace, with
//! the replay model in-process and the real calculator tool.
//!
//! Scripted run: "What is 2*(3+4)?" → calculator `{"expr": …}` (rejected: wrong field) →
//! calculator `{"expression": "2*(3+4)"}` → final answer.

use std::sync::Arc;

use corrigible::{Agent, RunOptions};
use corrigible_models::ReplayModel;
use corrigible_tools::Calculator;
use criterion::{Criterion, criterion_group, criterion_main};

const SCRIPT: &str = r#"{"text": "{\"state\":\"action\",\"reason\":\"arithmetic\",\"tool\":\"calculator\",\"tool_input\":{\"expr\":\"2*(3+4)\"}}", "usage": {"input_tokens": 412, "output_tokens": 37}}
{"text": "{\"state\":\"action\",\"reason\":\"fixed the field\",\"tool\":\"calculator\",\"tool_input\":{\"expression\":\"2*(3+4)\"}}", "usage": {"input_tokens": 520, "output_tokens": 38}}
{"text": "{\"state\":\"final\",\"satisfied\":true,\"final_summary\":\"2*(3+4) = 14\"}", "usage": {"input_tokens": 600, "output_tokens": 20}}
"#;

fn overhead(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let replay = ReplayModel::from_str(SCRIPT).expect("script parses");
    let agent = Agent::builder(replay.restarted())
        .typed_tool(Calculator)
        .build()
        .expect("agent builds");

    let check = runtime
        .block_on(agent.run_with(
            "What is 2*(3+4)?",
            RunOptions {
                model: Some(Arc::new(replay.restarted())),
                ..Default::default()
            },
        ))
        .expect("run completes");
    assert!(check.satisfied && check.corrections.len() == 1 && check.steps.len() == 1);

    c.bench_function("overhead/scripted_run_with_one_correction", |b| {
        b.to_async(&runtime).iter(|| {
            let options = RunOptions {
                model: Some(Arc::new(replay.restarted())),
                ..Default::default()
            };
            agent.run_with("What is 2*(3+4)?", options)
        })
    });
}

criterion_group!(benches, overhead);
criterion_main!(benches);
