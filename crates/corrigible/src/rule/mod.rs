//! Rules: the checks of a final answer or an action beyond its contract (valid JSON, a
//! registered tool, input that fits the schema, no call that already failed). Each rule reads
//! the run's evidence and either lets the decision through or sends it back with feedback.
//!
//! The built-in rules are switched by the policy's [`Checks`](crate::Checks) (a profile names
//! a set of them); [`AgentBuilder::rule`](crate::AgentBuilder::rule) adds rules of your own,
//! and [`AgentBuilder::without_rule`](crate::AgentBuilder::without_rule) leaves a built-in one
//! out by name.

mod builtin;
mod evidence;

pub use evidence::{Evidence, ToolResult};

pub(crate) use builtin::BUILTIN;

use crate::correction::rejection::Category;
use crate::decision::{Action, Final};

/// One check of a decision beyond its contract. A rule that returns feedback sends the
/// decision back to the model with it; the trace records the rule's name and category.
pub trait Rule: Send + Sync {
    /// Its name: unique among an agent's rules, recorded in the trace, and what
    /// [`AgentBuilder::without_rule`](crate::AgentBuilder::without_rule) removes.
    fn name(&self) -> &str;

    /// The category its rejections are recorded under: [`Category::Rule`] unless it is one of
    /// the built-in rules.
    fn category(&self) -> Category {
        Category::Rule
    }

    /// Feedback for the model when `answer` must not end the run; `None` accepts it.
    fn check_final(&self, _answer: &Final, _evidence: &Evidence<'_>) -> Option<String> {
        None
    }

    /// Feedback for the model when `action` must not run; `None` lets it run. Called once the
    /// action has passed its contract (known tool, valid input).
    fn check_action(&self, _action: &Action, _evidence: &Evidence<'_>) -> Option<String> {
        None
    }
}
