//! When the embedded model writes a free thought before it decides.

use std::fmt;
use std::str::FromStr;

use corrigible::arithmetic::evaluate_noted;
use corrigible::decision::parse_text;
use corrigible::evidence::numbers::numbers_in;
use corrigible::{Decision, MessageKind, ModelRequest};
use serde_json::Value;

use crate::error::LocalError;

/// When the embedded model thinks before a decision (see `docs/thinking.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Think {
    /// Never: every decision is decoded at once. The default until `auto` is measured to
    /// lose nowhere (see `docs/thinking.md`).
    #[default]
    Off,
    /// When the request calls for reasoning: a first decision that reaches for a tool that
    /// only computes (the calculator) is set aside, the model reasons on the request alone,
    /// step by step, and decides after that thought. Every other decision is taken at once.
    Auto,
    /// Before every decision, in the agent's own conversation.
    Always,
}

impl Think {
    /// The mode a thought bound given alone implies, as `--think-tokens N` always meant:
    /// thinking before every decision when N > 0, never when it is 0.
    pub fn implied_by(think_tokens: usize) -> Self {
        if think_tokens > 0 {
            Think::Always
        } else {
            Think::Off
        }
    }

    /// The name the command line and the configuration file use.
    pub fn as_str(self) -> &'static str {
        match self {
            Think::Off => "off",
            Think::Auto => "auto",
            Think::Always => "always",
        }
    }
}

impl fmt::Display for Think {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Think {
    type Err = LocalError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "off" => Ok(Think::Off),
            "auto" => Ok(Think::Auto),
            "always" => Ok(Think::Always),
            other => Err(LocalError::Config(format!(
                "unknown thinking mode `{other}`: expected `auto`, `always` or `off`"
            ))),
        }
    }
}

/// What the model is asked after the request when it reasons on the request alone: the bench
/// `bare` baseline's instruction, asking also for each calculation with its result, which the
/// thought calculator checks.
pub const REASON_INSTRUCTION: &str = "Think step by step. Write each calculation with its \
                                      result, as in `7 * 12 = 84`. Then give the final answer on \
                                      a last line of the form `Answer: N`.";

/// The request a first decision answers, when `request` is one: its last message is the
/// user's request (no decision, tool result or correction after it) and a tool it may call
/// only computes.
pub fn first_request(request: &ModelRequest) -> Option<&str> {
    let last = request.messages.last()?;
    let first = request.correction.is_none()
        && last.kind == MessageKind::Request
        && request.tools.iter().any(|t| t.computes);
    first.then_some(last.content.as_str())
}

/// How a first decision shows that its request calls for reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// It calls a tool that only computes: the decision after the thought is held to such a
    /// call, so the thought's arithmetic is computed, not trusted.
    Computation,
    /// It answers at once with a number the request does not give: a result worked out with
    /// no thought and no tool. The decision after the thought is free.
    ComputedAnswer,
}

/// Whether, and how, the first decision `text` on the request `asked` reaches for reasoning.
pub fn reach(request: &ModelRequest, asked: &str, text: &str) -> Option<Reach> {
    match parse_text(text, false).decision {
        Ok(Decision::Action(action)) => request
            .tools
            .iter()
            .any(|t| t.computes && t.name == action.tool)
            .then_some(Reach::Computation),
        Ok(Decision::Final(answer)) if answer.satisfied => {
            let given = numbers_in(asked);
            numbers_in(&answer.summary)
                .iter()
                .any(|n| !given.iter().any(|g| (g - n).abs() < 1e-9))
                .then_some(Reach::ComputedAnswer)
        }
        _ => None,
    }
}

/// Which computing call stands after a thought on a request whose first decision was one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled {
    /// The call set aside before the thought: it computes the thought's answer, so no second
    /// decision is decoded.
    Agreed,
    /// The call set aside before the thought: the call decoded after it computes nothing the
    /// calculator can evaluate, and the one before did.
    Kept,
    /// The call decoded after the thought.
    Reasoned,
}

impl Settled {
    /// The computing call that stands, given the one set aside `before` the thought and the
    /// `thought`; `after` is the decision decoded after the thought, `None` while it is not.
    pub fn between(before: &str, thought: &str, after: Option<&str>) -> Self {
        let computed = computes(before);
        let agreed = computed
            .zip(answer_of(thought))
            .is_some_and(|(value, answer)| close(value, answer));
        match after {
            _ if agreed => Settled::Agreed,
            Some(after) if computed.is_some() && computes(after).is_none() => Settled::Kept,
            _ => Settled::Reasoned,
        }
    }

    /// The label the decoding of the decision gets.
    pub fn label(self) -> &'static str {
        match self {
            Settled::Agreed => "reasoned_agrees",
            Settled::Kept => "reasoned_kept",
            Settled::Reasoned => "reasoned_first",
        }
    }
}

