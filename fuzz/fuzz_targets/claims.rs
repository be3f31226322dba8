//! The English-text readers behind the evidence rules: calculations claimed in an answer or a
//! thought, and numbers written in digits or words, on any text, never panic.
#![no_main]

use corrigible::arithmetic::{claims, slips};
use corrigible::evidence::number_words::numbers_in_words;
use corrigible::evidence::numbers::numbers_in;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let (answer, thought) = text.split_once('\u{1e}').unwrap_or((text, ""));
    let _ = claims(answer);
    let _ = slips(answer, thought);
    let _ = numbers_in(answer);
    let _ = numbers_in_words(answer);
});
