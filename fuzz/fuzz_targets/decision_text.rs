//! JSON-protocol decisions and calls written as text: parsing, local repair and normalization
//! never panic; an accepted decision reads back from its canonical form; the duplicate-key
//! reader reads what serde_json reads whenever no key repeats.
#![no_main]

use corrigible::decision::{parse_text, parse_text_call, unique_keys};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const TOOLS: [&str; 4] = ["calculator", "time", "weather", "final_answer"];

/// JSON equality, numbers within a relative 1e-12: serde_json's default float parsing is
/// fast, not always correctly rounded, so a number may not read back to the same bits.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

fuzz_target!(|text: &str| {
    for allow in [false, true] {
        let parsed = parse_text(text, allow);
        if !allow {
            assert!(parsed.repairs.is_empty());
        }
        if let Ok(decision) = &parsed.decision {
            let canonical = decision.to_json();
            let again = parse_text(&canonical.to_string(), false)
                .decision
                .expect("the canonical form parses");
            assert!(same(&again.to_json(), &canonical), "{canonical}");
        }
        let _ = parse_text_call(text, &TOOLS, allow);
    }
    match unique_keys::from_str(text) {
        Ok(value) => assert_eq!(Some(value), serde_json::from_str::<Value>(text).ok()),
        Err(unique_keys::UniqueKeysError::Syntax(_)) => {
            assert!(serde_json::from_str::<Value>(text).is_err());
        }
        Err(unique_keys::UniqueKeysError::DuplicateKey { .. }) => {}
    }
});
