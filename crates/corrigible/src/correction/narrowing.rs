//! What a correction round still allows: the rule that lets a model narrow its next reply.
//!
//! A model that owns its decoder turns [`Allowed`] into a tighter grammar; a hosted model turns
//! it into the provider's tool choice. Either way the rejected reply is not offered again.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{CorrectionContext, CorrectionDetail};
use crate::correction::fingerprint::fingerprint;
use crate::correction::rejection::Category;
use crate::decision::{Decision, parse_text};

/// The decisions a correction round may produce, derived from the rejection it corrects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "allowed", rename_all = "snake_case")]
pub enum Allowed {
    /// Any decision the contract allows: an action on a registered tool, or a final answer.
    AnyDecision,
    /// An action on this tool, with its exact input schema, or a final answer.
    ToolOrFinal {
        /// The tool whose input was rejected.
        tool: String,
    },
    /// Any action except these (canonical fingerprints), or a final answer.
    ActionsExcept {
        /// Fingerprints of the actions that already failed in this run, and after a
        /// `repeated_action` also of those that succeeded.
        #[serde(alias = "failed")]
        actions: Vec<String>,
    },
    /// An action on any tool but these, or a final answer: the fallback of `ActionsExcept`
    /// for a decoder that cannot exclude one exact input.
    ToolsExcept {
        /// The excluded tools.
        tools: Vec<String>,
    },
    /// An action, or a final answer that admits the request was not fulfilled.
    ActionOrUnsatisfiedFinal,
    /// An action on any tool, no final answer.
    ActionOnly,
    /// An action on any tool but these, no final answer: the values an argument of theirs
    /// needs come from another tool first.
    ActionOnOtherTools {
        /// The excluded tools.
        tools: Vec<String>,
    },
    /// An action on one of these tools other than the calls already made, no final answer:
    /// taking up what the request left out.
    Cover {
        /// The tools that take up the uncovered part of the request.
        tools: Vec<String>,
        /// Fingerprints of the calls the run already made successfully.
        done: Vec<String>,
    },
    /// An action, or a final answer that begins with one of these facts of the tool results.
    FinalStating {
        /// Facts the tools returned, as written in their results.
        facts: Vec<String>,
    },
    /// Only a final answer.
    FinalOnly,
}

impl Allowed {
    /// Short name for traces: `tool_or_final(calculator)`, `final_only`, …
    pub fn label(&self) -> String {
        match self {
            Allowed::AnyDecision => "any_decision".into(),
            Allowed::ToolOrFinal { tool } => format!("tool_or_final({tool})"),
            Allowed::ActionsExcept { actions } => format!("actions_except({})", actions.len()),
            Allowed::ToolsExcept { tools } => format!("tools_except({})", tools.join(",")),
            Allowed::ActionOrUnsatisfiedFinal => "action_or_unsatisfied_final".into(),
            Allowed::ActionOnly => "action_only".into(),
            Allowed::ActionOnOtherTools { tools } => {
                format!("action_on_other_tools({})", tools.join(","))
            }
            Allowed::Cover { tools, .. } => format!("cover({})", tools.join(",")),
            Allowed::FinalStating { facts } => format!("final_stating({})", facts.len()),
            Allowed::FinalOnly => "final_only".into(),
        }
    }

    /// Whether `decision` is one this round may produce (structure aside, which the schema holds).
    pub fn permits(&self, decision: &Decision) -> bool {
        match (self, decision) {
            (Allowed::AnyDecision, _) => true,
            (Allowed::ToolOrFinal { tool }, Decision::Action(a)) => &a.tool == tool,
            (Allowed::ActionsExcept { actions }, Decision::Action(a)) => {
                !actions.contains(&fingerprint(&a.tool, &a.input))
            }
            (Allowed::ToolsExcept { tools }, Decision::Action(a))
            | (Allowed::ActionOnOtherTools { tools }, Decision::Action(a)) => {
                !tools.contains(&a.tool)
            }
            (Allowed::ActionOnOtherTools { .. }, Decision::Final(_)) => false,
            (Allowed::Cover { tools, done }, Decision::Action(a)) => {
                tools.contains(&a.tool) && !done.contains(&fingerprint(&a.tool, &a.input))
            }
            (Allowed::Cover { .. }, Decision::Final(_)) => false,
            (Allowed::ActionOrUnsatisfiedFinal, Decision::Final(f)) => !f.satisfied,
            (Allowed::FinalStating { facts }, Decision::Final(f)) => facts
                .iter()
                .any(|fact| f.summary.starts_with(fact.as_str())),
            (Allowed::FinalOnly, Decision::Action(_)) => false,
            (Allowed::ActionOnly, Decision::Final(_)) => false,
            (_, Decision::Final(_)) | (_, Decision::Action(_)) => true,
        }
    }
}

