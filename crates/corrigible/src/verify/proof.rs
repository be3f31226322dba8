//! The engine's ruling on a verifier's comparison. The verifier only sets a value of the answer
//! beside the evidence it reads it from; the engine decides, from the run's own text, whether
//! the two differ. A comparison becomes an objection only when:
//! - what it says the answer says is in the answer, and its quote is verbatim in the request
//!   or a tool result (spacing, case and JSON quote marks aside), with the value in it;
//! - the answer states that value nowhere (exactly, rounded, in another common unit, a clock
//!   time in 12-hour form);
//! - and either the request asks for it, or what the answer says in its place is a number
//!   given by nothing in the evidence, nor (a single number) by one calculation from two of its
//!   numbers: a value the evidence does give means the verifier paired the wrong values, not
//!   that the answer is wrong.
//!
//! Only numbers are ruled on (amounts, readings, clock times): a word proves nothing by its
//! absence. When the quoted value's key is one the request asks for (a word of the key is a
//! word of the request: `time`, `wind speed`), the answer must state it, whatever it says in
//! its place. A number of the answer with no source counts only in a run with tool results:
//! answers from knowledge are not held to them.

use serde::{Deserialize, Serialize};

use super::objection::{Comparison, ObjectionKind};
use crate::evidence::grounding::{key_asked, same_number};
use crate::evidence::numbers::numbers_in;

/// What a comparison is checked against.
#[derive(Debug, Clone, Copy)]
pub struct Evidence<'a> {
    /// The user's request.
    pub request: &'a str,
    /// Each successful tool call's tool and result, as the model saw it.
    pub results: &'a [(String, String)],
    /// The answer under check.
    pub answer: &'a str,
}

/// Where a proven objection's evidence was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "in", rename_all = "snake_case")]
pub enum Source {
    /// The user's request.
    Request,
    /// The result of a call of `tool`.
    ToolResult {
        /// The tool's name.
        tool: String,
    },
    /// Nowhere: the answer's value has no source.
    Nowhere,
}

/// A comparison the evidence proves wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proven {
    /// What is wrong.
    pub kind: ObjectionKind,
    /// Where the value it should have is.
    pub source: Source,
}

/// Why a comparison was not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dropped {
    /// What it says the answer says is not in the answer.
    NotInAnswer,
    /// The quote is not in the request or any tool result.
    QuoteNotFound,
    /// The value is not in the quote.
    ValueNotInQuote,
    /// The answer states the value (exactly, rounded or in another common unit).
    ValueInAnswer,
    /// What the answer says is given by the evidence: the verifier paired the wrong values.
    ValueInEvidence,
    /// What the answer says follows from two numbers of the evidence by one calculation.
    ValueDerived,
    /// A value with no source and no number in it: absence of a word proves nothing.
    NotANumber,
    /// A value with no source in a run without tool results.
    NoToolResults,
    /// A value the answer leaves out that the request does not ask for.
    NotAsked,
}

impl Dropped {
    /// The name in the trace.
    pub fn as_str(self) -> &'static str {
        match self {
            Dropped::NotInAnswer => "not_in_answer",
            Dropped::QuoteNotFound => "quote_not_found",
            Dropped::ValueNotInQuote => "value_not_in_quote",
            Dropped::ValueInAnswer => "value_in_answer",
            Dropped::ValueInEvidence => "value_in_evidence",
            Dropped::ValueDerived => "value_derived",
            Dropped::NotANumber => "not_a_number",
            Dropped::NoToolResults => "no_tool_results",
            Dropped::NotAsked => "not_asked",
        }
    }
}

/// Most numbers of the evidence combined pairwise when looking for a derived value.
const MAX_COMBINED: usize = 64;

