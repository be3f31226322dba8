//! The replay-file reader: any text is a replay or a typed error.
#![no_main]

use corrigible_models::ReplayModel;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Ok(model) = ReplayModel::from_str(text) {
        assert_eq!(model.remaining(), model.len());
    }
});
