use serde_json::{Value, json};

use crate::correction::narrowing::Allowed;
use crate::evidence::provenance::{Grounds, Provenance};
use crate::model::ToolSpec;
use crate::tool::FINAL_ANSWER;

/// How much of a decision's shape a JSON Schema pins down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaMode {
    /// The decision envelope: `tool` is one of the registered names, `tool_input` any object.
    Envelope,
    /// One action branch per tool with that tool's exact input schema, plus the final branch.
    Full,
}

fn final_branch() -> Value {
    json!({
        "type": "object",
        "properties": {
            "state": {"const": "final"},
            "satisfied": {"type": "boolean"},
            "final_summary": {"type": "string"}
        },
        "required": ["state", "satisfied", "final_summary"],
        "additionalProperties": false
    })
}

fn action_branch(tool: Value, input: Value) -> Value {
    json!({
        "type": "object",
        "properties": {
            "state": {"const": "action"},
            "reason": {"type": "string"},
            "tool": tool,
            "tool_input": input
        },
        "required": ["state", "reason", "tool", "tool_input"],
        "additionalProperties": false
    })
}

/// The JSON Schema of a JSON-protocol decision over `tools`.
pub fn decision_schema(tools: &[ToolSpec], mode: SchemaMode) -> Value {
    let mut branches = Vec::new();
    match mode {
        SchemaMode::Envelope if !tools.is_empty() => {
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            branches.push(action_branch(
                json!({"enum": names}),
                json!({"type": "object"}),
            ));
        }
        SchemaMode::Envelope => {}
        SchemaMode::Full => {
            for tool in tools {
                branches.push(action_branch(
                    json!({"const": tool.name}),
                    tool.parameters.clone(),
                ));
            }
        }
    }
    branches.push(final_branch());
    json!({"anyOf": branches})
}

/// `tools` with their grounded arguments held to `grounds`: a `copied` argument to one of the
/// copies (an `enum`), and, when `hold_numbers`, a `numbers` argument to the conversation's
/// numbers alone (a `pattern`; single digits when the conversation has none). Measured on the
/// embedded model, allowing small whole numbers too lets it keep a made-up `100` as `10`.
/// With nothing to hold to, the tools are unchanged.
pub fn with_grounds(tools: &[ToolSpec], grounds: &Grounds, hold_numbers: bool) -> Vec<ToolSpec> {
    let mut tools = tools.to_vec();
    for tool in &mut tools {
        for arg in &tool.grounded {
            let Some(property) = tool
                .parameters
                .pointer_mut(&format!("/properties/{}", arg.field))
                .and_then(Value::as_object_mut)
            else {
                continue;
            };
            match arg.provenance {
                Provenance::Copied if !grounds.copies.is_empty() => {
                    property.insert("enum".into(), json!(grounds.copies));
                }
                Provenance::Numbers if hold_numbers => {
                    property.insert("pattern".into(), json!(numbers_pattern(&grounds.numbers)));
                }
                Provenance::Copied | Provenance::Numbers => {}
            }
        }
    }
    tools
}

/// Most numbers a held expression may hold.
const MAX_HELD_NUMBERS: usize = 8;

/// A regex for arithmetic over `numbers` (single digits when there are none): numbers joined by
/// operators, with parentheses, a sign, percent signs and function calls around them. Nothing
/// else may stand between two numbers, so a held expression cannot trail off into words or an
/// `= claim`.
fn numbers_pattern(numbers: &[String]) -> String {
    let mut choices: Vec<String> = numbers.iter().map(|n| regex_escape(n)).collect();
    if choices.is_empty() {
        choices.push("[0-9]".into());
    }
    let number = format!("(?:{})", choices.join("|"));
    let open = r"(?:\(|[a-z]{2,6}\(){0,3}-?";
    let close = r"[)%]{0,3}";
    let operator = r" ?(?:[+\-*/^×÷,%]|of|mod) ?";
    let term = format!("{open}{number}{close}");
    let more = MAX_HELD_NUMBERS - 1;
    format!("^{term}(?:{operator}{term}){{0,{more}}}$")
}

