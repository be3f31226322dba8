use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use tracing::Instrument;

use super::budget::Budget;
use super::history::History;
use super::{Agent, RunError, RunOptions};
use crate::context::estimate_tokens;
use crate::correction::feedback::Feedback;
use crate::correction::fingerprint::fingerprint;
use crate::correction::rejection::{Category, Rejection};
use crate::correction::{CorrectionContext, CorrectionDetail};
use crate::decision::{
    Decision, Final, Parsed, final_answer_spec, parse_native, parse_text, parse_text_call,
};
use crate::discovery::{DESCRIBE_TOOL, DescribeTool, one_line};
use crate::evidence::coverage::{CoveredCall, Uncovered};
use crate::evidence::provenance::{Grounds, Provenance, Sources};
use crate::model::{Model, ModelError, ModelReply, ModelRequest, Protocol, ToolSpec};
use crate::policy::{BreakerPolicy, Policy};
use crate::stage::Stage;
use crate::tool::ToolRegistry;
use crate::trace::recorder::Ending;
use crate::trace::spans;
use crate::trace::{NullSink, Recorder, RunReport, StopReason};

/// What one run has learned: its successes, failures and the questions already asked.
#[derive(Default)]
pub(crate) struct RunState {
    /// Whether any executed action succeeded.
    pub any_ok: bool,
    /// The actions that succeeded, in order.
    pub results: Vec<Success>,
    /// Fingerprints of failed actions, with their error.
    pub failed: BTreeMap<String, String>,
    /// Fingerprints of calls that returned the same result as an identical earlier call, with
    /// how many times.
    pub same_results: BTreeMap<String, u32>,
    /// Satisfied answers verified so far.
    pub verifications: u32,
    /// Answers a verifier objected to: given again unchanged, they are accepted.
    pub objected: Vec<String>,
}

/// An action that succeeded: the tool, the input it was called with and what it returned.
pub(crate) struct Success {
    pub tool: String,
    pub input: serde_json::Value,
    pub output: serde_json::Value,
}

/// How one decision of a reply was handled.
pub(crate) enum Verdict {
    /// A tool action was executed (or refused by its breaker); the slot is complete.
    Executed,
    /// The decision was rejected: the rejection goes back to the model.
    Rejected(Rejection, Option<String>),
    /// The run is over.
    Stop(Ending),
}

/// How the decisions of one reply were handled.
enum Decided {
    /// A tool action ran (or none was rejected): the slot is complete. Rejections of the
    /// reply's other calls are recorded and cost nothing.
    Executed(Vec<(Rejection, Option<String>)>),
    /// Every decision was rejected: the first goes back to the model.
    Rejected(Vec<(Rejection, Option<String>)>),
    /// The run is over.
    Stop(Ending),
}

/// One run of an agent: the loop ask → parse → validate → verify → correct or execute → record.
pub(crate) struct Run<'a> {
    pub(crate) agent: &'a Agent,
    pub(crate) model: Arc<dyn Model>,
    pub(crate) policy: Policy,
    /// The breaker thresholds this run applies to the agent's shared breaker state: its own
    /// policy's when the run overrides the policy, else the breakers' own.
    pub(crate) breaker: BreakerPolicy,
    pub(crate) tools: ToolRegistry,
    pub(crate) specs: Vec<ToolSpec>,
    pub(crate) rec: Recorder,
    pub(crate) history: History,
    pub(crate) request: String,
    pub(crate) state: RunState,
    pub(crate) budget: Budget,
}