/// Rules on `comparison`: the objection it proves, or why it proves none.
pub fn prove(comparison: &Comparison, evidence: &Evidence<'_>) -> Result<Proven, Dropped> {
    let says = comparison.answer_says.trim();
    let source_says = comparison.source_says.trim();
    let quote = normalized(&comparison.quote);
    if !says.is_empty() && !normalized(evidence.answer).contains(&normalized(says)) {
        return Err(Dropped::NotInAnswer);
    }
    if quote.is_empty() || source_says.is_empty() {
        if numbers_in(says).len() != 1 {
            return Err(Dropped::NotANumber);
        }
        if evidence.results.is_empty() {
            return Err(Dropped::NoToolResults);
        }
        supported(says, evidence).map_or(Ok(()), Err)?;
        return Ok(Proven {
            kind: ObjectionKind::Unsupported,
            source: Source::Nowhere,
        });
    }
    if numbers_in(source_says).is_empty() {
        return Err(Dropped::NotANumber);
    }
    if !quote.contains(&normalized(source_says)) {
        return Err(Dropped::ValueNotInQuote);
    }
    let source = locate(&quote, evidence).ok_or(Dropped::QuoteNotFound)?;
    if states(evidence.answer, source_says) {
        return Err(Dropped::ValueInAnswer);
    }
    let asked = matches!(source, Source::ToolResult { .. })
        && asked_key(&comparison.quote, evidence.request);
    if !asked {
        if numbers_in(says).is_empty() {
            return Err(if says.is_empty() {
                Dropped::NotAsked
            } else {
                Dropped::NotANumber
            });
        }
        supported(says, evidence).map_or(Ok(()), Err)?;
    }
    Ok(Proven {
        kind: ObjectionKind::Contradicts,
        source,
    })
}

/// Where `quote` (normalized) is: the request or a tool result.
fn locate(quote: &str, evidence: &Evidence<'_>) -> Option<Source> {
    if normalized(evidence.request).contains(quote) {
        return Some(Source::Request);
    }
    evidence.results.iter().find_map(|(tool, text)| {
        normalized(text)
            .contains(quote)
            .then(|| Source::ToolResult { tool: tool.clone() })
    })
}

/// Whether the quote's key (the text before its first `:`) is asked for by the request.
fn asked_key(quote: &str, request: &str) -> bool {
    let Some((key, _)) = quote.split_once(':') else {
        return false;
    };
    let lower = request.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    key_asked(key, &words)
}

/// Why `value` is supported by the evidence, if it is: its text is in it, every number of it
/// is (exactly or rounded), or, a single number, it follows from two of its numbers.
fn supported(value: &str, evidence: &Evidence<'_>) -> Option<Dropped> {
    let numbers = numbers_in(value);
    let mut texts = vec![evidence.request];
    texts.extend(evidence.results.iter().map(|(_, text)| text.as_str()));
    if numbers.is_empty() {
        let value = normalized(value);
        return texts
            .iter()
            .any(|t| normalized(t).contains(&value))
            .then_some(Dropped::ValueInEvidence);
    }
    let known: Vec<f64> = texts.iter().flat_map(|t| numbers_in(t)).collect();
    if numbers
        .iter()
        .all(|n| known.iter().any(|k| same_number(*n, *k)))
    {
        return Some(Dropped::ValueInEvidence);
    }
    (numbers.len() == 1 && derived(numbers[0], &known)).then_some(Dropped::ValueDerived)
}

/// The text without spaces, JSON quote marks, backticks and backslashes, in lower case: a quote
/// is found however the verifier spaced or quoted it.
fn normalized(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace() && !matches!(c, '"' | '\\' | '`'))
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whether `answer` states `value`: a clock time in 24- or 12-hour form (`21:00` as `9 PM`),
/// else each of its numbers exactly, rounded or in another common unit, or its text.
fn states(answer: &str, value: &str) -> bool {
    if let Some((hours, minutes)) = clock_time(value) {
        let stated = numbers_in(answer);
        let twelve = if hours % 12 == 0 { 12 } else { hours % 12 };
        let hour = stated
            .iter()
            .any(|n| *n == f64::from(hours) || *n == f64::from(twelve));
        return hour && (minutes == 0 || stated.contains(&f64::from(minutes)));
    }
    let numbers = numbers_in(value);
    if !numbers.is_empty() {
        let stated = numbers_in(answer);
        return numbers
            .iter()
            .all(|n| stated.iter().any(|s| same_in_some_unit(*s, *n)));
    }
    normalized(answer).contains(&normalized(value))
}

