use corrigible_tools::calculator::{ExpressionError, MAX_EXPRESSION_CHARS, evaluate};
use proptest::prelude::*;

proptest! {
    #[test]
    fn never_panics_and_only_returns_finite_numbers(text in "[0-9a-z+*/%^(). ,<=!-]{0,80}") {
        if let Ok(value) = evaluate(&text) {
            prop_assert!(value.is_finite());
        }
    }

    #[test]
    fn integer_arithmetic_matches_rust(a in -1000i64..1000, b in -1000i64..1000, c in 1i64..1000) {
        prop_assert_eq!(evaluate(&format!("{a} + {b} * {c}")), Ok((a + b * c) as f64));
        prop_assert_eq!(evaluate(&format!("({a} - {b}) % {c}")), Ok(((a - b) % c) as f64));
        prop_assert_eq!(evaluate(&format!("{a} / {c}")), Ok(a as f64 / c as f64));
    }
}

#[test]
fn overlong_expressions_are_refused() {
    let long = "1+".repeat(MAX_EXPRESSION_CHARS / 2) + "1";
    assert_eq!(evaluate(&long), Err(ExpressionError::TooLong(long.len())));
}

#[test]
fn deepest_allowed_nesting_fits_a_small_stack() {
    let depth = MAX_EXPRESSION_CHARS / 2 - 1;
    let nested = format!("{}1{}", "(".repeat(depth), ")".repeat(depth));
    let negated = format!("{}1", "-".repeat(MAX_EXPRESSION_CHARS - 1));
    let handle = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || (evaluate(&nested), evaluate(&negated)))
        .unwrap();
    assert_eq!(handle.join().unwrap(), (Ok(1.0), Ok(-1.0)));
}