impl<'a> Run<'a> {
    pub(crate) fn start(
        agent: &'a Agent,
        prompt: &str,
        options: RunOptions,
    ) -> Result<Self, RunError> {
        if prompt.trim().is_empty() {
            return Err(RunError::InvalidRequest {
                field: "prompt",
                reason: "must not be empty".into(),
            });
        }
        let tools = match &options.tools {
            None => agent.tools.clone(),
            Some(names) => {
                if let Some(unknown) = names.iter().find(|n| agent.tools.get(n).is_none()) {
                    return Err(RunError::InvalidRequest {
                        field: "tools",
                        reason: format!(
                            "unknown tool `{unknown}`; available tools: {}",
                            agent.tools.names().join(", ")
                        ),
                    });
                }
                agent.tools.filtered(|name| names.iter().any(|n| n == name))
            }
        };
        let model = options.model.unwrap_or_else(|| agent.model.clone());
        let run_id = options
            .run_id
            .unwrap_or_else(|| uuid::Uuid::now_v7().to_string());
        let sink = options.sink.unwrap_or_else(|| Arc::new(NullSink));
        let (tools, brief) = with_discovery(agent, tools, model.as_ref())?;
        let declared = tools.specs();
        let system = agent
            .system
            .render_catalog(
                agent.protocol,
                &declared,
                brief,
                agent.output.as_ref().map(|(schema, _)| schema),
                model.thinks(),
            )
            .map_err(|e| RunError::Template(e.to_string()))?;
        let mut specs = declared;
        if brief && agent.protocol == Protocol::Native {
            specs = specs.into_iter().map(brief_native_spec).collect();
        }
        if agent.protocol == Protocol::Native {
            specs.push(final_answer_spec());
        }
        let rec = Recorder::new(
            &run_id,
            prompt,
            model.name(),
            (agent.protocol, agent.protocol_reason),
            sink,
        );
        let breaker = options
            .policy
            .as_ref()
            .map_or_else(|| agent.breakers.policy(), |p| p.breaker);
        let policy = options.policy.unwrap_or_else(|| agent.policy.clone());
        let budget = Budget::new(&policy);
        Ok(Self {
            agent,
            model,
            policy,
            breaker,
            tools,
            specs,
            rec,
            history: History::new(agent.protocol, system, &agent.examples, prompt),
            request: prompt.to_string(),
            state: RunState::default(),
            budget,
        })
    }

    pub(crate) async fn execute(mut self) -> Result<RunReport, RunError> {
        let span = spans::invoke_agent(self.rec.run_id(), self.model.name());
        async move {
            let mut step = 1;
            loop {
                if let Some(ending) = self.slot(step).await? {
                    return Ok(self.rec.finish(ending));
                }
                step += 1;
            }
        }
        .instrument(span)
        .await
    }

    /// One action slot: asks until a decision is accepted, corrections run out or the run ends.
    /// Once the budget of executed actions is spent, the slot that follows takes only a final
    /// answer (an action is `action_budget_spent`); if none comes, the run stops `max_actions`.
    async fn slot(&mut self, step: u32) -> Result<Option<Ending>, RunError> {
        self.budget.start_slot();
        let mut correction: Option<CorrectionContext> = None;
        let mut rejected_reply: Option<String> = None;
        loop {
            if let Some(ending) = self.budget.stops_asking() {
                return Ok(Some(ending));
            }
            let stage = Stage::new(step, self.budget.round());
            let reply = self
                .ask(&stage, correction.take(), rejected_reply.as_deref())
                .await?;
            let decisions = self.parse(step, &stage, &reply);
            self.history.reply(&reply);
            let reasoning = reply
                .reasoning
                .as_ref()
                .filter(|r| !r.set_aside)
                .map_or("", |r| r.text.as_str());
            let rejections = match self.decide(step, &stage, decisions, reasoning).await {
                Decided::Executed(rejections) => {
                    let attempt = self.budget.free_attempt();
                    for (rejection, call_id) in &rejections {
                        self.reject(step, attempt, &stage, rejection, call_id.as_deref());
                    }
                    return Ok(None);
                }
                Decided::Stop(ending) => return Ok(Some(ending)),
                Decided::Rejected(rejections) => rejections,
            };
            let Some((first, _)) = rejections.first() else {
                return Ok(None);
            };
            let charge = self
                .budget
                .charge(&rejections.iter().map(|(r, _)| r).collect::<Vec<_>>());
            for (rejection, call_id) in &rejections {
                self.reject(step, charge.attempt, &stage, rejection, call_id.as_deref());
            }
            if let Some(ending) = charge.exhausted {
                return Ok(Some(ending));
            }
            if rejections
                .iter()
                .any(|(r, _)| r.category == Category::UncoveredRequest)
            {
                self.budget.ask_coverage();
            }
            let signature = signature(&reply);
            correction = Some(self.correction_context(first, signature.clone()));
            rejected_reply = (!first.category.allows_same_reply()).then_some(signature);
        }
    }

