//! Coverage of the request: what the user asked about that no tool call has taken up yet.
//!
//! A run that looked up `Rome` for "How many degrees warmer is Rome than Paris?" and then
//! answers has left `Paris` out. That is read off the `copied` arguments of the calls the run
//! made: a value the request coordinates with one of them (`Rome and Paris`, `Rome or Paris`,
//! `Rome than Paris`, `in Rome than in Paris`) and that no call took is uncovered. Only names
//! count: both values are capitalized, as cities and people are, because between common words
//! a conjunction joins anything (`a base of 10 units and height of 5 units`). A qualifier
//! (`Paris, France`) is not coordination.

use serde_json::Value;

use crate::evidence::provenance::{GroundedArgument, Provenance, is_function_word};

/// Words that join two values of the same kind in a request.
const CONJUNCTIONS: &[&str] = &["and", "or", "than", "vs", "versus"];

/// Prepositions that may repeat after a conjunction (`in Rome than in Paris`).
const PREPOSITIONS: &[&str] = &["in", "at", "for", "of", "from", "to"];

/// Longest coordinated value, in words.
const MAX_VALUE_WORDS: usize = 4;

/// One successful call's grounded arguments and its input.
pub struct CoveredCall<'a> {
    /// The tool called.
    pub tool: &'a str,
    /// The tool's grounded arguments.
    pub grounded: &'a [GroundedArgument],
    /// The input it was called with.
    pub input: &'a Value,
}

/// A value of the request that no call took, and the argument that would take it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UncoveredValue {
    /// The value, as the request writes it.
    pub value: String,
    /// The tool whose copied argument took the value it is coordinated with.
    pub tool: String,
    /// That argument.
    pub field: String,
}

/// What the request asks about that no successful call took up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Uncovered {
    /// The uncovered values, in the order the calls reveal them.
    pub values: Vec<UncoveredValue>,
}

