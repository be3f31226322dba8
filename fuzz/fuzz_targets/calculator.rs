//! The calculator's lexer and parser: any expression evaluates to a finite number or an error.
#![no_main]

use corrigible::arithmetic::evaluate_noted;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|expression: &str| {
    if let Ok(evaluation) = evaluate_noted(expression) {
        assert!(evaluation.value.is_finite(), "{expression:?}");
    }
});
