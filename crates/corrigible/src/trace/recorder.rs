use std::sync::Arc;
use std::time::Instant;

use super::{
    CorrectionRecord, ModelCallRecord, RepairRecord, RunReport, StepOutcome, StepRecord,
    StopReason, TraceEvent, TraceSink, UsageTotals,
};
use crate::correction::rejection::Rejection;
use crate::decision::Decision;
use crate::decision::repair::RepairKind;
use crate::message::Message;
use crate::model::{ModelReply, ModelRequest, Protocol, Usage};
use crate::policy::{BreakerState, BreakerTransition};
use crate::probe::ProtocolReason;
use crate::stage::Stage;

/// How a run ended, as the loop decides it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ending {
    pub satisfied: bool,
    pub final_summary: Option<String>,
    pub missing: Option<String>,
    pub stop_reason: StopReason,
    pub output: Option<serde_json::Value>,
}

/// Builds the run report and emits each event to the sink and to `tracing` as it happens.
pub struct Recorder {
    sink: Arc<dyn TraceSink>,
    report: RunReport,
    started: Instant,
    pending_decision: Vec<usize>,
    pending_tool: Vec<usize>,
    /// The messages of the previous model call, against which the next call's are a delta.
    seen: Vec<Message>,
}

impl Recorder {
    /// Starts recording run `run_id`.
    pub fn new(
        run_id: &str,
        prompt: &str,
        model: &str,
        (protocol, protocol_reason): (Protocol, Option<ProtocolReason>),
        sink: Arc<dyn TraceSink>,
    ) -> Self {
        let report = RunReport {
            run_id: run_id.to_string(),
            satisfied: false,
            final_summary: None,
            missing: None,
            stop_reason: StopReason::Final,
            steps: Vec::new(),
            corrections: Vec::new(),
            repairs: Vec::new(),
            model_calls: Vec::new(),
            usage: UsageTotals::default(),
            breaker_events: Vec::new(),
            verifications: Vec::new(),
            output: None,
            prompt: prompt.to_string(),
            model: model.to_string(),
            protocol: Some(protocol),
            protocol_reason,
            duration_ms: 0.0,
        };
        sink.event(&TraceEvent::RunStarted {
            run_id: run_id.to_string(),
            prompt: prompt.to_string(),
            model: model.to_string(),
            protocol,
            protocol_reason,
        });
        Self {
            sink,
            report,
            started: Instant::now(),
            pending_decision: Vec::new(),
            pending_tool: Vec::new(),
            seen: Vec::new(),
        }
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.report.run_id
    }

    /// The stage of the latest model call.
    pub fn last_stage(&self) -> Option<Stage> {
        self.report.model_calls.last().map(|c| c.stage)
    }

    /// Totals so far.
    pub fn usage(&self) -> UsageTotals {
        self.report.usage
    }

    /// Tokens spent so far.
    pub fn tokens(&self) -> Usage {
        Usage {
            input_tokens: self.report.usage.input_tokens,
            output_tokens: self.report.usage.output_tokens,
        }
    }

    /// Records one model call with its exact request and reply.
    pub(crate) fn model_call(
        &mut self,
        request: &ModelRequest,
        reply: &ModelReply,
        latency_ms: f64,
        identical_retry: bool,
    ) {
        self.sink.exchange(request, reply);
        self.messages(&request.messages);
        let record = ModelCallRecord {
            stage: request.stage,
            latency_ms,
            input_tokens: reply.usage.input_tokens,
            output_tokens: reply.usage.output_tokens,
            prompt_tokens_reused: reply.prompt_tokens_reused,
            transport_retries: reply.transport_retries,
            decoding: reply.decoding.clone(),
            identical_retry,
            reasoning: reply.reasoning.as_ref().map(|r| r.without_blocks()),
        };
        let usage = &mut self.report.usage;
        usage.model_calls += 1;
        usage.input_tokens += record.input_tokens;
        usage.output_tokens += record.output_tokens;
        if identical_retry {
            usage.identical_retries += 1;
        }
        usage.reasoning_tokens += record
            .reasoning
            .as_ref()
            .and_then(|r| r.tokens)
            .unwrap_or(0);
        tracing::debug!(stage = %record.stage, latency_ms, tokens_in = record.input_tokens, tokens_out = record.output_tokens, "model call");
        self.sink.event(&TraceEvent::ModelCall {
            record: record.clone(),
        });
        self.report.model_calls.push(record);
    }

    /// Emits the messages of a model call as a delta on the previous call's, so a trace holds
    /// each message once however long the conversation grows.
    fn messages(&mut self, messages: &[Message]) {
        let event = TraceEvent::messages_after(&mut self.seen, messages);
        self.sink.event(&event);
    }

    /// Records a model call that failed at transport level.
    pub(crate) fn transport_failure(&mut self, error: &str) {
        tracing::error!(error, "model transport failed");
        self.sink.event(&TraceEvent::RunFailed {
            error: error.to_string(),
        });
    }

