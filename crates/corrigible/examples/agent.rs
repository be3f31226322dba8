//! A self-correcting agent in a few lines: the replay model plays a model that first calls the
//! calculator with a wrong field, is corrected, and answers.
//!
//! `cargo run -p corrigible --example agent`

use corrigible::{Agent, Final, Policy, ToolPolicy};
use corrigible_models::ReplayModel;
use corrigible_tools::Calculator;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/replays/correction.jsonl"
    );
    let agent = Agent::builder(ReplayModel::from_file(script)?)
        .typed_tool(Calculator)
        .policy(Policy::default())
        .tool_policy(
            "calculator",
            ToolPolicy {
                max_rejections: Some(1),
                ..Default::default()
            },
        )
        .validator(|answer: &Final| {
            if answer.summary.is_empty() {
                Err("say the result".to_string())
            } else {
                Ok(())
            }
        })
        .build()?;
    let report = agent.run("What is 2*(3+4)?").await?;
    for correction in &report.corrections {
        println!(
            "{}: {} ({}), corrected: {}",
            correction.stage, correction.category, correction.error, correction.corrected
        );
    }
    println!(
        "answer: {}",
        report.final_summary.as_deref().unwrap_or("(none)")
    );
    Ok(())
}
