//! Provenance of tool arguments: values a model must take from the conversation, not make up.
//!
//! A tool declares which of its arguments are grounded ([`GroundedArgument`]): a `copied`
//! string (a city, a name) must be written somewhere in the user's request or in an earlier
//! tool result; the `numbers` of a string (an arithmetic expression) must each be a number of
//! the request (in digits or in words) or of a result, small whole numbers and the constants
//! the request's units imply aside. An action that breaks this is
//! rejected as `ungrounded_argument`, and a model that owns its decoder can be held to the
//! [`Sources::copies`] of a copied argument from the start.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::evidence::implied::{implied_constants, is_implied};
use crate::evidence::number_words::numbers_in_words;
use crate::evidence::numbers::numbers_in;

/// Longest span of the request, in words, offered to a copied argument.
const MAX_SPAN_WORDS: usize = 4;

/// Longest string of a tool result offered whole to a copied argument, in characters.
const MAX_COPIED_CHARS: usize = 40;

/// Most copies offered to a copied argument.
const MAX_COPIES: usize = 256;

/// Largest whole number an expression may use without finding it in the conversation: the
/// small constants of arithmetic (2 for a square, 24 hours, 60 minutes).
const MAX_FREE_WHOLE: f64 = 99.0;

/// Where a grounded argument's value must come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provenance {
    /// The whole string appears in the request or in a tool result (case ignored).
    Copied,
    /// Every number written in the string appears in the request (in digits or in words) or
    /// in a tool result, is a constant the request's units imply (100 for a percentage, 3600
    /// for hours), or is a whole number up to 99.
    Numbers,
}

/// One top-level argument of a tool's input whose value must come from the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroundedArgument {
    /// The property of the input object.
    pub field: String,
    /// What of its value must be found in the conversation.
    pub provenance: Provenance,
}

impl GroundedArgument {
    /// A string argument copied from the conversation.
    pub fn copied(field: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            provenance: Provenance::Copied,
        }
    }

    /// A string argument whose numbers come from the conversation.
    pub fn numbers(field: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            provenance: Provenance::Numbers,
        }
    }
}

/// What a decoder may hold grounded arguments to: the values of a copied argument, and the
/// numbers an expression may use besides small whole ones, as written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grounds {
    /// The values a `copied` argument may take.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub copies: Vec<String>,
    /// The numbers of the conversation, in digits or in words, for a `numbers` argument. The
    /// constants its units imply are accepted but not held to: offered 1000 for "342 km on
    /// 38 litres", the embedded model wrote `342 / 1000`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub numbers: Vec<String>,
}

impl Grounds {
    /// Whether there is nothing to hold arguments to.
    pub fn is_empty(&self) -> bool {
        self.copies.is_empty() && self.numbers.is_empty()
    }
}

/// What grounded arguments may be taken from: the user's request and the run's tool results.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sources {
    request: String,
    results: Vec<String>,
    numbers: Vec<f64>,
    implied: Vec<f64>,
}

