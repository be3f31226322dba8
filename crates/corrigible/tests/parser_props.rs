//! Property tests: the decision parser and the repair never panic, and never return a decision
//! that the decision schema rejects.

use corrigible::decision::parse_text;
use corrigible::decision::repair::{repair, repair_value};
use corrigible::decision::unique_keys;
use proptest::prelude::*;
use serde_json::json;

fn any_decision_schema() -> jsonschema::Validator {
    jsonschema::validator_for(&json!({
        "anyOf": [
            {"type": "object", "required": ["state", "reason", "tool", "tool_input"], "additionalProperties": false,
             "properties": {"state": {"const": "action"}, "reason": {"type": "string"},
                            "tool": {"type": "string", "minLength": 1}, "tool_input": {"type": "object"}}},
            {"type": "object", "required": ["state", "satisfied", "final_summary"], "additionalProperties": false,
             "properties": {"state": {"const": "final"}, "satisfied": {"type": "boolean"}, "final_summary": {"type": "string"}}}
        ]
    }))
    .unwrap()
}

fn json_ish() -> impl Strategy<Value = String> {
    let pieces = prop_oneof![
        Just("{".to_string()),
        Just("}".to_string()),
        Just("[".to_string()),
        Just("]".to_string()),
        Just(",".to_string()),
        Just(":".to_string()),
        Just("\"state\"".to_string()),
        Just("\"action\"".to_string()),
        Just("\"final\"".to_string()),
        Just("\"tool\"".to_string()),
        Just("\"tool_input\"".to_string()),
        Just("\"satisfied\"".to_string()),
        Just("\"final_summary\"".to_string()),
        Just("\"thought\"".to_string()),
        Just("true".to_string()),
        Just("null".to_string()),
        Just("```json\n".to_string()),
        Just("\n```".to_string()),
        Just("\\".to_string()),
        Just("'".to_string()),
        Just("\u{201C}".to_string()),
        Just("\u{201D}".to_string()),
        Just("True".to_string()),
        Just("None".to_string()),
        Just("// c\n".to_string()),
        Just("/*".to_string()),
        Just("*/".to_string()),
        Just("\n".to_string()),
        Just(" ".to_string()),
        Just("\"".to_string()),
        "[a-z ]{0,6}".prop_map(|s| s),
        "-?[0-9]{1,4}(\\.[0-9]{1,3})?".prop_map(|s| s),
    ];
    prop::collection::vec(pieces, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn parser_never_panics_on_arbitrary_text(text in ".{0,200}") {
        let _ = parse_text(&text, true);
        let _ = repair(&text);
    }

    #[test]
    fn accepted_decisions_always_satisfy_the_schema(text in json_ish(), allow in any::<bool>()) {
        let schema = any_decision_schema();
        if let Ok(decision) = parse_text(&text, allow).decision {
            let value = decision.to_json();
            prop_assert!(schema.is_valid(&value), "{text:?} gave {value}");
        }
    }

    #[test]
    fn valid_decisions_survive_fences_and_prose(summary in "[a-zA-Z0-9 ]{0,30}", sat in any::<bool>()) {
        let body = json!({"state": "final", "satisfied": sat, "final_summary": summary}).to_string();
        let wrapped = format!("Here you go:\n```json\n{body}\n```\n");
        let parsed = parse_text(&wrapped, true);
        prop_assert!(parsed.decision.is_ok());
        prop_assert!(!parsed.repairs.is_empty());
    }

    #[test]
    fn a_repair_is_strict_json_that_repairs_to_itself(text in json_ish()) {
        if let Ok((value, _)) = repair_value(&text) {
            prop_assert!(value.is_object());
            let out = value.to_string();
            prop_assert_eq!(unique_keys::from_str(&out).ok(), Some(value.clone()));
            let (again, kinds) = repair_value(&out).expect("repaired JSON reads");
            prop_assert!(kinds.is_empty(), "{} -> {:?}", out, kinds);
            prop_assert_eq!(again, value);
        }
    }

    #[test]
    fn strict_objects_read_the_same_leniently(text in json_ish()) {
        let trimmed = text.trim();
        if trimmed.starts_with('{')
            && let Ok(strict) = unique_keys::from_str(trimmed)
        {
            let (lenient, kinds) = repair_value(trimmed).expect("strict JSON reads leniently");
            prop_assert_eq!(lenient, strict);
            prop_assert!(kinds.is_empty());
        }
    }
}
