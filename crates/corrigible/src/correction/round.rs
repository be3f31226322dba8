//! What a correction round is about, as the model request carries it.

use serde::{Deserialize, Serialize};

use super::rejection::Category;

/// What a correction round is about, so a model that can narrow its choices does so.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CorrectionContext {
    /// The category of the rejection being corrected.
    pub category: Category,
    /// The rejected reply's text (or its tool call rendered as JSON).
    pub rejected_reply: String,
    /// The tool the rejected decision named, if any.
    pub tool: Option<String>,
    /// Canonical fingerprints (`tool` + canonical input) of actions that already failed.
    pub failed_actions: Vec<String>,
    /// Which correction of this slot this is, from 1.
    pub round: u32,
    /// How many `repeated_failed_action` or `repeated_action` rejections this slot has had.
    pub repeated_in_slot: u32,
    /// The slot's corrections of repeated actions are spent (`Limits::max_repeats`): the
    /// round may only give the final answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repeats_spent: bool,
    /// The run's budget of executed actions is spent: whatever the rejection, the round can
    /// only be a final answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub budget_spent: bool,
    /// What the run knows that narrows the reply, for the categories that have something.
    #[serde(default, skip_serializing_if = "CorrectionDetail::is_none")]
    pub detail: CorrectionDetail,
}

/// What the run knows about one category's correction that narrows the reply it may give.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "after", rename_all = "snake_case")]
pub enum CorrectionDetail {
    /// Nothing beyond the common fields.
    #[default]
    None,
    /// After `unstated_result`: the facts the tools returned, as written in their results.
    UnstatedResult {
        /// The facts, those asked for first.
        facts: Vec<String>,
    },
    /// After `uncovered_request`: the tools whose calls take up what the request left out.
    UncoveredRequest {
        /// The covering tools.
        tools: Vec<String>,
        /// Fingerprints of the calls the run already made successfully.
        done: Vec<String>,
    },
    /// After `repeated_action`: the calls the run already made successfully.
    RepeatedAction {
        /// Their fingerprints.
        done: Vec<String>,
    },
    /// After `ungrounded_argument` on a tool whose grounded arguments are all `numbers`, when
    /// the conversation has no number yet: the values must come from another tool first.
    NoNumbersYet,
}

impl CorrectionDetail {
    /// Whether there is nothing beyond the common fields.
    pub fn is_none(&self) -> bool {
        *self == Self::None
    }
}

impl CorrectionContext {
    /// The first correction of a slot after a rejection of `category`: no tool, no failed or
    /// done actions, no detail, nothing spent. Other fields are set with struct update syntax.
    pub fn first_round(category: Category, rejected_reply: impl Into<String>) -> Self {
        Self {
            category,
            rejected_reply: rejected_reply.into(),
            tool: None,
            failed_actions: Vec::new(),
            round: 1,
            repeated_in_slot: 0,
            repeats_spent: false,
            budget_spent: false,
            detail: CorrectionDetail::None,
        }
    }
}