    /// Validates each decision of a reply and executes or concludes the accepted ones.
    async fn decide(
        &mut self,
        step: u32,
        stage: &Stage,
        decisions: Vec<Parsed>,
        reasoning: &str,
    ) -> Decided {
        let mut executed = false;
        let mut rejections = Vec::new();
        for parsed in decisions {
            let call_id = parsed.call_id.clone();
            let checked = match parsed.decision.and_then(|d| self.validate(d, reasoning)) {
                Ok(decision) => self.verify(step, stage, decision).await,
                Err(rejection) => Err(rejection),
            };
            let verdict = match checked {
                Err(rejection) => Verdict::Rejected(rejection, call_id),
                Ok(decision) => {
                    self.rec.decision(step, stage, &decision);
                    match decision {
                        Decision::Action(action) => self.act(step, action).await,
                        Decision::Final(answer) => self.conclude(answer),
                    }
                }
            };
            match verdict {
                Verdict::Executed => executed = true,
                Verdict::Stop(ending) => return Decided::Stop(ending),
                Verdict::Rejected(rejection, call_id) => rejections.push((rejection, call_id)),
            }
        }
        if rejections.is_empty() || executed {
            Decided::Executed(rejections)
        } else {
            Decided::Rejected(rejections)
        }
    }

    /// What the next round corrects: the first rejection, with what the run knows that
    /// narrows the reply it may give.
    fn correction_context(&self, first: &Rejection, rejected_reply: String) -> CorrectionContext {
        let detail = match first.category {
            Category::UncoveredRequest => {
                let (tools, done) = self.cover();
                CorrectionDetail::UncoveredRequest { tools, done }
            }
            Category::RepeatedAction => CorrectionDetail::RepeatedAction { done: self.done() },
            Category::UnstatedResult => CorrectionDetail::UnstatedResult {
                facts: self.facts(),
            },
            Category::UngroundedArgument if self.no_numbers_for(first.tool.as_deref()) => {
                CorrectionDetail::NoNumbersYet
            }
            _ => CorrectionDetail::None,
        };
        CorrectionContext {
            category: first.category,
            rejected_reply,
            tool: first.tool.clone(),
            failed_actions: self.state.failed.keys().cloned().collect(),
            round: self.budget.round(),
            repeated_in_slot: self.budget.repeats(),
            repeats_spent: self.budget.repeats_spent(),
            budget_spent: !self.budget.may_act(),
            detail,
        }
    }

    /// Asks the model, under the context budget.
    async fn ask(
        &mut self,
        stage: &Stage,
        correction: Option<CorrectionContext>,
        rejected_reply: Option<&str>,
    ) -> Result<ModelReply, RunError> {
        let model = self.model.clone();
        let count = |text: &str| {
            model
                .count_tokens(text)
                .unwrap_or_else(|| estimate_tokens(text))
        };
        let request = ModelRequest {
            stage: *stage,
            messages: self.agent.context.fit(&self.history.messages, &count),
            tools: self.specs.clone(),
            protocol: self.agent.protocol,
            grounds: self.grounds(correction.as_ref()),
            correction,
        };
        let started = Instant::now();
        let span = spans::chat(self.model.name(), &stage.to_string());
        let result = self.model.complete(&request).instrument(span.clone()).await;
        let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
        match &result {
            Ok(reply) => {
                spans::answered(&span, self.model.name(), reply);
                if self.agent.capture_content {
                    spans::content(&span, &request.messages, reply);
                }
            }
            Err(error) => spans::failed(&span, error),
        }
        match result {
            Ok(reply) => {
                let identical =
                    rejected_reply.is_some_and(|previous| previous == signature(&reply));
                self.budget.asked(reply.usage);
                self.rec.model_call(&request, &reply, latency_ms, identical);
                Ok(reply)
            }
            Err(ModelError::Transport(message)) => {
                self.rec.transport_failure(&message);
                Err(RunError::Transport(message))
            }
            Err(other) => {
                self.rec.transport_failure(&other.to_string());
                Err(RunError::Model(other))
            }
        }
    }

