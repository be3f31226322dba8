//! The English-text readers behind the evidence rules: calculations claimed in an answer or a
//! thought, the thought calculator's rewrite, and numbers written in digits or words, on any
//! text, never panic; a rewrite always replaces the value where it is written.
#![no_main]

use corrigible::arithmetic::{claims, first_wrong_value, slips};
use corrigible::evidence::number_words::numbers_in_words;
use corrigible::evidence::numbers::numbers_in;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let (answer, thought) = text.split_once('\u{1e}').unwrap_or((text, ""));
    let _ = claims(answer);
    let _ = slips(answer, thought);
    let _ = numbers_in(answer);
    let _ = numbers_in_words(answer);
    let from = thought.len() % (answer.len() + 1);
    if let Some(fix) = first_wrong_value(answer, from) {
        assert!(answer[fix.at..].starts_with(&fix.claim.stated));
        let rewritten = fix.rewritten(answer);
        assert_eq!(first_wrong_value(&rewritten, fix.at), None, "{rewritten}");
    }
});
