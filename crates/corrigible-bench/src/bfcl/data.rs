//! The BFCL subset, embedded in the binary (see `data/bfcl/README.md` for its source,
//! version and license).

use super::BfclCategory;

const SIMPLE: &str = include_str!("../../data/bfcl/simple.jsonl");
const MULTIPLE: &str = include_str!("../../data/bfcl/multiple.jsonl");
const PARALLEL: &str = include_str!("../../data/bfcl/parallel.jsonl");
const IRRELEVANCE: &str = include_str!("../../data/bfcl/irrelevance.jsonl");

/// The JSONL text of `category`.
pub fn text(category: BfclCategory) -> &'static str {
    match category {
        BfclCategory::Simple => SIMPLE,
        BfclCategory::Multiple => MULTIPLE,
        BfclCategory::Parallel => PARALLEL,
        BfclCategory::Irrelevance => IRRELEVANCE,
    }
}