    /// What the run's grounded arguments may be taken from now.
    pub(crate) fn sources(&self) -> Sources {
        Sources::new(&self.request, self.state.results.iter().map(|s| &s.output))
    }

    /// What the decoder may hold grounded arguments to now; nothing when no tool has one, so
    /// runs without grounded arguments never read their results for it. A round correcting an
    /// `uncovered_request` holds copied arguments to the values the request left uncovered.
    fn grounds(&self, correction: Option<&CorrectionContext>) -> Grounds {
        let mut grounded = self.specs.iter().flat_map(|s| &s.grounded).peekable();
        if grounded.peek().is_none() {
            return Grounds::default();
        }
        let mut grounds = self.sources().grounds(grounded);
        if correction.is_some_and(|c| c.category == Category::UncoveredRequest) {
            let wanted = self.uncovered().copies();
            if !wanted.is_empty() && !grounds.copies.is_empty() {
                grounds.copies = wanted;
            }
        }
        grounds
    }

    /// The tools that take up what the request left out, and the calls already made.
    fn cover(&self) -> (Vec<String>, Vec<String>) {
        let mut tools: Vec<String> = self
            .uncovered()
            .values
            .into_iter()
            .map(|v| v.tool)
            .collect();
        tools.sort();
        tools.dedup();
        (tools, self.done())
    }

    /// Whether `tool` takes only `numbers` grounded arguments and the conversation has no
    /// number to give them.
    fn no_numbers_for(&self, tool: Option<&str>) -> bool {
        let Some(grounded) = tool.map(|t| self.tools.grounded(t)) else {
            return false;
        };
        !grounded.is_empty()
            && grounded.iter().all(|g| g.provenance == Provenance::Numbers)
            && !self.sources().gives_numbers()
    }

    /// Fingerprints of the calls the run already made successfully.
    fn done(&self) -> Vec<String> {
        self.state
            .results
            .iter()
            .map(|s| fingerprint(&s.tool, &s.input))
            .collect()
    }

    /// What the request asks about that the run's successful calls have not taken up.
    pub(crate) fn uncovered(&self) -> Uncovered {
        let calls: Vec<CoveredCall<'_>> = self
            .state
            .results
            .iter()
            .map(|s| CoveredCall {
                tool: &s.tool,
                grounded: self.tools.grounded(&s.tool),
                input: &s.input,
            })
            .collect();
        Uncovered::find(&self.request, &calls)
    }

    /// Parses a reply into decisions and records any local repairs.
    fn parse(&mut self, step: u32, stage: &Stage, reply: &ModelReply) -> Vec<Parsed> {
        let repair = self.policy.repair;
        let text = reply.text.as_deref().unwrap_or("");
        let parsed = match self.agent.protocol {
            Protocol::Json if text.trim().is_empty() && !reply.tool_calls.is_empty() => {
                parse_native(reply, repair)
            }
            Protocol::Json => vec![parse_text(text, repair)],
            Protocol::Native if reply.tool_calls.is_empty() => {
                let tools: Vec<&str> = self.specs.iter().map(|s| s.name.as_str()).collect();
                match parse_text_call(text, &tools, repair) {
                    Some(call) => vec![call],
                    None => parse_native(reply, repair),
                }
            }
            Protocol::Native => parse_native(reply, repair),
        };
        for kind in parsed.iter().flat_map(|p| p.repairs.iter().copied()) {
            self.rec.repair(step, stage, kind);
        }
        parsed
    }

