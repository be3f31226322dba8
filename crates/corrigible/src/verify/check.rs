//! One verification of an answer: ask the verifier for its comparisons, then prove or drop
//! each from the evidence. The agent runs it on satisfied answers, the gateway on final text
//! replies after tool results.

use std::time::Instant;

use super::objection::comparisons_in;
use super::proof::{Evidence, prove};
use super::request::{REPORT, evidence_text, messages, report_spec};
use super::{Comparison, ObjectionKind, Proven, Source};
use crate::decision::{Decision, Final, parse_native, parse_text};
use crate::model::{Model, ModelReply, ModelRequest, Protocol};
use crate::stage::Stage;
use crate::trace::{CheckedComparison, VerificationRecord};

/// What one verification found: its record, and the feedback of the first comparison the
/// evidence proves wrong, if any.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The verification as the trace records it.
    pub record: VerificationRecord,
    /// The objection to send back, when one was proven.
    pub objection: Option<String>,
}

/// Asks `model` (spoken to in `protocol`) to set each value of `answer` beside the evidence
/// (the request and the tool results, as `(tool, text)`), then proves or drops each of its
/// comparisons from that evidence. A verifier that fails or answers no report objects to
/// nothing: the record says why.
pub async fn check_answer(
    model: &dyn Model,
    protocol: Protocol,
    step: u32,
    stage: Stage,
    request: &str,
    results: &[(String, String)],
    answer: &str,
) -> Checked {
    let asked = ModelRequest {
        stage,
        messages: messages(protocol, evidence_text(request, results, answer)),
        tools: vec![report_spec()],
        protocol,
        correction: None,
        grounds: Default::default(),
    };
    let started = Instant::now();
    let reply = model.complete(&asked).await;
    let mut record = VerificationRecord {
        step,
        stage,
        model: model.name().to_string(),
        reason: None,
        comparisons: Vec::new(),
        objected: false,
        error: None,
        latency_ms: started.elapsed().as_secs_f64() * 1000.0,
        input_tokens: 0,
        output_tokens: 0,
    };
    let comparisons = match reply {
        Ok(reply) => {
            record.input_tokens = reply.usage.input_tokens;
            record.output_tokens = reply.usage.output_tokens;
            match report_of(&reply, protocol) {
                Some((reason, comparisons)) => {
                    record.reason = reason;
                    comparisons
                }
                None => {
                    record.error = Some("the verifier's reply is not a report".into());
                    Vec::new()
                }
            }
        }
        Err(error) => {
            record.error = Some(error.to_string());
            Vec::new()
        }
    };
    let evidence = Evidence {
        request,
        results,
        answer,
    };
    let mut objection = None;
    for comparison in comparisons {
        let ruling = prove(&comparison, &evidence);
        if objection.is_none()
            && let Ok(proven) = &ruling
        {
            objection = Some(objection_message(&comparison, proven));
        }
        record.comparisons.push(CheckedComparison {
            answer_says: comparison.answer_says,
            quote: comparison.quote,
            source_says: comparison.source_says,
            objection: ruling.as_ref().ok().map(|p| p.kind),
            proven_in: ruling.as_ref().ok().map(|p| p.source.clone()),
            dropped: ruling.err(),
        });
    }
    record.objected = objection.is_some();
    Checked { record, objection }
}

/// The reason and comparisons of the verifier's reply, or `None` when it is no report. A final
/// answer instead of a report accepts.
fn report_of(reply: &ModelReply, protocol: Protocol) -> Option<(Option<String>, Vec<Comparison>)> {
    let text = reply.text.as_deref().unwrap_or("");
    let parsed = match protocol {
        Protocol::Native if !reply.tool_calls.is_empty() => parse_native(reply, true),
        _ => vec![parse_text(text, true)],
    };
    let mut found = None;
    for decision in parsed.into_iter().filter_map(|p| p.decision.ok()) {
        match decision {
            Decision::Action(action) if action.tool == REPORT => {
                let reason = Some(action.reason.clone()).filter(|r| !r.trim().is_empty());
                found = Some((reason, comparisons_in(&action.input)));
                break;
            }
            Decision::Final(Final { summary, .. }) => {
                found = found.or(Some((Some(summary), Vec::new())))
            }
            Decision::Action(_) => {}
        }
    }
    found
}

/// The feedback for a proven objection: the evidence it cites, and leave to keep the answer.
fn objection_message(comparison: &Comparison, proven: &Proven) -> String {
    let keep = "if your answer already accounts for this, give it again unchanged";
    let says = comparison.answer_says.trim();
    let instead = if says.is_empty() {
        "the answer does not state it".to_string()
    } else {
        format!("the answer says {says} instead")
    };
    let source = match &proven.source {
        Source::Request => "the request".to_string(),
        Source::ToolResult { tool } => format!("the result of {tool}"),
        Source::Nowhere => String::new(),
    };
    match proven.kind {
        ObjectionKind::Unsupported => format!(
            "a check of the answer against this run's evidence: the answer says {says}, which \
             neither the request nor any tool result gives, and no single calculation from \
             them yields; take the value from a tool result, or leave it out. But {keep}"
        ),
        ObjectionKind::Contradicts => format!(
            "a check of the answer against this run's evidence: {source} says `{}` ({}), and \
             {instead}; answer again with the value the evidence gives. But {keep}",
            comparison.quote.trim(),
            comparison.source_says.trim()
        ),
    }
}
