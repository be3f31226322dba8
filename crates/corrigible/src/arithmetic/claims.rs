//! Calculations stated in text, such as `20 + 80 + 160 = 460`, and whether they hold.
//!
//! Precision comes first: a claim is read only where its reading is unambiguous. The left
//! side is digits and operators only, starting at a clear boundary (not `10:30 - 2`, not
//! `x + 3`, not `apples * 3`), with at least one operator; the right side is a single number
//! (not `12 * 3`, not `3.7 million`, not `10:30`). Anything else is not a claim.

use super::expression::evaluate;
use super::parser::show;
use crate::evidence::numbers::numbers_in;

/// Characters a claim's left side is made of.
const LEFT: &str = "0123456789.,+-−*/×÷·^()%$€£ \t";

/// Words that, just before a left side, make it the end of a longer calculation written
/// partly in words (`half of 10 + 2 = 7`, `2 times 3 + 1 = 7`).
const OPERATOR_WORDS: [&str; 9] = [
    "of", "times", "by", "over", "plus", "minus", "per", "x", "X",
];

/// Characters that may touch a claim's left side and still leave it a clear start.
const OPENERS: &str = "[{<\"'=";

/// Binary operators; a left side needs at least one after its first character.
const OPERATORS: &str = "+-−*/×÷·^";

/// Words after a number that scale it or go on calculating, so `= 3.7 million` and
/// `= 12 x 3` are not a plain number.
const NOT_ALONE: [&str; 14] = [
    "k", "m", "b", "bn", "thousand", "million", "billion", "trillion", "hundred", "dozen", "x",
    "times", "plus", "minus",
];

/// A calculation written as `expression = value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// The left side, as written (LaTeX operators read as `*` and `/`).
    pub expression: String,
    /// The right side, as written.
    pub stated: String,
    /// The value the right side states.
    pub value: f64,
    /// The value of the left side.
    pub actual: f64,
    pub(super) decimals: i32,
    pub(super) percent: bool,
}

impl Claim {
    /// Whether the stated value is the left side's value at the precision written: rounded,
    /// cut or rounded up to its decimals (`10/3 = 3.33`, `7/2 = 3` boxes), sign aside (`5 - 8
    /// = 3` for a difference), and a `%` read either way (`0.2 * 100 = 20%`).
    pub fn holds(&self) -> bool {
        let near = |value: f64, decimals: i32| {
            let tolerance = 10f64.powi(-decimals) * (1.0 - 1e-9);
            (self.actual.abs() - value.abs()).abs() < tolerance
        };
        near(self.value, self.decimals)
            || (self.percent && near(self.value / 100.0, self.decimals + 2))
    }
}

/// Every calculation stated in `text`, in order.
pub fn claims(text: &str) -> Vec<Claim> {
    normalized(text)
        .lines()
        .flat_map(|line| {
            let chars: Vec<char> = line.chars().collect();
            (0..chars.len())
                .filter(|&i| chars[i] == '=')
                .filter_map(|i| claim_at(&chars, i))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The calculations stated in `text` that do not hold.
pub fn wrong_claims(text: &str) -> Vec<Claim> {
    claims(text).into_iter().filter(|c| !c.holds()).collect()
}

/// The wrong calculations an answer rests on: those stated in the answer itself, and those
/// of the reasoning before it whose result reaches the answer, directly (`= 460`, then "460
/// sheep") or through later steps that used it. A slip the reasoning took back, whose value
/// the answer does not state, is not one.
pub fn slips(answer: &str, reasoning: &str) -> Vec<Claim> {
    let mut found = wrong_claims(answer);
    let stated = numbers_in(answer);
    let steps = claims(reasoning);
    let mut carried: Vec<(usize, f64)> = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        if !step.holds() {
            carried.push((i, step.value));
            continue;
        }
        let operands = numbers_in(&step.expression);
        let mut origins: Vec<usize> = carried
            .iter()
            .filter(|(_, v)| operands.iter().any(|o| same(*o, *v)))
            .map(|(origin, _)| *origin)
            .collect();
        origins.sort_unstable();
        origins.dedup();
        for origin in origins {
            if !carried
                .iter()
                .any(|&(o, v)| o == origin && same(v, step.value))
            {
                carried.push((origin, step.value));
            }
        }
    }
    let mut origins: Vec<usize> = carried
        .iter()
        .filter(|(_, v)| stated.iter().any(|s| same(*s, *v)))
        .map(|(origin, _)| *origin)
        .collect();
    origins.sort_unstable();
    origins.dedup();
    for origin in origins {
        if !found
            .iter()
            .any(|c| c.expression == steps[origin].expression)
        {
            found.push(steps[origin].clone());
        }
    }
    found
}

impl std::fmt::Display for Claim {
    /// `20 + 80 + 160 is 260, not 460`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is {}, not {}",
            self.expression,
            show(self.actual),
            self.stated
        )
    }
}

