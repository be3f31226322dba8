//! The `calculator` tool: an arithmetic expression in, a JSON number out.

use async_trait::async_trait;
use corrigible::{GroundedArgument, ToolContext, ToolOutcome, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

pub use corrigible::arithmetic::{
    Evaluation, ExpressionError, FUNCTIONS, MAX_EXPRESSION_CHARS, evaluate, evaluate_noted,
};

/// The calculator tool's name.
pub const CALCULATOR: &str = "calculator";

/// Input of the `calculator` tool.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CalculatorInput {
    /// An arithmetic expression such as `2*(3+4)`: numbers, + - * / ^, `15%` and
    /// `15% of 40`, parentheses, the constants pi and e, and functions such as sqrt, abs,
    /// round, min, max.
    pub expression: String,
}

/// Evaluates arithmetic expressions; `/` is real division (`7/2` is `3.5`).
///
/// The result is a plain JSON number, an integer when it is whole; when units or a trailing
/// `= claim` were left out of the calculation, it is `{"result": number, "note": "…"}` saying
/// so. A malformed expression, a division by zero or a non-finite result is a
/// [`ToolOutcome::Retry`] saying what to fix.
#[derive(Debug, Clone, Copy, Default)]
pub struct Calculator;

#[async_trait]
impl TypedTool for Calculator {
    type Input = CalculatorInput;

    fn name(&self) -> &str {
        CALCULATOR
    }

    fn read_only(&self) -> bool {
        true
    }

    fn computes(&self) -> bool {
        true
    }

    fn description(&self) -> &str {
        "Evaluates an arithmetic expression and returns the number. Supports + - * / ^ \
         (power), % (remainder between two numbers; 15% is 0.15, 15% of 40 is 6, 40 - 15% is 34), \
         × and ÷, \
         parentheses, unary minus, the constants pi and e, and the functions sqrt, cbrt, abs, \
         exp, ln, log10, log2, log(x, base), pow, sin, cos, tan (radians), floor, ceil, round, \
         min and max."
    }

    fn grounded_arguments(&self) -> Vec<GroundedArgument> {
        vec![GroundedArgument::numbers("expression")]
    }

    async fn call(&self, input: CalculatorInput, _ctx: &ToolContext) -> ToolOutcome {
        match evaluate_noted(&input.expression) {
            Ok(evaluation) => ToolOutcome::Ok(result(&evaluation)),
            Err(e) => ToolOutcome::Retry(e.to_string()),
        }
    }
}

/// The tool's output: the number, or the number with a note on what was left out.
fn result(evaluation: &Evaluation) -> Value {
    let mut notes = Vec::new();
    let value = to_json_number(evaluation.value);
    match evaluation
        .claim
        .as_deref()
        .map(|c| claim_holds(evaluation.value, c))
    {
        None | Some(Some(true)) => {}
        Some(Some(false)) => notes.push(format!(
            "the claim after `=` is wrong: the left side is {value}"
        )),
        Some(None) => notes.push(
            "the claim after `=` was not checked: this is the value of the left side".to_string(),
        ),
    }
    if !evaluation.units.is_empty() {
        notes.push(format!(
            "units ignored ({}): the numbers were used as written",
            evaluation.units.join(", ")
        ));
    }
    if notes.is_empty() {
        value
    } else {
        json!({"result": value, "note": notes.join("; ")})
    }
}

/// Whether every part of a `= claim` chain equals `value`, a number written with decimals to
/// those decimals (`= 3.33` holds for 10/3); `None` when a part is not arithmetic.
fn claim_holds(value: f64, claim: &str) -> Option<bool> {
    let evaluation = evaluate_noted(claim).ok()?;
    let part = claim.split('=').next().unwrap_or(claim).trim();
    let decimals = match part.split_once('.') {
        Some((_, d)) if part.parse::<f64>().is_ok() => i32::try_from(d.len()).ok(),
        _ => None,
    };
    let tolerance = match decimals {
        Some(d) => 0.5 * 10f64.powi(-d),
        None => 1e-9 * value.abs().max(1.0),
    };
    let holds = (evaluation.value - value).abs() <= tolerance;
    match evaluation.claim.as_deref() {
        None => Some(holds),
        Some(rest) => Some(holds && claim_holds(value, rest)?),
    }
}

/// Largest magnitude below which every whole `f64` is an exact integer.
const EXACT_INTEGER: f64 = 9_007_199_254_740_992.0;

/// A finite number as JSON: rounded to 15 significant digits (so `0.1+0.2` is `0.3`),
/// and an integer when whole and exactly representable.
pub fn to_json_number(value: f64) -> Value {
    let rounded = format!("{value:.14e}").parse::<f64>().unwrap_or(value);
    if rounded.fract() == 0.0 && rounded.abs() < EXACT_INTEGER {
        Value::from(rounded as i64)
    } else {
        serde_json::Number::from_f64(rounded)
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_tidy() {
        assert_eq!(to_json_number(14.0), json!(14));
        assert_eq!(to_json_number(-0.0), json!(0));
        assert_eq!(to_json_number(3.5), json!(3.5));
        assert_eq!(to_json_number(0.1 + 0.2), json!(0.3));
        assert_eq!(to_json_number(1e300), json!(1e300));
    }
}
