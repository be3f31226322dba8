//! The chat-template renderer on hostile messages: template syntax, special tokens and any
//! role order in the content render as text (or a typed error), never a panic, and a message's
//! content is never interpreted as template code. Input: a template digit (0 ChatML, 1 SmolLM2,
//! 2 Qwen2.5), then messages separated by U+001E, each a role digit (0 system, 1 user,
//! 2 assistant, 3 tool) then its content.
#![no_main]

use corrigible::{Message, MessageKind, Role};
use corrigible_local::{CHATML_TEMPLATE, ChatTemplate};
use libfuzzer_sys::fuzz_target;

const TEMPLATES: [&str; 3] = [
    CHATML_TEMPLATE,
    include_str!("../templates/smollm2.jinja"),
    include_str!("../templates/qwen2.5.jinja"),
];

fn digit(c: Option<char>) -> usize {
    c.and_then(|c| c.to_digit(10)).unwrap_or(0) as usize
}

fuzz_target!(|input: &str| {
    let mut chars = input.chars();
    let source = TEMPLATES[digit(chars.next()) % TEMPLATES.len()];
    let template = ChatTemplate::new(source, "<|im_start|>", "<|im_end|>").expect("compiles");
    let messages: Vec<Message> = chars
        .as_str()
        .split('\u{1e}')
        .filter(|record| !record.is_empty())
        .map(|record| {
            let mut chars = record.chars();
            let role = digit(chars.next());
            let mut m = Message::user(MessageKind::default(), chars.as_str());
            m.role = match role % 4 {
                0 => Role::System,
                1 => Role::User,
                2 => Role::Assistant,
                _ => Role::Tool,
            };
            m
        })
        .collect();
    if let Ok(text) = template.render(&messages) {
        for m in &messages {
            assert!(text.contains(m.content.trim()), "{:?} lost", m.content);
        }
    }
});
