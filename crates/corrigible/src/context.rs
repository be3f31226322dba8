//! The context budget: fits a conversation under a token budget, by priority.
//!
//! The system prompt, the current request and the latest feedback are never dropped. Older
//! tool results are shortened first, then worked examples, then whole older turns; the request
//! gains a note saying what was trimmed.

use crate::message::{Message, MessageKind, Role};

/// A token budget for each model request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextBudget {
    /// Maximum tokens of the assembled messages.
    pub max_tokens: usize,
}

impl Default for ContextBudget {
    fn default() -> Self {
        Self { max_tokens: 6000 }
    }
}

/// Tokens per message for role markers and separators.
const MESSAGE_OVERHEAD: usize = 4;

/// A rough token estimate for models without a tokenizer: about four bytes a token.
pub fn estimate_tokens(text: &str) -> usize {
    text.len().div_ceil(4)
}

fn cost(message: &Message, count: &dyn Fn(&str) -> usize) -> usize {
    let calls: usize = message
        .tool_calls
        .iter()
        .map(|c| count(&c.name) + count(&c.arguments))
        .sum();
    count(&message.content) + calls + MESSAGE_OVERHEAD
}

/// Turn boundaries: each assistant message starts a turn that runs to the next one.
fn turns(messages: &[Message]) -> Vec<(usize, usize)> {
    let starts: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::Assistant && m.kind != MessageKind::Example)
        .map(|(i, _)| i)
        .collect();
    starts
        .iter()
        .enumerate()
        .map(|(n, &start)| {
            let end = starts.get(n + 1).copied().unwrap_or(messages.len());
            (start, end)
        })
        .collect()
}

impl ContextBudget {
    /// The messages to send: `messages` itself when it fits, else a trimmed copy.
    pub fn fit(&self, messages: &[Message], count: &dyn Fn(&str) -> usize) -> Vec<Message> {
        let mut out: Vec<Option<Message>> = messages.iter().cloned().map(Some).collect();
        let total = |out: &[Option<Message>]| -> usize {
            out.iter().flatten().map(|m| cost(m, count)).sum()
        };
        if total(&out) <= self.max_tokens {
            return messages.to_vec();
        }
        let latest_feedback = messages
            .iter()
            .rposition(|m| m.kind == MessageKind::Feedback);
        let turn_spans = turns(messages);
        let last_turn_start = turn_spans.last().map(|t| t.0).unwrap_or(messages.len());
        let (mut results, mut examples, mut dropped_turns) = (0usize, 0usize, 0usize);

        for i in 0..last_turn_start {
            if total(&out) <= self.max_tokens {
                break;
            }
            if let Some(m) = out[i]
                .as_mut()
                .filter(|m| m.kind == MessageKind::ToolResult)
            {
                m.content = "[trimmed]".to_string();
                results += 1;
            }
        }
        for i in 0..out.len() {
            if total(&out) <= self.max_tokens {
                break;
            }
            if out[i]
                .as_ref()
                .is_some_and(|m| m.kind == MessageKind::Example)
            {
                out[i] = None;
                examples += 1;
            }
        }
        for &(start, end) in turn_spans.iter().take(turn_spans.len().saturating_sub(1)) {
            if total(&out) <= self.max_tokens {
                break;
            }
            if latest_feedback.is_some_and(|f| (start..end).contains(&f)) {
                continue;
            }
            for slot in &mut out[start..end] {
                *slot = None;
            }
            dropped_turns += 1;
        }
        let mut fitted: Vec<Message> = out.into_iter().flatten().collect();
        if results + examples + dropped_turns > 0 {
            let note = format!(
                "\n\n[context note: to fit the context budget, {results} older tool result(s) were shortened, \
                 {examples} example message(s) and {dropped_turns} older turn(s) were removed]"
            );
            if let Some(request) = fitted.iter_mut().find(|m| m.kind == MessageKind::Request) {
                request.content.push_str(&note);
            }
        }
        fitted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::MessageKind as K;

    fn conversation(turns: usize) -> Vec<Message> {
        let mut m = vec![Message::system("sys"), Message::request("the request")];
        for i in 0..turns {
            m.push(Message::assistant(
                K::Reply,
                format!("reply {i} {}", "x".repeat(200)),
                vec![],
            ));
            m.push(Message::user(
                K::ToolResult,
                format!("result {i} {}", "y".repeat(400)),
            ));
        }
        m.push(Message::user(K::Feedback, "latest feedback"));
        m
    }

    #[test]
    fn fits_unchanged_when_small() {
        let m = conversation(1);
        assert_eq!(
            ContextBudget { max_tokens: 10_000 }.fit(&m, &estimate_tokens),
            m
        );
    }

    #[test]
    fn trims_old_results_then_turns_and_keeps_the_essentials() {
        let m = conversation(6);
        let fitted = ContextBudget { max_tokens: 300 }.fit(&m, &estimate_tokens);
        let total: usize = fitted.iter().map(|x| cost(x, &estimate_tokens)).sum();
        assert!(total <= 300, "{total}");
        assert_eq!(fitted[0].content, "sys");
        assert!(fitted[1].content.starts_with("the request"));
        assert!(fitted[1].content.contains("context note"));
        assert_eq!(fitted.last().unwrap().content, "latest feedback");
        assert!(
            fitted.iter().any(|x| x.content.starts_with("reply 5")),
            "latest turn kept"
        );
    }
}
