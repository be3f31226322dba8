//! The functions and constants an expression may use.

use super::expression::ExpressionError;

/// The functions an expression may call, as shown to the model.
pub const FUNCTIONS: &str = "sqrt, cbrt, abs, exp, ln, log10, log2, log(x, base), pow(x, y), \
     sin, cos, tan, asin, acos, atan, atan2(y, x), hypot(x, y), floor, ceil, round, trunc, min, max";

/// The value of the constant `name` (`pi`, `e`), if it is one.
pub(crate) fn constant(name: &str) -> Option<f64> {
    match name.to_ascii_lowercase().as_str() {
        "pi" | "math::pi" | "π" => Some(std::f64::consts::PI),
        "e" | "math::e" => Some(std::f64::consts::E),
        _ => None,
    }
}

/// Whether `name` is a function taking one argument, which may then be written without
/// parentheses (`sqrt 16`).
pub(crate) fn is_unary(name: &str) -> bool {
    unary(&bare(name)).is_some()
}

fn bare(identifier: &str) -> String {
    identifier
        .strip_prefix("math::")
        .unwrap_or(identifier)
        .to_ascii_lowercase()
}

fn unary(name: &str) -> Option<fn(f64) -> f64> {
    Some(match name {
        "sqrt" => f64::sqrt,
        "cbrt" => f64::cbrt,
        "abs" => f64::abs,
        "exp" => f64::exp,
        "ln" => f64::ln,
        "log10" => f64::log10,
        "log2" => f64::log2,
        "sin" => f64::sin,
        "cos" => f64::cos,
        "tan" => f64::tan,
        "asin" => f64::asin,
        "acos" => f64::acos,
        "atan" => f64::atan,
        "floor" => f64::floor,
        "ceil" => f64::ceil,
        "round" => f64::round,
        "trunc" => f64::trunc,
        _ => return None,
    })
}

/// Calls the function `identifier` with `args`.
pub(crate) fn call(identifier: &str, args: &[f64]) -> Result<f64, ExpressionError> {
    let name = bare(identifier);
    let arity = |expected: &'static str| ExpressionError::Arity {
        name: name.clone(),
        expected,
        got: args.len(),
    };
    if let Some(f) = unary(&name) {
        return match args {
            [x] => Ok(f(*x)),
            _ => Err(arity("one argument")),
        };
    }
    let binary: Option<fn(f64, f64) -> f64> = match name.as_str() {
        "log" => Some(f64::log),
        "pow" => Some(f64::powf),
        "atan2" => Some(f64::atan2),
        "hypot" => Some(f64::hypot),
        _ => None,
    };
    if let Some(f) = binary {
        return match args {
            [x, y] => Ok(f(*x, *y)),
            [_] if name == "log" => Err(ExpressionError::LogWithoutBase),
            _ => Err(arity("two arguments")),
        };
    }
    let fold: fn(f64, f64) -> f64 = match name.as_str() {
        "min" => f64::min,
        "max" => f64::max,
        _ => return Err(ExpressionError::UnknownFunction(identifier.to_string())),
    };
    match args.split_first() {
        Some((first, rest)) => Ok(rest.iter().copied().fold(*first, fold)),
        None => Err(arity("at least one argument")),
    }
}
