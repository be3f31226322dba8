//! The run's budget: every counter of one run beside the bound it counts against, and the
//! loop's questions about them: may it ask, may it act, may it retry this tool, may it ask
//! about coverage, what a rejection costs, is the run over.

use std::collections::HashMap;

use super::run::stopped;
use crate::correction::rejection::{Category, Rejection};
use crate::model::Usage;
use crate::policy::Policy;
use crate::trace::StopReason;
use crate::trace::recorder::Ending;

/// Every counter of one run and the limits they are held to. Bounds are checked here and
/// nowhere else.
#[derive(Debug)]
pub(crate) struct Budget {
    /// The run's policy: its limits and the per-tool allowances (retries, rejections).
    policy: Policy,
    /// Model calls made.
    model_calls: u32,
    /// Tokens spent by them.
    tokens: Usage,
    /// Whether a final answer was already sent back as `uncovered_request`: that question is
    /// asked once per run, so a request part the answer does not need costs one round at most.
    coverage_asked: bool,
    /// Executed (or breaker-refused) actions.
    executed: u32,
    /// Output-validator rejections sent back.
    output_retries: u32,
    /// `Retry` outcomes per tool.
    tool_rejections: HashMap<String, u32>,
    /// `Failed` outcomes per tool.
    tool_failures: HashMap<String, u32>,
    slot: Slot,
}

/// The counters of the current action slot.
#[derive(Debug, Default)]
struct Slot {
    /// The correction round the next model call is, 0 for the slot's first call.
    round: u32,
    /// Decision corrections charged in this slot.
    corrections: u32,
    /// Rounds that corrected a repeated action.
    repeats: u32,
}

/// What the rejections of one reply cost.
#[derive(Debug)]
pub(crate) struct Charge {
    /// The attempt they are recorded under: the slot's correction count, or the run's output
    /// retries when every one is `output_rejected`.
    pub attempt: u32,
    /// The run's ending, when the bound they count against was already used up.
    pub exhausted: Option<Ending>,
}

/// A tool's `Retry` outcome, counted.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ToolRejections {
    /// The tool's rejections in this run, this one included.
    pub count: u32,
    /// Its budget of rejections.
    pub allowed: u32,
    /// Whether they are over the tool's budget: the run ends.
    pub over: bool,
}

impl Budget {
    /// A budget with nothing spent, under the run's policy.
    pub(crate) fn new(policy: &Policy) -> Self {
        Self {
            policy: policy.clone(),
            model_calls: 0,
            tokens: Usage::default(),
            coverage_asked: false,
            executed: 0,
            output_retries: 0,
            tool_rejections: HashMap::new(),
            tool_failures: HashMap::new(),
            slot: Slot::default(),
        }
    }

    /// Starts an action slot: its round, corrections and repeats count from zero.
    pub(crate) fn start_slot(&mut self) {
        self.slot = Slot::default();
    }

    /// The correction round of the slot's next model call.
    pub(crate) fn round(&self) -> u32 {
        self.slot.round
    }

    /// How many rounds of this slot corrected a repeated action.
    pub(crate) fn repeats(&self) -> u32 {
        self.slot.repeats
    }

    /// Whether the slot's corrections of repeated actions are spent: its next round may only
    /// give the final answer.
    pub(crate) fn repeats_spent(&self) -> bool {
        self.slot.repeats > self.policy.limits.max_repeats
    }

    /// The run's ending when a usage limit forbids another model call.
    pub(crate) fn stops_asking(&self) -> Option<Ending> {
        let hit = self
            .policy
            .limits
            .usage_limit_hit(self.model_calls, self.tokens)?;
        Some(stopped(StopReason::UsageLimit, hit.to_string()))
    }

    /// Counts a model call of the agent's model and its tokens.
    pub(crate) fn asked(&mut self, usage: Usage) {
        self.model_calls += 1;
        self.tokens.input_tokens += usage.input_tokens;
        self.tokens.output_tokens += usage.output_tokens;
    }

    /// Whether a satisfied answer may be sent back as `uncovered_request`: once per run, and
    /// only while an action may still run.
    pub(crate) fn may_ask_coverage(&self) -> bool {
        !self.coverage_asked && self.may_act()
    }

