//! A recursive-descent parser that evaluates as it parses, in `f64`.
//!
//! ```text
//! expr    := term (('+' | '-') term)*                       `a - 15%` is a minus 15% of a
//! term    := unary (('*' | 'x' | '/' | '%' | 'mod') unary)* '%' here: an operand follows
//! unary   := ('-' | '+' | '√') unary | power
//! power   := postfix ('^' unary)?                          right-associative
//! postfix := primary ('%' ('of' unary)?)*                  '%' here: no operand follows
//! primary := currency? number unit* | '(' expr ')' | name '(' args ')' | function unary | constant
//! ```

use super::expression::ExpressionError;
use super::functions::{call, constant, is_unary};
use super::lexer::Token;

/// Whether `term` is a percentage alone (`15%`, `$5 %`): added to or taken from a value, it
/// is that share of the value, as on a calculator's keypad.
fn is_bare_percent(term: &[Token]) -> bool {
    let number = match term {
        [Token::Currency(_), rest @ ..] => rest,
        rest => rest,
    };
    matches!(number, [Token::Number(_), Token::Percent])
}

/// Evaluates `tokens` (an expression without its `= claim`), noting the units it ignored.
pub(crate) fn evaluate(tokens: &[Token], units: &mut Vec<String>) -> Result<f64, ExpressionError> {
    let mut parser = Parser {
        tokens,
        at: 0,
        units,
    };
    let value = parser.expr()?;
    match parser.peek(0) {
        None => Ok(value),
        Some(Token::Comma) => Err(ExpressionError::Tuple),
        Some(Token::Close) => Err(ExpressionError::Parse(
            "a `)` has no matching `(`".to_string(),
        )),
        Some(Token::Unsupported(op)) => Err(ExpressionError::UnsupportedOperator(op.clone())),
        Some(token) => Err(ExpressionError::Parse(format!(
            "an operator is missing before {}",
            describe(token)
        ))),
    }
}

struct Parser<'a> {
    tokens: &'a [Token],
    at: usize,
    units: &'a mut Vec<String>,
}

