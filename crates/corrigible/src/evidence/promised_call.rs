//! Answers that promise a call of one of the run's tools instead of answering: "Now, I will use
//! the calculator to find the product of 1234 and 5678."
//!
//! A final answer ends the run, so nothing it promises will be done. A first-person future or
//! `let me` (`I will`, `I'll`, `I am going to`, `let me`), then, in the same sentence, a verb
//! of calling (`use`, `call`, `run`, `invoke`, `try`) with the name of a tool the run has right
//! after it, or a tool's name followed by `tool` (`using the calculator tool`), is such a
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

/// Words that name what comes before them as a tool (`the calculator tool`).
const TOOL_NOUNS: [&str; 2] = ["tool", "function"];

/// A promise to call a tool, found in an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Promise {
    /// The words of the promise, lowercased (`i will use the calculator`).
    pub phrase: String,
    /// The tool it names, as the run declares it.
    pub tool: String,
}

/// The promise `answer` makes to call one of `tools`, if any.
pub fn promised_call(answer: &str, tools: &[&str]) -> Option<Promise> {
    let text = answer
        .to_lowercase()
        .replace(['\u{2019}', '\u{2018}'], "'")
        .replace('`', "");
    text.split(['.', '!', '?', '\n', ';'])
        .find_map(|sentence| promise_in(sentence, tools))
}

/// A promise in one sentence: a future of the agent's own, then, later in the sentence, a verb
/// of calling with a tool's name after it (`use the calculator`) or a tool named as one
/// (`using the calculator tool`).
fn promise_in(sentence: &str, tools: &[&str]) -> Option<Promise> {
    let words: Vec<&str> = sentence
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '_' || c == '-'))
        .filter(|w| !w.is_empty())
        .collect();
    let tool_named = |w: &str| tools.iter().find(|t| t.eq_ignore_ascii_case(w));
    let start = (0..words.len()).find_map(|i| {
        FUTURES.iter().find_map(|f| {
            let parts: Vec<&str> = f.split(' ').collect();
            words[i..].starts_with(&parts).then_some(i)
        })
    })?;
    for j in start + 1..words.len() {
        if VERBS.contains(&words[j]) {
            let mut k = j + 1;
            let mut gap = 0;
            while words.get(k).is_some_and(|w| FILLERS.contains(w)) && gap < MAX_GAP_WORDS {
                k += 1;
                gap += 1;
            }
            if let Some(tool) = words.get(k).and_then(|w| tool_named(w)) {
                return Some(Promise {
                    phrase: words[start..=k].join(" "),
                    tool: tool.to_string(),
                });
            }
        }
        if let Some(tool) = tool_named(words[j])
            && words.get(j + 1).is_some_and(|w| TOOL_NOUNS.contains(w))
        {
            return Some(Promise {
                phrase: words[start..=j + 1].join(" "),
                tool: tool.to_string(),
            });
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
        for (text, phrase, tool) in [
            (
                "I apologize for the oversight. Let's correct the decision:\n\n<tool_response>\naccepted\n</tool_response>\n\nNow, I will use the calculator to find the product of 1234 and 5678.",
                "i will use the calculator",
                "calculator",
            ),
            (
                "I apologize for the oversight. Let's correct the decision:\n\n<tool_response>\naccepted\n</tool_response>\n\nNow, I will proceed to calculate the product of 1234 and 5678 using the calculator tool.",
                "i will proceed to calculate the product of 1234 and 5678 using the calculator tool",
                "calculator",
            ),
            (
                "Let me use the `weather` tool for Paris.",
                "let me use the weather",
                "weather",
            ),
            ("I'll call time for Tokyo.", "i'll call time", "time"),
            (
                "I am going to run the calculator now.",
                "i am going to run the calculator",
                "calculator",
            ),
            (
                "I will now use the weather tool.",
                "i will now use the weather",
                "weather",
            ),
        ] {
            let promise = promised_call(text, &TOOLS).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(
                (promise.phrase.as_str(), promise.tool.as_str()),
                (phrase, tool)
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
            "I'll be there in time for the weather report.",
            "The calculator tool returned 7006652, and I will remember it.",
            "",
        ] {
            assert_eq!(promised_call(text, &TOOLS), None, "{text}");
        }
    }
}