    /// Counts the coverage question as asked.
    pub(crate) fn ask_coverage(&mut self) {
        self.coverage_asked = true;
    }

    /// Whether `tool`, `attempts` calls into this action, may be called again after a failure:
    /// its retries (0 unless it is idempotent and within the retry scope) are not spent.
    pub(crate) fn may_retry(&self, tool: &str, idempotent: bool, attempts: u32) -> bool {
        attempts <= self.policy.retries_for(tool, idempotent)
    }

    /// Whether another tool action may run.
    pub(crate) fn may_act(&self) -> bool {
        self.executed < self.policy.limits.max_actions
    }

    /// The run's bound on executed actions.
    pub(crate) fn max_actions(&self) -> u32 {
        self.policy.limits.max_actions
    }

    /// Whether any action was executed (or refused by its breaker).
    pub(crate) fn acted(&self) -> bool {
        self.executed > 0
    }

    /// Counts an executed action.
    pub(crate) fn act(&mut self) {
        self.executed += 1;
    }

    /// The attempt of a rejection recorded beside an executed action: it costs nothing.
    pub(crate) fn free_attempt(&self) -> u32 {
        self.slot.corrections + 1
    }

    /// How many attempts a rejection of `category` has: the run's output retries for
    /// `output_rejected`, else the slot's corrections.
    pub(crate) fn max_attempts(&self, category: Category) -> u32 {
        if category == Category::OutputRejected {
            self.policy.limits.output_retries
        } else {
            self.policy.limits.max_corrections
        }
    }

    /// Charges the rejections of one reply (the first is the one its round corrects): to the
    /// run's output retries when all are `output_rejected`, else to the slot's corrections.
    /// Once that bound is used up nothing is charged and the run ends: `output_rejected`,
    /// `max_actions` when the budget of actions is what the model kept running into, else
    /// `corrections_exhausted`.
    pub(crate) fn charge(&mut self, rejections: &[&Rejection]) -> Charge {
        let Some(first) = rejections.first() else {
            return Charge {
                attempt: self.free_attempt(),
                exhausted: None,
            };
        };
        let output_only = rejections
            .iter()
            .all(|r| r.category == Category::OutputRejected);
        if output_only {
            let attempt = self.output_retries + 1;
            if self.output_retries >= self.policy.limits.output_retries {
                return Charge {
                    attempt,
                    exhausted: Some(stopped(
                        StopReason::OutputRejected,
                        format!("accepted output: {}", first.message),
                    )),
                };
            }
            self.output_retries += 1;
            self.slot.round += 1;
            return Charge {
                attempt,
                exhausted: None,
            };
        }
        let attempt = self.slot.corrections + 1;
        if self.slot.corrections >= self.policy.limits.max_corrections {
            let ending = if first.category == Category::ActionBudgetSpent {
                stopped(StopReason::MaxActions, "final decision".into())
            } else {
                stopped(StopReason::CorrectionsExhausted, "valid decision".into())
            };
            return Charge {
                attempt,
                exhausted: Some(ending),
            };
        }
        self.slot.corrections += 1;
        if rejections.iter().any(|r| {
            matches!(
                r.category,
                Category::RepeatedFailedAction | Category::RepeatedAction
            )
        }) {
            self.slot.repeats += 1;
        }
        self.slot.round += 1;
        Charge {
            attempt,
            exhausted: None,
        }
    }

    /// Counts a `Retry` outcome of `tool` against its budget of rejections.
    pub(crate) fn tool_rejected(&mut self, tool: &str) -> ToolRejections {
        let allowed = self.policy.rejections_for(tool);
        let count = self.tool_rejections.entry(tool.to_string()).or_default();
        *count += 1;
        ToolRejections {
            count: *count,
            allowed,
            over: *count > allowed,
        }
    }

