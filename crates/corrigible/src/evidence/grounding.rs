//! Grounding: whether a satisfied final answer is supported by what the run's tools returned.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::evidence::numbers::numbers_in;

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
///
/// A fact is *asked for* when a word of its key is a word of the request (`wind speed` asks
/// for `wind_speed_kmh`, `windier` for `wind`). When some fact is asked for, only those
/// state the result. Two readings of the same key (two cities' `temperature_c`) are also
/// stated by their difference, sum or mean: "Rome is 6.4 °C warmer than Paris".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evidence {
    facts: Vec<Fact>,
}

/// One fact of a result.
#[derive(Debug, Clone, PartialEq)]
struct Fact {
    /// As written in the result.
    text: String,
    /// Its value, for a number.
    number: Option<f64>,
    /// The key it was found under (empty for a bare result).
    key: String,
    /// Whether the request asks for it by its key.
    asked: bool,
    /// Whether it is the first fact of its result.
    headline: bool,
}

/// Shortest word of a key that can match a word of the request (`c` of `temperature_c` is
/// a unit, not a subject).
const MIN_KEY_WORD_CHARS: usize = 4;

impl Evidence {
    /// The facts of `results` for an answer to `request`.
    pub fn new<'a>(results: impl IntoIterator<Item = &'a Value>, request: &str) -> Self {
        let lower = request.to_lowercase();
        let words: Vec<&str> = lower
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        let mut facts = Vec::new();
        for result in results {
            let mut found = Vec::new();
            collect(result, "", &lower, &words, &mut found);
            if found
                .iter()
                .any(|f: &Fact| f.number.is_some() && is_measurement(&f.text))
            {
                found.retain(|f| f.number.is_some() && is_measurement(&f.text));
            }
            if let Some(first) = found.first_mut() {
                first.headline = true;
            }
            facts.append(&mut found);
        }
        Evidence { facts }
    }

    /// Whether there is no fact to look for.
    pub fn is_empty(&self) -> bool {
        self.facts.is_empty()
    }

    /// The facts that state the results: those asked for, or all when none is.
    fn wanted(&self) -> impl Iterator<Item = &Fact> {
        let asked = self.facts.iter().any(|f| f.asked);
        self.facts.iter().filter(move |f| f.asked || !asked)
    }

    /// Whether `answer` states one of the facts (of those asked for, when some are): a string
    /// (case ignored), or a number, exactly or rounded to fewer decimals.
    pub fn stated_in(&self, answer: &str) -> bool {
        let lower = answer.to_lowercase();
        let stated = numbers_in(answer);
        let direct = self.wanted().any(|fact| match fact.number {
            Some(value) => stated.iter().any(|n| same_number(*n, value)),
            None => lower.contains(&fact.text.to_lowercase()),
        });
        direct
            || self
                .combined()
                .any(|value| stated.iter().any(|n| same_number(*n, value)))
    }

    /// The differences (both ways), sums and means of each two wanted readings of one key.
    fn combined(&self) -> impl Iterator<Item = f64> + '_ {
        let readings: Vec<(&str, f64)> = self
            .wanted()
            .filter_map(|f| Some((f.key.as_str(), f.number?)))
            .collect();
        let mut out = Vec::new();
        for (i, (key, a)) in readings.iter().enumerate() {
            for (other, b) in &readings[i + 1..] {
                if key == other {
                    out.extend([a - b, b - a, a + b, (a + b) / 2.0]);
                }
            }
        }
        out.into_iter()
    }

    /// The facts a correction narrows an answer to, as written in the results and without
    /// repeats, numbers first: those asked for; when none is, of results with measurements their first one.
    pub fn facts(&self) -> Vec<String> {
        let asked = self.facts.iter().any(|f| f.asked);
        let measured = self
            .facts
            .iter()
            .any(|f| f.number.is_some() && is_measurement(&f.text));
        let mut out: Vec<String> = Vec::new();
        let numbers_first = self
            .facts
            .iter()
            .filter(|f| f.number.is_some())
            .chain(self.facts.iter().filter(|f| f.number.is_none()));
        for fact in numbers_first {
            let keep = if asked {
                fact.asked
            } else {
                !measured || fact.headline || !is_measurement(&fact.text)
            };
            if keep && !out.contains(&fact.text) {
                out.push(fact.text.clone());
            }
        }
        out
    }
}