/// The decision schema narrowed to what a correction round still `allowed`.
///
/// `ToolOrFinal` always gets that tool's exact input schema, whatever `mode`; a tool that is not
/// among `tools` leaves the schema as wide as `mode` makes it.
pub fn allowed_schema(tools: &[ToolSpec], mode: SchemaMode, allowed: &Allowed) -> Value {
    match allowed {
        Allowed::AnyDecision | Allowed::ActionsExcept { .. } => decision_schema(tools, mode),
        Allowed::ToolOrFinal { tool } => match tools.iter().find(|t| &t.name == tool) {
            Some(spec) => decision_schema(std::slice::from_ref(spec), SchemaMode::Full),
            None => decision_schema(tools, mode),
        },
        Allowed::ActionOrUnsatisfiedFinal => {
            let mut schema = decision_schema(tools, mode);
            if let Some(last) = schema["anyOf"].as_array_mut().and_then(|b| b.last_mut()) {
                last["properties"]["satisfied"] = json!({"const": false});
            }
            schema
        }
        Allowed::ToolsExcept { tools: excluded } => {
            decision_schema(&without(tools, excluded), mode)
        }
        Allowed::FinalStating { facts } => {
            let mut schema = decision_schema(tools, mode);
            if let Some(last) = schema["anyOf"].as_array_mut().and_then(|b| b.last_mut()) {
                let starts: Vec<String> = facts.iter().map(|f| regex_escape(f)).collect();
                last["properties"]["final_summary"]["pattern"] =
                    json!(format!("^(?:{})", starts.join("|")));
            }
            schema
        }
        Allowed::FinalOnly => json!({"anyOf": [final_branch()]}),
        Allowed::Cover { tools: cover, .. } => {
            let covering: Vec<ToolSpec> = tools
                .iter()
                .filter(|t| cover.contains(&t.name))
                .cloned()
                .collect();
            let tools = if covering.is_empty() {
                tools
            } else {
                &covering
            };
            allowed_schema(tools, mode, &Allowed::ActionOnly)
        }
        Allowed::ActionOnOtherTools { tools: excluded } => {
            let rest = without(tools, excluded);
            let tools = if rest.is_empty() { tools } else { &rest };
            allowed_schema(tools, mode, &Allowed::ActionOnly)
        }
        Allowed::ActionOnly => {
            let mut schema = decision_schema(tools, mode);
            if let Some(branches) = schema["anyOf"].as_array_mut()
                && branches.len() > 1
            {
                branches.pop();
            }
            schema
        }
    }
}

/// `tools` but those named in `excluded`.
fn without(tools: &[ToolSpec], excluded: &[String]) -> Vec<ToolSpec> {
    tools
        .iter()
        .filter(|t| !excluded.contains(&t.name))
        .cloned()
        .collect()
}

