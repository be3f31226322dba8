//! Answers that open by declining the request: "I'm sorry, but I can't fulfill your request.",
//! "I am unable to book flights."
//!
//! Under the native protocol a plain text reply is the final answer, and nothing in it says
//! whether the request was fulfilled. One that opens by saying it cannot do what was asked is
//! recorded unsatisfied, never as a success; a JSON decision that says `satisfied: true` on such
//! an answer is sent back as `declined_request`. Only the first sentence is read, and only an
//! inability to act (a list of verbs of acting after `can't`, `cannot`, `unable to`, `not able
//! to`): "I can't be sure, but it is 42" is an answer.

const INABILITY: [&str; 9] = [
    "i can't ",
    "i cannot ",
    "i can not ",
    "i'm unable to ",
    "i am unable to ",
    "i'm not able to ",
    "i am not able to ",
    "i won't be able to ",
    "i will not be able to ",
];

const OPENERS: [&str; 8] = [
    "i'm sorry",
    "i am sorry",
    "sorry",
    "unfortunately",
    "i apologize",
    "i apologise",
    "as an ai",
    "but",
];

const ACTS: [&str; 47] = [
    "fulfill",
    "fulfil",
    "complete",
    "help",
    "assist",
    "do ",
    "perform",
    "provide",
    "book",
    "order",
    "send",
    "access",
    "execute",
    "carry out",
    "process",
    "comply",
    "answer",
    "retrieve",
    "control",
    "turn ",
    "make ",
    "browse",
    "schedule",
    "purchase",
    "play",
    "remind",
    "call ",
    "set ",
    "lock",
    "unlock",
    "open ",
    "close ",
    "buy",
    "pay ",
    "transfer",
    "post ",
    "delete",
    "cancel",
    "reserve",
    "share",
    "text ",
    "email",
    "message",
    "contact",
    "check",
    "look up",
    "find out",
];

/// Whether `answer`'s first sentence says it cannot do what was asked.
pub fn declines(answer: &str) -> bool {
    let first = answer
        .trim_start()
        .split(['.', '!', '?', '\n'])
        .next()
        .unwrap_or("")
        .to_lowercase()
        .replace(['\u{2019}', '\u{2018}'], "'");
    let mut rest = first.trim();
    while let Some(opener) = OPENERS.iter().find(|o| rest.starts_with(**o)) {
        rest = rest[opener.len()..].trim_start_matches([',', ' ', ':', '-']);
    }
    let rest = rest.strip_prefix("but ").unwrap_or(rest);
    let Some(after) = INABILITY
        .iter()
        .find_map(|phrase| rest.strip_prefix(phrase))
    else {
        return false;
    };
    let after = after.strip_prefix("directly ").unwrap_or(after);
    let after = after.strip_prefix("actually ").unwrap_or(after);
    ACTS.iter().any(|act| after.starts_with(act))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_decline() {
        for text in [
            "I'm sorry, but I can't fulfill your request.",
            "I cannot fulfill the request as it requires a tool call.",
            "I am unable to book flights. I can tell you the time.",
            "Sorry, I can’t turn off your lights.",
            "Unfortunately, I'm not able to send emails from here.",
            "I apologize, but I cannot access your calendar.",
            "As an AI, I can't order food for you.",
            "I can't help with that.",
            "I won't be able to complete this request",
            "I'm sorry, but I cannot play music. I am an AI language model.",
            "I can't remind you to call your mother at 5 pm: none of my tools can reach your phone.",
            "I'm sorry, I'm unable to access your current location.",
            "I apologize, but I cannot fulfill your request as it lacks a tool call.",
            "I can't call you in Mumbai at 17:30.",
            "I cannot lock the front door of your house as I am an AI assistant.",
        ] {
            assert!(declines(text), "{text}");
        }
    }

    #[test]
    fn answers_do_not_decline() {
        for text in [
            "1234 * 5678 = 7006652.",
            "I can't be sure, but the answer is 42.",
            "I cannot find any mistake: 12 + 30 = 42.",
            "The time in Tokyo is 08:15. I can't say what the weather will be tomorrow.",
            "Sorry for the wait: it is 18°C in Paris.",
            "I can tell you that it is 18°C in Paris.",
            "You cannot book flights on Sundays, the airline says.",
            "I can't say for sure, but it is probably 42.",
            "I can't stress enough that 12 + 30 = 42.",
            "I can't believe how warm it is: 31°C in Madrid.",
            "",
        ] {
            assert!(!declines(text), "{text}");
        }
    }
}
