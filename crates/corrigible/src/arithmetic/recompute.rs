//! The calculator in a thought: the first calculation of a text whose stated value does not
//! hold, and the value to write in its place, so that a model thinking aloud goes on from the
//! right number instead of its slip.
//!
//! It reads claims exactly as [`super::claims`] does, so it rewrites nothing that
//! `wrong_arithmetic` would not send back. A claim read with a `%` (`0.25 * 100 = 20%`) is
//! left alone (either reading could be the one meant), and so is one whose right value is not
//! a plain number of at most 15 digits.

use super::claims::{Claim, claim_at, normalized};

/// Values at or beyond this size (and non-finite ones) are not written into a thought.
const MAX_REWRITTEN: f64 = 1e15;

/// A wrong calculation in a text and its right value: `text[at..at + claim.stated.len()]` is
/// the stated value, to be replaced by `value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Recomputed {
    /// The calculation as read.
    pub claim: Claim,
    /// Byte offset of the stated value in the text.
    pub at: usize,
    /// The left side's value, written as the stated one was (thousands separators kept),
    /// rounded to the stated decimals or two, whichever is more.
    pub value: String,
}

impl Recomputed {
    /// `text` up to the stated value, with the right value in its place and nothing after it:
    /// where the model goes on.
    pub fn rewritten(&self, text: &str) -> String {
        format!("{}{}", &text[..self.at], self.value)
    }
}

/// The first calculation of `text` that does not hold and can be rewritten, among the lines
/// that start at or after byte `from` (a line that `from` falls inside counts from its start).
pub fn first_wrong_value(text: &str, from: usize) -> Option<Recomputed> {
    let mut from = from.min(text.len());
    while !text.is_char_boundary(from) {
        from -= 1;
    }
    let from = text[..from].rfind('\n').map_or(0, |newline| newline + 1);
    let mut start = from;
    for line in text[from..].split_inclusive('\n') {
        if let Some(found) = wrong_in_line(line) {
            return Some(Recomputed {
                at: start + found.at,
                ..found
            });
        }
        start += line.len();
    }
    None
}

fn wrong_in_line(line: &str) -> Option<Recomputed> {
    let chars: Vec<char> = normalized(line).chars().collect();
    let equals: Vec<usize> = line.match_indices('=').map(|(at, _)| at).collect();
    chars
        .iter()
        .enumerate()
        .filter(|(_, c)| **c == '=')
        .map(|(i, _)| i)
        .enumerate()
        .find_map(|(nth, i)| {
            let claim = claim_at(&chars, i)?;
            if claim.holds()
                || claim.percent
                || !claim.actual.is_finite()
                || claim.actual.abs() >= MAX_REWRITTEN
            {
                return None;
            }
            let at = stated_at(line, *equals.get(nth)?, &claim.stated)?;
            let value = written(claim.actual, &claim);
            Some(Recomputed { claim, at, value })
        })
}

/// Where `stated` begins after the `=` at `equals` in `line`, past spaces and a currency sign.
fn stated_at(line: &str, equals: usize, stated: &str) -> Option<usize> {
    let rest = &line[equals + 1..];
    let trimmed = rest.trim_start();
    let trimmed = ["\\$", "$", "€", "£"]
        .iter()
        .find_map(|sign| trimmed.strip_prefix(sign))
        .unwrap_or(trimmed);
    let at = line.len() - trimmed.len();
    trimmed.starts_with(stated).then_some(at)
}

/// `value` written in the style of `claim`'s stated value.
fn written(value: f64, claim: &Claim) -> String {
    let decimals = claim.decimals.clamp(2, 6) as usize;
    let rounded = format!("{value:.decimals$}");
    let rounded = if rounded.contains('.') {
        rounded
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    } else {
        rounded
    };
    if claim.stated.contains(',') {
        with_thousands(&rounded)
    } else {
        rounded
    }
}

/// `number` with a `,` between each group of three integer digits.
fn with_thousands(number: &str) -> String {
    let (sign, digits) = number
        .strip_prefix('-')
        .map_or(("", number), |rest| ("-", rest));
    let (whole, fraction) = digits
        .split_once('.')
        .map_or((digits, None), |(w, f)| (w, Some(f)));
    let mut grouped = String::new();
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    match fraction {
        Some(f) => format!("{sign}{grouped}.{f}"),
        None => format!("{sign}{grouped}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(text: &str) -> Option<String> {
        first_wrong_value(text, 0).map(|r| r.rewritten(text))
    }

    #[test]
    fn a_wrong_value_is_rewritten_where_it_stands() {
        for (text, rewritten) in [
            (
                "They have 20 + 80 + 160 = 460 sheep.",
                "They have 20 + 80 + 160 = 260",
            ),
            (
                "Cost: $1,200 + $300 = $1,600 in all",
                "Cost: $1,200 + $300 = $1,500",
            ),
            ("\\[ 12 \\times 4 = 50 \\]", "\\[ 12 \\times 4 = 48"),
            (
                "\\( 80,000 \\times 1.5 = \\$100,000 \\)",
                "\\( 80,000 \\times 1.5 = \\$120,000",
            ),
            ("10 / 3 = 3.5 hours", "10 / 3 = 3.33"),
            ("1,000,000 * 3 = 3,000 dollars", "1,000,000 * 3 = 3,000,000"),
        ] {
            assert_eq!(fixed(text).as_deref(), Some(rewritten), "{text}");
        }
    }

    #[test]
    fn the_first_wrong_claim_counts_even_after_a_right_one_with_the_same_value() {
        assert_eq!(
            fixed("2 + 3 = 5, then 1 + 3 = 5, then 9 - 1 = 2").as_deref(),
            Some("2 + 3 = 5, then 1 + 3 = 4")
        );
    }

    #[test]
    fn lines_before_from_are_not_read_again() {
        let text = "5 * 3 = 16\nthen 2 + 2 = 5\n";
        let first = first_wrong_value(text, 0).unwrap();
        assert_eq!(first.value, "15");
        let later = first_wrong_value(text, 11).unwrap();
        assert_eq!((later.at, later.value.as_str()), (24, "4"));
        assert_eq!(first_wrong_value(text, 15).unwrap().at, 24);
        assert_eq!(first_wrong_value(text, text.len()), None);
    }

    #[test]
    fn what_holds_or_is_ambiguous_is_left_alone() {
        for text in [
            "16 - 3 - 4 = 9 eggs",
            "10 / 3 = 3.33",
            "7 / 2 = 3 full boxes",
            "5 - 8 = 3 more",
            "0.25 * 100 = 20%",
            "5 apples * 3 = 12",
            "1,234,567 * 3 = 3.7 million",
            "x = 5 + 3",
        ] {
            assert_eq!(fixed(text), None, "{text}");
        }
    }

    #[test]
    fn the_worked_solutions_of_gsm8k_are_left_as_written() {
        let data = corrigible_bench::gsm8k::TRAIN;
        for line in data.lines() {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            if corrigible_bench::gsm8k::WRONG_SOLUTIONS.contains(&row["id"].as_str().unwrap_or(""))
            {
                continue;
            }
            let solution = row["solution"].as_str().unwrap();
            assert_eq!(first_wrong_value(solution, 0), None, "{}", row["id"]);
        }
    }

    #[test]
    fn thousands_are_grouped_with_sign_and_fraction() {
        assert_eq!(with_thousands("-1234567.5"), "-1,234,567.5");
        assert_eq!(with_thousands("123"), "123");
        assert_eq!(with_thousands("1000"), "1,000");
    }
}
