//! Numbers written in words: cardinals (`two thousand five hundred`), scales after digits
//! (`1.5 million`) and fractions (`one eighth`, `a quarter`).

/// Words of the numbers 0 to 19.
const UNITS: &[&str] = &[
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
];

/// Words of the tens from 20 to 90.
const TENS: &[&str] = &[
    "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
];

/// Scale words and the values they multiply by.
const SCALES: &[(&str, f64)] = &[
    ("hundred", 100.0),
    ("thousand", 1e3),
    ("million", 1e6),
    ("billion", 1e9),
    ("trillion", 1e12),
];

/// Fraction words (singular and plural) and their denominators; `second` is left out, as it
/// is far more often a unit of time.
const DENOMINATORS: &[(&str, f64)] = &[
    ("half", 2.0),
    ("halves", 2.0),
    ("third", 3.0),
    ("quarter", 4.0),
    ("fourth", 4.0),
    ("fifth", 5.0),
    ("sixth", 6.0),
    ("seventh", 7.0),
    ("eighth", 8.0),
    ("ninth", 9.0),
    ("tenth", 10.0),
    ("twelfth", 12.0),
    ("sixteenth", 16.0),
    ("twentieth", 20.0),
    ("hundredth", 100.0),
    ("thousandth", 1000.0),
];

/// The numbers `text` writes in words, in order: each cardinal (`two thousand five hundred` is
/// 2500), the value of each scale word (1000), a digit number times the scale that follows it
/// (`1.5 million`), and for a fraction its denominator and value (`one eighth`: 8 and 0.125).
pub fn numbers_in_words(text: &str) -> Vec<f64> {
    let words = words(text);
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        if let Some((value, next)) = cardinal(&words, i) {
            out.push(value);
            push_scales(&words[i..next], &mut out);
            if let Some(denominator) = words.get(next).and_then(|w| denominator(w)) {
                out.extend([denominator, value / denominator]);
                i = next + 1;
            } else {
                i = next;
            }
            continue;
        }
        let word = words[i].as_str();
        if let Some(denominator) = denominator(word) {
            out.extend([denominator, 1.0 / denominator]);
        } else if word.starts_with(|c: char| c.is_ascii_digit())
            && let Ok(digits) = word.replace(',', "").parse::<f64>()
            && let Some(scale) = words.get(i + 1).and_then(|w| scale(w))
        {
            out.extend([scale, digits * scale]);
            i += 1;
        } else if word == "dozen" {
            out.push(12.0);
        }
        i += 1;
    }
    out.retain(|n| n.is_finite());
    out
}

/// The lower-case words of `text`, hyphenated numbers split (`twenty-five`).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || c == '-')
        .map(|w| {
            w.trim_matches(|c: char| !(c.is_alphanumeric() || c == '.'))
                .trim_end_matches('.')
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

/// The cardinal that starts at `words[start]` and the index after it: unit and tens words,
/// joined by scales and `and` (`one hundred and five`); `a` counts as one before a scale or
/// `dozen` (`a thousand`).
fn cardinal(words: &[String], start: usize) -> Option<(f64, usize)> {
    let mut total = 0.0;
    let mut group = 0.0;
    let mut seen = false;
    let mut i = start;
    while i < words.len() {
        let word = words[i].as_str();
        if let Some(n) = UNITS.iter().position(|u| *u == word) {
            group += n as f64;
        } else if let Some(n) = TENS.iter().position(|t| *t == word) {
            group += 20.0 + 10.0 * n as f64;
        } else if let Some(scale) = scale(word).filter(|_| seen) {
            if scale == 100.0 {
                group = group.max(1.0) * scale;
            } else {
                total += group.max(1.0) * scale;
                group = 0.0;
            }
        } else if word == "dozen" && seen {
            group = group.max(1.0) * 12.0;
        } else if word == "a"
            && !seen
            && words
                .get(i + 1)
                .is_some_and(|w| scale(w).is_some() || w == "dozen")
        {
            group = 1.0;
        } else if word == "and"
            && seen
            && words
                .get(i + 1)
                .is_some_and(|w| UNITS.contains(&w.as_str()) || TENS.contains(&w.as_str()))
        {
            i += 1;
            continue;
        } else {
            break;
        }
        seen = true;
        i += 1;
    }
    seen.then_some((total + group, i))
}

/// The values of the scale words among `words`.
fn push_scales(words: &[String], out: &mut Vec<f64>) {
    out.extend(words.iter().filter_map(|w| scale(w)));
    if words.iter().any(|w| w == "dozen") {
        out.push(12.0);
    }
}

fn scale(word: &str) -> Option<f64> {
    let singular = word.strip_suffix('s').unwrap_or(word);
    SCALES
        .iter()
        .find(|(w, _)| *w == singular)
        .map(|(_, value)| *value)
}

fn denominator(word: &str) -> Option<f64> {
    let singular = match word {
        "halves" => word,
        _ => word.strip_suffix('s').unwrap_or(word),
    };
    DENOMINATORS
        .iter()
        .find(|(w, _)| *w == singular)
        .map(|(_, value)| *value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cardinals_with_scales_and_and() {
        assert_eq!(
            numbers_in_words("What is two thousand five hundred divided by four?"),
            vec![2500.0, 1000.0, 100.0, 4.0]
        );
        assert_eq!(
            numbers_in_words("one hundred and five apples"),
            vec![105.0, 100.0]
        );
        assert_eq!(numbers_in_words("twenty-five"), vec![25.0]);
        assert_eq!(
            numbers_in_words("a thousand and a dozen"),
            vec![1000.0, 1000.0, 12.0, 12.0]
        );
    }

    #[test]
    fn fractions_give_their_denominator_and_value() {
        assert_eq!(
            numbers_in_words("How much is one eighth written as a decimal?"),
            vec![1.0, 8.0, 0.125]
        );
        assert_eq!(
            numbers_in_words("three quarters of it"),
            vec![3.0, 4.0, 0.75]
        );
        assert_eq!(numbers_in_words("half of 30"), vec![2.0, 0.5]);
    }

    #[test]
    fn digits_before_a_scale_are_multiplied() {
        assert_eq!(
            numbers_in_words("a city of 1.5 million people"),
            vec![1e6, 1.5e6]
        );
        assert_eq!(numbers_in_words("3 thousand"), vec![1000.0, 3000.0]);
    }

    #[test]
    fn text_without_number_words_gives_none() {
        assert!(numbers_in_words("What time is it in Tokyo? A second please.").is_empty());
        assert!(numbers_in_words("Is it someone's turn? Tenthousand").is_empty());
    }

    proptest::proptest! {
        #[test]
        fn any_text_is_read_without_panic_into_finite_numbers(
            words in proptest::collection::vec(
                proptest::sample::select(vec![
                    "one", "twenty-five", "hundred", "and", "a", "thousand", "dozen", "half",
                    "thirds", "1.5", "million", "-", "eighth", "seconds", "0", "1,000", "1e308", "inf", "…", "",
                ]),
                0..14,
            ),
            free in "\\PC{0,40}",
        ) {
            for text in [words.join(" "), free] {
                for n in numbers_in_words(&text) {
                    proptest::prop_assert!(n.is_finite(), "{text}: {n}");
                }
                let _ = crate::evidence::implied::implied_constants(&text);
            }
        }
    }
}