impl Parser<'_> {
    fn peek(&self, ahead: usize) -> Option<&Token> {
        self.tokens.get(self.at + ahead)
    }

    fn advance(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        token
    }

    fn expr(&mut self) -> Result<f64, ExpressionError> {
        let mut value = self.term()?;
        loop {
            let sign = match self.peek(0) {
                Some(Token::Plus) => 1.0,
                Some(Token::Minus) => -1.0,
                _ => return Ok(value),
            };
            self.at += 1;
            let start = self.at;
            let term = self.term()?;
            let change = if is_bare_percent(&self.tokens[start..self.at]) {
                value * term
            } else {
                term
            };
            value += sign * change;
        }
    }

    fn term(&mut self) -> Result<f64, ExpressionError> {
        let mut value = self.unary()?;
        loop {
            let op = match self.peek(0) {
                Some(Token::Times) => '*',
                Some(Token::Name(x)) if x.eq_ignore_ascii_case("x") => '*',
                Some(Token::Divide) => '/',
                Some(Token::Percent) => '%',
                Some(Token::Name(word)) if is_remainder_word(word) => '%',
                _ => return Ok(value),
            };
            self.at += 1;
            let right = self.unary()?;
            value = match op {
                '*' => value * right,
                _ if right == 0.0 => {
                    return Err(ExpressionError::DivisionByZero(format!(
                        "{} {op} {}",
                        show(value),
                        show(right)
                    )));
                }
                '/' => value / right,
                _ => value % right,
            };
        }
    }

    fn unary(&mut self) -> Result<f64, ExpressionError> {
        match self.peek(0) {
            Some(Token::Minus) => {
                self.at += 1;
                Ok(-self.unary()?)
            }
            Some(Token::Plus) => {
                self.at += 1;
                self.unary()
            }
            Some(Token::Root) => {
                self.at += 1;
                Ok(self.unary()?.sqrt())
            }
            _ => self.power(),
        }
    }

    fn power(&mut self) -> Result<f64, ExpressionError> {
        let base = self.postfix()?;
        if self.peek(0) == Some(&Token::Power) {
            self.at += 1;
            let exponent = self.unary()?;
            return Ok(base.powf(exponent));
        }
        Ok(base)
    }

    fn postfix(&mut self) -> Result<f64, ExpressionError> {
        let mut value = self.primary()?;
        while self.peek(0) == Some(&Token::Percent) && !self.peek(1).is_some_and(starts_operand) {
            self.at += 1;
            if matches!(self.peek(0), Some(Token::Name(of)) if of.eq_ignore_ascii_case("of")) {
                self.at += 1;
                value = value * self.unary()? / 100.0;
            } else {
                value /= 100.0;
            }
        }
        Ok(value)
    }

    fn primary(&mut self) -> Result<f64, ExpressionError> {
        match self.advance() {
            Some(Token::Number(value)) => {
                self.units();
                Ok(value)
            }
            Some(Token::Currency(symbol)) => {
                self.note_unit(symbol.to_string());
                match self.peek(0) {
                    Some(Token::Number(_)) => self.primary(),
                    _ => Err(ExpressionError::Parse(format!(
                        "`{symbol}` must be followed by an amount"
                    ))),
                }
            }
            Some(Token::Open) => {
                let value = self.expr()?;
                match self.advance() {
                    Some(Token::Close) => Ok(value),
                    Some(Token::Comma) => Err(ExpressionError::Tuple),
                    Some(Token::Unsupported(op)) => Err(ExpressionError::UnsupportedOperator(op)),
                    Some(token) => Err(ExpressionError::Parse(format!(
                        "expected `)` but found {}",
                        describe(&token)
                    ))),
                    None => Err(ExpressionError::Parse("a `(` is never closed".to_string())),
                }
            }
            Some(Token::Name(name)) => self.named(name),
            Some(Token::Unsupported(op)) => Err(ExpressionError::UnsupportedOperator(op)),
            Some(Token::Text(text)) => Err(ExpressionError::NotANumber(format!("\"{text}\""))),
            Some(token) => Err(ExpressionError::Parse(format!(
                "expected a number but found {}",
                describe(&token)
            ))),
            None => Err(ExpressionError::Parse(
                "the expression ends where a number was expected".to_string(),
            )),
        }
    }

    /// A function call, a function of one argument without parentheses, or a constant.
    fn named(&mut self, name: String) -> Result<f64, ExpressionError> {
        if self.peek(0) == Some(&Token::Open) {
            self.at += 1;
            let args = self.arguments()?;
            return call(&name, &args);
        }
        if is_unary(&name) && self.peek(0).is_some_and(starts_operand) {
            let arg = self.unary()?;
            return call(&name, &[arg]);
        }
        constant(&name).ok_or(ExpressionError::UnknownName(name))
    }

    /// The arguments of a call, after its `(`, up to and including its `)`.
    fn arguments(&mut self) -> Result<Vec<f64>, ExpressionError> {
        let mut args = Vec::new();
        if self.peek(0) == Some(&Token::Close) {
            self.at += 1;
            return Ok(args);
        }
        loop {
            args.push(self.expr()?);
            match self.advance() {
                Some(Token::Comma) => {}
                Some(Token::Close) => return Ok(args),
                Some(Token::Unsupported(op)) => {
                    return Err(ExpressionError::UnsupportedOperator(op));
                }
                _ => {
                    return Err(ExpressionError::Parse(
                        "malformed function call".to_string(),
                    ));
                }
            }
        }
    }

    /// Unit words after a number (`km`, `km/h`, `°C`): skipped, and noted.
    fn units(&mut self) {
        while let Some(Token::Name(unit)) = self.peek(0) {
            if !is_unit(unit) || self.peek(1) == Some(&Token::Open) {
                return;
            }
            let mut unit = unit.clone();
            self.at += 1;
            if let (Some(Token::Divide), Some(Token::Name(per))) = (self.peek(0), self.peek(1))
                && is_unit(per)
                && self.peek(2) != Some(&Token::Open)
            {
                unit = format!("{unit}/{per}");
                self.at += 2;
            }
            self.note_unit(unit);
        }
    }

    fn note_unit(&mut self, unit: String) {
        if !self.units.contains(&unit) {
            self.units.push(unit);
        }
    }
}

/// Whether `word` names the remainder operator: `100 mod 7`, `100 remainder 7`.
fn is_remainder_word(word: &str) -> bool {
    ["mod", "remainder"]
        .iter()
        .any(|k| word.eq_ignore_ascii_case(k))
}

/// Whether `name` may be a unit: not a keyword, a constant or a function.
fn is_unit(name: &str) -> bool {
    !["of", "x"].iter().any(|k| name.eq_ignore_ascii_case(k))
        && !is_remainder_word(name)
        && constant(name).is_none()
        && !is_unary(name)
}

/// Whether `token` can begin an operand (so a `%` before it is the remainder operator).
fn starts_operand(token: &Token) -> bool {
    match token {
        Token::Number(_) | Token::Open | Token::Root | Token::Currency(_) => true,
        Token::Name(name) => {
            !["of", "x"].iter().any(|k| name.eq_ignore_ascii_case(k)) && !is_remainder_word(name)
        }
        _ => false,
    }
}

fn describe(token: &Token) -> String {
    match token {
        Token::Number(n) => format!("the number {}", show(*n)),
        Token::Name(name) => format!("`{name}`"),
        Token::Plus => "`+`".into(),
        Token::Minus => "`-`".into(),
        Token::Times => "`*`".into(),
        Token::Divide => "`/`".into(),
        Token::Percent => "`%`".into(),
        Token::Power => "`^`".into(),
        Token::Root => "`√`".into(),
        Token::Currency(c) => format!("`{c}`"),
        Token::Open => "`(`".into(),
        Token::Close => "`)`".into(),
        Token::Comma => "`,`".into(),
        Token::Equals => "`=`".into(),
        Token::Unsupported(op) => format!("`{op}`"),
        Token::Text(text) => format!("\"{text}\""),
    }
}

/// `x` as written in a message: whole numbers without a fraction.
pub(crate) fn show(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        x.to_string()
    }
}