fn same(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// `text` with LaTeX arithmetic written plainly: `\times` and `\cdot` as `*`, `\div` as `/`,
/// `\frac{a}{b}` as `(a)/(b)`, `\$` as `$`, and `{,}` as `,`.
pub(super) fn normalized(text: &str) -> String {
    let mut out = text
        .replace("\\times", " * ")
        .replace("\\cdot", " * ")
        .replace("\\div", " / ")
        .replace("\\$", "$")
        .replace("{,}", ",")
        .replace("\\left(", "(")
        .replace("\\right)", ")");
    while let Some(at) = out.find("\\frac{") {
        let rest = &out[at + 6..];
        let Some((top, after)) = rest.split_once("}{") else {
            break;
        };
        let Some((bottom, tail)) = after.split_once('}') else {
            break;
        };
        if top.contains(['{', '}']) || bottom.contains('{') {
            break;
        }
        out = format!("{}({top})/({bottom}){tail}", &out[..at]);
    }
    out
}

/// The claim whose `=` is at `at` in `chars`, when both sides read unambiguously.
pub(super) fn claim_at(chars: &[char], at: usize) -> Option<Claim> {
    let before = at.checked_sub(1).map(|i| chars[i]);
    let after = chars.get(at + 1).copied();
    if before.is_some_and(|c| "=<>!≤≥:~".contains(c)) || matches!(after, Some('=' | '>')) {
        return None;
    }
    let expression = left_side(chars, at)?;
    let (stated, value, decimals, percent) = right_side(chars, at + 1)?;
    let actual = evaluate(&expression.replace(',', "")).ok()?;
    Some(Claim {
        expression,
        stated,
        value,
        actual,
        decimals,
        percent,
    })
}

/// The expression that ends just before `at`, when it starts at a clear boundary.
fn left_side(chars: &[char], at: usize) -> Option<String> {
    let mut start = at;
    while start > 0 && allowed_left(chars, start - 1) {
        start -= 1;
    }
    let boundary = start.checked_sub(1).map(|i| chars[i]);
    let mut side: Vec<char> = chars[start..at].to_vec();
    let opens_with_paren = side.iter().find(|c| !c.is_whitespace()) == Some(&'(');
    let spaced = side.first().is_some_and(|c| c.is_whitespace());
    let clear = match boundary {
        None => true,
        Some(c) => {
            spaced || c.is_whitespace() || OPENERS.contains(c) || (c == '\\' && opens_with_paren)
        }
    };
    if !clear || word_before(chars, start).is_some_and(|w| OPERATOR_WORDS.contains(&w.as_str())) {
        return None;
    }
    while side.first().is_some_and(|c| c.is_whitespace()) {
        side.remove(0);
    }
    while side.last().is_some_and(|c| c.is_whitespace()) {
        side.pop();
    }
    while side.first() == Some(&'(') && depth(&side) > 0 {
        side.remove(0);
        while side.first().is_some_and(|c| c.is_whitespace()) {
            side.remove(0);
        }
    }
    let negative =
        matches!(side.first(), Some('-' | '−')) && side.get(1).is_some_and(char::is_ascii_digit);
    if depth(&side) != 0
        || !(negative
            || side
                .first()
                .is_some_and(|c| c.is_ascii_digit() || "($€£.".contains(*c)))
    {
        return None;
    }
    if side.contains(&'%') {
        return None;
    }
    let operator = side.iter().skip(1).any(|c| OPERATORS.contains(*c));
    let text: String = side.into_iter().collect();
    operator.then_some(text)
}

/// Whether `chars[i]` may be part of a left side: an operator, a digit, a space, a `,` or
/// `.` between digits, or an `x` for times between two numbers (`20 x 3`).
fn allowed_left(chars: &[char], i: usize) -> bool {
    let c = chars[i];
    let digit = |j: Option<usize>| {
        j.and_then(|j| chars.get(j))
            .is_some_and(char::is_ascii_digit)
    };
    match c {
        ',' => digit(i.checked_sub(1)) && digit(Some(i + 1)),
        '.' => digit(Some(i + 1)),
        'x' | 'X' => {
            let left = chars[..i].iter().rev().find(|c| !c.is_whitespace());
            let right = chars[i + 1..].iter().find(|c| !c.is_whitespace());
            left.is_some_and(|c| c.is_ascii_digit() || *c == ')')
                && right.is_some_and(|c| c.is_ascii_digit() || "($".contains(*c))
        }
        _ => LEFT.contains(c),
    }
}

/// The word that ends just before `at`, spaces between.
fn word_before(chars: &[char], at: usize) -> Option<String> {
    let end = chars[..at].iter().rposition(|c| !c.is_whitespace())? + 1;
    let start = chars[..end]
        .iter()
        .rposition(|c| !c.is_alphabetic())
        .map_or(0, |p| p + 1);
    (start < end).then(|| chars[start..end].iter().collect())
}

/// Open parentheses left unclosed (negative when more close than open).
fn depth(side: &[char]) -> i32 {
    side.iter().fold(0, |d, c| match c {
        '(' => d + 1,
        ')' => d - 1,
        _ => d,
    })
}

/// The single number that starts after `from`: its text, value, decimals and whether a `%`
/// follows; `None` when more arithmetic, a scale word, a time or a date follows it.
fn right_side(chars: &[char], from: usize) -> Option<(String, f64, i32, bool)> {
    let mut i = from;
    while chars.get(i).is_some_and(|c| c.is_whitespace()) {
        i += 1;
    }
    if chars.get(i).is_some_and(|c| "$€£".contains(*c)) {
        i += 1;
    }
    let start = i;
    if chars.get(i).is_some_and(|c| matches!(c, '-' | '−')) {
        i += 1;
    }
    let digits_from = i;
    while let Some(&c) = chars.get(i) {
        let digit_at = |j: usize| chars.get(j).is_some_and(char::is_ascii_digit);
        let thousands = c == ','
            && (1..=3).all(|k| digit_at(i + k))
            && !digit_at(i + 4)
            && !chars[digits_from..i].contains(&'.');
        if c.is_ascii_digit() || thousands || (c == '.' && digit_at(i + 1)) {
            i += 1;
        } else {
            break;
        }
    }
    if i == digits_from || !chars[digits_from].is_ascii_digit() {
        return None;
    }
    let stated: String = chars[start..i].iter().collect();
    let number: String = stated.chars().filter(|&c| c != ',').collect();
    let value = number.replace('−', "-").parse::<f64>().ok()?;
    let decimals = number
        .split_once('.')
        .map_or(0, |(_, d)| i32::try_from(d.len()).unwrap_or(i32::MAX));
    let percent = chars.get(i) == Some(&'%');
    let end = i + usize::from(percent);
    if !ends_cleanly(chars, end) {
        return None;
    }
    Some((stated, value, decimals, percent))
}

/// Whether the number ending at `end` stands alone: followed by nothing, by punctuation that
/// ends a phrase, or by a word that is not a scale, and not by more arithmetic.
fn ends_cleanly(chars: &[char], end: usize) -> bool {
    let Some(&next) = chars.get(end) else {
        return true;
    };
    if ".,;:!?)]}>\"'".contains(next) {
        return !chars.get(end + 1).is_some_and(char::is_ascii_digit);
    }
    if next.is_alphabetic() {
        // A letter glued to the number makes a term (`5A/5`, `3x + 2`) when arithmetic
        // follows it; a unit (`30km.`) stands alone.
        let mut after = end;
        while chars.get(after).is_some_and(|c| c.is_alphabetic()) {
            after += 1;
        }
        while chars.get(after).is_some_and(|c| c.is_whitespace()) {
            after += 1;
        }
        if chars
            .get(after)
            .is_some_and(|c| OPERATORS.contains(*c) || "=^".contains(*c))
        {
            return false;
        }
    }
    let mut i = end;
    while chars.get(i).is_some_and(|c| c.is_whitespace()) {
        i += 1;
    }
    match chars.get(i) {
        None => true,
        Some(c) if c.is_alphabetic() => {
            let word: String = chars[i..]
                .iter()
                .take_while(|c| c.is_alphabetic())
                .collect::<String>()
                .to_lowercase();
            !NOT_ALONE.contains(&word.as_str())
        }
        Some(c) => !(c.is_ascii_digit() || OPERATORS.contains(*c) || "=(^%".contains(*c)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wrong(text: &str) -> Vec<String> {
        wrong_claims(text)
            .into_iter()
            .map(|c| format!("{} = {}", c.expression, c.stated))
            .collect()
    }

    fn read(text: &str) -> Vec<String> {
        claims(text)
            .into_iter()
            .map(|c| format!("{} = {}", c.expression, c.stated))
            .collect()
    }

    #[test]
    fn a_wrong_sum_is_found() {
        assert_eq!(
            wrong("Together they have 20 + 80 + 160 = 460 sheep."),
            ["20 + 80 + 160 = 460"]
        );
        assert_eq!(wrong("So 5 * 3 = 16, and 2 + 2 = 4."), ["5 * 3 = 16"]);
        assert_eq!(
            wrong("That is 16 x 25/100 = 5 students."),
            ["16 x 25/100 = 5"]
        );
        assert_eq!(wrong("\\(20 + 80 + 160 = 460\\)"), ["20 + 80 + 160 = 460"]);
        assert_eq!(wrong("\\( 12 \\times 4 = 50 \\)"), ["12  *  4 = 50"]);
        assert_eq!(wrong("\\frac{90}{3} = 20 minutes"), ["(90)/(3) = 20"]);
        assert_eq!(wrong("$1,200 + $300 = $1,600"), ["$1,200 + $300 = 1,600"]);
        assert_eq!(wrong("-17 + 5 * 3 = -26"), ["-17 + 5 * 3 = -26"]);
        assert_eq!(wrong("It is −4 + 10 = 5 degrees."), ["−4 + 10 = 5"]);
        assert!(wrong("-17 + 5 * 3 = -2, and -5 + 10 = 5.").is_empty());
    }

    #[test]
    fn right_claims_at_their_precision_hold() {
        for text in [
            "16 - 3 - 4 = 9 eggs",
            "He has 5 + 3 = 8 apples",
            "There are 20 x 20/100 = 4 students",
            "30 x 1/2 = 15 bees",
            "10 / 3 = 3.33",
            "10/3 = 3.3",
            "7 / 2 = 3 full boxes",
            "7 / 2 = 4 boxes",
            "2/3 = 0.66",
            "0.1 + 0.2 = 0.3",
            "3.14159 * 4^2 = 50.27",
            "0.2 * 100 = 20%",
            "8 - 5 = 3 more",
            "5 - 8 = -3",
            "1,000 * 3 = 3,000",
            "(5 + 3) * 2 = 16.",
            "<<16-3-4=9>>9",
            "2^10 = 1024",
            "$18 / 2 = $9",
        ] {
            assert_eq!(wrong(text), Vec::<String>::new(), "{text}");
            assert_eq!(read(text).len(), 1, "{text}");
        }
    }

    #[test]
    fn ambiguous_text_is_not_a_claim() {
        for text in [
            "10:30 - 2 = 8:30",
            "5 apples * 3 = 12",
            "profit - 5 = 10",
            "2x + 3 = 7",
            "x = 5 + 3",
            "a == 2 + 3",
            "1,234,567 * 3 = 3.7 million",
            "10^6 = 1 thousand",
            "3 * 4 = 12 + 5",
            "5*2 = 10*3",
            "f(2+3)=6",
            "a => 9",
            "x <= 2 + 3",
            "4 * 3 = 12 x 3",
            "4 + 4 = 9:30",
            "3 = 4",
            "50% - 25% = 25%",
            "half of 10 + 2 = 7",
            "2 times 3 + 1 = 7",
            "After 3 days, 5 + 3 = 9k",
        ] {
            assert_eq!(wrong(text), Vec::<String>::new(), "{text}");
        }
    }

    #[test]
    fn a_chain_is_read_one_step_at_a_time() {
        assert_eq!(read("5*2=10*3=30"), ["10*3 = 30"]);
        assert_eq!(wrong("3 * 4 = 12 + 5 = 18"), ["12 + 5 = 18"]);
    }

    #[test]
    fn a_slip_counts_when_its_value_reaches_the_answer() {
        let reasoning = "Seattle has 20 sheep, Charleston 80, Toulouse 160. \
                         In total 20 + 80 + 160 = 460.";
        let found = slips("They have 460 sheep together.", reasoning);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].to_string(), "20 + 80 + 160 is 260, not 460");
        assert!(slips("They have 260 sheep together.", reasoning).is_empty());
        let through = "Each pays 12 * 3 = 38. Both pay 38 * 2 = 76.";
        assert_eq!(slips("They pay $76.", through).len(), 1);
        assert!(
            slips(
                "They pay $72.",
                "12 * 3 = 38, no: 12 * 3 = 36. 36 * 2 = 72."
            )
            .is_empty()
        );
        assert_eq!(slips("It costs 5 * 3 = 16 dollars.", "").len(), 1);
    }

    #[test]
    fn a_value_carried_through_many_steps_is_followed_once() {
        // Found by the `claims` fuzz target: each step that used the slip's value again
        // doubled what was carried, so 64 of them asked for 2^64 entries.
        let reasoning = format!("5 * 4 = 0. {}", "0 * 4 = 0. ".repeat(64));
        let found = slips("It is 0.", &reasoning);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].to_string(), "5 * 4 is 20, not 0");
    }

    #[test]
    fn a_term_of_algebra_is_no_result_and_a_glued_unit_is() {
        assert!(wrong("100 = 5A, so 100/5 = 5A/5 or 20 = A.").is_empty());
        assert!(claims("3x + 2 = 5x - 4").is_empty());
        assert_eq!(wrong("So 60/2 = 20km."), ["60/2 = 20"]);
    }

    #[test]
    fn the_worked_solutions_of_gsm8k_hold() {
        let data = corrigible_bench::gsm8k::TRAIN;
        let mut read = 0;
        for line in data.lines() {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            if corrigible_bench::gsm8k::WRONG_SOLUTIONS.contains(&row["id"].as_str().unwrap_or(""))
            {
                continue;
            }
            let solution = row["solution"].as_str().unwrap();
            let plain: String = solution
                .split("<<")
                .enumerate()
                .map(|(i, part)| {
                    if i == 0 {
                        part
                    } else {
                        part.split_once(">>").map_or(part, |(_, rest)| rest)
                    }
                })
                .collect();
            for text in [solution, plain.as_str()] {
                let found = claims(text);
                read += found.len();
                let wrong: Vec<_> = found.iter().filter(|c| !c.holds()).collect();
                assert!(wrong.is_empty(), "{}: {wrong:?}", row["id"]);
            }
        }
        assert!(read > 900, "{read} claims read");
    }
}
