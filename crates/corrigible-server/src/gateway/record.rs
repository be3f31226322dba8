//! A gateway request as a run in the store: its upstream calls, the replies sent back and the
//! local repairs, so it shows on the dashboard and in `GET /v1/runs` beside the agent's runs.

use serde_json::Value;

use super::correct::{Exchange, Outcome};
use super::wire::{ReplyMessage, text_of};
use crate::store::{NewRun, RunEnd};
use corrigible::decision::repair::RepairKind;
use corrigible::trace::{
    CorrectionRecord, ModelCallRecord, RepairRecord, RunReport, StopReason, TraceEvent, UsageTotals,
};
use corrigible::{Message, MessageKind, Protocol, Role, Stage, ToolCall};

/// What the client got, in a line: the text, or the calls.
fn summary(message: &ReplyMessage) -> String {
    if message.tool_calls.is_empty() {
        return message.content.clone().unwrap_or_default();
    }
    message
        .tool_calls
        .iter()
        .map(|c| format!("{}({})", c.function.name, c.function.arguments))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The run report of one request.
pub fn report(
    id: &str,
    prompt: String,
    model: &str,
    exchange: &Exchange,
    duration_ms: f64,
) -> RunReport {
    let corrected = matches!(exchange.outcome, Outcome::Passed(_));
    let corrections: Vec<CorrectionRecord> = exchange
        .corrections
        .iter()
        .enumerate()
        .map(|(i, category)| CorrectionRecord {
            step: 1,
            attempt: i as u32 + 1,
            stage: Stage::new(1, i as u32),
            category: *category,
            error: exchange.feedback.get(i).cloned().unwrap_or_default(),
            corrected: corrected || i + 1 < exchange.corrections.len(),
            tool: None,
            rule: None,
        })
        .collect();
    let last = exchange.calls.len().saturating_sub(1) as u32;
    let (satisfied, final_summary, repairs, stop_reason) = match &exchange.outcome {
        Outcome::Passed(passed) => (
            true,
            Some(summary(&passed.message)),
            passed.repairs.clone(),
            StopReason::Final,
        ),
        Outcome::Spent(_) => (
            false,
            None,
            Vec::<RepairKind>::new(),
            StopReason::CorrectionsExhausted,
        ),
    };
    let model_calls: Vec<ModelCallRecord> = exchange
        .calls
        .iter()
        .enumerate()
        .map(|(i, call)| ModelCallRecord {
            stage: Stage::new(1, i as u32),
            latency_ms: call.latency_ms,
            input_tokens: call.usage.prompt_tokens,
            output_tokens: call.usage.completion_tokens,
            prompt_tokens_reused: None,
            transport_retries: call.retries,
            decoding: None,
            identical_retry: false,
            reasoning: None,
        })
        .collect();
    RunReport {
        run_id: id.to_string(),
        satisfied,
        final_summary,
        missing: None,
        stop_reason,
        steps: Vec::new(),
        usage: UsageTotals {
            model_calls: exchange.calls.len() as u32,
            input_tokens: exchange.usage.prompt_tokens,
            output_tokens: exchange.usage.completion_tokens,
            corrections: corrections.len() as u32,
            verifications: exchange.verifications.len() as u32,
            verifier_input_tokens: exchange.verifications.iter().map(|v| v.input_tokens).sum(),
            verifier_output_tokens: exchange.verifications.iter().map(|v| v.output_tokens).sum(),
            ..UsageTotals::default()
        },
        corrections,
        repairs: repairs
            .into_iter()
            .map(|kind| RepairRecord {
                step: 1,
                stage: Stage::new(1, last),
                kind,
            })
            .collect(),
        model_calls,
        breaker_events: Vec::new(),
        verifications: exchange.verifications.clone(),
        output: None,
        prompt,
        model: model.to_string(),
        protocol: Some(Protocol::Native),
        protocol_reason: None,
        duration_ms,
    }
}

/// The store's row of a request that started at `created_at` and ended with `report`.
pub fn rows(instance: &str, created_at: i64, report: RunReport) -> (NewRun, RunEnd) {
    let run = NewRun {
        id: report.run_id.clone(),
        created_at,
        prompt: report.prompt.clone(),
        model: report.model.clone(),
        protocol: "native".into(),
        owner: instance.to_string(),
    };
    (run, RunEnd::Finished(Box::new(report)))
}

/// The trace of a request as the agent's runs have one, so the dashboard shows it alike: each
/// upstream call with the messages it was sent (as a delta on the previous call's), the
/// replies sent back with their category, the local repairs, the checks, and the end.
pub fn events(report: &RunReport, exchange: &Exchange) -> Vec<TraceEvent> {
    let mut events = vec![TraceEvent::RunStarted {
        run_id: report.run_id.clone(),
        prompt: report.prompt.clone(),
        model: report.model.clone(),
        protocol: Protocol::Native,
        protocol_reason: None,
    }];
    let asked = exchange.calls.first().map_or(0, |c| c.sent.len());
    let mut seen: Vec<Message> = Vec::new();
    for (i, (call, record)) in exchange.calls.iter().zip(&report.model_calls).enumerate() {
        let sent: Vec<Message> = call
            .sent
            .iter()
            .enumerate()
            .map(|(at, m)| message(m, at >= asked))
            .collect();
        events.push(TraceEvent::messages_after(&mut seen, &sent));
        events.push(TraceEvent::ModelCall {
            record: record.clone(),
        });
        if let Some(correction) = report.corrections.get(i) {
            events.push(TraceEvent::Rejection {
                index: i,
                record: correction.clone(),
            });
        }
    }
    for (index, correction) in report.corrections.iter().enumerate() {
        if correction.corrected {
            events.push(TraceEvent::Corrected { index });
        }
    }
    events.extend(report.repairs.iter().map(|record| TraceEvent::Repair {
        record: record.clone(),
    }));
    events.extend(
        report
            .verifications
            .iter()
            .map(|record| TraceEvent::Verification {
                record: record.clone(),
            }),
    );
    events.push(TraceEvent::RunFinished {
        satisfied: report.satisfied,
        stop_reason: report.stop_reason,
        final_summary: report.final_summary.clone(),
        usage: report.usage,
    });
    events
}

/// A Chat Completions message as the trace keeps one; `sent_back` marks what the gateway
/// added after the client's messages (the replies it refused, and its feedback).
fn message(value: &Value, sent_back: bool) -> Message {
    let role = value.get("role").and_then(Value::as_str).unwrap_or("user");
    let content = match value.get("content") {
        None | Some(Value::Null) => String::new(),
        content => text_of(content),
    };
    let (role, kind) = match role {
        "system" | "developer" => (Role::System, MessageKind::System),
        "assistant" => (Role::Assistant, MessageKind::Reply),
        "tool" if sent_back => (Role::Tool, MessageKind::Feedback),
        "tool" => (Role::Tool, MessageKind::ToolResult),
        _ if sent_back => (Role::User, MessageKind::Feedback),
        _ => (Role::User, MessageKind::Request),
    };
    let tool_calls = value
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .map(|call| ToolCall {
                    id: call["id"].as_str().unwrap_or_default().to_string(),
                    name: call["function"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    arguments: call["function"]["arguments"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                })
                .collect()
        })
        .unwrap_or_default();
    Message {
        role,
        content,
        tool_calls,
        tool_call_id: value
            .get("tool_call_id")
            .and_then(Value::as_str)
            .map(str::to_string),
        tool_name: None,
        is_error: false,
        kind,
        reasoning: None,
    }
}
