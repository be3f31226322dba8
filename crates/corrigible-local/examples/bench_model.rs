//! Prints prefill/decode speed and peak memory of the embedded model.
//!
//! `cargo run --release -p corrigible-local --example bench_model [-- --as-shipped]`

use corrigible_local::bench::{DEFAULT_DECODE_TOKENS, DEFAULT_PROMPT_TOKENS, bench_model};
use corrigible_local::{LocalConfig, Weights, resolve_model_path};

fn main() {
    let mut config = match resolve_model_path() {
        Ok(path) => LocalConfig::new(path),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if std::env::args().any(|a| a == "--as-shipped") {
        config.weights = Weights::AsShipped;
    }
    match bench_model(config, &DEFAULT_PROMPT_TOKENS, DEFAULT_DECODE_TOKENS) {
        Ok(report) => println!("{report}"),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
