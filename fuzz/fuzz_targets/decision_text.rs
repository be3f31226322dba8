//! JSON-protocol decisions and calls written as text: parsing, local repair and normalization
//! never panic; an accepted decision reads back from its canonical form; the duplicate-key
//! reader reads what serde_json reads whenever no key repeats.
#![no_main]

use corrigible::decision::{parse_text, parse_text_call, unique_keys};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const TOOLS: [&str; 4] = ["calculator", "time", "weather", "final_answer"];

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
            assert_eq!(again.to_json(), canonical);
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
