//! Our own words in a final answer: a run of words that the harness wrote (its instructions,
//! its correction feedback and budget messages, the worked examples) and that neither the user
//! nor a tool said.
//!
//! A model that cannot answer sometimes answers with the last thing it was told: the
//! correction it just received, or the budget message. Such an answer must never count as a
//! success. Words are compared lowercased, split on everything but letters and digits, in runs
//! of [`ECHO_WORDS`]; a run that the request or a tool result also contains is the user's or
//! the world's, not ours. The chat-template markup that carries tool results to the model
//! (`<tool_response>`) counts as ours too: an answer that writes it makes up a result.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::LazyLock;

use crate::examples::WorkedExample;
use crate::prompt::DEFAULT_SYSTEM_TEMPLATE;

/// Consecutive words of our own text that make an echo: longer than the set phrases an answer
/// shares with any instruction ("the final answer is"), shorter than a sentence of feedback.
pub const ECHO_WORDS: usize = 8;

/// The first run of [`ECHO_WORDS`] of `answer`'s words that one of `ours` contains and none of
/// `theirs` (the request, the tool results) does, lowercased.
pub fn echo_in(answer: &str, ours: &[&str], theirs: &[&str]) -> Option<String> {
    let answer = words(answer);
    let runs: HashSet<&[String]> = answer.windows(ECHO_WORDS).collect();
    if runs.is_empty() {
        return None;
    }
    let found_in = |texts: &[&str]| -> HashSet<String> {
        texts
            .iter()
            .flat_map(|text| {
                words(text)
                    .windows(ECHO_WORDS)
                    .filter(|run| runs.contains(run))
                    .map(|run| run.join(" "))
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let echoed = found_in(ours);
    if echoed.is_empty() {
        return None;
    }
    let said = found_in(theirs);
    answer
        .windows(ECHO_WORDS)
        .map(|run| run.join(" "))
        .find(|run| echoed.contains(run) && !said.contains(run))
}

/// The chat-template markup that carries calls and tool results to a model, which a server
/// renders from our messages: never part of an answer.
const MARKUP: [&str; 6] = [
    "<tool_response>",
    "</tool_response>",
    "<tool_call>",
    "</tool_call>",
    "<|im_start|>",
    "<|im_end|>",
];

/// The template markup `answer` repeats (`<tool_response>`), unless the request itself has it.
pub fn markup_in(answer: &str, request: &str) -> Option<&'static str> {
    let answer = answer.to_lowercase();
    let request = request.to_lowercase();
    MARKUP
        .into_iter()
        .find(|tag| answer.contains(tag) && !request.contains(tag))
}

/// The default system prompt's own words, taken out of its template once.
pub fn default_instructions() -> &'static str {
    static TEXT: LazyLock<String> = LazyLock::new(|| template_text(DEFAULT_SYSTEM_TEMPLATE));
    &TEXT
}

/// The words of a worked example that `answer` copies: its whole answer, or a run of
/// [`ECHO_WORDS`] of its texts, holding a number that neither the request nor a tool result
/// (`theirs`) states. Only examples that call a tool and ask something other than `request`
/// count: their numbers came from the example's own tool results, so an answer that repeats
/// them answers the example, not the user. Examples answered from knowledge are left out, as
/// their answer can be right again for a question asked in other words.
pub fn example_echo(
    answer: &str,
    examples: &[WorkedExample],
    request: &str,
    theirs: &[&str],
) -> Option<String> {
    let answer = words(answer);
    if answer.is_empty() {
        return None;
    }
    let request_words = words(request);
    let said: HashSet<String> = theirs
        .iter()
        .chain([&request])
        .flat_map(|t| words(t))
        .collect();
    let unsaid_number = |run: &[String]| {
        run.iter()
            .any(|w| w.chars().all(|c| c.is_ascii_digit()) && !said.contains(w))
    };
    for example in examples {
        if example.steps.is_empty() || words(&example.request) == request_words {
            continue;
        }
        let whole = words(&example.answer);
        if whole.len() >= 3 && contains(&answer, &whole) && unsaid_number(&whole) {
            return Some(whole.join(" "));
        }
        let mut texts = vec![example.request.as_str()];
        for step in &example.steps {
            texts.extend([step.reason.as_str(), step.result.as_str()]);
            texts.extend(step.thought.as_deref());
        }
        texts.extend(example.thought.as_deref());
        for text in texts {
            let text = words(text);
            if let Some(run) = text
                .windows(ECHO_WORDS)
                .find(|run| contains(&answer, run) && unsaid_number(run))
            {
                return Some(run.join(" "));
            }
        }
    }
    None
}

/// Whether `run` occurs in `words`, word for word.
fn contains(words: &[String], run: &[String]) -> bool {
    !run.is_empty() && words.windows(run.len()).any(|w| w == run)
}

/// A template's own words: its text with the template tags taken out.
pub fn template_text(template: &str) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let tail = &rest[open..];
        let close = if tail.starts_with("{%") {
            tail.find("%}").map(|i| i + 2)
        } else if tail.starts_with("{{") {
            tail.find("}}").map(|i| i + 2)
        } else {
            Some(1)
        };
        let Some(close) = close else { break };
        if close == 1 {
            out.push('{');
        } else {
            out.push('\n');
        }
        rest = &tail[close..];
    }
    out.push_str(rest);
    out
}