/// Whether a word of `key` is a word of the request (`words`, in lower case): `wind speed`
/// asks for `wind_speed_kmh`, `windier` for `wind`.
pub(crate) fn key_asked(key: &str, words: &[&str]) -> bool {
    key.split(|c: char| !c.is_alphanumeric())
        .filter(|k| k.chars().count() >= MIN_KEY_WORD_CHARS)
        .any(|k| {
            let k = k.to_lowercase();
            words
                .iter()
                .any(|w| w.starts_with(&k) || k.starts_with(*w) && w.len() >= MIN_KEY_WORD_CHARS)
        })
}

fn collect(value: &Value, key: &str, request: &str, words: &[&str], out: &mut Vec<Fact>) {
    let asked = key_asked(key, words);
    let fact = |text: String, number: Option<f64>| Fact {
        text,
        number,
        key: key.to_string(),
        asked,
        headline: false,
    };
    match value {
        Value::Number(n) => out.extend(n.as_f64().map(|v| fact(n.to_string(), Some(v)))),
        Value::String(s) => {
            let s = s.trim();
            if let Ok(n) = s.parse::<f64>() {
                out.push(fact(s.to_string(), Some(n)));
            } else if (2..=MAX_FACT_CHARS).contains(&s.chars().count())
                && !request.contains(&s.to_lowercase())
            {
                out.push(fact(s.to_string(), None));
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|v| collect(v, key, request, words, out)),
        Value::Object(map) => map
            .iter()
            .for_each(|(k, v)| collect(v, k, request, words, out)),
        Value::Bool(_) | Value::Null => {}
    }
}

/// Largest whole number that reads as a code or a count rather than a measurement.
const MAX_CODE: i64 = 99;

/// Whether a number, as written in a result, is a measurement: not a small whole number.
fn is_measurement(text: &str) -> bool {
    !text.parse::<i64>().is_ok_and(|n| n.abs() <= MAX_CODE)
}

/// Whether `stated` is `fact`, or `fact` rounded to 0–4 decimals.
pub(crate) fn same_number(stated: f64, fact: f64) -> bool {
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
        assert!(
            !e.stated_in("It is 7.3 °C."),
            "the wind speed was asked for"
        );
        assert_eq!(e.facts(), ["18.4"]);
        let warm = Evidence::new([&weather], "How warm is it in London?");
        assert!(
            warm.stated_in("It is 18.4."),
            "nothing asked for: any measurement"
        );
        assert_eq!(warm.facts(), ["7.3"], "the headline measurement");
        let windier = Evidence::new([&weather], "Which is windier, London or Paris?");
        assert_eq!(windier.facts(), ["18.4"]);
        let labelled = Evidence::new([&json!({"name": "Alice", "age": 30})], "who?");
        assert!(labelled.stated_in("Alice."));
        assert!(Evidence::new([&json!(2)], "100 % 7").stated_in("2"));
        let both = Evidence::new([&weather, &json!({"time": "12:00"})], "x");
        assert!(both.stated_in("It is 12:00."));
        assert!(!both.stated_in("It is overcast."));
    }

    #[test]
    fn two_readings_of_one_key_are_stated_by_their_difference_sum_or_mean() {
        let rome = json!({"city": "Rome", "temperature_c": 12.6, "wind_speed_kmh": 8.3});
        let paris = json!({"city": "Paris", "temperature_c": 6.2, "wind_speed_kmh": 14.0});
        let e = Evidence::new(
            [&rome, &paris],
            "How many degrees warmer is Rome than Paris?",
        );
        assert!(e.stated_in("Rome is 6.4 °C warmer than Paris."));
        assert!(e.stated_in("Paris is -6.4 degrees warmer, that is colder."));
        assert!(e.stated_in("Together 18.8 degrees."));
        assert!(e.stated_in("On average 9.4 °C."));
        assert!(
            !e.stated_in("Rome is 4.3 °C warmer."),
            "temperature minus wind"
        );
        assert!(!e.stated_in("Rome is 5.1 °C warmer."));
        let one = Evidence::new([&rome], "How warm is Rome?");
        assert!(!one.stated_in("It is 20.9."), "no second reading");
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
