//! The chat template stored in the GGUF file renders ChatML.

mod common;

use corrigible::{Message, MessageKind};

#[test]
fn gguf_template_renders_chatml() {
    let Some(m) = common::model() else { return };
    let text = m
        .render(&[
            Message::system("You decide."),
            Message::request("What is 17 * 23?"),
            Message::assistant(MessageKind::Reply, "{\"state\":\"final\"}", vec![]),
            Message::user(MessageKind::Feedback, "Fix it."),
        ])
        .expect("renders");
    assert_eq!(
        text,
        "<|im_start|>system\nYou decide.<|im_end|>\n\
         <|im_start|>user\nWhat is 17 * 23?<|im_end|>\n\
         <|im_start|>assistant\n{\"state\":\"final\"}<|im_end|>\n\
         <|im_start|>user\nFix it.<|im_end|>\n\
         <|im_start|>assistant\n"
    );
}

#[test]
fn tool_messages_render_as_user_turns() {
    let Some(m) = common::model() else { return };
    let text = m
        .render(&[
            Message::system("S"),
            Message::tool_result("c1", "calculator", "391", false, MessageKind::ToolResult),
        ])
        .expect("renders");
    assert!(text.contains("<|im_start|>user\n391<|im_end|>"), "{text}");
}
