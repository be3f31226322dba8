//! Evaluating an expression in `f64`, so `/` is real division, in the notations people write.

use super::functions::FUNCTIONS;
use super::lexer::{Token, tokens};
use super::parser;

/// Longest expression accepted, in characters; it also bounds the parser's recursion.
pub const MAX_EXPRESSION_CHARS: usize = 400;

/// Why an expression could not be evaluated; each message tells the model what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpressionError {
    /// Nothing to evaluate.
    #[error("the expression is empty: write an arithmetic expression such as 2*(3+4)")]
    Empty,
    /// The expression is longer than [`MAX_EXPRESSION_CHARS`].
    #[error(
        "the expression has {0} characters, more than the {MAX_EXPRESSION_CHARS} allowed: split the calculation"
    )]
    TooLong(usize),
    /// The text is not a well-formed expression.
    #[error("cannot parse the expression: {0}; write it with numbers, + - * / % ^ and parentheses")]
    Parse(String),
    /// A name that is neither a supported function nor a constant.
    #[error(
        "unknown name `{0}`: only numbers, + - * / % ^, parentheses, the constants pi and e \
         and the functions {FUNCTIONS} are allowed"
    )]
    UnknownName(String),
    /// A function that is not supported.
    #[error("unknown function `{0}`: the supported functions are {FUNCTIONS}")]
    UnknownFunction(String),
    /// A function called with the wrong number of arguments.
    #[error("`{name}` takes {expected}, got {got}")]
    Arity {
        /// The function.
        name: String,
        /// The arity it expects, in words.
        expected: &'static str,
        /// The number of arguments given.
        got: usize,
    },
    /// `log` without a base.
    #[error("`log` needs a base: use ln(x), log10(x), log2(x) or log(x, base)")]
    LogWithoutBase,
    /// An operator outside arithmetic (comparison, assignment, logic, …).
    #[error("`{0}` is not supported: use only + - * / % ^ and parentheses")]
    UnsupportedOperator(String),
    /// A literal that is not a number (a string, a boolean).
    #[error("`{0}` is not a number: the expression may contain only numbers")]
    NotANumber(String),
    /// A list of values where one number was expected.
    #[error(
        "the expression gives several values: write a single expression without top-level commas"
    )]
    Tuple,
    /// `/` or `%` with a zero divisor.
    #[error("division by zero in `{0}`: change the divisor")]
    DivisionByZero(String),
    /// The result is infinite or not a number (overflow, sqrt of a negative number, …).
    #[error("the result is not a finite number (overflow or a value outside a function's domain)")]
    NotFinite,
}

/// An evaluated expression, with what was left out of the calculation.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// The value of the expression.
    pub value: f64,
    /// The text after an `=`, a claim about the result that was not evaluated (`12 + 3 = 15`).
    pub claim: Option<String>,
    /// Unit words and currency signs written after or before numbers, in order, ignored.
    pub units: Vec<String>,
}

/// Evaluates an arithmetic expression to a finite number.
///
/// `^` (also written `**`) is right-associative, so `2^3^2` is `2^9`. See [`evaluate_noted`]
/// for the notations accepted.
pub fn evaluate(expression: &str) -> Result<f64, ExpressionError> {
    evaluate_noted(expression).map(|e| e.value)
}

