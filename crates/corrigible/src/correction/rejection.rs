//! Rejections: why the application refused a reply or a tool call.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The rejection categories of the contract (snake_case in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// The reply has no text and no tool call.
    EmptyResponse,
    /// The decision text is not JSON, even after safe local repair.
    InvalidJson,
    /// JSON, but not a valid decision.
    DecisionSchema,
    /// The tool is not registered (or is excluded).
    UnknownTool,
    /// The input fails the tool's JSON Schema.
    InvalidToolInput,
    /// Same tool and canonical input as an action that already failed in this run.
    RepeatedFailedAction,
    /// Same tool and canonical input as an action that already succeeded in this run, on a
    /// tool that is not declared repeatable: its result is already in the conversation.
    RepeatedAction,
    /// `satisfied: true` while every executed tool failed.
    UngroundedFinal,
    /// `satisfied: true` with an answer that repeats the harness's own words (its
    /// instructions, correction feedback, budget messages or worked examples).
    Echo,
    /// `satisfied: true` with an answer that says an action was carried out ("I have sent the
    /// email") while no tool able to act succeeded in the run, or that promises a call of one
    /// of the run's tools ("Now, I will use the calculator…").
    ClaimedAction,
    /// `satisfied: true` with an answer that opens by declining the request ("I'm sorry, but I
    /// cannot assist with that.").
    DeclinedRequest,
    /// `satisfied: true` with an answer that rests on a wrong calculation: one the answer
    /// states (`5 * 3 = 16`), or one of the reasoning before it whose result the answer uses.
    WrongArithmetic,
    /// `satisfied: true` while the tools returned facts (numbers, short strings) and the
    /// answer states none of them.
    UnstatedResult,
    /// An action whose grounded argument (a copied string, or the numbers of an expression) is
    /// found in neither the request nor a tool result.
    UngroundedArgument,
    /// `satisfied: true` while the request coordinates a name with a copied argument's value
    /// (`Rome than Paris`) and no successful call took it. Raised once per run.
    UncoveredRequest,
    /// `satisfied: true` with an answer that a verifier objected to, where the run's own text
    /// proves the objection: a value of the request or a tool result that the answer leaves
    /// out or misstates, or a number of the answer that nothing in the run gives.
    VerifierObjection,
    /// An action after the run's budget of executed actions is spent: the run asks once more,
    /// for the final answer only.
    ActionBudgetSpent,
    /// An output validator refused the final answer.
    OutputRejected,
    /// The tool returned `Retry`.
    ToolRejected,
    /// The tool's execution failed after its retries.
    ToolFailed,
    /// The tool's circuit breaker is open.
    CircuitOpen,
    /// A rule of the agent's own (not a built-in one) sent the decision back.
    Rule,
}

impl Category {
    /// Every category, in contract order.
    pub const ALL: [Category; 22] = [
        Category::EmptyResponse,
        Category::InvalidJson,
        Category::DecisionSchema,
        Category::UnknownTool,
        Category::InvalidToolInput,
        Category::RepeatedFailedAction,
        Category::RepeatedAction,
        Category::UngroundedFinal,
        Category::Echo,
        Category::ClaimedAction,
        Category::DeclinedRequest,
        Category::WrongArithmetic,
        Category::UnstatedResult,
        Category::UngroundedArgument,
        Category::UncoveredRequest,
        Category::VerifierObjection,
        Category::ActionBudgetSpent,
        Category::OutputRejected,
        Category::ToolRejected,
        Category::ToolFailed,
        Category::CircuitOpen,
        Category::Rule,
    ];

    /// The snake_case name used in JSON and in the feedback.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::EmptyResponse => "empty_response",
            Category::InvalidJson => "invalid_json",
            Category::DecisionSchema => "decision_schema",
            Category::UnknownTool => "unknown_tool",
            Category::InvalidToolInput => "invalid_tool_input",
            Category::RepeatedFailedAction => "repeated_failed_action",
            Category::RepeatedAction => "repeated_action",
            Category::UngroundedFinal => "ungrounded_final",
            Category::Echo => "echo",
            Category::ClaimedAction => "claimed_action",
            Category::DeclinedRequest => "declined_request",
            Category::WrongArithmetic => "wrong_arithmetic",
            Category::UnstatedResult => "unstated_result",
            Category::UngroundedArgument => "ungrounded_argument",
            Category::UncoveredRequest => "uncovered_request",
            Category::VerifierObjection => "verifier_objection",
            Category::ActionBudgetSpent => "action_budget_spent",
            Category::OutputRejected => "output_rejected",
            Category::ToolRejected => "tool_rejected",
            Category::ToolFailed => "tool_failed",
            Category::CircuitOpen => "circuit_open",
            Category::Rule => "rule",
        }
    }

    /// Whether the rejected reply may be given again unchanged: a verifier's objection may be
    /// wrong, and keeping the answer is how the model says so.
    pub fn allows_same_reply(self) -> bool {
        self == Category::VerifierObjection
    }

    /// Whether this rejection is of a decision, and so counts against the slot's corrections.
    pub fn is_decision_rejection(self) -> bool {
        matches!(
            self,
            Category::EmptyResponse
                | Category::InvalidJson
                | Category::DecisionSchema
                | Category::UnknownTool
                | Category::InvalidToolInput
                | Category::RepeatedFailedAction
                | Category::RepeatedAction
                | Category::UngroundedFinal
                | Category::Echo
                | Category::ClaimedAction
                | Category::DeclinedRequest
                | Category::WrongArithmetic
                | Category::UnstatedResult
                | Category::UngroundedArgument
                | Category::UncoveredRequest
                | Category::VerifierObjection
                | Category::ActionBudgetSpent
                | Category::Rule
        )
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A refused reply or tool call: its category and a concise, model-readable message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rejection {
    /// Why it was refused.
    pub category: Category,
    /// What is wrong, in one or a few lines.
    pub message: String,
    /// The tool concerned, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The rule that refused it, when a [`Rule`](crate::rule::Rule) did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
}

impl Rejection {
    /// A rejection with no tool attached.
    pub fn new(category: Category, message: impl Into<String>) -> Self {
        Self {
            category,
            message: message.into(),
            tool: None,
            rule: None,
        }
    }

    /// The same rejection, made by the rule named `rule`.
    pub fn from_rule(mut self, rule: impl Into<String>) -> Self {
        self.rule = Some(rule.into());
        self
    }

    /// The same rejection, about `tool`.
    pub fn with_tool(mut self, tool: impl Into<String>) -> Self {
        self.tool = Some(tool.into());
        self
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.category, self.message)
    }
}
