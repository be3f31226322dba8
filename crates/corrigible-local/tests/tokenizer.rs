//! The tokenizer built from the GGUF file round-trips text and keeps the chat special tokens.

mod common;

use corrigible::Model;

const TEXTS: &[&str] = &[
    "What is 17 * 23?",
    "  leading spaces, trailing spaces  ",
    "Line one\nLine two\r\n\ttabbed",
    "fn main() {\n    let x: Vec<u32> = (0..10).map(|i| i * 2).collect();\n    println!(\"{x:?}\");\n}",
    "{\"state\":\"action\",\"reason\":\"multiply\",\"tool\":\"calculator\",\"tool_input\":{\"expression\":\"17*23\"}}",
    "Unicode: naïve café, Straße, Ελληνικά, русский, 日本語, 한국어, العربية",
    "Emoji: 👋🏽 🚀 👨‍👩‍👧 ❤️ 🇫🇷",
    "Numbers 1234567890 3.14159 -42 1e10",
    "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
];

#[test]
fn encode_decode_round_trips() {
    let Some(m) = common::model() else { return };
    let t = m.tokenizer();
    for text in TEXTS {
        let ids = t.encode(text).expect("encodes");
        assert_eq!(&t.decode(&ids).expect("decodes"), text, "ids {ids:?}");
    }
}

#[test]
fn digits_are_split_one_by_one() {
    let Some(m) = common::model() else { return };
    let t = m.tokenizer();
    let ids = t.encode("12345").expect("encodes");
    assert_eq!(ids.len(), 5, "{ids:?}");
}

#[test]
fn no_space_is_prepended() {
    let Some(m) = common::model() else { return };
    let t = m.tokenizer();
    let hello = t.encode("Hello").expect("encodes");
    assert_eq!(hello.len(), 1);
    assert_eq!(t.token_name(hello[0]).as_deref(), Some("Hello"));
}

#[test]
fn chat_special_tokens_are_single_tokens() {
    let Some(m) = common::model() else { return };
    let t = m.tokenizer();
    let start = t.token_id("<|im_start|>").expect("im_start exists");
    let end = t.token_id("<|im_end|>").expect("im_end exists");
    let ids = t.encode("<|im_start|>user\nhi<|im_end|>").expect("encodes");
    assert_eq!(ids.first(), Some(&start));
    assert_eq!(ids.last(), Some(&end));
    assert!(t.stop_tokens().contains(&end));
}

#[test]
fn count_tokens_uses_the_real_tokenizer() {
    let Some(m) = common::model() else { return };
    assert_eq!(m.count_tokens("12345"), Some(5));
    assert_eq!(m.count_tokens(""), Some(0));
}