impl Sources {
    /// The sources of a run with `request` and the successful tool `results` so far.
    pub fn new<'a>(request: &str, results: impl IntoIterator<Item = &'a Value>) -> Self {
        let mut numbers = numbers_in(request);
        numbers.extend(numbers_in_words(request));
        let mut sources = Sources {
            request: request.to_string(),
            numbers,
            implied: implied_constants(request),
            ..Sources::default()
        };
        for result in results {
            sources.collect(result);
        }
        sources
    }

    /// Whether the request or a result gives any number.
    pub fn gives_numbers(&self) -> bool {
        !self.numbers.is_empty()
    }

    fn collect(&mut self, value: &Value) {
        match value {
            Value::Number(n) => self.numbers.extend(n.as_f64()),
            Value::String(s) => {
                self.numbers.extend(numbers_in(s));
                self.results.push(s.clone());
            }
            Value::Array(items) => items.iter().for_each(|v| self.collect(v)),
            Value::Object(map) => map.values().for_each(|v| self.collect(v)),
            Value::Bool(_) | Value::Null => {}
        }
    }

    /// Why `input` breaks one of `grounded`, as feedback for the model; `None` when it does not.
    pub fn check(&self, grounded: &[GroundedArgument], input: &Value) -> Option<String> {
        grounded.iter().find_map(|arg| {
            let value = input.get(&arg.field)?.as_str()?;
            match arg.provenance {
                Provenance::Copied => self.uncopied(&arg.field, value),
                Provenance::Numbers => self.unfounded_numbers(&arg.field, value),
            }
        })
    }

    fn uncopied(&self, field: &str, value: &str) -> Option<String> {
        let wanted = normalized(value);
        if wanted.is_empty()
            || std::iter::once(&self.request)
                .chain(&self.results)
                .any(|text| normalized(text).contains(&wanted))
        {
            return None;
        }
        Some(format!(
            "`{field}` is \"{value}\", which the request does not mention; copy the {field} \
             exactly as the request writes it: \"{}\"",
            self.request
        ))
    }

    fn unfounded_numbers(&self, field: &str, value: &str) -> Option<String> {
        let made_up: Vec<String> = numbers_in(value)
            .into_iter()
            .filter(|n| !self.founds(*n))
            .map(|n| n.to_string())
            .collect();
        if made_up.is_empty() {
            return None;
        }
        let mut given: Vec<String> = Vec::new();
        for n in &self.numbers {
            let text = n.to_string();
            if !given.contains(&text) {
                given.push(text);
            }
        }
        let offered = if given.is_empty() {
            "no number is given yet: call a tool that returns the values first, or write the \
             request's numbers as digits"
                .to_string()
        } else {
            format!("use the numbers given: {}", given.join(", "))
        };
        Some(format!(
            "`{field}` uses {}, which appear in neither the request nor a tool result; {offered}",
            made_up.join(", ")
        ))
    }

    fn founds(&self, n: f64) -> bool {
        (n.fract() == 0.0 && n.abs() <= MAX_FREE_WHOLE)
            || is_implied(n, &self.implied)
            || self
                .numbers
                .iter()
                .any(|g| (g.abs() - n.abs()).abs() <= 1e-9 * g.abs().max(1.0))
    }

    /// What a decoder may hold the arguments in `grounded` to.
    pub fn grounds<'a>(&self, grounded: impl IntoIterator<Item = &'a GroundedArgument>) -> Grounds {
        let mut grounds = Grounds::default();
        let kinds: Vec<Provenance> = grounded.into_iter().map(|a| a.provenance).collect();
        if kinds.contains(&Provenance::Copied) {
            grounds.copies = self.copies();
        }
        if kinds.contains(&Provenance::Numbers) {
            for text in self.numbers.iter().map(|n| n.abs().to_string()) {
                if !grounds.numbers.contains(&text) {
                    grounds.numbers.push(text);
                }
            }
        }
        grounds
    }

    /// The values a copied argument may take: every run of up to four words of the request
    /// (punctuation trimmed at its ends) that neither begins nor ends with a function word
    /// (`I'm joining a meeting` is no value), and the short strings of the tool results; a
    /// bare number is none (numbers have their own provenance).
    pub fn copies(&self) -> Vec<String> {
        let words: Vec<&str> = self.request.split_whitespace().collect();
        let function: Vec<bool> = words
            .iter()
            .enumerate()
            .map(|(i, w)| is_function_word(w, i == 0 || ends_sentence(words[i - 1])))
            .collect();
        let mut copies: Vec<String> = Vec::new();
        let mut offer = |text: &str| {
            let text = text.trim_matches(|c: char| !c.is_alphanumeric());
            if text.chars().any(char::is_alphabetic)
                && copies.len() < MAX_COPIES
                && !copies.iter().any(|c| c == text)
            {
                copies.push(text.to_string());
            }
        };
        for len in 1..=MAX_SPAN_WORDS {
            for (start, span) in words.windows(len).enumerate() {
                if !function[start] && !function[start + len - 1] {
                    offer(&span.join(" "));
                }
            }
        }
        for result in &self.results {
            if result.chars().count() <= MAX_COPIED_CHARS {
                offer(result);
            }
        }
        copies
    }
}

/// English words that carry no name: pronouns, articles, prepositions, question words.
const FUNCTION_WORDS: &[&str] = &[
    "a", "an", "the", "i", "i'm", "me", "my", "we", "our", "you", "your", "he", "she", "it",
    "it's", "its", "they", "their", "them", "is", "are", "was", "be", "do", "does", "in", "on",
    "at", "to", "for", "of", "from", "by", "with", "and", "or", "but", "what", "what's", "how",
    "which", "who", "when", "where", "why", "there", "this", "that", "these", "those", "now",
    "please", "right", "there's", "here",
];

/// Whether `word` is a function word. One that is capitalized mid-sentence is part of a name
/// (`The Hague`); at the start of a sentence (`first`) capitals say nothing.
pub(crate) fn is_function_word(word: &str, first: bool) -> bool {
    let bare = word
        .trim_matches(|c: char| !c.is_alphanumeric())
        .replace('’', "'");
    if bare.is_empty() {
        return true;
    }
    let capitalized = bare.chars().next().is_some_and(char::is_uppercase);
    (first || !capitalized) && FUNCTION_WORDS.contains(&bare.to_lowercase().as_str())
}

/// Whether `word` closes a sentence.
fn ends_sentence(word: &str) -> bool {
    word.ends_with(['.', '?', '!'])
}

