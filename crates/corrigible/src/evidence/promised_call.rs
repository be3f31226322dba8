//! Answers that promise a call of one of the run's tools instead of answering: "Now, I will use
//! the calculator to find the product of 1234 and 5678."
//!
//! A final answer ends the run, so nothing it promises will be done. A first-person future or
//! `let me` (`I will`, `I'll`, `I am going to`, `let me`), a verb of calling (`use`, `call`,
//! `run`, `invoke`, `try`), then the name of a tool the run has, within a few words, is such a
//! promise. A past use (`I used the calculator`) is an account, and an offer that waits for the
//! user (`I can use the weather tool if you want`) names no future of the agent's own.

/// Words that may stand between the verb and the tool's name (`the`, `now`, `again`, …).
const MAX_GAP_WORDS: usize = 2;

const FUTURES: [&str; 7] = [
    "i will",
    "i'll",
    "i am going to",
    "i'm going to",
    "let me",
    "i shall",
    "we will",
];

const VERBS: [&str; 6] = ["use", "call", "run", "invoke", "try", "query"];

const FILLERS: [&str; 6] = ["the", "now", "again", "first", "a", "our"];

/// The promise `answer` makes to call one of `tools`, as written (lowercased), if any.
pub fn promised_call(answer: &str, tools: &[&str]) -> Option<String> {
    let text = answer
        .to_lowercase()
        .replace(['\u{2019}', '\u{2018}'], "'")
        .replace('`', "");
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '_' || c == '-'))
        .filter(|w| !w.is_empty())
        .collect();
    for (i, _) in words.iter().enumerate() {
        let Some(future_len) = FUTURES.iter().find_map(|f| {
            let parts: Vec<&str> = f.split(' ').collect();
            words[i..].starts_with(&parts).then_some(parts.len())
        }) else {
            continue;
        };
        let mut j = i + future_len;
        while words.get(j).is_some_and(|w| FILLERS.contains(w)) {
            j += 1;
        }
        if !words.get(j).is_some_and(|w| VERBS.contains(w)) {
            continue;
        }
        let verb_end = j + 1;
        for k in verb_end..(verb_end + MAX_GAP_WORDS + 1).min(words.len()) {
            let word = words[k];
            if tools.iter().any(|t| t.eq_ignore_ascii_case(word)) {
                return Some(words[i..=k].join(" "));
            }
            if !FILLERS.contains(&word) {
                break;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: [&str; 3] = ["calculator", "time", "weather"];

    #[test]
    fn promises_to_call_a_tool_are_found() {
        for (text, phrase) in [
            (
                "I apologize for the oversight. Let's correct the decision:\n\n<tool_response>\naccepted\n</tool_response>\n\nNow, I will use the calculator to find the product of 1234 and 5678.",
                "i will use the calculator",
            ),
            (
                "Let me use the `weather` tool for Paris.",
                "let me use the weather",
            ),
            ("I'll call time for Tokyo.", "i'll call time"),
            (
                "I am going to run the calculator now.",
                "i am going to run the calculator",
            ),
            (
                "I will now use the weather tool.",
                "i will now use the weather",
            ),
        ] {
            assert_eq!(
                promised_call(text, &TOOLS).as_deref(),
                Some(phrase),
                "{text}"
            );
        }
    }

    #[test]
    fn accounts_offers_and_other_words_are_not_promises() {
        for text in [
            "I used the calculator: 1234 * 5678 = 7006652.",
            "The calculator says 7006652.",
            "I can use the weather tool if you want a forecast.",
            "Let me know if you want the time in another city.",
            "I will use an umbrella: it is raining in Paris (weather: 12°C, rain).",
            "It is 14:05 in Tokyo; I'll call it a day.",
            "You will need to run the numbers again.",
            "",
        ] {
            assert_eq!(promised_call(text, &TOOLS), None, "{text}");
        }
    }
}
