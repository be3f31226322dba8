//! A forgiving JSON reader: reads the damage models commonly send into the one value it can
//! mean, records each repair, and refuses whatever has another reading.

use serde_json::{Map, Number, Value};

use super::RepairKind;
use super::unrepairable::Unrepairable;

/// Nesting limit, as serde_json's.
const MAX_DEPTH: usize = 128;

/// The one object in `text`, read leniently, with the repairs made. Prose before or after it is
/// allowed only when it holds no bracket, so that no second object or enclosing array is lost.
pub(super) fn one_object(text: &str) -> Result<(Value, Vec<RepairKind>), Unrepairable> {
    let start = text.find('{').ok_or(Unrepairable::NoObject)?;
    let mut reader = Reader {
        text,
        pos: start,
        depth: 0,
        kinds: Vec::new(),
    };
    let (value, _) = reader.value()?;
    let (before, after) = (&text[..start], &text[reader.pos..]);
    if [before, after]
        .iter()
        .any(|prose| prose.contains(['{', '}', '[', ']']))
    {
        return Err(Unrepairable::Ambiguous(
            "brackets outside the JSON object: there may be a second object, or an array \
             around it; send one object alone"
                .into(),
        ));
    }
    let blank = |prose: &str| prose.chars().all(|c| c.is_whitespace() || c == '\u{FEFF}');
    if !blank(before) || !blank(after) {
        reader.kinds.insert(0, RepairKind::SurroundingProse);
    } else if !before.is_ascii() || !after.is_ascii() {
        reader.note(RepairKind::UnicodeSpaces);
    }
    Ok((value, reader.kinds))
}

/// What a value was, as far as the text after it is concerned.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    /// A number, which the end of text may have cut.
    Number,
    /// Anything else: complete when read.
    Complete,
}

struct Reader<'a> {
    text: &'a str,
    pos: usize,
    depth: usize,
    kinds: Vec<RepairKind>,
}

fn closing_quote(open: char) -> Option<(char, Option<RepairKind>)> {
    match open {
        '"' => Some(('"', None)),
        '\'' => Some(('\'', Some(RepairKind::SingleQuotes))),
        '\u{201C}' => Some(('\u{201D}', Some(RepairKind::SmartQuotes))),
        '\u{2018}' => Some(('\u{2019}', Some(RepairKind::SmartQuotes))),
        _ => None,
    }
}

/// Escapes of regular expressions that are no JSON escape and no other language's either:
/// each reads only as the backslash and the character (`\d` in a pattern).
const REGEX_ESCAPES: &str = "dDsSwW.()[]{}|?*+^$";

/// `token` as JSON writes a number: a leading `+` dropped, and a `0` before a `.` that starts
/// it (`+3` is `3`, `.5` is `0.5`, `-.5` is `-0.5`); anything else as it is.
fn number_form(token: &str) -> String {
    let unsigned = token
        .strip_prefix('+')
        .filter(|rest| rest.starts_with(|c: char| c.is_ascii_digit() || c == '.'))
        .unwrap_or(token);
    let (sign, digits) = match unsigned.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", unsigned),
    };
    if digits.starts_with('.') && digits[1..].starts_with(|c: char| c.is_ascii_digit()) {
        format!("{sign}0{digits}")
    } else {
        format!("{sign}{digits}")
    }
}

fn is_word_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '$'
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

fn starts_value(c: char) -> bool {
    matches!(c, '{' | '[' | '-')
        || c.is_ascii_digit()
        || is_word_start(c)
        || closing_quote(c).is_some()
}

fn starts_key(c: char) -> bool {
    is_word_start(c) || closing_quote(c).is_some()
}