/// Evaluates an expression written in common notation: `×` and `x` for times, `÷` for
/// division, `15%` for 0.15 and `15% of 40` for 6 (a `%` between two operands is the
/// remainder), `√2`, `sqrt 16`, units after numbers (`72 km/h`) and currency signs before
/// them, which are ignored, and a trailing `= claim`, whose left side alone is evaluated.
pub fn evaluate_noted(expression: &str) -> Result<Evaluation, ExpressionError> {
    if expression.trim().is_empty() {
        return Err(ExpressionError::Empty);
    }
    let length = expression.chars().count();
    if length > MAX_EXPRESSION_CHARS {
        return Err(ExpressionError::TooLong(length));
    }
    let all = tokens(expression)?;
    let (tokens, claim) = match all.iter().position(|t| *t == Token::Equals) {
        Some(at) => {
            let claim = expression
                .split_once('=')
                .map(|(_, rest)| rest.trim().to_string())
                .filter(|rest| !rest.is_empty());
            (&all[..at], claim)
        }
        None => (&all[..], None),
    };
    if tokens.is_empty() {
        return Err(ExpressionError::Parse(
            "nothing to calculate before `=`".to_string(),
        ));
    }
    let mut units = Vec::new();
    let value = parser::evaluate(tokens, &mut units)?;
    if !value.is_finite() {
        return Err(ExpressionError::NotFinite);
    }
    Ok(Evaluation {
        value,
        claim,
        units,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_and_real_division() {
        assert_eq!(evaluate("2*(3+4)"), Ok(14.0));
        assert_eq!(evaluate("7/2"), Ok(3.5));
        assert_eq!(evaluate("-3 + 10 % 4"), Ok(-1.0));
        assert_eq!(evaluate("2^10"), Ok(1024.0));
        assert_eq!(evaluate("2**10"), Ok(1024.0));
        assert_eq!(evaluate("2^3^2"), Ok(512.0));
        assert_eq!(evaluate("(2^3)^2"), Ok(64.0));
        assert_eq!(evaluate("-2^2"), Ok(-4.0));
        assert_eq!(evaluate("2^-1"), Ok(0.5));
    }

    #[test]
    fn functions_and_constants() {
        assert_eq!(evaluate("sqrt(16)"), Ok(4.0));
        assert_eq!(evaluate("math::sqrt(16)"), Ok(4.0));
        assert_eq!(evaluate("max(1, 5, 3)"), Ok(5.0));
        assert_eq!(evaluate("log(8, 2)"), Ok(3.0));
        assert_eq!(evaluate("round(pi * 100)"), Ok(314.0));
    }

    #[test]
    fn refusals() {
        assert_eq!(evaluate("  "), Err(ExpressionError::Empty));
        assert!(matches!(
            evaluate("1/0"),
            Err(ExpressionError::DivisionByZero(_))
        ));
        assert!(matches!(
            evaluate("5 % (2-2)"),
            Err(ExpressionError::DivisionByZero(_))
        ));
        assert_eq!(evaluate("sqrt(-1)"), Err(ExpressionError::NotFinite));
        assert_eq!(
            evaluate("x + 1"),
            Err(ExpressionError::UnknownName("x".into()))
        );
        assert_eq!(evaluate("log(10)"), Err(ExpressionError::LogWithoutBase));
        assert!(matches!(
            evaluate("1 < 2"),
            Err(ExpressionError::UnsupportedOperator(_))
        ));
        assert!(matches!(
            evaluate("foo(1)"),
            Err(ExpressionError::UnknownFunction(_))
        ));
        assert!(matches!(evaluate("2*(3+"), Err(ExpressionError::Parse(_))));
        assert_eq!(evaluate("1, 2"), Err(ExpressionError::Tuple));
    }

    #[test]
    fn percent_and_remainder() {
        assert_eq!(evaluate("15%"), Ok(0.15));
        assert_eq!(evaluate("45% of 360"), Ok(162.0));
        assert_eq!(evaluate("45% of 360 + 12"), Ok(174.0));
        assert_eq!(evaluate("7.5 % of 640"), Ok(48.0));
        assert_eq!(evaluate("40 * (100% - 15%)"), Ok(34.0));
        assert_eq!(evaluate("40 - 15%"), Ok(34.0));
        assert_eq!(evaluate("200 + 10%"), Ok(220.0));
        assert_eq!(evaluate("40 - 15% of 20"), Ok(37.0));
        assert_eq!(evaluate("40 - 15% * 20"), Ok(37.0));
        assert_eq!(evaluate("100 % 7"), Ok(2.0));
        assert_eq!(evaluate("100%7"), Ok(2.0));
        assert_eq!(evaluate("100 % (3 + 4)"), Ok(2.0));
        assert_eq!(evaluate("100 mod 7"), Ok(2.0));
        assert_eq!(evaluate("100 remainder 7"), Ok(2.0));
        assert_eq!(evaluate("100 km mod 7"), Ok(2.0));
    }

    #[test]
    fn times_and_division_signs() {
        assert_eq!(evaluate("0.45 x 360"), Ok(162.0));
        assert_eq!(evaluate("3 X 4"), Ok(12.0));
        assert_eq!(evaluate("48 × 12"), Ok(576.0));
        assert_eq!(evaluate("1024 ÷ 16"), Ok(64.0));
        assert_eq!(evaluate("17 − 5 · 3"), Ok(2.0));
    }

    #[test]
    fn roots_without_parentheses() {
        assert_eq!(evaluate("√1764"), Ok(42.0));
        assert_eq!(evaluate("sqrt 1764"), Ok(42.0));
        assert_eq!(evaluate("sqrt(9^2 + 12^2)"), Ok(15.0));
        assert_eq!(evaluate("2 * π"), Ok(std::f64::consts::TAU));
    }

    #[test]
    fn a_trailing_claim_is_left_out() {
        let e = evaluate_noted("12 + 3 + 4 = 18").unwrap();
        assert_eq!((e.value, e.claim.as_deref()), (19.0, Some("18")));
        let e = evaluate_noted("45% of 360 = 0.45 x 360 = 180").unwrap();
        assert_eq!(e.value, 162.0);
        assert_eq!(e.claim.as_deref(), Some("0.45 x 360 = 180"));
        assert_eq!(evaluate_noted("2 + 2").unwrap().claim, None);
        let open = evaluate_noted("12 + 19 + 23 + 30 = ").unwrap();
        assert_eq!((open.value, open.claim), (84.0, None), "nothing claimed");
        assert!(matches!(evaluate("= 4"), Err(ExpressionError::Parse(_))));
        assert!(matches!(
            evaluate("1 == 1"),
            Err(ExpressionError::UnsupportedOperator(_))
        ));
    }

    #[test]
    fn units_and_currency_are_ignored_and_noted() {
        let e = evaluate_noted("72 km/h * 2.5 h").unwrap();
        assert_eq!(e.value, 180.0);
        assert_eq!(e.units, ["km/h", "h"]);
        let e = evaluate_noted("342 km / 38 l").unwrap();
        assert_eq!((e.value, e.units.len()), (9.0, 2));
        let e = evaluate_noted("$40 - $6").unwrap();
        assert_eq!((e.value, e.units.clone()), (34.0, vec!["$".to_string()]));
        assert_eq!(evaluate("192.5 km"), Ok(192.5));
        assert_eq!(evaluate("212 °F"), Ok(212.0));
        assert!(evaluate_noted("2 * 3").unwrap().units.is_empty());
    }

    #[test]
    fn what_stays_invalid_says_why() {
        assert!(matches!(evaluate("2 pi"), Err(ExpressionError::Parse(m)) if m.contains("`pi`")));
        assert!(
            matches!(evaluate("2 3"), Err(ExpressionError::Parse(m)) if m.contains("operator is missing"))
        );
        assert!(
            matches!(evaluate("(1 + 2"), Err(ExpressionError::Parse(m)) if m.contains("never closed"))
        );
        assert!(
            matches!(evaluate("1 + 2)"), Err(ExpressionError::Parse(m)) if m.contains("no matching"))
        );
        assert!(matches!(evaluate("15 x"), Err(ExpressionError::Parse(_))));
        assert!(matches!(evaluate("$"), Err(ExpressionError::Parse(_))));
        assert!(matches!(
            evaluate("'abc'"),
            Err(ExpressionError::NotANumber(_))
        ));
        assert_eq!(
            evaluate("half of 10"),
            Err(ExpressionError::UnknownName("half".into()))
        );
    }
}
