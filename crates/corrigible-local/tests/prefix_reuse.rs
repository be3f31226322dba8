//! A correction round reuses the cached prompt prefix and decodes exactly as a cold run.

mod common;

use corrigible::{Message, MessageKind};

#[test]
fn correction_round_reuses_the_prefix_with_identical_output() {
    let Some(m) = common::model_with(|_| {}) else {
        return;
    };
    let first = common::request("What is 17 * 23?", common::tools());
    let reply = m.complete_blocking(&first).expect("first call");
    let first_prompt = m
        .tokenizer()
        .encode(&m.render(&first.messages).expect("renders"))
        .expect("encodes");

    let mut correction = first.clone();
    correction.messages.push(Message::assistant(
        MessageKind::Reply,
        reply.text.clone().unwrap_or_default(),
        vec![],
    ));
    correction.messages.push(Message::user(
        MessageKind::Feedback,
        "<untrusted>The calculator needs a plain expression such as 17*23.</untrusted> \
         Request: What is 17 * 23?",
    ));

    let warm = m.complete_blocking(&correction).expect("warm call");
    let reused = warm.prompt_tokens_reused.expect("reports reuse") as usize;
    assert!(
        reused >= first_prompt.len() - 1,
        "reused {reused} of a {}-token shared prefix",
        first_prompt.len()
    );
    assert!(reused < warm.usage.input_tokens as usize);

    m.reset_cache();
    let cold = m.complete_blocking(&correction).expect("cold call");
    assert_eq!(cold.prompt_tokens_reused, Some(0));
    assert_eq!(cold.text, warm.text);
    assert_eq!(cold.usage, warm.usage);
}

#[test]
fn the_same_request_twice_gives_the_same_reply() {
    let Some(m) = common::model_with(|c| c.constrain = corrigible_local::Constrain::Off) else {
        return;
    };
    let request = common::request("Name a prime number.", common::tools());
    let a = m.complete_blocking(&request).expect("first");
    let b = m.complete_blocking(&request).expect("second");
    assert_eq!(a.text, b.text);
    assert!(b.prompt_tokens_reused.unwrap_or(0) > 0);
}