    /// Records an accepted decision; pending decision rejections count as corrected.
    pub(crate) fn decision(&mut self, step: u32, stage: &Stage, decision: &Decision) {
        for index in std::mem::take(&mut self.pending_decision) {
            self.resolve(index);
        }
        if matches!(decision, Decision::Final(_)) {
            for index in std::mem::take(&mut self.pending_tool) {
                self.resolve(index);
            }
        }
        self.sink.event(&TraceEvent::Decision {
            step,
            stage: *stage,
            decision: decision.to_json(),
        });
    }

    fn resolve(&mut self, index: usize) {
        if let Some(record) = self.report.corrections.get_mut(index) {
            record.corrected = true;
            tracing::info!(stage = %record.stage, category = %record.category, "correction succeeded");
            self.sink.event(&TraceEvent::Corrected { index });
        }
    }

    /// Records a local repair.
    pub(crate) fn repair(&mut self, step: u32, stage: &Stage, kind: RepairKind) {
        let record = RepairRecord {
            step,
            stage: *stage,
            kind,
        };
        tracing::info!(stage = %stage, kind = kind.as_str(), "reply repaired locally");
        self.sink.event(&TraceEvent::Repair {
            record: record.clone(),
        });
        self.report.repairs.push(record);
    }

    /// Records a rejection sent back to the model, and how many more its budget allows when
    /// one bounds it.
    pub(crate) fn rejection(
        &mut self,
        step: u32,
        attempt: u32,
        stage: &Stage,
        rejection: &Rejection,
        left: Option<u32>,
    ) {
        let record = CorrectionRecord {
            step,
            attempt,
            stage: *stage,
            category: rejection.category,
            error: rejection.message.clone(),
            corrected: false,
            tool: rejection.tool.clone(),
            rule: rejection.rule.clone(),
        };
        tracing::warn!(
            corrigible.correction.category = %rejection.category,
            corrigible.correction.slot = i64::from(step),
            corrigible.correction.round = i64::from(stage.correction()),
            corrigible.correction.attempt = i64::from(attempt),
            corrigible.correction.left = left.map(i64::from),
            corrigible.correction.rule = rejection.rule.as_deref(),
            corrigible.correction.tool = rejection.tool.as_deref(),
            error = %rejection.message,
            "correction"
        );
        let index = self.report.corrections.len();
        if rejection.category.is_decision_rejection() {
            self.pending_decision.push(index);
        } else {
            self.pending_tool.push(index);
        }
        self.report.usage.corrections += 1;
        self.sink.event(&TraceEvent::Rejection {
            index,
            record: record.clone(),
        });
        self.report.corrections.push(record);
    }

    /// Records an executed (or breaker-refused) action.
    pub(crate) fn step(&mut self, record: StepRecord, retries: u32) {
        self.report.usage.tool_calls += record.attempts;
        self.report.usage.tool_retries += retries;
        if record.outcome == StepOutcome::Ok {
            for index in std::mem::take(&mut self.pending_tool) {
                self.resolve(index);
            }
        }
        tracing::info!(step = record.step, tool = %record.tool, outcome = record.outcome.as_str(), attempts = record.attempts, "tool call");
        self.sink.event(&TraceEvent::ToolCall {
            record: record.clone(),
        });
        self.report.steps.push(record);
    }

    /// Records a breaker transition.
    /// Records one verification of a satisfied answer; its tokens are counted apart from the
    /// run's own model calls.
    pub(crate) fn verification(&mut self, record: super::VerificationRecord) {
        let usage = &mut self.report.usage;
        usage.verifications += 1;
        usage.verifier_input_tokens += record.input_tokens;
        usage.verifier_output_tokens += record.output_tokens;
        tracing::debug!(
            comparisons = record.comparisons.len(),
            objected = record.objected,
            "verification"
        );
        self.sink.event(&TraceEvent::Verification {
            record: record.clone(),
        });
        self.report.verifications.push(record);
    }

    pub(crate) fn breaker(&mut self, transition: BreakerTransition) {
        match transition.to {
            BreakerState::Open => {
                tracing::warn!(tool = %transition.tool, failures = transition.failures, "circuit opened")
            }
            BreakerState::Closed => tracing::info!(tool = %transition.tool, "circuit closed"),
            BreakerState::HalfOpen => {
                tracing::info!(tool = %transition.tool, "circuit half-open: probing")
            }
        }
        self.sink.event(&TraceEvent::Breaker {
            transition: transition.clone(),
        });
        self.report.breaker_events.push(transition);
    }

    /// Ends the run and returns its report.
    pub(crate) fn finish(mut self, ending: Ending) -> RunReport {
        let report = &mut self.report;
        report.satisfied = ending.satisfied;
        report.final_summary = ending.final_summary;
        report.missing = ending.missing;
        report.stop_reason = ending.stop_reason;
        report.output = ending.output;
        report.duration_ms = self.started.elapsed().as_secs_f64() * 1000.0;
        tracing::info!(
            satisfied = report.satisfied,
            stop_reason = report.stop_reason.as_str(),
            "run finished"
        );
        self.sink.event(&TraceEvent::RunFinished {
            satisfied: report.satisfied,
            stop_reason: report.stop_reason,
            final_summary: report.final_summary.clone(),
            usage: report.usage,
        });
        self.report
    }
}