impl Reader<'_> {
    fn note(&mut self, kind: RepairKind) {
        if !self.kinds.contains(&kind) {
            self.kinds.push(kind);
        }
    }

    fn peek(&self) -> Option<char> {
        self.text[self.pos..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn unexpected(&self, expected: &'static str) -> Unrepairable {
        match self.peek() {
            None => Unrepairable::Truncated(expected),
            Some(c) => Unrepairable::Unexpected {
                found: format!("{c:?}"),
                offset: self.text[..self.pos].chars().count(),
                expected,
            },
        }
    }

    /// Skips whitespace and comments; returns whether any whitespace or comment was skipped.
    fn skip_trivia(&mut self) -> Result<bool, Unrepairable> {
        let start = self.pos;
        loop {
            let rest = &self.text[self.pos..];
            if let Some(c) = rest
                .chars()
                .next()
                .filter(|c| c.is_whitespace() || *c == '\u{FEFF}')
            {
                if !c.is_ascii() {
                    self.note(RepairKind::UnicodeSpaces);
                }
                self.pos += c.len_utf8();
            } else if rest.starts_with("//") || rest.starts_with('#') {
                self.note(RepairKind::Comments);
                self.pos += rest.find('\n').unwrap_or(rest.len());
            } else if let Some(body) = rest.strip_prefix("/*") {
                self.note(RepairKind::Comments);
                let end = body
                    .find("*/")
                    .ok_or(Unrepairable::Truncated("a comment"))?;
                self.pos += 2 + end + 2;
            } else {
                return Ok(self.pos > start);
            }
        }
    }

    fn value(&mut self) -> Result<(Value, End), Unrepairable> {
        self.skip_trivia()?;
        match self.peek() {
            None => Err(Unrepairable::Truncated("a missing value")),
            Some('{') => self.nested(Self::object),
            Some('[') => self.nested(Self::array),
            Some(c) if closing_quote(c).is_some() => {
                Ok((Value::String(self.string()?), End::Complete))
            }
            Some(c) if c == '-' || c == '+' || c == '.' || c.is_ascii_digit() => {
                Ok((self.number()?, End::Number))
            }
            Some(c) if is_word_start(c) => Ok((self.literal()?, End::Complete)),
            Some(_) => Err(self.unexpected("a value")),
        }
    }

    fn nested(
        &mut self,
        read: fn(&mut Self) -> Result<Value, Unrepairable>,
    ) -> Result<(Value, End), Unrepairable> {
        if self.depth >= MAX_DEPTH {
            return Err(Unrepairable::TooDeep(MAX_DEPTH));
        }
        self.depth += 1;
        self.bump();
        let value = read(self)?;
        self.depth -= 1;
        Ok((value, End::Complete))
    }

    /// After a member or element: whether another one follows (`,`, or whitespace alone before
    /// the start of one), or the container ends (its closer, or the end of text after a
    /// complete value).
    fn more(
        &mut self,
        closer: char,
        last: End,
        starts_next: fn(char) -> bool,
    ) -> Result<bool, Unrepairable> {
        let spaced = self.skip_trivia()?;
        match self.peek() {
            Some(',') => {
                self.bump();
                self.skip_trivia()?;
                if self.peek() == Some(closer) {
                    self.note(RepairKind::TrailingComma);
                    self.bump();
                    return Ok(false);
                }
                Ok(true)
            }
            Some(c) if c == closer => {
                self.bump();
                Ok(false)
            }
            None if last == End::Number => {
                Err(Unrepairable::Truncated("a number, which may have been cut"))
            }
            None => {
                self.note(RepairKind::MissingCloser);
                Ok(false)
            }
            Some(c) if spaced && starts_next(c) => {
                if last == End::Number && (c == '-' || c.is_ascii_digit()) {
                    return Err(Unrepairable::Ambiguous(
                        "two numbers separated by a space: one number or two? separate \
                         elements with a comma"
                            .into(),
                    ));
                }
                self.note(RepairKind::MissingComma);
                Ok(true)
            }
            Some(_) => Err(self.unexpected(if closer == '}' {
                "',' or '}'"
            } else {
                "',' or ']'"
            })),
        }
    }

    fn object(&mut self) -> Result<Value, Unrepairable> {
        let mut map = Map::new();
        self.skip_trivia()?;
        if self.peek() == Some('}') {
            self.bump();
            return Ok(Value::Object(map));
        }
        loop {
            self.skip_trivia()?;
            let key = self.key()?;
            let spaced = self.skip_trivia()?;
            match self.peek() {
                Some(':') => {
                    self.bump();
                }
                Some(c) if spaced && starts_value(c) && !is_word_start(c) => {
                    self.note(RepairKind::MissingColon);
                }
                _ => return Err(self.unexpected("':' after a key")),
            }
            let (value, end) = self.value()?;
            if map.contains_key(&key) {
                return Err(Unrepairable::DuplicateKey(key));
            }
            map.insert(key, value);
            if !self.more('}', end, starts_key)? {
                return Ok(Value::Object(map));
            }
        }
    }

    fn array(&mut self) -> Result<Value, Unrepairable> {
        let mut items = Vec::new();
        self.skip_trivia()?;
        if self.peek() == Some(']') {
            self.bump();
            return Ok(Value::Array(items));
        }
        loop {
            let (value, end) = self.value()?;
            items.push(value);
            if !self.more(']', end, starts_value)? {
                return Ok(Value::Array(items));
            }
        }
    }

    fn key(&mut self) -> Result<String, Unrepairable> {
        match self.peek() {
            Some(c) if closing_quote(c).is_some() => self.string(),
            Some(c) if is_word_start(c) => {
                self.note(RepairKind::UnquotedKeys);
                Ok(self.word().to_string())
            }
            _ => Err(self.unexpected("a key")),
        }
    }

    fn word(&mut self) -> &str {
        let start = self.pos;
        while self.peek().is_some_and(is_word_char) {
            self.bump();
        }
        &self.text[start..self.pos]
    }

    fn literal(&mut self) -> Result<Value, Unrepairable> {
        let at_end = |r: &Self| r.pos == r.text.len();
        let word = self.word().to_string();
        let value = match word.as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            "null" => Value::Null,
            "True" | "False" | "None" => {
                self.note(RepairKind::PythonLiterals);
                match word.as_str() {
                    "True" => Value::Bool(true),
                    "False" => Value::Bool(false),
                    _ => Value::Null,
                }
            }
            _ if at_end(self) => return Err(Unrepairable::Truncated("a bare word")),
            _ => {
                return Err(Unrepairable::Ambiguous(format!(
                    "`{word}` is not a JSON value: quote strings with \", write true, false or null"
                )));
            }
        };
        Ok(value)
    }

    fn number(&mut self) -> Result<Value, Unrepairable> {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E'))
        {
            self.bump();
        }
        let token = &self.text[start..self.pos];
        if self.pos == self.text.len() {
            return Err(Unrepairable::Truncated("a number, which may have been cut"));
        }
        let written = number_form(token);
        if written != token {
            self.note(RepairKind::NumberForm);
        }
        serde_json::from_str::<Number>(&written)
            .map(Value::Number)
            .map_err(|_| {
                Unrepairable::Ambiguous(format!(
                    "`{token}` is not a JSON number: write digits with an optional '-', '.' and exponent"
                ))
            })
    }

    fn string(&mut self) -> Result<String, Unrepairable> {
        let open = self.bump().unwrap_or('"');
        let (close, kind) = closing_quote(open).unwrap_or(('"', None));
        if let Some(kind) = kind {
            self.note(kind);
        }
        let mut out = String::new();
        loop {
            let c = self.bump().ok_or(Unrepairable::Truncated("a string"))?;
            if c == close {
                return Ok(out);
            }
            match c {
                '\\' => self.escape(close, &mut out)?,
                c if (c as u32) < 0x20 => {
                    self.note(RepairKind::ControlCharacters);
                    out.push(c);
                }
                c => out.push(c),
            }
        }
    }

    fn escape(&mut self, close: char, out: &mut String) -> Result<(), Unrepairable> {
        let c = self.bump().ok_or(Unrepairable::Truncated("a string"))?;
        match c {
            '"' | '\\' | '/' => out.push(c),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{c}'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'u' => out.push(self.unicode()?),
            '\'' => {
                if close != '\'' {
                    self.note(RepairKind::InvalidEscape);
                }
                out.push('\'');
            }
            c if c == close => out.push(c),
            c if REGEX_ESCAPES.contains(c) => {
                self.note(RepairKind::InvalidEscape);
                out.push('\\');
                out.push(c);
            }
            other => {
                return Err(Unrepairable::Ambiguous(format!(
                    "`\\{other}` is not a JSON escape (a literal backslash is `\\\\`)"
                )));
            }
        }
        Ok(())
    }

    fn hex4(&mut self) -> Result<u32, Unrepairable> {
        let rest = &self.text[self.pos..];
        if rest.len() < 4 {
            return Err(Unrepairable::Truncated("a \\u escape"));
        }
        let digits = rest.get(..4).ok_or_else(|| {
            Unrepairable::Ambiguous("`\\u` is not followed by four hex digits".into())
        })?;
        let code = u32::from_str_radix(digits, 16)
            .ok()
            .filter(|_| digits.chars().all(|c| c.is_ascii_hexdigit()))
            .ok_or_else(|| {
                Unrepairable::Ambiguous(format!("`\\u{digits}` is not four hex digits"))
            })?;
        self.pos += 4;
        Ok(code)
    }

    fn unicode(&mut self) -> Result<char, Unrepairable> {
        let lone = || Unrepairable::Ambiguous("a lone UTF-16 surrogate in a \\u escape".into());
        let high = self.hex4()?;
        if !(0xD800..0xDC00).contains(&high) {
            return char::from_u32(high).ok_or_else(lone);
        }
        if !self.text[self.pos..].starts_with("\\u") {
            return Err(lone());
        }
        self.pos += 2;
        let low = self.hex4()?;
        if !(0xDC00..0xE000).contains(&low) {
            return Err(lone());
        }
        char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)).ok_or_else(lone)
    }
}