/// The hours and minutes of the first clock time in a value, `HH:MM` alone or inside a
/// timestamp (`2026-01-15T17:45:00+05:45` is 17:45).
fn clock_time(value: &str) -> Option<(u32, u32)> {
    let bytes = value.as_bytes();
    let digit = |i: usize| bytes.get(i).is_some_and(u8::is_ascii_digit);
    (1..bytes.len()).find_map(|colon| {
        if bytes[colon] != b':' || !digit(colon - 1) || !digit(colon + 1) || !digit(colon + 2) {
            return None;
        }
        if digit(colon + 3) {
            return None;
        }
        let start = if colon >= 2 && digit(colon - 2) {
            colon - 2
        } else {
            colon - 1
        };
        if start > 0 && (digit(start - 1) || matches!(bytes[start - 1], b'+' | b'-')) {
            return None;
        }
        let hours: u32 = value.get(start..colon)?.parse().ok()?;
        let minutes: u32 = value.get(colon + 1..colon + 3)?.parse().ok()?;
        (hours < 24 && minutes < 60).then_some((hours, minutes))
    })
}

/// Whether `stated` is `fact`, rounded, or `fact` in another unit a person might answer in:
/// Fahrenheit for Celsius and back, miles for kilometres and back, a percentage for a fraction
/// and back.
fn same_in_some_unit(stated: f64, fact: f64) -> bool {
    let forms = [
        fact,
        fact * 9.0 / 5.0 + 32.0,
        (fact - 32.0) * 5.0 / 9.0,
        fact / 1.609_344,
        fact * 1.609_344,
        fact * 100.0,
        fact / 100.0,
    ];
    forms.iter().any(|form| {
        same_number(stated, *form) || (form.fract() != 0.0 && same_number(stated, form.round()))
    })
}