/// The value a call's input computes: its first string argument that is an arithmetic
/// expression the calculator evaluates.
fn computes(text: &str) -> Option<f64> {
    let Ok(Decision::Action(action)) = parse_text(text, false).decision else {
        return None;
    };
    action
        .input
        .as_object()?
        .values()
        .filter_map(Value::as_str)
        .find_map(|expression| evaluate_noted(expression).ok())
        .map(|e| e.value)
}

/// The number a thought gives as its answer: the first after its last `Answer:`.
fn answer_of(thought: &str) -> Option<f64> {
    let at = thought.to_ascii_lowercase().rfind("answer:")?;
    numbers_in(&thought[at + "answer:".len()..])
        .first()
        .copied()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(1.0)
}

/// A decision schema without its final-answer branch (the last of its `anyOf`).
pub fn calls_only(mut schema: Value) -> Value {
    if let Some(branches) = schema.get_mut("anyOf").and_then(Value::as_array_mut)
        && branches.len() > 1
    {
        branches.pop();
    }
    schema
}

#[cfg(test)]
mod tests {
    use corrigible::{Message, Stage, ToolSpec};
    use serde_json::json;

    use super::*;

    fn spec(name: &str, computes: bool) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
            grounded: Vec::new(),
            computes,
        }
    }

    fn request(messages: Vec<Message>, tools: Vec<ToolSpec>) -> ModelRequest {
        ModelRequest {
            stage: Stage::new(1, 0),
            messages,
            tools,
            protocol: corrigible::Protocol::Json,
            correction: None,
            grounds: Default::default(),
        }
    }

    #[test]
    fn modes_read_as_written() {
        for mode in [Think::Off, Think::Auto, Think::Always] {
            assert_eq!(mode.as_str().parse::<Think>().unwrap(), mode);
        }
        assert!("sometimes".parse::<Think>().is_err());
    }

    #[test]
    fn a_first_decision_is_the_one_right_after_the_request() {
        let tools = vec![spec("calculator", true), spec("weather", false)];
        let asked = request(vec![Message::request("What is 2 + 2?")], tools.clone());
        assert_eq!(first_request(&asked), Some("What is 2 + 2?"));
        let answered = request(
            vec![
                Message::request("What is 2 + 2?"),
                Message::user(MessageKind::ToolResult, "calculator returned 4"),
            ],
            tools,
        );
        assert_eq!(first_request(&answered), None);
        let nothing_computes = request(
            vec![Message::request("Weather in Oslo?")],
            vec![spec("weather", false)],
        );
        assert_eq!(first_request(&nothing_computes), None);
    }

    #[test]
    fn a_computing_call_or_a_number_from_nowhere_reaches_for_reasoning() {
        let asked = "I buy 3 apples at 2 dollars. What do I pay?";
        let request = request(
            vec![Message::request(asked)],
            vec![spec("calculator", true), spec("weather", false)],
        );
        let call = |tool: &str| {
            format!(r#"{{"state":"action","reason":"r","tool":"{tool}","tool_input":{{}}}}"#)
        };
        let answer = |satisfied: bool, summary: &str| {
            format!(r#"{{"state":"final","satisfied":{satisfied},"final_summary":"{summary}"}}"#)
        };
        let reached = |text: &str| reach(&request, asked, text);
        assert_eq!(reached(&call("calculator")), Some(Reach::Computation));
        assert_eq!(reached(&call("weather")), None);
        assert_eq!(
            reached(&answer(true, "You pay 6 dollars.")),
            Some(Reach::ComputedAnswer)
        );
        assert_eq!(reached(&answer(true, "3 apples at 2 dollars.")), None);
        assert_eq!(reached(&answer(false, "I cannot say: 6?")), None);
        assert_eq!(reached("not json"), None);
    }

    #[test]
    fn a_thought_settles_which_computing_call_stands() {
        let call = |expression: &str| {
            json!({"state": "action", "reason": "r", "tool": "calculator",
                   "tool_input": {"expression": expression}})
            .to_string()
        };
        let thought = "12 - 2 = 10\n10 - 3 = 7\n7 - 4 = 3\nAnswer: 3";
        let before = call("12 - 2 - 3 - 4");
        assert_eq!(Settled::between(&before, thought, None), Settled::Agreed);
        let wrong = call("12 - 2 - 3");
        assert_eq!(Settled::between(&wrong, thought, None), Settled::Reasoned);
        assert_eq!(
            Settled::between(&wrong, thought, Some(&before)),
            Settled::Reasoned
        );
        assert_eq!(
            Settled::between(&wrong, thought, Some(&call("3 \\times 1"))),
            Settled::Kept
        );
        let unparsed = call("12 \\times 2");
        assert_eq!(
            Settled::between(&unparsed, thought, Some(&call("7 > 3"))),
            Settled::Reasoned
        );
        assert_eq!(
            Settled::between(&before, "no answer line", Some(&wrong)),
            Settled::Reasoned
        );
        let answer = r#"{"state":"final","satisfied":true,"final_summary":"3 slices."}"#;
        assert_eq!(Settled::between(answer, thought, None), Settled::Reasoned);
        assert_eq!(
            Settled::between(answer, thought, Some(answer)),
            Settled::Reasoned
        );
    }
}