impl Allowed {
    /// A stricter rule to fall back on when replies under this one keep repeating the rejected
    /// reply: the excluded actions' tools are excluded altogether. `None` when there is none.
    pub fn fallback(&self) -> Option<Allowed> {
        match self {
            Allowed::ActionsExcept { actions } => {
                let mut tools: Vec<String> = actions
                    .iter()
                    .filter_map(|f| f.split_once(':').map(|(tool, _)| tool.to_string()))
                    .collect();
                tools.sort();
                tools.dedup();
                Some(Allowed::ToolsExcept { tools })
            }
            Allowed::ToolOrFinal { .. } => Some(Allowed::FinalOnly),
            _ => None,
        }
    }
}

impl fmt::Display for Allowed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label())
    }
}

impl CorrectionContext {
    /// What this correction round still allows.
    ///
    /// After `invalid_tool_input`: that tool or a final answer. After `repeated_failed_action`:
    /// any action but the failed ones. After `repeated_action`: any action but the failed and
    /// the successful ones, or a final answer. Once the slot's corrections of repeats are spent
    /// (`Limits::max_repeats`; by default at the second), only a final answer. After `ungrounded_final`,
    /// `claimed_action` and `declined_request`: an action or an unsatisfied final. After
    /// `ungrounded_argument` in the first round: an action (the same tool with values from the
    /// conversation, or another tool that finds the missing value), later also an unsatisfied
    /// final. After `unstated_result`: an action, or a final that begins with a fact. After
    /// `uncovered_request`: a call of the tools that take up what the request left out, other
    /// than the calls made. After `action_budget_spent`: only a final answer. Otherwise: any
    /// decision of the contract (so free decoding becomes at least envelope-constrained).
    ///
    /// Once the run's action budget is spent, the rules that narrow the final answer itself
    /// (`final_stating`, an unsatisfied final) stay, and a decoder drops their actions, which
    /// would not run; any other rule becomes `final_only`.
    pub fn allowed(&self) -> Allowed {
        let allowed = self.allowed_by_rejection();
        if !self.budget_spent {
            return allowed;
        }
        match allowed {
            Allowed::FinalStating { .. } | Allowed::ActionOrUnsatisfiedFinal => allowed,
            _ => Allowed::FinalOnly,
        }
    }

    fn allowed_by_rejection(&self) -> Allowed {
        if self.repeats_spent {
            return Allowed::FinalOnly;
        }
        match (self.category, &self.tool) {
            (Category::InvalidToolInput, Some(tool)) => Allowed::ToolOrFinal { tool: tool.clone() },
            (Category::UngroundedArgument, Some(tool))
                if self.round == 1 && self.detail == CorrectionDetail::NoNumbersYet =>
            {
                Allowed::ActionOnOtherTools {
                    tools: vec![tool.clone()],
                }
            }
            (Category::UngroundedArgument, _) if self.round == 1 => Allowed::ActionOnly,
            (Category::UngroundedArgument, _) => Allowed::ActionOrUnsatisfiedFinal,
            (Category::UncoveredRequest, _) => match &self.detail {
                CorrectionDetail::UncoveredRequest { tools, done } if !tools.is_empty() => {
                    Allowed::Cover {
                        tools: tools.clone(),
                        done: done.clone(),
                    }
                }
                _ => Allowed::ActionOnly,
            },
            (Category::RepeatedFailedAction, _) => Allowed::ActionsExcept {
                actions: self.failed_actions.clone(),
            },
            (Category::RepeatedAction, _) => Allowed::ActionsExcept {
                actions: self
                    .failed_actions
                    .iter()
                    .chain(match &self.detail {
                        CorrectionDetail::RepeatedAction { done } => done.as_slice(),
                        _ => &[],
                    })
                    .cloned()
                    .collect(),
            },
            (
                Category::UngroundedFinal | Category::ClaimedAction | Category::DeclinedRequest,
                _,
            ) => Allowed::ActionOrUnsatisfiedFinal,
            (Category::ActionBudgetSpent, _) => Allowed::FinalOnly,
            (Category::UnstatedResult, _) => match &self.detail {
                CorrectionDetail::UnstatedResult { facts } if !facts.is_empty() => {
                    Allowed::FinalStating {
                        facts: facts.clone(),
                    }
                }
                _ => Allowed::AnyDecision,
            },
            _ => Allowed::AnyDecision,
        }
    }

