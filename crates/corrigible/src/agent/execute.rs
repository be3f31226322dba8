use std::time::Instant;

use tracing::Instrument;

use super::run::{Run, Success, Verdict, stopped};
use crate::correction::fingerprint::fingerprint;
use crate::correction::rejection::{Category, Rejection};
use crate::decision::Action;
use crate::discovery::DESCRIBE_TOOL;
use crate::policy::{BreakerDecision, BreakerState};
use crate::stage::Stage;
use crate::tool::{Tool, ToolContext, ToolOutcome};
use crate::trace::{AttemptRecord, StepOutcome, StepRecord, StopReason, spans};

/// Times an idempotent tool's identical call may return the same result again before a further
/// one is `repeated_action`. BFCL's ground truth makes the same call up to four times (one per
/// value it reads from the same result), and that is correct work.
pub(crate) const MAX_SAME_RESULTS: u32 = 3;

impl Run<'_> {
    /// Executes a validated action: the breaker's gate, the call with its retries, then the
    /// outcome settled into the run (a result for the model, a rejection, or the end).
    pub(crate) async fn act(&mut self, step: u32, action: Action) -> Verdict {
        let name = action.tool.clone();
        let Some(tool) = self.tools.get(&name).cloned() else {
            return Verdict::Rejected(
                Rejection::new(Category::UnknownTool, format!("unknown tool `{name}`"))
                    .with_tool(name),
                action.call_id,
            );
        };
        let print = fingerprint(&name, &action.input);
        let idempotency_key = format!("{}:{}:{:016x}", self.rec.run_id(), step, fnv1a(&print));
        self.budget.act();
        let mut record = StepRecord {
            step,
            tool: name.clone(),
            input: action.input.clone(),
            outcome: StepOutcome::Ok,
            output: None,
            error: None,
            attempts: 0,
            latency_ms: 0.0,
            idempotency_key,
            attempt_errors: Vec::new(),
            same_result: false,
        };
        if let Some(message) = self.breaker_gate(&name).await {
            record.outcome = StepOutcome::CircuitOpen;
            record.error = Some(message.clone());
            self.rec.step(record, 0);
            let rejection =
                Rejection::new(Category::CircuitOpen, message.clone()).with_tool(name.clone());
            self.rec
                .rejection(step, 1, &self.stage_of(step), &rejection, None);
            self.history
                .tool_result(action.call_id.as_deref(), &name, &message, true);
            return Verdict::Executed;
        }
        let started = Instant::now();
        let span = spans::execute_tool(&name, action.call_id.as_deref(), step);
        let outcome = self
            .call(tool.as_ref(), &action, &mut record)
            .instrument(span.clone())
            .await;
        spans::tool_ended(&span, &outcome, record.attempts);
        if self.agent.capture_content {
            spans::tool_content(&span, &action.input, &outcome);
        }
        record.latency_ms = started.elapsed().as_secs_f64() * 1000.0;
        self.settle(action, print, record, outcome)
    }

    /// Asks the tool's circuit breaker for a call; why not, when it is open.
    async fn breaker_gate(&mut self, name: &str) -> Option<String> {
        let (gate, transition) = self.agent.breakers.acquire_under(name, self.breaker).await;
        if let Some(t) = transition {
            self.rec.breaker(t);
        }
        let BreakerDecision::Reject { retry_in } = gate else {
            return None;
        };
        Some(format!(
            "tool `{name}` is unavailable: its circuit breaker is open after repeated failures \
             (next probe in {:.0} s); choose another action, or give a final answer with satisfied false",
            retry_in.as_secs_f64().ceil()
        ))
    }

    /// Calls the tool, retrying a `Failed` outcome with backoff while its retries last and its
    /// breaker stays closed; every attempt is reported to the breaker and to `record`.
    async fn call(
        &mut self,
        tool: &dyn Tool,
        action: &Action,
        record: &mut StepRecord,
    ) -> ToolOutcome {
        let name = &action.tool;
        let breakers = self.agent.breakers.clone();
        let mut delays = self
            .policy
            .retry
            .backoff
            .delays(fnv1a(&record.idempotency_key));
        loop {
            record.attempts += 1;
            let ctx = ToolContext {
                run_id: self.rec.run_id().to_string(),
                step: record.step,
                attempt: record.attempts,
                idempotency_key: record.idempotency_key.clone(),
            };
            let outcome = tool.call(action.input.clone(), &ctx).await;
            let healthy = !matches!(outcome, ToolOutcome::Failed(_) | ToolOutcome::Fatal(_));
            let (state, transition) = breakers.record_under(name, healthy, self.breaker).await;
            if let Some(t) = transition {
                self.rec.breaker(t);
            }
            match outcome {
                ToolOutcome::Failed(error)
                    if self
                        .budget
                        .may_retry(name, tool.idempotent(), record.attempts)
                        && state == BreakerState::Closed =>
                {
                    let delay = delays.next().unwrap_or_default();
                    tracing::info!(
                        corrigible.attempt = i64::from(record.attempts),
                        corrigible.retry_in_ms = spans::int(delay.as_millis() as u64),
                        error = %error,
                        "tool attempt failed, retrying"
                    );
                    record.attempt_errors.push(AttemptRecord {
                        attempt: record.attempts,
                        error,
                        delay_ms: Some(delay.as_secs_f64() * 1000.0),
                    });
                    tokio::time::sleep(delay).await;
                }
                ToolOutcome::Failed(error) => {
                    record.attempt_errors.push(AttemptRecord {
                        attempt: record.attempts,
                        error: error.clone(),
                        delay_ms: None,
                    });
                    return ToolOutcome::Failed(error);
                }
                other => return other,
            }
        }
    }

    /// Records a call's outcome and gives the model its result or error: a `Retry` over the
    /// tool's budget of rejections and a `Fatal` error end the run.
    fn settle(
        &mut self,
        action: Action,
        print: String,
        mut record: StepRecord,
        outcome: ToolOutcome,
    ) -> Verdict {
        let step = record.step;
        let name = action.tool;
        let call_id = action.call_id.as_deref();
        let retried = record.attempts.saturating_sub(1);
        match outcome {
            ToolOutcome::Ok(value) => {
                let mut text = result_text(&value);
                if self.state.results.iter().any(|s| {
                    s.tool == name && s.output == value && fingerprint(&s.tool, &s.input) == print
                }) {
                    *self.state.same_results.entry(print).or_default() += 1;
                    record.same_result = true;
                    text.push_str(
                        " (the same result as this exact call already returned in this run)",
                    );
                }
                if name != DESCRIBE_TOOL {
                    self.state.any_ok = true;
                    self.state.results.push(Success {
                        tool: name.clone(),
                        input: action.input,
                        output: value.clone(),
                    });
                }
                record.output = Some(value);
                self.rec.step(record, retried);
                self.history.tool_result(call_id, &name, &text, false);
                Verdict::Executed
            }
            ToolOutcome::Retry(message) => {
                self.state
                    .failed
                    .insert(print, format!("{name} rejected it: {message}"));
                let counted = self.budget.tool_rejected(&name);
                record.outcome = StepOutcome::Rejected;
                record.error = Some(message.clone());
                self.rec.step(record, retried);
                let rejection =
                    Rejection::new(Category::ToolRejected, message.clone()).with_tool(name.clone());
                let left = counted.allowed.saturating_sub(counted.count);
                self.rec.rejection(
                    step,
                    counted.count,
                    &self.stage_of(step),
                    &rejection,
                    Some(left),
                );
                if counted.over {
                    let (count, allowed) = (counted.count, counted.allowed);
                    return Verdict::Stop(stopped(
                        StopReason::ToolFatal,
                        format!(
                            "tool `{name}` rejected its input {count} time(s), over its budget of {allowed}: {message}"
                        ),
                    ));
                }
                self.history.tool_result(call_id, &name, &message, true);
                Verdict::Executed
            }
            ToolOutcome::Failed(error) => {
                let attempts = record.attempts;
                self.state
                    .failed
                    .insert(print, format!("{name} failed: {error}"));
                let failures = self.budget.tool_failed(&name);
                record.outcome = StepOutcome::Failed;
                record.error = Some(error.clone());
                self.rec.step(record, retried);
                let message = format!("tool `{name}` failed after {attempts} attempt(s): {error}");
                let rejection =
                    Rejection::new(Category::ToolFailed, message.clone()).with_tool(name.clone());
                self.rec
                    .rejection(step, failures, &self.stage_of(step), &rejection, None);
                self.history.tool_result(call_id, &name, &message, true);
                Verdict::Executed
            }
            ToolOutcome::Fatal(error) => {
                record.outcome = StepOutcome::Failed;
                record.error = Some(error.clone());
                self.rec.step(record, retried);
                Verdict::Stop(stopped(
                    StopReason::ToolFatal,
                    format!("tool `{name}` failed fatally: {error}"),
                ))
            }
        }
    }

    /// The stage of the latest model call (the one whose decision is being executed).
    fn stage_of(&self, step: u32) -> Stage {
        self.rec.last_stage().unwrap_or_else(|| Stage::new(step, 0))
    }
}

/// FNV-1a, for short stable keys and jitter seeds.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A tool's result as the model reads it: a string as it is, anything else as JSON.
pub(crate) fn result_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