    /// Records a rejection and sends it back as feedback.
    fn reject(
        &mut self,
        step: u32,
        attempt: u32,
        stage: &Stage,
        rejection: &Rejection,
        call_id: Option<&str>,
    ) {
        let max_attempts = self.budget.max_attempts(rejection.category);
        let left = max_attempts.saturating_sub(attempt);
        self.rec
            .rejection(step, attempt, stage, rejection, Some(left));
        let text = self
            .agent
            .feedback
            .render(&Feedback {
                category: rejection.category,
                error: &rejection.message,
                tool_name: rejection.tool.as_deref(),
                attempt,
                max_attempts,
                request: &self.request,
            })
            .unwrap_or_else(|e| format!("{}: {} ({e})", rejection.category, rejection.message));
        let tool = rejection.tool.as_deref().unwrap_or("final_answer");
        self.history.feedback(call_id, tool, &text);
    }

    /// Accepts a valid final answer, or rejects it through the output validators.
    fn conclude(&mut self, answer: Final) -> Verdict {
        let call_id = answer.call_id.clone();
        let mut output = None;
        if let Some((_, validator)) = &self.agent.output {
            let parsed = serde_json::from_str::<serde_json::Value>(&answer.summary)
                .map_err(|e| format!("final_summary: not JSON text: {e}"))
                .and_then(|value| {
                    validator
                        .validate(&value)
                        .map(|_| value)
                        .map_err(|e| e.under("final_summary"))
                });
            match parsed {
                Ok(value) => output = Some(value),
                Err(message) => {
                    return Verdict::Rejected(
                        Rejection::new(Category::OutputRejected, message),
                        call_id,
                    );
                }
            }
        }
        for validator in &self.agent.validators {
            if let Err(message) = validator.validate(&answer) {
                return Verdict::Rejected(
                    Rejection::new(Category::OutputRejected, message),
                    call_id,
                );
            }
        }
        Verdict::Stop(Ending {
            satisfied: answer.satisfied,
            final_summary: Some(answer.summary),
            missing: None,
            stop_reason: StopReason::Final,
            output,
        })
    }
}

/// An ending without a valid final answer.
pub(crate) fn stopped(stop_reason: StopReason, missing: String) -> Ending {
    Ending {
        satisfied: false,
        final_summary: None,
        missing: Some(missing),
        stop_reason,
        output: None,
    }
}

/// What a reply said, for detecting identical retries.
fn signature(reply: &ModelReply) -> String {
    let mut out = reply.text.as_deref().unwrap_or("").trim().to_string();
    for call in &reply.tool_calls {
        out.push_str(&format!("\n{}({})", call.name, call.arguments.trim()));
    }
    out
}

/// The run's tools with `describe_tool` added when the catalog is large, and whether it is.
fn with_discovery(
    agent: &Agent,
    mut tools: ToolRegistry,
    model: &dyn Model,
) -> Result<(ToolRegistry, bool), RunError> {
    let declared = tools.specs();
    let declared_tokens: usize = declared
        .iter()
        .map(|t| {
            let line = format!(
                "- {}: {} Input schema: {}",
                t.name, t.description, t.parameters
            );
            model
                .count_tokens(&line)
                .unwrap_or_else(|| estimate_tokens(&line))
        })
        .sum();
    let brief = agent
        .discovery
        .applies(declared.len(), declared_tokens, agent.context.max_tokens);
    if brief && tools.get(DESCRIBE_TOOL).is_none() {
        tools
            .register(Arc::new(DescribeTool::new(declared)))
            .map_err(|e| RunError::InvalidRequest {
                field: "tools",
                reason: e.to_string(),
            })?;
    }
    Ok((tools, brief))
}

/// A declaration for a provider's native tool calling under discovery: one line, and an input
/// schema left open (the engine still validates the call against the real one).
fn brief_native_spec(spec: ToolSpec) -> ToolSpec {
    if spec.name == DESCRIBE_TOOL || spec.name == crate::tool::FINAL_ANSWER {
        return spec;
    }
    ToolSpec {
        description: one_line(&spec.description),
        parameters: serde_json::json!({"type": "object"}),
        ..spec
    }
}
