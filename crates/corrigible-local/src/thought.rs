//! Room to think before a decision: a bounded stretch of free text decoded before the JSON
//! decision, which is then held to its schema as usual.
//!
//! The thought ends where the model starts its JSON object (a token whose `{` opens a line),
//! at the end of its turn, or at its token bound; a `{` inside a line (LaTeX, code, a set)
//! belongs to the thought; it is then closed with a newline and the decision is
//! decoded after it, so a thought cut at its bound still ends in a valid decision. The thought
//! stays in the conversation: an assistant message's reasoning is shown before its decision.

use corrigible::{Message, Reasoning, Recalculation, Role};

/// Default bound of a thought, in tokens: 0, no thought. Thinking is an opt-in until it is
/// measured to help (see `docs/thinking.md`).
pub const DEFAULT_THINK_TOKENS: usize = 0;

/// The bound of a thought suggested when thinking is turned on, in tokens, and the free-text
/// budget the bench's `bare` policy adds to the decision's.
pub const SUGGESTED_THINK_TOKENS: usize = 192;

/// What may end a thought besides its bound: the end of turn and every token whose text holds
/// `{` (see [`opens_decision`] for which of those do).
pub fn stops<'a>(vocab: impl IntoIterator<Item = (u32, &'a str)>, end_of_turn: &[u32]) -> Vec<u32> {
    holding(vocab, end_of_turn, &['{'])
}

/// The [`stops`] and every token whose text holds a newline: where the thought calculator
/// reads the lines of a thought as they are completed.
pub fn line_stops<'a>(
    vocab: impl IntoIterator<Item = (u32, &'a str)>,
    end_of_turn: &[u32],
) -> Vec<u32> {
    holding(vocab, end_of_turn, &['{', '\n'])
}

/// `end_of_turn` and every token whose text holds one of `chars`, sorted.
fn holding<'a>(
    vocab: impl IntoIterator<Item = (u32, &'a str)>,
    end_of_turn: &[u32],
    chars: &[char],
) -> Vec<u32> {
    let mut stops: Vec<u32> = end_of_turn.to_vec();
    stops.extend(
        vocab
            .into_iter()
            .filter(|(_, text)| text.contains(chars))
            .map(|(id, _)| id),
    );
    stops.sort_unstable();
    stops.dedup();
    stops
}

/// Whether `token`, a stop token holding `{`, written after the thought `before`, opens the
/// decision: its `{` starts a line (or the thought is still empty), or opens a quoted key.
pub fn opens_decision(before: &str, token: &str) -> bool {
    let Some((head, tail)) = token.split_once('{') else {
        return true;
    };
    let line = format!("{before}{head}");
    let last = line.rsplit('\n').next().unwrap_or("");
    last.trim().is_empty() || tail.starts_with('"')
}

/// The conversation as a thinking model reads it: each assistant message's thought written
/// before its decision, the way the model wrote it.
pub fn fold(messages: &[Message]) -> Vec<Message> {
    messages
        .iter()
        .map(|m| match &m.reasoning {
            Some(r) if m.role == Role::Assistant && !r.text.trim().is_empty() => Message {
                content: prefixed(&r.text, &m.content),
                ..m.clone()
            },
            _ => m.clone(),
        })
        .collect()
}

/// `decision` after `thought`, on its own line.
pub fn prefixed(thought: &str, decision: &str) -> String {
    format!("{}\n{decision}", thought.trim())
}

/// A decoded thought: its text, the tokens it took, whether it hit its bound, and the
/// calculations the thought calculator rewrote in it.
pub fn reasoning(
    text: &str,
    tokens: usize,
    truncated: bool,
    recalculated: Vec<Recalculation>,
) -> Option<Reasoning> {
    let text = text.trim();
    (!text.is_empty()).then(|| Reasoning {
        text: text.to_string(),
        tokens: Some(tokens as u64),
        truncated,
        blocks: Vec::new(),
        recalculated,
    })
}

#[cfg(test)]
mod tests {
    use corrigible::MessageKind;

    use super::*;

    #[test]
    fn stops_are_end_of_turn_and_brace_tokens() {
        let vocab = [(1, "a"), (2, "{\""), (3, " {"), (4, "}"), (5, "x{y")];
        assert_eq!(stops(vocab, &[9, 2]), vec![2, 3, 5, 9]);
    }

    #[test]
    fn only_a_brace_that_opens_a_line_opens_the_decision() {
        assert!(opens_decision("", "{\""));
        assert!(opens_decision("  ", " {"));
        assert!(opens_decision("So 7 * 12 - 30.\n", "{\""));
        assert!(opens_decision("So 7 * 12 - 30.", "\n{"));
        assert!(!opens_decision("Distance: \\(2 \\text", "{"));
        assert!(!opens_decision("the set", " {1, 2}"));
        assert!(!opens_decision("x\nfn main() ", "{"));
        assert!(opens_decision("Call it: ", "{\""));
    }

    #[test]
    fn a_thought_is_written_before_its_decision() {
        let messages = [
            Message::request("Q"),
            Message::assistant(MessageKind::Reply, "{}", Vec::new())
                .with_reasoning(Some(Reasoning::text(" 2 + 2 is arithmetic. "))),
            Message::assistant(MessageKind::Reply, "{\"a\":1}", Vec::new())
                .with_reasoning(Some(Reasoning::text("  "))),
        ];
        let folded = fold(&messages);
        assert_eq!(folded[0].content, "Q");
        assert_eq!(folded[1].content, "2 + 2 is arithmetic.\n{}");
        assert_eq!(folded[2].content, "{\"a\":1}");
    }

    #[test]
    fn an_empty_thought_is_no_reasoning() {
        assert_eq!(reasoning(" \n", 2, false, Vec::new()), None);
        let r = reasoning(" 9 * 2 ", 4, true, Vec::new()).expect("reasoning");
        assert_eq!(
            (r.text.as_str(), r.tokens, r.truncated),
            ("9 * 2", Some(4), true)
        );
    }
}
