//! The `bare` policy: the model alone, with no tools and no agent loop, asked to think step by
//! step and end with `Answer: N`, in one call. It is the baseline the agent must match: the
//! same model's own chain of thought.

use std::time::Instant;

use corrigible::trace::{ModelCallRecord, UsageTotals};
use corrigible::{
    Message, Model, ModelError, ModelRequest, Protocol, Reasoning, RunReport, Stage, StopReason,
};

/// What the bare model is asked after the request.
pub const INSTRUCTION: &str = "Think step by step, then give the final answer on a last line \
                               of the form `Answer: N`.";

/// The part of a chain-of-thought reply that answers: from its last `Answer:` on, else its
/// last non-empty line.
pub fn answer_part(text: &str) -> &str {
    let lower = text.to_ascii_lowercase();
    if let Some(at) = lower.rfind("answer:") {
        return text[at..].trim();
    }
    text.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

/// Asks `model` the request `prompt` with [`INSTRUCTION`] in one call, and reports it as a
/// run: the answer part of the reply is the final summary, the whole reply its reasoning.
pub async fn run(model: &dyn Model, run_id: &str, prompt: &str) -> Result<RunReport, ModelError> {
    let stage = Stage::new(1, 0);
    let request = ModelRequest {
        stage,
        messages: vec![Message::request(format!("{prompt}\n{INSTRUCTION}"))],
        tools: Vec::new(),
        protocol: Protocol::Json,
        correction: None,
        grounds: Default::default(),
    };
    let started = Instant::now();
    let reply = model.complete(&request).await?;
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    let text = reply.text.clone().unwrap_or_default();
    let answer = answer_part(&text);
    let record = ModelCallRecord {
        stage,
        latency_ms,
        input_tokens: reply.usage.input_tokens,
        output_tokens: reply.usage.output_tokens,
        prompt_tokens_reused: reply.prompt_tokens_reused,
        transport_retries: reply.transport_retries,
        decoding: reply.decoding.clone(),
        identical_retry: false,
        reasoning: Some(Reasoning {
            tokens: Some(reply.usage.output_tokens),
            ..Reasoning::text(text.trim())
        }),
    };
    let usage = UsageTotals {
        model_calls: 1,
        input_tokens: reply.usage.input_tokens,
        output_tokens: reply.usage.output_tokens,
        reasoning_tokens: reply.usage.output_tokens,
        ..UsageTotals::default()
    };
    Ok(RunReport {
        run_id: run_id.to_string(),
        satisfied: !answer.is_empty(),
        final_summary: Some(answer.to_string()),
        missing: None,
        stop_reason: StopReason::Final,
        steps: Vec::new(),
        corrections: Vec::new(),
        repairs: Vec::new(),
        model_calls: vec![record],
        usage,
        breaker_events: Vec::new(),
        verifications: Vec::new(),
        output: None,
        prompt: prompt.to_string(),
        model: model.name().to_string(),
        protocol: None,
        protocol_reason: None,
        duration_ms: latency_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_part_is_the_last_answer_line_or_the_last_line() {
        assert_eq!(
            answer_part("16 - 3 - 4 = 9\n9 * 2 = 18\nAnswer: 18"),
            "Answer: 18"
        );
        assert_eq!(
            answer_part("answer: 3, no wait\nANSWER: 4 dollars"),
            "ANSWER: 4 dollars"
        );
        assert_eq!(answer_part("so 12 - 9 = 3.\n3 slices\n\n"), "3 slices");
        assert_eq!(answer_part(""), "");
    }
}
