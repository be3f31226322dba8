use super::execute::MAX_SAME_RESULTS;
use super::run::Run;
use crate::correction::fingerprint::fingerprint;
use crate::correction::rejection::{Category, Rejection};
use crate::decision::Decision;
use crate::discovery::{closest, shortened_schema};
use crate::evidence::claimed_action::{ClaimKind, claimed_actions};
use crate::evidence::echo::{
    default_instructions, echo_in, example_echo, markup_in, without_quotes,
};
use crate::evidence::grounding::Evidence;
use crate::evidence::promised_call::promised_call;
use crate::message::MessageKind;
use crate::rule::{self, BUILTIN, Rule};

/// Most tool names an `unknown_tool` correction lists in full.
const MAX_LISTED_TOOLS: usize = 12;

/// Longest tool result quoted back in a rejection, in characters.
const MAX_SHOWN_RESULT_CHARS: usize = 300;

/// Most facts an `unstated_result` correction narrows to.
const MAX_FACTS: usize = 16;

impl Run<'_> {
    /// Checks a parsed decision against the registry, the run's failures and its evidence;
    /// `reasoning` is what the model thought before it.
    pub(crate) fn validate(
        &self,
        decision: Decision,
        reasoning: &str,
    ) -> Result<Decision, Rejection> {
        match &decision {
            Decision::Action(action) => {
                if !self.budget.may_act() {
                    let budget = self.budget.max_actions();
                    return Err(Rejection::new(
                        Category::ActionBudgetSpent,
                        format!(
                            "the run's budget of {budget} tool actions is spent, so no tool can \
                             run any more; give the final answer from the tool results above, \
                             with satisfied false if they do not answer the request"
                        ),
                    )
                    .with_tool(action.tool.clone()));
                }
                let Some(result) = self.tools.validate(&action.tool, &action.input) else {
                    return Err(Rejection::new(
                        Category::UnknownTool,
                        self.unknown_tool_message(&action.tool),
                    )
                    .with_tool(action.tool.clone()));
                };
                if let Err(message) = result {
                    let message = self.with_schema(&action.tool, message.to_string());
                    return Err(Rejection::new(Category::InvalidToolInput, message)
                        .with_tool(action.tool.clone()));
                }
                if let Some(rejection) = self.judge(
                    |rule, evidence| rule.check_action(action, evidence),
                    reasoning,
                ) {
                    return Err(rejection.with_tool(action.tool.clone()));
                }
                let print = fingerprint(&action.tool, &action.input);
                if let Some(previous) = self.state.failed.get(&print) {
                    return Err(Rejection::new(
                        Category::RepeatedFailedAction,
                        format!(
                            "this exact call already failed in this run ({previous}); change the input, \
                             use another tool, or give a final answer with satisfied false"
                        ),
                    )
                    .with_tool(action.tool.clone()));
                }
                if let Some(message) = self.repeated_success(&action.tool, &print) {
                    return Err(Rejection::new(Category::RepeatedAction, message)
                        .with_tool(action.tool.clone()));
                }
            }
            Decision::Final(answer) => {
                if let Some(rejection) = self.judge(
                    |rule, evidence| rule.check_final(answer, evidence),
                    reasoning,
                ) {
                    return Err(rejection);
                }
            }
        }
        Ok(decision)
    }

    /// The first rejection of the run's rules, built-in ones (as the policy's checks switch
    /// them, less those the agent leaves out) before the agent's own.
    fn judge(
        &self,
        check: impl Fn(&dyn Rule, &rule::Evidence<'_>) -> Option<String>,
        reasoning: &str,
    ) -> Option<Rejection> {
        let evidence = rule::Evidence {
            run: self,
            reasoning,
        };
        let builtin = BUILTIN.iter().copied().filter(|rule| {
            self.policy.checks.is_on(rule.category())
                && !self.agent.without_rules.iter().any(|n| n == rule.name())
        });
        let own = self.agent.rules.iter().map(|rule| rule.as_ref());
        builtin.chain(own).find_map(|rule| {
            let message = check(rule, &evidence)?;
            Some(Rejection::new(rule.category(), message).from_rule(rule.name()))
        })
    }

    /// Why an action with fingerprint `print` is not run again: the same call already
    /// succeeded in this run, and `tool` is not declared repeatable. Unless the
    /// `repeated_action` check is on, an idempotent tool runs it again (its answer may have
    /// changed) until it has returned the same result [`MAX_SAME_RESULTS`] more times.
    fn repeated_success(&self, tool: &str, print: &str) -> Option<String> {
        if self.policy.repeatable(tool, self.tools.repeatable(tool)) {
            return None;
        }
        if !self.policy.checks.repeated_action
            && self.policy.idempotent(tool, self.tools.idempotent(tool))
            && self.state.same_results.get(print).copied().unwrap_or(0) < MAX_SAME_RESULTS
        {
            return None;
        }
        let done = self
            .state
            .results
            .iter()
            .find(|s| s.tool == tool && fingerprint(&s.tool, &s.input) == print)?;
        Some(format!(
            "this exact call already succeeded in this run and returned {}; use that result: \
             make a different call, or give the final answer with the values it returned",
            shown(&done.output)
        ))
    }

    /// Why `summary` claims an action that no tool of the run carried out: a first-person claim
    /// needs a successful call of a tool that is not read-only; a passive one (`has been
    /// sent`), which a lookup can report, needs any successful call.
    pub(crate) fn unsupported_claim(&self, summary: &str) -> Option<String> {
        let results = &self.state.results;
        if results.iter().any(|s| !self.tools.read_only(&s.tool)) {
            return None;
        }
        let claim = claimed_actions(summary, &self.request)
            .into_iter()
            .find(|c| c.kind == ClaimKind::FirstPerson || results.is_empty())?;
        let mut ran: Vec<&str> = Vec::new();
        for result in results {
            if !ran.contains(&result.tool.as_str()) {
                ran.push(&result.tool);
            }
        }
        let done = if ran.is_empty() {
            "no tool ran in this run, so nothing was done".to_string()
        } else {
            format!(
                "the tools that ran ({}) only look things up or compute, so nothing was done",
                ran.join(", ")
            )
        };
        let names = self.tools.names();
        let next = if names.iter().all(|name| self.tools.read_only(name)) {
            format!(
                "no available tool can {}: answer with satisfied false and say plainly that \
                 this cannot be done here, and why",
                claim.verb
            )
        } else {
            format!(
                "call the tool that does it, or, if no tool can {}, answer with satisfied false \
                 and say plainly that it was not done",
                claim.verb
            )
        };
        Some(format!(
            "the answer says `{}`, but {done}; {next}",
            claim.phrase
        ))
    }

    /// Why `summary` is no answer: it promises a call of one of the run's tools, and a final
    /// answer ends the run.
    pub(crate) fn promised_call(&self, summary: &str) -> Option<String> {
        let promise = promised_call(summary, &self.tools.names())?;
        Some(format!(
            "the answer says `{}`, but a final answer ends the run, so nothing more will be \
             done: call `{}` now, or give the final answer from what the run has",
            promise.phrase, promise.tool
        ))
    }

    /// The run of our own words that `summary` repeats: the default instructions, feedback
    /// sent in this run, or a worked example's values; words the request or a tool result also
    /// says are not counted.
    pub(crate) fn echo(&self, summary: &str) -> Option<String> {
        let mut feedback = Vec::new();
        let mut theirs = vec![self.request.as_str()];
        for message in &self.history.messages {
            match message.kind {
                MessageKind::Feedback => feedback.push(without_quotes(&message.content)),
                MessageKind::ToolResult => theirs.push(&message.content),
                _ => {}
            }
        }
        let mut ours = vec![default_instructions()];
        ours.extend(feedback.iter().map(String::as_str));
        markup_in(summary, &self.request)
            .map(str::to_string)
            .or_else(|| echo_in(summary, &ours, &theirs))
            .or_else(|| example_echo(summary, &self.agent.worked, &self.request, &theirs))
    }

    /// Why `summary` is unsupported when tools returned facts and it states none of them.
    pub(crate) fn unstated_results(&self, summary: &str) -> Option<String> {
        let evidence = Evidence::new(self.state.results.iter().map(|s| &s.output), &self.request);
        if evidence.is_empty() || evidence.stated_in(summary) {
            return None;
        }
        let last = self.state.results.last()?;
        let tool = &last.tool;
        Some(format!(
            "satisfied is true but the answer states nothing the tools returned; answer with \
             the values the user asked for, from the result of {tool}: {}",
            shown(&last.output)
        ))
    }

    /// The facts of the run's successful tool results, for an `unstated_result` correction.
    pub(crate) fn facts(&self) -> Vec<String> {
        let mut facts =
            Evidence::new(self.state.results.iter().map(|s| &s.output), &self.request).facts();
        facts.truncate(MAX_FACTS);
        facts
    }

    fn unknown_tool_message(&self, name: &str) -> String {
        let names = self.tools.names();
        if names.is_empty() {
            return format!("unknown tool `{name}`: no tools are available, give a final answer");
        }
        let near = closest(name, &names);
        let closest = if near.is_empty() {
            String::new()
        } else {
            format!("; closest: {}", near.join(", "))
        };
        if names.len() > MAX_LISTED_TOOLS {
            return format!("unknown tool `{name}`{closest}; use a name from the tool list");
        }
        format!(
            "unknown tool `{name}`{closest}; available tools: {}",
            names.join(", ")
        )
    }

    /// A validation message followed by the input schema of `tool`, shortened.
    fn with_schema(&self, tool: &str, message: String) -> String {
        let Some(schema) = self.tools.get(tool).map(|t| t.input_schema()) else {
            return message;
        };
        let budget = (self.agent.context.max_tokens / 10).clamp(60, 400) * 4;
        format!(
            "{message}; input schema of {tool}: {}",
            shortened_schema(&schema, budget)
        )
    }
}

/// A tool result as quoted back in a rejection: its JSON, cut at [`MAX_SHOWN_RESULT_CHARS`].
fn shown(output: &serde_json::Value) -> String {
    let text = output.to_string();
    if text.chars().count() <= MAX_SHOWN_RESULT_CHARS {
        return text;
    }
    text.chars()
        .take(MAX_SHOWN_RESULT_CHARS)
        .collect::<String>()
        + "…"
}
