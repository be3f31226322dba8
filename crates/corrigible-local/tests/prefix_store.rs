//! A new process loads the pre-filled system prompt from the prefix store instead of
//! pre-filling it, and decodes exactly as without the store.

mod common;

use std::path::Path;

use corrigible_local::LocalModel;

fn entries(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    entries.sort();
    entries
}

fn with_store(dir: &Path) -> Option<LocalModel> {
    common::model_with(|c| c.prefix_cache = Some(dir.to_path_buf()))
}

#[test]
fn a_new_model_loads_the_stored_prefix_and_decodes_as_without_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(first) = with_store(dir.path()) else {
        return;
    };
    let request = common::request("What is 17 * 23?", common::tools());
    let cold = first.complete_blocking(&request).expect("first call");
    assert_eq!(cold.prompt_tokens_reused, Some(0), "nothing was stored yet");
    let stored = entries(dir.path());
    assert_eq!(
        stored.len(),
        1,
        "one entry for the system prompt: {stored:?}"
    );

    let plain = common::model_with(|_| {}).expect("the model loads");
    let without = plain.complete_blocking(&request).expect("without a store");
    assert_eq!(without.text, cold.text);

    let second = with_store(dir.path()).expect("the model loads");
    let other = common::request("What time is it in Tokyo?", common::tools());
    let system = second
        .tokenizer()
        .encode(
            &second
                .render(&other.messages[..1])
                .expect("renders the system turn"),
        )
        .expect("encodes");
    let warm = second.complete_blocking(&other).expect("another request");
    let reused = warm.prompt_tokens_reused.expect("reports reuse") as usize;
    assert!(
        reused + 8 >= system.len() && reused < warm.usage.input_tokens as usize,
        "reused {reused} of a {}-token system turn",
        system.len()
    );
    assert_eq!(entries(dir.path()), stored, "a hit saves nothing new");
    let reference = plain.complete_blocking(&other).expect("without a store");
    assert_eq!(warm.text, reference.text);
    assert_eq!(warm.usage, reference.usage);
}

#[test]
fn an_entry_that_cannot_be_read_is_a_miss_and_is_written_again() {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some(first) = with_store(dir.path()) else {
        return;
    };
    let request = common::request("Name a prime number.", common::tools());
    let reply = first.complete_blocking(&request).expect("first call");
    let stored = entries(dir.path());
    let [entry] = stored.as_slice() else {
        panic!("one entry expected: {stored:?}");
    };
    let full = std::fs::read(entry).expect("reads the entry");

    for broken in [&full[..full.len() / 2], b"not an entry".as_slice(), &[]] {
        std::fs::write(entry, broken).expect("breaks the entry");
        let model = with_store(dir.path()).expect("the model loads");
        let again = model
            .complete_blocking(&request)
            .expect("a broken entry is a miss");
        assert_eq!(again.text, reply.text);
        assert_eq!(again.prompt_tokens_reused, Some(0));
        assert_eq!(std::fs::read(entry).expect("rewritten"), full);
    }
}
