//! A degenerate loop is cut: the output keeps one copy of the repeated unit and the string it
//! was in is closed, instead of repeating until the token bound.

mod common;

use corrigible_local::GenerationEnd;

#[test]
fn a_run_of_zeros_is_cut_to_one_and_the_string_closed() {
    let Some(m) = common::model() else {
        return;
    };
    let prompt = "<|im_start|>user\nWrite the number.<|im_end|>\n<|im_start|>assistant\n\
                  {\"state\":\"final\",\"satisfied\":true,\"final_summary\":\"-1675.000000000";
    let generation = m.generate(prompt, None).expect("generates");
    let text = m.tokenizer().decode(&generation.tokens).expect("decodes");
    assert!(generation.loops_cut >= 1, "{text:?}");
    assert!(
        text.starts_with("0\""),
        "one zero kept, then the string closed: {text:?}"
    );
    assert!(!text.contains("0000"), "{text:?}");
}

#[test]
fn without_a_loop_nothing_is_cut() {
    let Some(m) = common::model() else {
        return;
    };
    let reply = m
        .complete_blocking(&common::request("What is 17 * 23?", common::tools()))
        .expect("replies");
    let decoding = reply.decoding.unwrap_or_default();
    assert!(!decoding.contains("loops_cut"), "{decoding}");
    let generation = m
        .generate(
            "<|im_start|>user\nSay hi.<|im_end|>\n<|im_start|>assistant\n",
            None,
        )
        .expect("generates");
    assert_eq!(generation.loops_cut, 0);
    assert_ne!(generation.stop, GenerationEnd::MaxTokens);
}