/// `text` in lower case with runs of whitespace made one space.
fn normalized(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_copied_argument_must_appear_in_the_request_or_a_result() {
        let sources = Sources::new(
            "What's the local time in Singapore?",
            [&json!({"city": "Kuala Lumpur"})],
        );
        let city = [GroundedArgument::copied("city")];
        assert_eq!(sources.check(&city, &json!({"city": "singapore"})), None);
        assert_eq!(
            sources.check(&city, &json!({"city": "Kuala  Lumpur"})),
            None
        );
        let message = sources
            .check(&city, &json!({"city": "Sydney"}))
            .expect("Sydney is not mentioned");
        assert!(message.contains("\"Sydney\""), "{message}");
        assert!(message.contains("Singapore"), "{message}");
        assert_eq!(sources.check(&city, &json!({"other": "Sydney"})), None);
    }

    #[test]
    fn numbers_must_come_from_the_conversation_small_whole_ones_aside() {
        let sources = Sources::new("What is the square root of 1764?", [&json!({"x": 2.5})]);
        let expr = [GroundedArgument::numbers("expression")];
        assert_eq!(
            sources.check(&expr, &json!({"expression": "sqrt(1764)"})),
            None
        );
        assert_eq!(
            sources.check(&expr, &json!({"expression": "-1764 * 2.5 / 60"})),
            None
        );
        let message = sources
            .check(&expr, &json!({"expression": "1764 * 176.4 + 100"}))
            .expect("176.4 and 100 are made up");
        assert!(message.contains("176.4, 100"), "{message}");
        assert!(message.contains("1764"), "{message}");
        let words = Sources::new("How much is one eighth as a decimal?", []);
        assert_eq!(words.check(&expr, &json!({"expression": "1 / 8"})), None);
        let message = words
            .check(&expr, &json!({"expression": "1234.08"}))
            .expect("made up");
        assert!(
            message.contains("use the numbers given: 1, 8, 0.125"),
            "{message}"
        );
        let none = Sources::new("What's the average temperature in London and Paris?", []);
        let message = none
            .check(&expr, &json!({"expression": "1234.08"}))
            .expect("made up");
        assert!(message.contains("no number is given yet"), "{message}");
    }

    #[test]
    fn numbers_in_words_and_implied_constants_are_grounded() {
        let expr = [GroundedArgument::numbers("expression")];
        let ok = |request: &str, expression: &str| {
            Sources::new(request, [])
                .check(&expr, &json!({ "expression": expression }))
                .is_none()
        };
        assert!(ok("What's 7.5 percent of 640?", "640 * 7.5 / 100"));
        assert!(ok("What is two thousand divided by four?", "2000 / 4"));
        assert!(ok("How many seconds are there in 3 days?", "3 * 86400"));
        assert!(ok(
            "Convert 212 degrees Fahrenheit to Celsius.",
            "(212 - 32) / 1.8"
        ));
        assert!(ok("How far is 26.2 miles in km?", "26.2 * 1.609"));
        assert!(!ok(
            "I drove 342 km on 38 litres. Km per litre?",
            "342 / 100"
        ));
        assert!(!ok("How much is 48 times 12?", "48 * 12 * 1000"));
    }

    #[test]
    fn held_numbers_are_those_given_in_digits_or_words() {
        let expr = [GroundedArgument::numbers("expression")];
        let percent = Sources::new("What's 7.5 percent of 640?", []).grounds(&expr);
        assert_eq!(percent.numbers, ["7.5", "640"]);
        let eighth = Sources::new("How much is one eighth as a decimal?", []).grounds(&expr);
        assert_eq!(eighth.numbers, ["1", "8", "0.125"]);
    }

    #[test]
    fn copies_are_spans_of_the_request_and_short_result_strings() {
        let sources = Sources::new(
            "What time is it now in Sydney, Australia?",
            [&json!({"zone": "Australia/Sydney", "note": "x".repeat(60)})],
        );
        let copies = sources.copies();
        for expected in ["Sydney", "Sydney, Australia", "Australia/Sydney"] {
            assert!(
                copies.contains(&expected.to_string()),
                "{expected}: {copies:?}"
            );
        }
        assert!(!copies.iter().any(|c| c.ends_with('?') || c.ends_with(',')));
        assert!(!copies.contains(&"in Sydney".to_string()), "{copies:?}");
        assert!(!copies.iter().any(|c| c.starts_with("What")), "{copies:?}");
        let hague = Sources::new("I'm meeting a client in The Hague. Time there?", []).copies();
        assert!(hague.contains(&"The Hague".to_string()), "{hague:?}");
        assert!(!hague.iter().any(|c| c.starts_with("I'm")), "{hague:?}");
        assert!(!copies.iter().any(|c| c.starts_with("xxx")));
        let numbered = Sources::new("Area of a circle of radius 10 in units?", []).copies();
        assert!(!numbered.contains(&"10".to_string()), "{numbered:?}");
        assert!(numbered.contains(&"units".to_string()), "{numbered:?}");
        assert!(copies.len() <= MAX_COPIES);
    }
}
