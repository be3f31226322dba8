//! What the grammar forces is fed without a choice: several tokens in one forward pass, and
//! the reply still what the grammar allows.

mod common;

use corrigible_local::GenerationEnd;
use serde_json::json;

const PROMPT: &str = "<|im_start|>user\nGreet me in one word.<|im_end|>\n<|im_start|>assistant\n";

#[test]
fn a_fixed_key_is_fed_without_a_choice() {
    let Some(m) = common::model() else { return };
    let schema = json!({
        "type": "object",
        "properties": {"greeting": {"type": "string", "maxLength": 12}},
        "required": ["greeting"],
        "additionalProperties": false,
        "x-guidance": {"whitespace_flexible": false}
    });
    let generation = m.generate(PROMPT, Some(&schema)).expect("generates");
    let text = m.tokenizer().decode(&generation.tokens).expect("decodes");
    let value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert!(value["greeting"].is_string(), "{text}");
    assert!(
        generation.forced >= 2,
        "the key and its quotes: {generation:?}"
    );
    assert!(
        generation.forced < generation.tokens.len(),
        "{generation:?}"
    );
    let without_choice = generation.margins[..generation.tokens.len()]
        .iter()
        .filter(|m| m.is_infinite())
        .count();
    assert!(without_choice >= generation.forced, "{generation:?}");
}

#[test]
fn a_reply_the_grammar_fixes_whole_is_fed_with_the_prompt() {
    let Some(m) = common::model() else { return };
    let schema = json!({
        "const": {"state": "final", "satisfied": true},
        "x-guidance": {"whitespace_flexible": false}
    });
    let generation = m.generate(PROMPT, Some(&schema)).expect("generates");
    let text = m.tokenizer().decode(&generation.tokens).expect("decodes");
    let value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(
        value,
        json!({"state": "final", "satisfied": true}),
        "{text}"
    );
    assert_eq!(generation.forced, generation.tokens.len(), "{generation:?}");
    assert_eq!(generation.stop, GenerationEnd::GrammarComplete);
    assert_eq!(generation.least_certain(), None);
}

#[test]
fn forced_tokens_stop_at_the_token_bound() {
    let Some(m) = common::model() else { return };
    let schema = json!({
        "const": {"state": "final", "satisfied": true},
        "x-guidance": {"whitespace_flexible": false}
    });
    let generation = m
        .with_max_tokens(3)
        .generate(PROMPT, Some(&schema))
        .expect("generates");
    assert_eq!(generation.tokens.len(), 3, "{generation:?}");
    assert_eq!(generation.stop, GenerationEnd::MaxTokens);
}