    /// Counts a `Failed` outcome of `tool`; returns its failures in this run.
    pub(crate) fn tool_failed(&mut self, tool: &str) -> u32 {
        let count = self.tool_failures.entry(tool.to_string()).or_default();
        *count += 1;
        *count
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Limits;

    fn rejection(category: Category) -> Rejection {
        Rejection::new(category, "no")
    }

    #[test]
    fn corrections_are_counted_per_slot_and_end_the_run_once_spent() {
        let mut budget = Budget::new(&Policy {
            limits: Limits {
                max_corrections: 1,
                ..Limits::default()
            },
            ..Policy::default()
        });
        let invalid = rejection(Category::InvalidJson);
        let charge = budget.charge(&[&invalid]);
        assert_eq!((charge.attempt, charge.exhausted.is_none()), (1, true));
        assert_eq!(budget.round(), 1);
        let charge = budget.charge(&[&invalid]);
        let ending = charge
            .exhausted
            .expect("the second correction is over the bound");
        assert_eq!(charge.attempt, 2);
        assert_eq!(ending.stop_reason, StopReason::CorrectionsExhausted);
        budget.start_slot();
        assert_eq!(budget.round(), 0);
        assert!(budget.charge(&[&invalid]).exhausted.is_none());
    }

    #[test]
    fn output_retries_are_counted_per_run_apart_from_corrections() {
        let mut budget = Budget::new(&Policy {
            limits: Limits {
                max_corrections: 0,
                output_retries: 1,
                ..Limits::default()
            },
            ..Policy::default()
        });
        let output = rejection(Category::OutputRejected);
        assert!(budget.charge(&[&output]).exhausted.is_none());
        budget.start_slot();
        let ending = budget
            .charge(&[&output])
            .exhausted
            .expect("one retry per run");
        assert_eq!(ending.stop_reason, StopReason::OutputRejected);
        let mixed = budget.charge(&[&output, &rejection(Category::UnknownTool)]);
        assert_eq!(
            mixed.exhausted.map(|e| e.stop_reason),
            Some(StopReason::CorrectionsExhausted)
        );
    }

    #[test]
    fn a_spent_action_budget_ends_the_run_as_max_actions() {
        let mut budget = Budget::new(&Policy {
            limits: Limits {
                max_actions: 1,
                max_corrections: 0,
                ..Limits::default()
            },
            ..Policy::default()
        });
        assert!(budget.may_act());
        budget.act();
        assert!(!budget.may_act());
        let spent = rejection(Category::ActionBudgetSpent);
        let ending = budget
            .charge(&[&spent])
            .exhausted
            .expect("no corrections left");
        assert_eq!(ending.stop_reason, StopReason::MaxActions);
    }

    #[test]
    fn repeats_and_tool_outcomes_are_counted() {
        let mut budget = Budget::new(&Policy::default());
        budget.charge(&[&rejection(Category::RepeatedAction)]);
        assert_eq!(budget.repeats(), 1);
        assert!(!budget.repeats_spent());
        budget.charge(&[&rejection(Category::RepeatedFailedAction)]);
        assert!(
            budget.repeats_spent(),
            "the second repeat leaves only the final answer"
        );
        assert_eq!(budget.tool_failed("weather"), 1);
        assert_eq!(budget.tool_failed("weather"), 2);
    }

    #[test]
    fn per_tool_allowances_model_calls_and_coverage_are_asked_of_the_budget() {
        let mut policy = Policy {
            max_rejections: 1,
            ..Policy::default()
        };
        policy.limits.max_model_calls = Some(2);
        let mut budget = Budget::new(&policy);
        assert!(!budget.tool_rejected("calculator").over);
        let second = budget.tool_rejected("calculator");
        assert_eq!((second.count, second.allowed, second.over), (2, 1, true));

        assert!(budget.may_retry("weather", true, 1));
        assert!(!budget.may_retry("weather", true, 2));
        assert!(
            !budget.may_retry("weather", false, 1),
            "no retry of a call that acts"
        );

        assert!(budget.stops_asking().is_none());
        budget.asked(Usage::default());
        budget.asked(Usage::default());
        let ending = budget
            .stops_asking()
            .expect("the model-call bound is reached");
        assert_eq!(ending.stop_reason, StopReason::UsageLimit);

        assert!(budget.may_ask_coverage());
        budget.ask_coverage();
        assert!(!budget.may_ask_coverage(), "coverage is asked once per run");
    }
}
