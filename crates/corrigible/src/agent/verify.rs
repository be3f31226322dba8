use std::time::Instant;

use super::execute::result_text;
use super::run::Run;
use crate::correction::rejection::{Category, Rejection};
use crate::decision::{Decision, Final, parse_native, parse_text};
use crate::model::{ModelRequest, Protocol};
use crate::stage::Stage;
use crate::trace::{CheckedComparison, VerificationRecord};
use crate::verify::objection::comparisons_in;
use crate::verify::proof::{Evidence, prove};
use crate::verify::request::{REPORT, evidence_text, messages, report_spec};
use crate::verify::{Comparison, ObjectionKind, Proven, Source};

impl Run<'_> {
    /// Has a satisfied final answer that rests on tool results verified, when the agent has a
    /// verifier and the run's verifications are not spent: the first comparison the run's
    /// text proves wrong comes back as a `verifier_objection`. An answer given again unchanged
    /// after an objection is accepted.
    pub(crate) async fn verify(
        &mut self,
        step: u32,
        stage: &Stage,
        decision: Decision,
    ) -> Result<Decision, Rejection> {
        let Decision::Final(answer) = &decision else {
            return Ok(decision);
        };
        let Some(verifier) = self.agent.verifier.clone() else {
            return Ok(decision);
        };
        let summary = answer.summary.trim();
        if !answer.satisfied
            || self.state.results.is_empty()
            || self.state.verifications >= verifier.max_per_run
            || self.state.objected.iter().any(|s| s == summary)
        {
            return Ok(decision);
        }
        self.state.verifications += 1;
        let (model, protocol) = verifier
            .model
            .clone()
            .unwrap_or_else(|| (self.model.clone(), self.agent.protocol));
        let results: Vec<(String, String)> = self
            .state
            .results
            .iter()
            .map(|s| (s.tool.clone(), result_text(&s.output)))
            .collect();
        let request = ModelRequest {
            stage: *stage,
            messages: messages(
                protocol,
                evidence_text(&self.request, &results, &answer.summary),
            ),
            tools: vec![report_spec()],
            protocol,
            correction: None,
            grounds: Default::default(),
        };
        let started = Instant::now();
        let reply = model.complete(&request).await;
        let mut record = VerificationRecord {
            step,
            stage: *stage,
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
            request: &self.request,
            results: &results,
            answer: &answer.summary,
        };
        let mut sent = None;
        for comparison in comparisons {
            let ruling = prove(&comparison, &evidence);
            if sent.is_none()
                && let Ok(proven) = &ruling
            {
                sent = Some(objection_message(&comparison, proven));
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
        record.objected = sent.is_some();
        self.rec.verification(record);
        match sent {
            Some(message) => {
                self.state.objected.push(summary.to_string());
                Err(Rejection::new(Category::VerifierObjection, message))
            }
            None => Ok(decision),
        }
    }
}

/// The reason and comparisons of the verifier's reply, or `None` when it is no report. A final
/// answer instead of a report accepts.
fn report_of(
    reply: &crate::model::ModelReply,
    protocol: Protocol,
) -> Option<(Option<String>, Vec<Comparison>)> {
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
