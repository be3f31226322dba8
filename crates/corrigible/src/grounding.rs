//! Grounding: whether a satisfied final answer is supported by what the run's tools returned.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::numbers::numbers_in;

/// Longest string of a tool result that counts as a fact an answer can state.
const MAX_FACT_CHARS: usize = 40;

/// How much support a `satisfied: true` answer needs: an answer after tool calls that all
/// failed is `ungrounded_final`; one that states none of the facts the tools returned is
/// `unstated_result`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grounding {
    /// Some executed tool call succeeded (or none was executed).
    Failures,
    /// As `failures`, and when tools returned facts (numbers, short strings), the answer states
    /// at least one of them; of a result holding measurements, one of its measurements.
    #[default]
    Values,
}

impl Grounding {
    /// Its name in configuration: `failures` or `values`.
    pub fn as_str(self) -> &'static str {
        match self {
            Grounding::Failures => "failures",
            Grounding::Values => "values",
        }
    }
}

impl std::str::FromStr for Grounding {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "failures" => Ok(Grounding::Failures),
            "values" => Ok(Grounding::Values),
            other => Err(format!(
                "unknown grounding `{other}`: use `values` or `failures`"
            )),
        }
    }
}

/// The facts successful tool results offer an answer: their numbers, and their short strings
/// that the user's request does not already contain. A result that holds measurements
/// (numbers other than small whole ones, which are mostly codes and counts) offers only
/// those: `{"temperature_c": 7.3, "conditions": "overcast"}` is answered by its `7.3`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evidence {
    numbers: Vec<(f64, String)>,
    strings: Vec<String>,
}

impl Evidence {
    /// The facts of `results` for an answer to `request`.
    pub fn new<'a>(results: impl IntoIterator<Item = &'a Value>, request: &str) -> Self {
        let mut evidence = Evidence::default();
        let request = request.to_lowercase();
        for result in results {
            let mut facts = Evidence::default();
            facts.collect(result, &request);
            if facts.numbers.iter().any(|(_, text)| is_measurement(text)) {
                facts.numbers.retain(|(_, text)| is_measurement(text));
                facts.strings.clear();
            }
            evidence.numbers.append(&mut facts.numbers);
            evidence.strings.append(&mut facts.strings);
        }
        evidence
    }

    fn collect(&mut self, value: &Value, request: &str) {
        match value {
            Value::Number(n) => self.numbers.extend(n.as_f64().map(|v| (v, n.to_string()))),
            Value::String(s) => {
                let s = s.trim();
                if let Ok(n) = s.parse::<f64>() {
                    self.numbers.push((n, s.to_string()));
                } else if (2..=MAX_FACT_CHARS).contains(&s.chars().count())
                    && !request.contains(&s.to_lowercase())
                {
                    self.strings.push(s.to_string());
                }
            }
            Value::Array(items) => items.iter().for_each(|v| self.collect(v, request)),
            Value::Object(map) => map.values().for_each(|v| self.collect(v, request)),
            Value::Bool(_) | Value::Null => {}
        }
    }

    /// Whether there is no fact to look for.
    pub fn is_empty(&self) -> bool {
        self.numbers.is_empty() && self.strings.is_empty()
    }

    /// Whether `answer` states one of the facts: a string (case ignored), or a number, exactly
    /// or rounded to fewer decimals.
    pub fn stated_in(&self, answer: &str) -> bool {
        let lower = answer.to_lowercase();
        if self
            .strings
            .iter()
            .any(|s| lower.contains(&s.to_lowercase()))
        {
            return true;
        }
        let stated = numbers_in(answer);
        self.numbers
            .iter()
            .any(|(fact, _)| stated.iter().any(|n| same_number(*n, *fact)))
    }

    /// The facts as written in the results, numbers first, without repeats.
    pub fn facts(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for fact in self
            .numbers
            .iter()
            .map(|(_, text)| text)
            .chain(&self.strings)
        {
            if !out.contains(fact) {
                out.push(fact.clone());
            }
        }
        out
    }
}

/// Largest whole number that reads as a code or a count rather than a measurement.
const MAX_CODE: i64 = 99;

/// Whether a number, as written in a result, is a measurement: not a small whole number.
fn is_measurement(text: &str) -> bool {
    !text.parse::<i64>().is_ok_and(|n| n.abs() <= MAX_CODE)
}

/// Whether `stated` is `fact`, or `fact` rounded to 0–4 decimals.
fn same_number(stated: f64, fact: f64) -> bool {
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
    close(stated, fact)
        || (0..=4).any(|d| {
            let scale = 10f64.powi(d);
            close(stated, (fact * scale).round() / scale)
        })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn numbers_match_exactly_or_rounded() {
        let e = Evidence::new([&json!(154.25)], "1234 / 8?");
        assert!(e.stated_in("It is 154.25."));
        assert!(e.stated_in("About 154.3"));
        assert!(e.stated_in("Roughly 154"));
        assert!(!e.stated_in("It is 155."));
        assert!(!e.stated_in("1234 divided by 8"));
    }

    #[test]
    fn short_strings_not_in_the_request_count() {
        let result = json!({"timezone": "Europe/London", "time": "12:00", "local_time": "2026-01-15T12:00:00+00:00"});
        let e = Evidence::new([&result], "What time is it in London?");
        assert!(e.stated_in("It is 12:00 in London."));
        assert!(!e.stated_in("2026-01-15 in London."));
        let city = Evidence::new([&json!({"city": "Nairobi"})], "weather in Nairobi?");
        assert!(city.is_empty());
        let mut facts = e.facts();
        facts.sort();
        assert_eq!(
            facts,
            ["12:00", "2026-01-15T12:00:00+00:00", "Europe/London"]
        );
        let n = Evidence::new([&json!({"t": 24, "w": "24", "c": "Kenya"})], "x");
        assert_eq!(n.facts(), ["24", "Kenya"]);
    }

    #[test]
    fn a_result_with_measurements_is_stated_by_one_of_them() {
        let weather = json!({"city": "London", "temperature_c": 7.3, "wind_speed_kmh": 18.4,
                             "code": 3, "conditions": "overcast"});
        let e = Evidence::new([&weather], "What's the wind speed in London?");
        assert!(!e.stated_in("Overcast in London."));
        assert!(!e.stated_in("The code is 3."));
        assert!(e.stated_in("The wind blows at 18.4 km/h."));
        assert_eq!(e.facts(), ["7.3", "18.4"]);
        let labelled = Evidence::new([&json!({"name": "Alice", "age": 30})], "who?");
        assert!(labelled.stated_in("Alice."));
        assert!(Evidence::new([&json!(2)], "100 % 7").stated_in("2"));
        let both = Evidence::new([&weather, &json!({"time": "12:00"})], "x");
        assert!(both.stated_in("It is 12:00."));
        assert!(!both.stated_in("It is overcast."));
    }

    #[test]
    fn results_without_facts_leave_nothing_to_check() {
        assert!(Evidence::new([&json!({"ok": true, "note": null})], "send it").is_empty());
        assert!(
            Evidence::new(
                [&json!(
                    "a long text that says a lot more than forty characters in all"
                )],
                "x"
            )
            .is_empty()
        );
    }

    #[test]
    fn grounding_names() {
        assert_eq!("values".parse::<Grounding>(), Ok(Grounding::Values));
        assert_eq!(Grounding::Failures.as_str(), "failures");
        assert!("x".parse::<Grounding>().is_err());
    }
}
