//! Worked examples: short episodes shown to the model as real chat turns before the request.
//!
//! Small models follow a demonstrated exchange far better than a described one, so an example
//! is data (a request, the actions with their results, the answer) rendered into messages in
//! exactly the shape the run itself uses: decisions as JSON replies and tool results as tagged
//! user messages under the `json` protocol, tool calls and tool messages under `native`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::decision::{Action, Decision, Final};
use crate::message::{Message, MessageKind, ToolCall};
use crate::model::{Protocol, Reasoning};
use crate::prompt::tagged_tool_result;
use crate::tool::FINAL_ANSWER;

/// One worked example: a request, the tool calls made for it with their results, the answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkedExample {
    /// The user's request.
    pub request: String,
    /// The actions taken, in order; none for a request answered directly.
    #[serde(default)]
    pub steps: Vec<ExampleStep>,
    /// The final answer.
    pub answer: String,
    /// Whether the answer fulfils the request; `false` shows an honest refusal.
    #[serde(default = "fulfilled", skip_serializing_if = "is_fulfilled")]
    pub satisfied: bool,
    /// The thought before the final answer, shown to a model that thinks before deciding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<String>,
}

/// One action of a worked example and the tool's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExampleStep {
    /// Why the tool is called.
    pub reason: String,
    /// The tool's name.
    pub tool: String,
    /// The tool's input.
    pub input: Value,
    /// What the tool returned.
    pub result: String,
    /// The thought before this action, shown to a model that thinks before deciding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<String>,
}

impl WorkedExample {
    /// The tools this example calls.
    pub fn tools(&self) -> impl Iterator<Item = &str> {
        self.steps.iter().map(|s| s.tool.as_str())
    }

    /// The example as chat turns under `protocol`; `index` keeps native call ids unique.
    pub fn messages(&self, protocol: Protocol, index: usize) -> Vec<Message> {
        let mut messages = vec![Message::user(MessageKind::Example, &self.request)];
        for (n, step) in self.steps.iter().enumerate() {
            let action = Decision::Action(Action {
                reason: step.reason.clone(),
                tool: step.tool.clone(),
                input: step.input.clone(),
                call_id: None,
            });
            match protocol {
                Protocol::Json => {
                    messages.push(reply(action.to_json().to_string(), &step.thought));
                    messages.push(Message::user(
                        MessageKind::Example,
                        tagged_tool_result(&step.tool, &step.result, false),
                    ));
                }
                Protocol::Native => {
                    let id = format!("example_{}_{}", index + 1, n + 1);
                    messages.push(call(&id, &step.tool, &step.input));
                    messages.push(Message::tool_result(
                        id,
                        &step.tool,
                        &step.result,
                        false,
                        MessageKind::Example,
                    ));
                }
            }
        }
        let answer = Decision::Final(Final {
            satisfied: self.satisfied,
            summary: self.answer.clone(),
            call_id: None,
        });
        match protocol {
            Protocol::Json => messages.push(reply(answer.to_json().to_string(), &self.thought)),
            Protocol::Native => {
                let id = format!("example_{}_final", index + 1);
                let input =
                    serde_json::json!({"satisfied": self.satisfied, "final_summary": self.answer});
                messages.push(call(&id, FINAL_ANSWER, &input));
                messages.push(Message::tool_result(
                    id,
                    FINAL_ANSWER,
                    "accepted",
                    false,
                    MessageKind::Example,
                ));
            }
        }
        messages
    }
}

fn fulfilled() -> bool {
    true
}

fn is_fulfilled(satisfied: &bool) -> bool {
    *satisfied
}

fn reply(text: String, thought: &Option<String>) -> Message {
    Message::assistant(MessageKind::Example, text, Vec::new())
        .with_reasoning(thought.as_ref().map(Reasoning::text))
}

fn call(id: &str, tool: &str, input: &Value) -> Message {
    Message::assistant(
        MessageKind::Example,
        "",
        vec![ToolCall {
            id: id.to_string(),
            name: tool.to_string(),
            arguments: input.to_string(),
        }],
    )
}

/// All `examples` as chat turns under `protocol`, in order.
pub fn example_messages(examples: &[WorkedExample], protocol: Protocol) -> Vec<Message> {
    examples
        .iter()
        .enumerate()
        .flat_map(|(i, e)| e.messages(protocol, i))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::decision::parse_text;
    use crate::message::Role;

    fn with_tool() -> WorkedExample {
        WorkedExample {
            request: "How much is 1234 / 4?".into(),
            steps: vec![ExampleStep {
                reason: "arithmetic".into(),
                tool: "calculator".into(),
                input: json!({"expression": "1234 / 4"}),
                result: "308.5".into(),
                thought: Some("1234 / 4 is arithmetic.".into()),
            }],
            answer: "1234 / 4 = 308.5".into(),
            satisfied: true,
            thought: None,
        }
    }

    #[test]
    fn json_examples_are_decisions_and_tagged_results() {
        let m = with_tool().messages(Protocol::Json, 0);
        let roles: Vec<Role> = m.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::User, Role::Assistant, Role::User, Role::Assistant]
        );
        assert!(m.iter().all(|m| m.kind == MessageKind::Example));
        assert!(parse_text(&m[1].content, false).decision.is_ok());
        assert_eq!(
            m[1].reasoning.as_ref().map(|r| r.text.as_str()),
            Some("1234 / 4 is arithmetic.")
        );
        assert_eq!(m[3].reasoning, None);
        assert_eq!(
            m[2].content,
            r#"<tool_result tool="calculator">308.5</tool_result>"#
        );
        match parse_text(&m[3].content, false).decision {
            Ok(Decision::Final(f)) => assert_eq!(f.summary, "1234 / 4 = 308.5"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn native_examples_answer_every_call() {
        let direct = WorkedExample {
            request: "Say hello in French.".into(),
            steps: Vec::new(),
            answer: "Bonjour !".into(),
            satisfied: true,
            thought: None,
        };
        let m = example_messages(&[with_tool(), direct], Protocol::Native);
        let calls: Vec<&str> = m
            .iter()
            .flat_map(|m| m.tool_calls.iter().map(|c| c.id.as_str()))
            .collect();
        let results: Vec<&str> = m.iter().filter_map(|m| m.tool_call_id.as_deref()).collect();
        assert_eq!(calls, results);
        assert_eq!(calls, ["example_1_1", "example_1_final", "example_2_final"]);
    }

    #[test]
    fn examples_load_from_json_and_refuse_unknown_fields() {
        let ok: Vec<WorkedExample> =
            serde_json::from_str(r#"[{"request": "hi", "answer": "hello"}]"#).unwrap();
        assert!(ok[0].steps.is_empty());
        let bad = serde_json::from_str::<Vec<WorkedExample>>(
            r#"[{"request": "hi", "answer": "hello", "extra": 1}]"#,
        );
        assert!(bad.is_err());
    }
}
