//! The GGUF metadata and tensor-table reader: any bytes are a checked header (tensors within
//! the file, tokenizer, chat template) or a typed error, never a panic or an allocation the
//! bytes cannot back.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let _ = corrigible_local::check_gguf(&mut Cursor::new(bytes));
});
