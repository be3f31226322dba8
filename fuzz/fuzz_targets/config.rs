//! The configuration file (`corrigible.toml`): any text is a valid configuration or an error
//! naming the key; a valid one prints back to TOML that parses to the same configuration
//! (unless it holds MCP headers, whose values print as `***`).
#![no_main]

#[allow(dead_code)]
#[path = "../../crates/corrigible-cli/src/args.rs"]
mod args;
#[allow(dead_code)]
#[path = "../../crates/corrigible-cli/src/config.rs"]
mod config;
#[allow(dead_code)]
#[path = "../../crates/corrigible-cli/src/mcp.rs"]
mod mcp;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let Ok(parsed) = config::parse(text) else {
        return;
    };
    let printed = parsed.to_toml().expect("a valid configuration prints");
    if parsed.mcp.iter().all(|table| table.headers.is_empty()) {
        let again = config::parse(&printed).expect("the printed configuration parses");
        assert_eq!(again, parsed, "{printed}");
    }
});