    /// Whether this round holds a `numbers` argument to the conversation's numbers: after a
    /// made-up number, and in rounds that call for a calculation over the results the run has
    /// (`uncovered_request`, `repeated_action`).
    pub fn holds_numbers(&self) -> bool {
        matches!(
            self.category,
            Category::UngroundedArgument | Category::UncoveredRequest | Category::RepeatedAction
        )
    }

    /// Whether a candidate reply `text` for this round would repeat what was rejected: the same
    /// text as the rejected reply, or a decision the round does not allow. After a
    /// `verifier_objection` nothing is a repeat: the model may keep its answer.
    pub fn repeats(&self, text: &str) -> bool {
        if self.category.allows_same_reply() {
            return false;
        }
        if text.trim() == self.rejected_reply.trim() {
            return true;
        }
        match parse_text(text, true).decision {
            Ok(decision) => !self.allowed().permits(&decision),
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::decision::{Action, Final};
    use crate::policy::Limits;

    fn context(category: Category, tool: Option<&str>, repeated: u32) -> CorrectionContext {
        CorrectionContext {
            category,
            rejected_reply: r#"{"state":"action","reason":"r","tool":"calc","tool_input":{"x":1}}"#
                .into(),
            tool: tool.map(String::from),
            failed_actions: vec![fingerprint("calc", &json!({"x": 1}))],
            round: 1,
            repeated_in_slot: repeated,
            repeats_spent: repeated > Limits::default().max_repeats,
            budget_spent: false,
            detail: CorrectionDetail::None,
        }
    }

    fn action(tool: &str, input: serde_json::Value) -> Decision {
        Decision::Action(Action {
            reason: "r".into(),
            tool: tool.into(),
            input,
            call_id: None,
        })
    }

    fn answer(satisfied: bool) -> Decision {
        Decision::Final(Final {
            satisfied,
            summary: "s".into(),
            call_id: None,
        })
    }

    #[test]
    fn each_category_maps_to_its_rule() {
        let c = context(Category::InvalidToolInput, Some("calc"), 0);
        assert_eq!(
            c.allowed(),
            Allowed::ToolOrFinal {
                tool: "calc".into()
            }
        );
        let c = context(Category::RepeatedFailedAction, Some("calc"), 1);
        assert!(matches!(c.allowed(), Allowed::ActionsExcept { .. }));
        let c = context(Category::RepeatedFailedAction, Some("calc"), 2);
        assert_eq!(c.allowed(), Allowed::FinalOnly);
        let mut c = context(Category::RepeatedAction, Some("calc"), 1);
        c.detail = CorrectionDetail::RepeatedAction {
            done: vec![fingerprint("calc", &json!({"x": 2}))],
        };
        let allowed = c.allowed();
        assert!(!allowed.permits(&action("calc", json!({"x": 2}))));
        assert!(!allowed.permits(&action("calc", json!({"x": 1}))));
        assert!(allowed.permits(&action("calc", json!({"x": 3}))));
        assert!(allowed.permits(&answer(true)));
        c.repeated_in_slot = 2;
        c.repeats_spent = true;
        assert_eq!(c.allowed(), Allowed::FinalOnly);
        let c = context(Category::UngroundedFinal, None, 0);
        assert_eq!(c.allowed(), Allowed::ActionOrUnsatisfiedFinal);
        let mut c = context(Category::UngroundedArgument, Some("calc"), 0);
        assert_eq!(c.allowed(), Allowed::ActionOnly);
        assert!(!c.allowed().permits(&answer(false)));
        assert!(c.allowed().permits(&action("time", json!({}))));
        c.round = 2;
        assert_eq!(c.allowed(), Allowed::ActionOrUnsatisfiedFinal);
        c.round = 1;
        c.detail = CorrectionDetail::NoNumbersYet;
        assert_eq!(
            c.allowed(),
            Allowed::ActionOnOtherTools {
                tools: vec!["calc".into()]
            }
        );
        assert!(!c.allowed().permits(&answer(false)));
        assert!(!c.allowed().permits(&action("calc", json!({}))));
        for category in [
            Category::UnknownTool,
            Category::InvalidJson,
            Category::EmptyResponse,
        ] {
            assert_eq!(context(category, None, 0).allowed(), Allowed::AnyDecision);
        }
    }

    #[test]
    fn a_spent_action_budget_narrows_to_a_final_answer() {
        let c = context(Category::ActionBudgetSpent, Some("calc"), 0);
        assert_eq!(c.allowed(), Allowed::FinalOnly);
        assert!(c.allowed().permits(&answer(true)));
        assert!(!c.allowed().permits(&action("time", json!({}))));
    }

    #[test]
    fn with_the_budget_spent_only_final_answers_are_left() {
        let spent = |category, tool: Option<&str>| {
            let mut c = context(category, tool, 0);
            c.budget_spent = true;
            c.detail = match category {
                Category::UnstatedResult => CorrectionDetail::UnstatedResult {
                    facts: vec!["12.6".into()],
                },
                _ => CorrectionDetail::UncoveredRequest {
                    tools: vec!["weather".into()],
                    done: Vec::new(),
                },
            };
            c.allowed()
        };
        for category in [
            Category::UncoveredRequest,
            Category::InvalidToolInput,
            Category::RepeatedAction,
            Category::UngroundedArgument,
            Category::InvalidJson,
        ] {
            assert_eq!(
                spent(category, Some("calc")),
                Allowed::FinalOnly,
                "{category}"
            );
        }
        assert_eq!(
            spent(Category::UngroundedFinal, None),
            Allowed::ActionOrUnsatisfiedFinal
        );
        assert_eq!(
            spent(Category::UnstatedResult, None).label(),
            "final_stating(1)"
        );
    }

    #[test]
    fn uncovered_request_narrows_to_a_new_call_of_the_covering_tool() {
        let mut c = context(Category::UncoveredRequest, None, 0);
        assert_eq!(
            c.allowed(),
            Allowed::ActionOnly,
            "no tool named, any action"
        );
        c.detail = CorrectionDetail::UncoveredRequest {
            tools: vec!["weather".into()],
            done: vec![fingerprint("weather", &json!({"city": "Rome"}))],
        };
        let allowed = c.allowed();
        assert_eq!(allowed.label(), "cover(weather)");
        assert!(allowed.permits(&action("weather", json!({"city": "Paris"}))));
        assert!(!allowed.permits(&action("weather", json!({"city": "Rome"}))));
        assert!(!allowed.permits(&action("time", json!({"city": "Paris"}))));
        assert!(!allowed.permits(&answer(true)));
        assert!(!allowed.permits(&answer(false)));
    }

    #[test]
    fn unstated_result_narrows_to_a_final_that_begins_with_a_fact() {
        let mut c = context(Category::UnstatedResult, None, 0);
        assert_eq!(c.allowed(), Allowed::AnyDecision, "no facts, no narrowing");
        c.detail = CorrectionDetail::UnstatedResult {
            facts: vec!["12:00".into(), "Europe/London".into()],
        };
        let allowed = c.allowed();
        assert_eq!(allowed.label(), "final_stating(2)");
        let stating = |summary: &str| {
            Decision::Final(Final {
                satisfied: true,
                summary: summary.into(),
                call_id: None,
            })
        };
        assert!(allowed.permits(&stating("12:00 in London.")));
        assert!(!allowed.permits(&stating("It is late in London.")));
        assert!(allowed.permits(&action("time", json!({"city": "London"}))));
    }

    #[test]
    fn permits_follows_the_rule() {
        let tool_or_final = Allowed::ToolOrFinal {
            tool: "calc".into(),
        };
        assert!(tool_or_final.permits(&action("calc", json!({}))));
        assert!(!tool_or_final.permits(&action("time", json!({}))));
        assert!(tool_or_final.permits(&answer(true)));

        let except = context(Category::RepeatedFailedAction, None, 1).allowed();
        assert!(!except.permits(&action("calc", json!({"x": 1.0}))));
        assert!(except.permits(&action("calc", json!({"x": 2}))));

        let fallback = except.fallback().expect("a fallback");
        assert_eq!(
            fallback,
            Allowed::ToolsExcept {
                tools: vec!["calc".into()]
            }
        );
        assert!(!fallback.permits(&action("calc", json!({"x": 2}))));
        assert!(fallback.permits(&action("time", json!({}))));
        assert_eq!(Allowed::AnyDecision.fallback(), None);

        assert!(!Allowed::FinalOnly.permits(&action("calc", json!({}))));
        assert!(Allowed::FinalOnly.permits(&answer(true)));
        assert!(!Allowed::ActionOrUnsatisfiedFinal.permits(&answer(true)));
        assert!(Allowed::ActionOrUnsatisfiedFinal.permits(&answer(false)));
    }

    #[test]
    fn repeats_catches_the_same_text_and_forbidden_decisions() {
        let c = context(Category::RepeatedFailedAction, Some("calc"), 1);
        assert!(c.repeats(&c.rejected_reply.clone()));
        assert!(
            c.repeats(r#"{"state":"action","reason":"again","tool":"calc","tool_input":{"x":1}}"#)
        );
        assert!(
            !c.repeats(r#"{"state":"action","reason":"r","tool":"calc","tool_input":{"x":2}}"#)
        );
        assert!(!c.repeats("not json at all"));
    }
}
