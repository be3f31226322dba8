//! Room to think before a decision: a bounded stretch of free text decoded before the JSON
//! decision, which is then held to its schema as usual.
//!
//! The thought ends where the model starts its JSON object (a token whose `{` opens a line),
//! at the end of its turn, or at its token bound; a `{` inside a line (LaTeX, code, a set)
//! belongs to the thought; it is then closed with a newline and the decision is
//! decoded after it, so a thought cut at its bound still ends in a valid decision. The thought
//! stays in the conversation: an assistant message's reasoning is shown before its decision.

use corrigible::{Message, MessageKind, Reasoning, Recalculation, Role};

/// Default bound of a thought, in tokens: the bare baseline's free-text budget, within which
/// the model's step-by-step reasoning on a word problem fits (see `docs/thinking.md`).
pub const DEFAULT_THINK_TOKENS: usize = 448;

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
/// before its decision, the way the model wrote it; with `examples` false, the worked
/// examples' thoughts are left out (a model that thinks only now and then is shown examples
/// that decide at once).
pub fn fold(messages: &[Message], examples: bool) -> Vec<Message> {
    messages
        .iter()
        .map(|m| match &m.reasoning {
            Some(r)
                if m.role == Role::Assistant
                    && !r.set_aside
                    && !r.text.trim().is_empty()
                    && (examples || m.kind != MessageKind::Example) =>
            {
                Message {
                    content: prefixed(&r.text, &m.content),
                    ..m.clone()
                }
            }
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
        set_aside: false,
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
        let folded = fold(&messages, true);
        assert_eq!(folded[0].content, "Q");
        assert_eq!(folded[1].content, "2 + 2 is arithmetic.\n{}");
        assert_eq!(folded[2].content, "{\"a\":1}");
    }

    #[test]
    fn an_examples_thought_is_written_only_when_asked() {
        let example = Message::assistant(MessageKind::Example, "{}", Vec::new())
            .with_reasoning(Some(Reasoning::text("Shown.")));
        let own = Message::assistant(MessageKind::Reply, "{}", Vec::new())
            .with_reasoning(Some(Reasoning::text("Mine.")));
        let messages = [example, own];
        let both = fold(&messages, true);
        assert_eq!(
            (both[0].content.as_str(), both[1].content.as_str()),
            ("Shown.\n{}", "Mine.\n{}")
        );
        let own_only = fold(&messages, false);
        assert_eq!(
            (own_only[0].content.as_str(), own_only[1].content.as_str()),
            ("{}", "Mine.\n{}")
        );
    }

    #[test]
    fn a_thought_set_aside_is_not_shown_again() {
        let aside = Reasoning {
            set_aside: true,
            ..Reasoning::text("Answer: 4")
        };
        let messages = [
            Message::request("Q"),
            Message::assistant(MessageKind::Reply, "{}", Vec::new()).with_reasoning(Some(aside)),
        ];
        assert_eq!(fold(&messages, true)[1].content, "{}");
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