/// Lowercased words: letters and digits, split on everything else, with the XML escapes of
/// feedback undone first so that `run&apos;s` and `run's` read alike.
fn words(text: &str) -> Vec<String> {
    let text = if text.contains('&') {
        Cow::Owned(
            text.replace("&apos;", "'")
                .replace("&quot;", "\"")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&"),
        )
    } else {
        Cow::Borrowed(text)
    };
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// `text` without its backtick-quoted spans: what a rejection message quotes of the model's
/// reply or a tool's result is not ours.
pub fn without_quotes(text: &str) -> String {
    text.split('`').step_by(2).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::examples::ExampleStep;
    use serde_json::json;

    const FEEDBACK: &str = "Your previous reply was rejected (empty_response; correction 1 of 2).\n\
        <untrusted kind=\"rejection\">the reply is empty</untrusted>\n\
        Reply again with one corrected decision. The user&apos;s request is unchanged:";

    #[test]
    fn feedback_repeated_back_is_an_echo() {
        let answer = "Your previous reply was rejected (empty_response; correction 1 of 2). \
                      <untrusted kind=\"rejection\">";
        assert_eq!(
            echo_in(answer, &[FEEDBACK], &["What is 1234 * 5678?"]).as_deref(),
            Some("your previous reply was rejected empty response correction")
        );
        let budget = "The run's budget of 8 tool actions is spent, so no tool can run any more";
        assert!(echo_in(budget, &[budget], &[]).is_some());
        let escaped = "Reply again with one corrected decision. The user's request is unchanged.";
        assert!(echo_in(escaped, &[FEEDBACK], &[]).is_some());
    }

    #[test]
    fn an_answer_in_its_own_words_is_not() {
        for answer in [
            "1234 multiplied by 5678 is 7006652.",
            "The user's request was to multiply two numbers: 7006652.",
            "Your reply was rejected",
            "",
        ] {
            assert_eq!(echo_in(answer, &[FEEDBACK], &[]), None, "{answer}");
        }
    }

    #[test]
    fn words_the_request_or_a_tool_said_are_theirs() {
        let ours = ["Give the final answer on a last line of the form Answer: N, please."];
        let request = "Give the final answer on a last line of the form Answer: N. What is 2+2?";
        let answer = "Give the final answer on a last line of the form Answer: N. Answer: 4";
        assert_eq!(echo_in(answer, &ours, &[request]), None);
        assert!(echo_in(answer, &ours, &["What is 2+2?"]).is_some());
    }

    fn calculator_example() -> WorkedExample {
        WorkedExample {
            request: "How much is 1234 divided by 8?".into(),
            steps: vec![ExampleStep {
                reason: "Division is arithmetic.".into(),
                tool: "calculator".into(),
                input: json!({"expression": "1234 / 8"}),
                result: "154.25".into(),
                thought: None,
            }],
            answer: "1234 divided by 8 is 154.25.".into(),
            satisfied: true,
            thought: None,
        }
    }

    #[test]
    fn a_tool_example_answer_given_to_another_question_is_an_echo() {
        let examples = [calculator_example()];
        let copied = "1234 divided by 8 is 154.25.";
        assert_eq!(
            example_echo(
                copied,
                &examples,
                "What is the weather in Oslo?",
                &["{\"temperature_c\": 3.1}"]
            )
            .as_deref(),
            Some("1234 divided by 8 is 154 25")
        );
        assert!(example_echo(copied, &examples, "Compute 1234/8.", &["154.25"]).is_none());
        assert!(example_echo(copied, &examples, "How much is 1234 divided by 8?", &[]).is_none());
    }

    #[test]
    fn knowledge_examples_and_shared_phrasing_are_not_echoes() {
        let knowledge = WorkedExample {
            request: "Who invented the telephone?".into(),
            steps: Vec::new(),
            answer: "Alexander Graham Bell is credited with inventing the telephone, in 1876."
                .into(),
            satisfied: true,
            thought: None,
        };
        let answer = "Alexander Graham Bell is credited with inventing the telephone, in 1876.";
        assert!(
            example_echo(
                answer,
                &[knowledge],
                "Who is credited with the telephone?",
                &[]
            )
            .is_none()
        );
        let examples = [calculator_example()];
        for answer in ["999 divided by 8 is 124.875.", "A spider has 8 legs.", ""] {
            assert!(example_echo(answer, &examples, "What is 999 / 8?", &["124.875"]).is_none());
        }
    }

    #[test]
    fn template_tags_are_not_words() {
        assert_eq!(
            template_text("Hello {{ name }}.{%- if x %} Shape: {\"a\": 1}{% endif %}"),
            "Hello \n.\n Shape: {\"a\": 1}\n"
        );
    }

    #[test]
    fn quotes_of_the_model_are_not_ours() {
        assert_eq!(
            without_quotes("the answer says `I have sent it`, but no tool ran"),
            "the answer says  , but no tool ran"
        );
    }

    #[test]
    fn template_markup_in_an_answer_is_ours() {
        let answer = "I apologize for the oversight. Let's correct the decision:\n\n<tool_response>\naccepted\n</tool_response>";
        assert_eq!(
            markup_in(answer, "What is 1234 * 5678?"),
            Some("<tool_response>")
        );
        assert_eq!(
            markup_in("1234 * 5678 = 7006652.", "What is 1234 * 5678?"),
            None
        );
        assert_eq!(
            markup_in(
                "It marks a call: <tool_call> opens it.",
                "What does <tool_call> mean in Qwen's template?"
            ),
            None
        );
    }
}
