//! The verifier's conversation: its instructions, three worked comparisons, and the run's
//! evidence, with one tool, `report`, whose input carries the comparisons.

use serde_json::{Value, json};

use super::objection::report_schema;
use crate::correction::feedback::xml_text_escape;
use crate::message::{Message, MessageKind, ToolCall};
use crate::model::{Protocol, ToolSpec};
use crate::prompt::tagged_tool_result;

/// The tool the verifier calls with its objections.
pub const REPORT: &str = "report";

const INSTRUCTIONS: &str = "You compare an assistant's final answer with the evidence of its run: the user's request and the results of the tools it called. For each value the answer states (a number, a time, a condition), copy it as answer_says; then find the words of the request or of a tool result that give it, copy them exactly as quote, and the value in them as source_says. When nothing gives the value, leave quote and source_says empty. When the request asks for a value that the answer leaves out, give its quote and source_says with answer_says empty. Do not judge: set the values side by side.";

const JSON_SHAPE: &str = r#"Reply with exactly one JSON object and nothing else:
{"state": "action", "reason": "<the answer's values and the evidence's>", "tool": "report", "tool_input": {"comparisons": [{"answer_says": "<value in the answer>", "quote": "<exact words of the request or a tool result>", "source_says": "<value in the quote>"}]}}"#;

const NATIVE_SHAPE: &str = "Call report with the comparisons.";

/// One worked comparison: the evidence as the verifier reads it and the report it gives.
struct Check {
    request: &'static str,
    results: &'static [(&'static str, &'static str)],
    answer: &'static str,
    reason: &'static str,
    comparisons: fn() -> Value,
}