/// Whether `number` is the sum, difference, product, quotient, mean or percentage of two
/// different numbers of `known`, exactly or rounded.
fn derived(number: f64, known: &[f64]) -> bool {
    let known = &known[..known.len().min(MAX_COMBINED)];
    for (i, a) in known.iter().enumerate() {
        for b in &known[i + 1..] {
            let mut results = vec![a + b, a - b, b - a, a * b, (a + b) / 2.0, a * b / 100.0];
            if *b != 0.0 {
                results.push(a / b);
            }
            if *a != 0.0 {
                results.push(b / a);
            }
            if results
                .iter()
                .any(|r| r.is_finite() && same_number(number, *r))
            {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compare(says: &str, quote: &str, source_says: &str) -> Comparison {
        Comparison {
            answer_says: says.into(),
            quote: quote.into(),
            source_says: source_says.into(),
        }
    }

    fn weather() -> Vec<(String, String)> {
        vec![(
            "weather".into(),
            r#"{"city":"Cairo","temperature_c":19.9,"wind_speed_kmh":13.1,"conditions":"clear sky"}"#
                .into(),
        )]
    }

    fn check(answer: &str, comparison: Comparison) -> Result<Proven, Dropped> {
        let results = weather();
        prove(
            &comparison,
            &Evidence {
                request: "How warm is it in Cairo?",
                results: &results,
                answer,
            },
        )
    }

    #[test]
    fn a_misstated_value_of_a_result_is_proven() {
        let found = check(
            "It is 28.8 °C in Cairo.",
            compare("28.8 °C", "\"temperature_c\": 19.9", "19.9"),
        );
        assert_eq!(
            found,
            Ok(Proven {
                kind: ObjectionKind::Contradicts,
                source: Source::ToolResult {
                    tool: "weather".into()
                }
            })
        );
        let time = vec![(
            "time".to_string(),
            r#"{"timezone":"Asia/Tokyo","time":"10:41","local_time":"2026-12-07T10:41:06+09:00"}"#
                .to_string(),
        )];
        let found = prove(
            &compare("14:05", "\"time\":\"10:41\"", "10:41"),
            &Evidence {
                request: "What time is it in Tokyo?",
                results: &time,
                answer: "It is 14:05 in Tokyo.",
            },
        );
        assert_eq!(found.map(|p| p.kind), Ok(ObjectionKind::Contradicts));
    }

    #[test]
    fn an_answer_that_states_the_value_rounded_or_converted_is_left_alone() {
        for answer in [
            "It is 19.9 °C in Cairo.",
            "About 20 degrees in Cairo.",
            "It is 67.8 °F in Cairo.",
        ] {
            let found = check(answer, compare("", "temperature_c: 19.9", "19.9"));
            assert_eq!(found, Err(Dropped::ValueInAnswer), "{answer}");
        }
    }

    #[test]
    fn wrong_pairs_and_invented_quotes_are_dropped() {
        let answer = "Clear sky in Cairo, wind at 13.1 km/h.";
        assert_eq!(
            check(answer, compare("13.1 km/h", "temperature_c: 19.9", "19.9")),
            Err(Dropped::ValueInEvidence),
            "the answer's value is another field's"
        );
        assert_eq!(
            check(answer, compare("12 km/h", "wind_speed_kmh: 13.1", "13.1")),
            Err(Dropped::NotInAnswer)
        );
        assert_eq!(
            check(answer, compare("13.1 km/h", "wind_speed_kmh: 14.5", "14.5")),
            Err(Dropped::QuoteNotFound)
        );
        assert_eq!(
            check(answer, compare("13.1 km/h", "wind_speed_kmh: 13.1", "19.9")),
            Err(Dropped::ValueNotInQuote)
        );
    }

    #[test]
    fn a_value_left_out_counts_only_when_asked_for() {
        let results = weather();
        let check = |comparison: Comparison| {
            prove(
                &comparison,
                &Evidence {
                    request: "What is the temperature in Cairo?",
                    results: &results,
                    answer: "Clear sky in Cairo.",
                },
            )
        };
        assert_eq!(
            check(compare("", "\"temperature_c\":19.9", "19.9")).map(|p| p.kind),
            Ok(ObjectionKind::Contradicts)
        );
        assert_eq!(
            check(compare("", "\"wind_speed_kmh\":13.1", "13.1")),
            Err(Dropped::NotAsked)
        );
    }

    #[test]
    fn words_intermediate_results_and_twelve_hour_times_are_left_alone() {
        let recorded = vec![("book_hotel".to_string(), r#"{"recorded":true}"#.to_string())];
        let evidence = Evidence {
            request: "Book a room in Paris.",
            results: &recorded,
            answer: "Done: book_hotel(city=\"Paris\")",
        };
        assert_eq!(
            prove(&compare("Done", "\"recorded\":true", "true"), &evidence),
            Err(Dropped::NotANumber)
        );
        let steps = vec![
            ("calculator".to_string(), "25".to_string()),
            ("calculator".to_string(), "75".to_string()),
        ];
        let evidence = Evidence {
            request: "A box holds 25 pens. How many pens are in 3 boxes?",
            results: &steps,
            answer: "There are 75 pens.",
        };
        assert_eq!(
            prove(&compare("", "25", "25"), &evidence),
            Err(Dropped::NotAsked)
        );
        assert_eq!(
            prove(&compare("", "75", "75"), &evidence),
            Err(Dropped::ValueInAnswer)
        );
        let steps = vec![
            ("calculator".to_string(), "30".to_string()),
            ("calculator".to_string(), "54".to_string()),
        ];
        let evidence = Evidence {
            request: "How many are left?",
            results: &steps,
            answer: "54 are left.",
        };
        assert_eq!(
            prove(&compare("", "30", "30"), &evidence),
            Err(Dropped::NotAsked)
        );
        let time = vec![("time".to_string(), r#"{"time":"21:00"}"#.to_string())];
        assert_eq!(clock_time("2026-01-15T17:45:00+05:45"), Some((17, 45)));
        assert_eq!(clock_time("+05:45"), None);
        assert_eq!(clock_time("9:05"), Some((9, 5)));
        let stamped = vec![(
            "time".to_string(),
            r#"{"time":"17:45","local_time":"2026-01-15T17:45:00+05:45"}"#.to_string(),
        )];
        let evidence = Evidence {
            request: "What time is it in Kathmandu?",
            results: &stamped,
            answer: "The time is 17:45 in Kathmandu.",
        };
        assert_eq!(
            prove(
                &compare(
                    "17:45",
                    "\"local_time\":\"2026-01-15T17:45:00+05:45\"",
                    "2026-01-15T17:45:00+05:45"
                ),
                &evidence
            ),
            Err(Dropped::ValueInAnswer)
        );
        for answer in ["It is 9 PM in Tokyo.", "It is 21:00 in Tokyo."] {
            let evidence = Evidence {
                request: "What time is it in Tokyo?",
                results: &time,
                answer,
            };
            assert_eq!(
                prove(&compare("", "\"time\":\"21:00\"", "21:00"), &evidence),
                Err(Dropped::ValueInAnswer),
                "{answer}"
            );
        }
    }

    #[test]
    fn an_asked_value_the_answer_replaces_by_another_field_is_proven() {
        let time = vec![(
            "time".to_string(),
            r#"{"timezone":"America/New_York","time":"07:00","local_time":"2026-01-15T07:00:00-05:00"}"#
                .to_string(),
        )];
        let found = prove(
            &compare("2026-01-15", "\"time\":\"07:00\"", "07:00"),
            &Evidence {
                request: "What time is it in New York?",
                results: &time,
                answer: "2026-01-15 in New York.",
            },
        );
        assert_eq!(found.map(|p| p.kind), Ok(ObjectionKind::Contradicts));
        let london = vec![(
            "time".to_string(),
            r#"{"time":"12:00","local_time":"2026-01-15T12:00:00+00:00"}"#.to_string(),
        )];
        let found = prove(
            &compare(
                "2026-01-15",
                "\"local_time\":\"2026-01-15T12:00:00+00:00\"",
                "2026-01-15T12:00:00+00:00",
            ),
            &Evidence {
                request: "What time is it in London?",
                results: &london,
                answer: "2026-01-15 in London.",
            },
        );
        assert_eq!(found.map(|p| p.kind), Ok(ObjectionKind::Contradicts));
    }

    #[test]
    fn a_number_no_result_gives_or_yields_is_unsupported() {
        let results = vec![
            (
                "weather".to_string(),
                r#"{"temperature_c":25.1}"#.to_string(),
            ),
            (
                "weather".to_string(),
                r#"{"temperature_c":15.5}"#.to_string(),
            ),
        ];
        let check = |answer: &str, says: &str| {
            prove(
                &compare(says, "", ""),
                &Evidence {
                    request: "How much warmer is Rome than Oslo?",
                    results: &results,
                    answer,
                },
            )
        };
        assert_eq!(
            check("Rome is 12 °C warmer.", "12 °C").map(|p| p.kind),
            Ok(ObjectionKind::Unsupported)
        );
        assert_eq!(
            check("Rome is 9.6 °C warmer.", "9.6 °C"),
            Err(Dropped::ValueDerived)
        );
        assert_eq!(
            check("Rome is at 25.1 °C.", "25.1 °C"),
            Err(Dropped::ValueInEvidence)
        );
        assert_eq!(check("Rome is warmer.", "warmer"), Err(Dropped::NotANumber));
    }

    #[test]
    fn an_answer_from_knowledge_is_not_held_to_tool_results() {
        let found = prove(
            &compare("1876", "", ""),
            &Evidence {
                request: "Who invented the telephone?",
                results: &[],
                answer: "Alexander Graham Bell, in 1876.",
            },
        );
        assert_eq!(found, Err(Dropped::NoToolResults));
    }
}