/// `text` with every regex metacharacter escaped.
fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The built-in `final_answer` tool of the native protocol.
pub fn final_answer_spec() -> ToolSpec {
    ToolSpec {
        name: FINAL_ANSWER.to_string(),
        description: "Give the final answer to the user and end the run. Set satisfied to false \
                      when the request could not be fulfilled."
            .to_string(),
        parameters: json!({
            "type": "object",
            "properties": {
                "satisfied": {"type": "boolean", "description": "Whether the request was fulfilled."},
                "final_summary": {"type": "string", "description": "The answer for the user."}
            },
            "required": ["satisfied", "final_summary"],
            "additionalProperties": false
        }),
        grounded: Vec::new(),
        computes: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tools() -> Vec<ToolSpec> {
        ["calc", "time"]
            .iter()
            .map(|name| ToolSpec {
                name: (*name).into(),
                description: String::new(),
                parameters: json!({"type": "object", "properties": {"x": {"type": "number"}}}),
                grounded: Vec::new(),
                computes: false,
            })
            .collect()
    }

    fn branches(schema: &Value) -> Vec<Value> {
        schema["anyOf"].as_array().cloned().unwrap_or_default()
    }

    #[test]
    fn tool_or_final_keeps_one_exact_branch_even_in_envelope_mode() {
        let allowed = Allowed::ToolOrFinal {
            tool: "time".into(),
        };
        let b = branches(&allowed_schema(&tools(), SchemaMode::Envelope, &allowed));
        assert_eq!(b.len(), 2);
        assert_eq!(b[0]["properties"]["tool"], json!({"const": "time"}));
        assert_eq!(
            b[0]["properties"]["tool_input"]["properties"]["x"]["type"],
            "number"
        );
        assert_eq!(b[1]["properties"]["state"], json!({"const": "final"}));
    }

    #[test]
    fn final_only_and_unsatisfied_final() {
        let b = branches(&allowed_schema(
            &tools(),
            SchemaMode::Full,
            &Allowed::FinalOnly,
        ));
        assert_eq!(b.len(), 1);
        assert_eq!(b[0]["properties"]["state"], json!({"const": "final"}));
        let s = allowed_schema(
            &tools(),
            SchemaMode::Full,
            &Allowed::ActionOrUnsatisfiedFinal,
        );
        let b = branches(&s);
        assert_eq!(b.len(), 3);
        assert_eq!(b[2]["properties"]["satisfied"], json!({"const": false}));
    }

    #[test]
    fn final_stating_anchors_the_summary_on_escaped_facts() {
        let allowed = Allowed::FinalStating {
            facts: vec!["24.3".into(), "a+b (x)".into()],
        };
        let schema = allowed_schema(&tools(), SchemaMode::Full, &allowed);
        let all = branches(&schema);
        assert_eq!(all.len(), 3, "both actions and the final stay");
        assert_eq!(
            all[2]["properties"]["final_summary"]["pattern"],
            json!("^(?:24\\.3|a\\+b \\(x\\))")
        );
    }

    #[test]
    fn tools_except_drops_their_branches() {
        let allowed = Allowed::ToolsExcept {
            tools: vec!["calc".into()],
        };
        let b = branches(&allowed_schema(&tools(), SchemaMode::Full, &allowed));
        assert_eq!(b.len(), 2);
        assert_eq!(b[0]["properties"]["tool"], json!({"const": "time"}));
        let b = branches(&allowed_schema(&tools(), SchemaMode::Envelope, &allowed));
        assert_eq!(b[0]["properties"]["tool"], json!({"enum": ["time"]}));
    }

    #[test]
    fn any_decision_is_the_plain_schema() {
        for mode in [SchemaMode::Envelope, SchemaMode::Full] {
            assert_eq!(
                allowed_schema(&tools(), mode, &Allowed::AnyDecision),
                decision_schema(&tools(), mode)
            );
        }
    }

    fn grounded_tools() -> Vec<ToolSpec> {
        let string = json!({"type": "object", "properties": {"s": {"type": "string"}}});
        vec![
            ToolSpec {
                name: "calc".into(),
                description: String::new(),
                parameters: string.clone(),
                grounded: vec![crate::GroundedArgument::numbers("s")],
                computes: false,
            },
            ToolSpec {
                name: "city".into(),
                description: String::new(),
                parameters: string,
                grounded: vec![crate::GroundedArgument::copied("s")],
                computes: false,
            },
        ]
    }

    #[test]
    fn grounds_hold_copied_values_always_and_numbers_on_request() {
        let grounds = Grounds {
            copies: vec!["Lima".into(), "Peru".into()],
            numbers: vec!["1764".into(), "2.5".into()],
        };
        let loose = with_grounds(&grounded_tools(), &grounds, false);
        assert_eq!(loose[0].parameters["properties"]["s"].get("pattern"), None);
        assert_eq!(
            loose[1].parameters["properties"]["s"]["enum"],
            json!(["Lima", "Peru"])
        );
        let held = with_grounds(&grounded_tools(), &grounds, true);
        let pattern = held[0].parameters["properties"]["s"].clone();
        let validator = jsonschema::validator_for(&pattern).expect("the pattern compiles");
        for ok in [
            "sqrt(1764)",
            "1764 * 2.5",
            "-1764 / (2.5 + 1764)",
            "2.5% of 1764",
            "1764 % 2.5",
            "(1764 + 2.5) * 2.5",
        ] {
            assert!(
                validator.is_valid(&json!(ok)),
                "{ok} is held to the numbers given"
            );
        }
        for made_up in [
            "1764 * 176.4",
            "17640",
            "1764 / 100",
            "1764 / 10",
            "2.55",
            "1764 2.5",
            "1764 * 2.5 = 4410",
            "1764 }}, call with 2.5",
        ] {
            assert!(!validator.is_valid(&json!(made_up)), "{made_up} is not");
        }
        let none = with_grounds(&grounded_tools(), &Grounds::default(), true);
        let digits = jsonschema::validator_for(&none[0].parameters["properties"]["s"]).unwrap();
        assert!(digits.is_valid(&json!("1 / 8")));
        assert!(!digits.is_valid(&json!("12 / 8")));
        assert_eq!(
            none[1].parameters,
            grounded_tools()[1].parameters,
            "no copies, no enum"
        );
    }

    #[test]
    fn cover_keeps_only_the_covering_tools_actions() {
        let allowed = Allowed::Cover {
            tools: vec![tools()[0].name.clone()],
            done: Vec::new(),
        };
        let b = branches(&allowed_schema(&tools(), SchemaMode::Full, &allowed));
        assert_eq!(b.len(), 1);
        assert_eq!(
            b[0]["properties"]["tool"],
            json!({"const": tools()[0].name})
        );
    }

    #[test]
    fn action_only_drops_the_final_branch() {
        let b = branches(&allowed_schema(
            &tools(),
            SchemaMode::Full,
            &Allowed::ActionOnly,
        ));
        assert_eq!(b.len(), 2);
        assert!(
            b.iter()
                .all(|b| b["properties"]["state"] == json!({"const": "action"}))
        );
    }
}
