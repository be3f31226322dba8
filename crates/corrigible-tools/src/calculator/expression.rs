//! Arithmetic over evalexpr's parse tree, evaluated in `f64` so `/` is real division.

use evalexpr::{DefaultNumericTypes, Node, Operator, Value};

/// The functions an expression may call, as shown to the model.
pub const FUNCTIONS: &str = "sqrt, cbrt, abs, exp, ln, log10, log2, log(x, base), pow(x, y), \
     sin, cos, tan, asin, acos, atan, atan2(y, x), hypot(x, y), floor, ceil, round, trunc, min, max";

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

/// Evaluates an arithmetic expression to a finite number.
///
/// `^` (also written `**`) is right-associative, so `2^3^2` is `2^9`.
pub fn evaluate(expression: &str) -> Result<f64, ExpressionError> {
    if expression.trim().is_empty() {
        return Err(ExpressionError::Empty);
    }
    let length = expression.chars().count();
    if length > MAX_EXPRESSION_CHARS {
        return Err(ExpressionError::TooLong(length));
    }
    let expression = expression.replace("**", "^");
    let tree = evalexpr::build_operator_tree::<DefaultNumericTypes>(&expression)
        .map_err(|e| ExpressionError::Parse(e.to_string()))?;
    let value = eval(&tree)?;
    if value.is_finite() {
        Ok(value)
    } else {
        Err(ExpressionError::NotFinite)
    }
}

fn eval(node: &Node) -> Result<f64, ExpressionError> {
    let children = node.children();
    match node.operator() {
        Operator::RootNode => match children {
            [] => Err(ExpressionError::Empty),
            [only] => eval(only),
            _ => Err(ExpressionError::Tuple),
        },
        Operator::Const { value } => number(value),
        Operator::VariableIdentifierRead { identifier } => constant(identifier),
        Operator::FunctionIdentifier { identifier } => {
            let args = arguments(children)?;
            call(identifier, &args)
        }
        Operator::Tuple => Err(ExpressionError::Tuple),
        Operator::Neg => Ok(-eval(single(children)?)?),
        Operator::Exp => power(node),
        op @ (Operator::Add | Operator::Sub | Operator::Mul | Operator::Div | Operator::Mod) => {
            let (a, b) = pair(children)?;
            let (a, b) = (eval(a)?, eval(b)?);
            match op {
                Operator::Add => Ok(a + b),
                Operator::Sub => Ok(a - b),
                Operator::Mul => Ok(a * b),
                Operator::Div | Operator::Mod if b == 0.0 => Err(ExpressionError::DivisionByZero(
                    format!("{} {op} {}", show(a), show(b)),
                )),
                Operator::Div => Ok(a / b),
                _ => Ok(a % b),
            }
        }
        other => Err(ExpressionError::UnsupportedOperator(
            other.to_string().trim().to_string(),
        )),
    }
}

/// evalexpr parses `a^b^c` as `(a^b)^c`; a parenthesized base is a root node, so a chain
/// of bare `Exp` nodes down the left side is exactly an unparenthesized `a^b^c`.
fn power(node: &Node) -> Result<f64, ExpressionError> {
    let mut exponents = Vec::new();
    let mut base = node;
    while matches!(base.operator(), Operator::Exp) {
        let (left, right) = pair(base.children())?;
        exponents.push(right);
        base = left;
    }
    let mut exponent: Option<f64> = None;
    for node in exponents {
        let value = eval(node)?;
        exponent = Some(exponent.map_or(value, |upper| value.powf(upper)));
    }
    Ok(eval(base)?.powf(exponent.unwrap_or(1.0)))
}

fn show(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        x.to_string()
    }
}

fn number(value: &Value) -> Result<f64, ExpressionError> {
    match value {
        Value::Int(i) => Ok(*i as f64),
        Value::Float(f) => Ok(*f),
        other => Err(ExpressionError::NotANumber(other.to_string())),
    }
}

fn constant(name: &str) -> Result<f64, ExpressionError> {
    match name.to_ascii_lowercase().as_str() {
        "pi" | "math::pi" => Ok(std::f64::consts::PI),
        "e" | "math::e" => Ok(std::f64::consts::E),
        _ => Err(ExpressionError::UnknownName(name.to_string())),
    }
}

fn single(children: &[Node]) -> Result<&Node, ExpressionError> {
    match children {
        [only] => Ok(only),
        _ => Err(ExpressionError::Parse(
            "an operator is missing an operand".into(),
        )),
    }
}

fn pair(children: &[Node]) -> Result<(&Node, &Node), ExpressionError> {
    match children {
        [a, b] => Ok((a, b)),
        _ => Err(ExpressionError::Parse(
            "an operator is missing an operand".into(),
        )),
    }
}

/// The arguments of a call: `f(x)`, `f(x, y)` (a tuple under a root node) or `f()`.
fn arguments(children: &[Node]) -> Result<Vec<f64>, ExpressionError> {
    let mut node = match children {
        [] => return Ok(Vec::new()),
        [only] => only,
        _ => return Err(ExpressionError::Parse("malformed function call".into())),
    };
    while matches!(node.operator(), Operator::RootNode) {
        match node.children() {
            [] => return Ok(Vec::new()),
            [only] => node = only,
            _ => return Err(ExpressionError::Parse("malformed function call".into())),
        }
    }
    if matches!(node.operator(), Operator::Tuple) {
        node.children().iter().map(eval).collect()
    } else {
        Ok(vec![eval(node)?])
    }
}

fn call(identifier: &str, args: &[f64]) -> Result<f64, ExpressionError> {
    let name = identifier
        .strip_prefix("math::")
        .unwrap_or(identifier)
        .to_ascii_lowercase();
    let arity = |expected: &'static str| ExpressionError::Arity {
        name: name.clone(),
        expected,
        got: args.len(),
    };
    let unary: Option<fn(f64) -> f64> = match name.as_str() {
        "sqrt" => Some(f64::sqrt),
        "cbrt" => Some(f64::cbrt),
        "abs" => Some(f64::abs),
        "exp" => Some(f64::exp),
        "ln" => Some(f64::ln),
        "log10" => Some(f64::log10),
        "log2" => Some(f64::log2),
        "sin" => Some(f64::sin),
        "cos" => Some(f64::cos),
        "tan" => Some(f64::tan),
        "asin" => Some(f64::asin),
        "acos" => Some(f64::acos),
        "atan" => Some(f64::atan),
        "floor" => Some(f64::floor),
        "ceil" => Some(f64::ceil),
        "round" => Some(f64::round),
        "trunc" => Some(f64::trunc),
        _ => None,
    };
    if let Some(f) = unary {
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
}
