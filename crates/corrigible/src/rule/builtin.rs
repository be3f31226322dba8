//! The built-in rules, in the order a decision meets them. Each one is on or off by the
//! policy's [`Checks`](crate::Checks); what it reads lives on the run.

use super::{Evidence, Rule};
use crate::arithmetic::slips;
use crate::correction::rejection::Category;
use crate::decision::{Action, Final};
use crate::evidence::declined::declines;

/// Every built-in rule, in the order they judge a decision.
pub(crate) static BUILTIN: [&dyn Rule; 8] = [
    &UngroundedArgument,
    &UngroundedFinal,
    &Echo,
    &ClaimedAction,
    &DeclinedRequest,
    &WrongArithmetic,
    &UnstatedResult,
    &UncoveredRequest,
];

/// Most wrong calculations a `wrong_arithmetic` correction lists.
const MAX_SLIPS: usize = 3;

/// `ungrounded_argument`: a copied string or an expression's number found in neither the
/// request nor a tool result.
struct UngroundedArgument;

impl Rule for UngroundedArgument {
    fn name(&self) -> &str {
        "ungrounded_argument"
    }

    fn category(&self) -> Category {
        Category::UngroundedArgument
    }

    fn check_action(&self, action: &Action, evidence: &Evidence<'_>) -> Option<String> {
        let grounded = evidence.run.tools.grounded(&action.tool);
        if grounded.is_empty() {
            return None;
        }
        evidence.run.sources().check(grounded, &action.input)
    }
}

/// `ungrounded_final`: a satisfied answer after tool calls that all failed.
struct UngroundedFinal;

impl Rule for UngroundedFinal {
    fn name(&self) -> &str {
        "ungrounded_final"
    }

    fn category(&self) -> Category {
        Category::UngroundedFinal
    }

    fn check_final(&self, answer: &Final, evidence: &Evidence<'_>) -> Option<String> {
        (answer.satisfied && evidence.acted() && !evidence.run.state.any_ok).then(|| {
            "satisfied is true but every tool call in this run failed, so no tool result \
             supports the answer; try a different action, or answer with satisfied false \
             and say what failed"
                .to_string()
        })
    }
}

/// `echo`: a satisfied answer that repeats our own words instead of answering.
struct Echo;

impl Rule for Echo {
    fn name(&self) -> &str {
        "echo"
    }

    fn category(&self) -> Category {
        Category::Echo
    }

    fn check_final(&self, answer: &Final, evidence: &Evidence<'_>) -> Option<String> {
        if !answer.satisfied {
            return None;
        }
        let words = evidence.run.echo(&answer.summary)?;
        Some(format!(
            "the answer repeats our own words (`{words}`) instead of answering the request; \
             answer it in your own words, from the tool results or what you know, or answer \
             with satisfied false and say what is missing"
        ))
    }
}

/// `claimed_action`: a satisfied answer that says an action was carried out while no tool
/// able to act succeeded, or that promises a call of one of the run's tools.
struct ClaimedAction;

impl Rule for ClaimedAction {
    fn name(&self) -> &str {
        "claimed_action"
    }

    fn category(&self) -> Category {
        Category::ClaimedAction
    }

    fn check_final(&self, answer: &Final, evidence: &Evidence<'_>) -> Option<String> {
        if !answer.satisfied {
            return None;
        }
        evidence
            .run
            .unsupported_claim(&answer.summary)
            .or_else(|| evidence.run.promised_call(&answer.summary))
    }
}

/// `declined_request`: a satisfied answer that opens by declining the request.
struct DeclinedRequest;

impl Rule for DeclinedRequest {
    fn name(&self) -> &str {
        "declined_request"
    }

    fn category(&self) -> Category {
        Category::DeclinedRequest
    }

    fn check_final(&self, answer: &Final, _evidence: &Evidence<'_>) -> Option<String> {
        (answer.satisfied && declines(&answer.summary)).then(|| {
            "the answer declines the request, yet says satisfied true: if a tool can do what \
             was asked, call it; if nothing can, give the answer with satisfied false and say \
             why"
            .to_string()
        })
    }
}

/// `wrong_arithmetic`: a satisfied answer resting on a calculation that does not hold, in the
/// answer or the reasoning before it.
struct WrongArithmetic;

impl Rule for WrongArithmetic {
    fn name(&self) -> &str {
        "wrong_arithmetic"
    }

    fn category(&self) -> Category {
        Category::WrongArithmetic
    }

    fn check_final(&self, answer: &Final, evidence: &Evidence<'_>) -> Option<String> {
        if !answer.satisfied {
            return None;
        }
        let slips = slips(&answer.summary, evidence.reasoning());
        if slips.is_empty() {
            return None;
        }
        let shown: Vec<String> = slips
            .iter()
            .take(MAX_SLIPS)
            .map(|s| format!("`{s}`"))
            .collect();
        Some(format!(
            "the answer rests on a wrong calculation: {}; redo the calculation with the right \
             values (use a tool for the arithmetic where there is one), then answer again",
            shown.join("; ")
        ))
    }
}

/// `unstated_result`: a satisfied answer that states none of the facts the tools returned.
struct UnstatedResult;

impl Rule for UnstatedResult {
    fn name(&self) -> &str {
        "unstated_result"
    }

    fn category(&self) -> Category {
        Category::UnstatedResult
    }

    fn check_final(&self, answer: &Final, evidence: &Evidence<'_>) -> Option<String> {
        if !answer.satisfied {
            return None;
        }
        evidence.run.unstated_results(&answer.summary)
    }
}

/// `uncovered_request`: a satisfied answer while a value the request names was never looked
/// up. It asks once per run, and only while an action may still run.
struct UncoveredRequest;

impl Rule for UncoveredRequest {
    fn name(&self) -> &str {
        "uncovered_request"
    }

    fn category(&self) -> Category {
        Category::UncoveredRequest
    }

    fn check_final(&self, answer: &Final, evidence: &Evidence<'_>) -> Option<String> {
        let run = evidence.run;
        if !answer.satisfied || !run.budget.may_ask_coverage() {
            return None;
        }
        let uncovered = run.uncovered();
        (!uncovered.is_empty()).then(|| uncovered.message())
    }
}