impl Uncovered {
    /// What `request` asks about, beyond `calls`.
    pub fn find(request: &str, calls: &[CoveredCall<'_>]) -> Self {
        let words: Vec<&str> = request.split_whitespace().collect();
        let copied: Vec<(&str, &str, &str)> = calls
            .iter()
            .flat_map(|call| {
                call.grounded
                    .iter()
                    .filter(|arg| arg.provenance == Provenance::Copied)
                    .filter_map(|arg| {
                        let value = call.input.get(&arg.field)?.as_str()?;
                        Some((call.tool, arg.field.as_str(), value))
                    })
            })
            .collect();
        let covered = |candidate: &str| {
            let candidate = bare(candidate);
            copied.iter().any(|(_, _, value)| {
                let value = bare(value);
                value.contains(&candidate) || candidate.contains(&value)
            })
        };
        let mut values: Vec<UncoveredValue> = Vec::new();
        for (tool, field, value) in &copied {
            for other in coordinated(&words, value) {
                if !covered(&other) && !values.iter().any(|v| v.value == other) {
                    values.push(UncoveredValue {
                        value: other,
                        tool: tool.to_string(),
                        field: field.to_string(),
                    });
                }
            }
        }
        Uncovered { values }
    }

    /// Whether the request is covered.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The uncovered values alone, for a decoder to hold a copied argument to.
    pub fn copies(&self) -> Vec<String> {
        self.values.iter().map(|v| v.value.clone()).collect()
    }

    /// Feedback for the model: what is left out and which call takes it up.
    pub fn message(&self) -> String {
        let calls: Vec<String> = self
            .values
            .iter()
            .map(|v| {
                format!(
                    "the request also asks about \"{}\", which no tool call covered; call {} with \
                     {} \"{}\"",
                    v.value, v.tool, v.field, v.value
                )
            })
            .collect();
        format!(
            "satisfied is true but the answer leaves part of the request out: {}",
            calls.join("; ")
        )
    }
}

/// The names `words` coordinates with the name `value`: the run of capitalized words on the
/// other side of a conjunction next to it. Nothing for a value that is not capitalized.
fn coordinated(words: &[&str], value: &str) -> Vec<String> {
    let wanted: Vec<String> = value.split_whitespace().map(bare).collect();
    let len = wanted.len();
    if len == 0 || len > words.len() || !starts_upper(value) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for start in 0..=words.len() - len {
        let here: Vec<String> = words[start..start + len].iter().map(|w| bare(w)).collect();
        if here != wanted {
            continue;
        }
        let last = words[start + len - 1];
        if !has_trailing_punctuation(last) {
            let mut at = start + len;
            if at < words.len() && is_conjunction(words[at]) {
                at += 1;
                if at < words.len() && is_preposition(words[at]) {
                    at += 1;
                }
                out.extend(name_from(words, at));
            }
        }
        if start >= 1 {
            let mut at = start - 1;
            if is_preposition(words[at]) && at >= 1 {
                at -= 1;
            }
            if is_conjunction(words[at]) && at >= 1 {
                out.extend(name_to(words, at - 1));
            }
        }
    }
    out
}

/// The name that starts at `from`: capitalized words up to a punctuation mark.
fn name_from(words: &[&str], from: usize) -> Option<String> {
    let mut run = Vec::new();
    for (i, word) in words.iter().enumerate().skip(from) {
        if !is_name_word(word, i) || run.len() == MAX_VALUE_WORDS {
            break;
        }
        run.push(*word);
        if has_trailing_punctuation(word) {
            break;
        }
    }
    joined(&run)
}

/// The name that ends at `to`, read backwards up to a punctuation mark before it.
fn name_to(words: &[&str], to: usize) -> Option<String> {
    let mut run = Vec::new();
    let mut i = to;
    loop {
        let word = words[i];
        if !is_name_word(word, i)
            || run.len() == MAX_VALUE_WORDS
            || (!run.is_empty() && has_trailing_punctuation(word))
        {
            break;
        }
        run.insert(0, word);
        if i == 0 {
            break;
        }
        i -= 1;
    }
    joined(&run)
}

/// Whether `word`, at `index` of the request, can be part of a name.
fn is_name_word(word: &str, index: usize) -> bool {
    !is_function_word(word, index == 0) && starts_upper(word)
}

fn joined(run: &[&str]) -> Option<String> {
    let text = run.join(" ");
    let text = text.trim_matches(|c: char| !c.is_alphanumeric());
    (!text.is_empty()).then(|| text.to_string())
}

fn is_conjunction(word: &str) -> bool {
    CONJUNCTIONS.contains(&bare(word).as_str())
}

fn is_preposition(word: &str) -> bool {
    PREPOSITIONS.contains(&bare(word).as_str())
}

fn has_trailing_punctuation(word: &str) -> bool {
    word.ends_with(|c: char| !c.is_alphanumeric())
}

fn starts_upper(text: &str) -> bool {
    text.chars()
        .find(|c| c.is_alphabetic())
        .is_some_and(char::is_uppercase)
}

/// `word` in lower case without the punctuation at its ends.
fn bare(word: &str) -> String {
    word.trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn uncovered(request: &str, cities: &[&str]) -> Uncovered {
        let city = [GroundedArgument::copied("city")];
        let inputs: Vec<Value> = cities.iter().map(|c| json!({ "city": c })).collect();
        let calls: Vec<CoveredCall<'_>> = inputs
            .iter()
            .map(|input| CoveredCall {
                tool: "weather",
                grounded: &city,
                input,
            })
            .collect();
        Uncovered::find(request, &calls)
    }

    #[test]
    fn a_value_coordinated_with_a_looked_up_one_is_uncovered() {
        let cases = [
            (
                "How many degrees warmer is Rome than Paris right now?",
                "Rome",
                "Paris",
            ),
            (
                "How many degrees warmer is Rome than Paris right now?",
                "Paris",
                "Rome",
            ),
            (
                "Which is windier right now, New York or Mumbai? Give it.",
                "New York",
                "Mumbai",
            ),
            (
                "Which is windier right now, New York or Mumbai? Give it.",
                "Mumbai",
                "New York",
            ),
            ("Is it warmer in Rome than in Paris?", "Rome", "Paris"),
            ("Is it warmer in Rome than in Paris?", "Paris", "Rome"),
        ];
        for (request, asked, other) in cases {
            let found = uncovered(request, &[asked]);
            assert_eq!(
                found.copies(),
                vec![other.to_string()],
                "{request} / {asked}"
            );
            let message = found.message();
            assert!(
                message.contains(&format!("call weather with city \"{other}\"")),
                "{message}"
            );
        }
    }

    #[test]
    fn qualifiers_unrelated_words_and_covered_values_are_not_uncovered() {
        for (request, cities) in [
            ("What's the weather in Paris, France?", &["Paris"][..]),
            ("What time is it in Tokyo?", &["Tokyo"]),
            ("Rome or Paris: which is warmer?", &["Rome", "paris"]),
            (
                "What time is it in Tokyo and what's the weather?",
                &["Tokyo"],
            ),
            ("Is Rome warmer than it was yesterday?", &["Rome"]),
            (
                "Weather in New York and New Jersey?",
                &["New York", "New Jersey"],
            ),
        ] {
            assert!(uncovered(request, cities).is_empty(), "{request}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_request_and_value_are_read_without_panic(
            words in proptest::collection::vec(
                proptest::sample::select(vec![
                    "Rome", "rome", "and", "or", "than", "in", "Paris,", "New", "York?", "the",
                    "vs", "in", "-", "…", "Été", "?", "",
                ]),
                0..12,
            ),
            value in "\\PC{0,12}",
            free in "\\PC{0,40}",
        ) {
            let request = words.join(" ");
            for text in [&request, &free] {
                let found = uncovered(text, &[&value, "Rome", "New York"]);
                for v in found.copies() {
                    proptest::prop_assert!(!v.is_empty());
                }
            }
        }
    }

    #[test]
    fn only_copied_arguments_count() {
        let expression = [GroundedArgument::numbers("expression")];
        let input = json!({"expression": "Rome"});
        let call = CoveredCall {
            tool: "calculator",
            grounded: &expression,
            input: &input,
        };
        assert!(Uncovered::find("Rome or Paris?", &[call]).is_empty());
    }
}
