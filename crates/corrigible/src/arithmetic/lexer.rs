//! Splitting an expression into tokens, with the operator spellings people write.

use super::expression::ExpressionError;

/// One token of an expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Token {
    Number(f64),
    /// A name: a function, a constant, `of`, `x` (times) or a unit such as `km`.
    Name(String),
    Plus,
    Minus,
    /// `*`, `×`, `·`.
    Times,
    /// `/`, `÷`.
    Divide,
    Percent,
    /// `^` or `**`.
    Power,
    /// `√`.
    Root,
    /// `$`, `€`, `£`, `¥` before an amount.
    Currency(char),
    Open,
    Close,
    Comma,
    /// `=`: what follows is a claim about the result, not part of the expression.
    Equals,
    /// An operator outside arithmetic (`<`, `==`, `&&`, `!`, …).
    Unsupported(String),
    /// A quoted text.
    Text(String),
}

/// The tokens of `text`.
pub(crate) fn tokens(text: &str) -> Result<Vec<Token>, ExpressionError> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let (token, width) = match c {
            c if c.is_whitespace() => {
                i += 1;
                continue;
            }
            '0'..='9' | '.' => {
                let (value, width) = number(&chars[i..])?;
                (Token::Number(value), width)
            }
            '*' if next == Some('*') => (Token::Power, 2),
            '=' if next == Some('=') => (Token::Unsupported("==".into()), 2),
            '+' => (Token::Plus, 1),
            '-' | '−' | '–' => (Token::Minus, 1),
            '*' | '×' | '·' | '⋅' | '∗' => (Token::Times, 1),
            '/' | '÷' | '∕' => (Token::Divide, 1),
            '%' => (Token::Percent, 1),
            '^' => (Token::Power, 1),
            '√' => (Token::Root, 1),
            '$' | '€' | '£' | '¥' => (Token::Currency(c), 1),
            '(' => (Token::Open, 1),
            ')' => (Token::Close, 1),
            ',' => (Token::Comma, 1),
            '=' => (Token::Equals, 1),
            '"' | '\'' => {
                let end = chars[i + 1..]
                    .iter()
                    .position(|&d| d == c)
                    .map_or(chars.len(), |p| i + 1 + p);
                let text: String = chars[i + 1..end].iter().collect();
                (Token::Text(text), end + 1 - i)
            }
            c if c.is_alphabetic() || c == '_' || c == '°' => {
                let width = chars[i..]
                    .iter()
                    .take_while(|&&d| d.is_alphanumeric() || matches!(d, '_' | ':' | '°'))
                    .count();
                (Token::Name(chars[i..i + width].iter().collect()), width)
            }
            c => {
                let width = chars[i..]
                    .iter()
                    .take_while(|&&d| "<>!&|~?;:[]{}#@\\`=".contains(d) || d == c)
                    .count()
                    .max(1);
                (
                    Token::Unsupported(chars[i..i + width].iter().collect()),
                    width,
                )
            }
        };
        out.push(token);
        i += width;
    }
    Ok(out)
}

/// A decimal number at the start of `chars` (`12`, `0.5`, `.5`, `6.02e23`) and its width.
fn number(chars: &[char]) -> Result<(f64, usize), ExpressionError> {
    let digits = |from: usize| {
        chars[from.min(chars.len())..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count()
    };
    let mut width = digits(0);
    if chars.get(width) == Some(&'.') {
        width += 1 + digits(width + 1);
    }
    if matches!(chars.get(width), Some('e' | 'E')) {
        let sign = usize::from(matches!(chars.get(width + 1), Some('+' | '-')));
        let exponent = digits(width + 1 + sign);
        if exponent > 0 {
            width += 1 + sign + exponent;
        }
    }
    let text: String = chars[..width].iter().collect();
    text.parse::<f64>()
        .map(|value| (value, width))
        .map_err(|_| ExpressionError::Parse(format!("`{text}` is not a number")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_operators() {
        assert_eq!(
            tokens("2×3÷4 − 1 ** 2").unwrap(),
            [
                Token::Number(2.0),
                Token::Times,
                Token::Number(3.0),
                Token::Divide,
                Token::Number(4.0),
                Token::Minus,
                Token::Number(1.0),
                Token::Power,
                Token::Number(2.0),
            ]
        );
    }

    #[test]
    fn numbers_names_and_the_rest() {
        assert_eq!(
            tokens(".5e2 km/h 2e x").unwrap(),
            [
                Token::Number(50.0),
                Token::Name("km".into()),
                Token::Divide,
                Token::Name("h".into()),
                Token::Number(2.0),
                Token::Name("e".into()),
                Token::Name("x".into()),
            ]
        );
        assert_eq!(
            tokens("1 <= 2 == 'a'").unwrap(),
            [
                Token::Number(1.0),
                Token::Unsupported("<=".into()),
                Token::Number(2.0),
                Token::Unsupported("==".into()),
                Token::Text("a".into()),
            ]
        );
        assert!(matches!(tokens("."), Err(ExpressionError::Parse(_))));
    }
}