const CHECKS: &[Check] = &[
    Check {
        request: "How windy is it in Lisbon?",
        results: &[(
            "weather",
            r#"{"city":"Lisbon","temperature_c":16.4,"wind_speed_kmh":27.0,"conditions":"clear"}"#,
        )],
        answer: "It is clear in Lisbon, with wind at 27 km/h.",
        reason: "The answer says clear and 27 km/h; the result says conditions clear and wind_speed_kmh 27.0.",
        comparisons: || {
            json!([
                {"answer_says": "clear", "quote": "\"conditions\":\"clear\"", "source_says": "clear"},
                {"answer_says": "27 km/h", "quote": "\"wind_speed_kmh\":27.0", "source_says": "27.0"}
            ])
        },
    },
    Check {
        request: "What time is it in Lima?",
        results: &[(
            "time",
            r#"{"timezone":"America/Lima","time":"06:20","utc_offset":"-05:00"}"#,
        )],
        answer: "It is 08:20 in Lima.",
        reason: "The answer says 08:20; the result says time 06:20.",
        comparisons: || json!([{"answer_says": "08:20", "quote": "\"time\":\"06:20\"", "source_says": "06:20"}]),
    },
    Check {
        request: "How much warmer is Rome than Oslo?",
        results: &[
            ("weather", r#"{"city":"Rome","temperature_c":21.4}"#),
            ("weather", r#"{"city":"Oslo","temperature_c":9.0}"#),
        ],
        answer: "Rome is 18 °C warmer than Oslo.",
        reason: "The answer says 18 °C warmer; the results say 21.4 and 9.0, and neither says 18.",
        comparisons: || json!([{"answer_says": "18 °C", "quote": "", "source_says": ""}]),
    },
];

/// The `report` tool as declared to the verifier.
pub fn report_spec() -> ToolSpec {
    ToolSpec {
        name: REPORT.into(),
        description: "Report the answer's values beside the evidence that gives them.".into(),
        parameters: report_schema(),
        grounded: Vec::new(),
        computes: false,
    }
}

/// The evidence of a run as one user message: the request, each tool result, the answer.
pub fn evidence_text(request: &str, results: &[(String, String)], answer: &str) -> String {
    let mut text = format!(
        "<request>{}</request>\n<answer>{}</answer>\n",
        xml_text_escape(request),
        xml_text_escape(answer)
    );
    for (tool, result) in results {
        text.push_str(&tagged_tool_result(tool, result, false));
        text.push('\n');
    }
    text.push_str("Compare each value of the answer with the tool results.");
    text
}

/// The verifier's messages under `protocol`: instructions, the worked checks, then `evidence`.
pub fn messages(protocol: Protocol, evidence: String) -> Vec<Message> {
    let shape = match protocol {
        Protocol::Json => JSON_SHAPE,
        Protocol::Native => NATIVE_SHAPE,
    };
    let mut out = vec![Message::system(format!("{INSTRUCTIONS}\n{shape}"))];
    for (n, check) in CHECKS.iter().enumerate() {
        let results: Vec<(String, String)> = check
            .results
            .iter()
            .map(|(t, r)| (t.to_string(), r.to_string()))
            .collect();
        out.push(Message::user(
            MessageKind::Example,
            evidence_text(check.request, &results, check.answer),
        ));
        let input = json!({"comparisons": (check.comparisons)()});
        match protocol {
            Protocol::Json => out.push(Message::assistant(
                MessageKind::Example,
                json!({"state": "action", "reason": check.reason, "tool": REPORT, "tool_input": input})
                    .to_string(),
                Vec::new(),
            )),
            Protocol::Native => {
                let id = format!("check_{}", n + 1);
                out.push(Message::assistant(
                    MessageKind::Example,
                    "",
                    vec![ToolCall {
                        id: id.clone(),
                        name: REPORT.into(),
                        arguments: input.to_string(),
                    }],
                ));
                out.push(Message::tool_result(
                    id,
                    REPORT,
                    "recorded",
                    false,
                    MessageKind::Example,
                ));
            }
        }
    }
    out.push(Message::user(MessageKind::Request, evidence));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::{Decision, parse_text};
    use crate::verify::objection::comparisons_in;

    #[test]
    fn the_worked_checks_are_valid_reports() {
        let validator = jsonschema::validator_for(&report_schema()).unwrap();
        let messages = messages(Protocol::Json, "<request>x</request>".into());
        let replies: Vec<&Message> = messages
            .iter()
            .filter(|m| m.kind == MessageKind::Example && !m.content.starts_with('<'))
            .collect();
        assert_eq!(replies.len(), CHECKS.len());
        for reply in replies {
            let Ok(Decision::Action(action)) = parse_text(&reply.content, false).decision else {
                panic!("{}", reply.content);
            };
            assert_eq!(action.tool, REPORT);
            assert!(validator.is_valid(&action.input));
            assert!(!comparisons_in(&action.input).is_empty());
        }
        assert_eq!(messages.last().unwrap().kind, MessageKind::Request);
    }

    #[test]
    fn the_engine_rules_on_the_worked_comparisons_as_they_intend() {
        use crate::verify::proof::{Evidence, prove};
        let rulings: Vec<Vec<Option<&str>>> = CHECKS
            .iter()
            .map(|check| {
                let results: Vec<(String, String)> = check
                    .results
                    .iter()
                    .map(|(t, r)| (t.to_string(), r.to_string()))
                    .collect();
                let evidence = Evidence {
                    request: check.request,
                    results: &results,
                    answer: check.answer,
                };
                comparisons_in(&json!({"comparisons": (check.comparisons)()}))
                    .iter()
                    .map(|c| prove(c, &evidence).ok().map(|p| p.kind.as_str()))
                    .collect()
            })
            .collect();
        assert_eq!(
            rulings,
            [
                vec![None, None],
                vec![Some("contradicts")],
                vec![Some("unsupported")]
            ]
        );
    }

    #[test]
    fn native_checks_answer_every_call() {
        let messages = messages(Protocol::Native, "<request>x</request>".into());
        let calls = messages.iter().flat_map(|m| &m.tool_calls).count();
        let results = messages.iter().filter(|m| m.tool_call_id.is_some()).count();
        assert_eq!(calls, results);
    }

    #[test]
    fn evidence_is_escaped() {
        let text = evidence_text(
            "a < b",
            &[("t".into(), "</tool_result>".into())],
            "</answer>",
        );
        assert_eq!(text.matches("</answer>").count(), 1);
        assert_eq!(text.matches("</tool_result>").count(), 1);
    }
}
