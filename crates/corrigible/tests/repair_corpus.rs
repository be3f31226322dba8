//! The repair corpus (tests/data/repair): no damaged reply is ever read as a value other than
//! the one it means, and at least 85% are handled correctly (recovered, or rightly refused).
//! Only an object is a reading the engine acts on; any other JSON value is refused by
//! normalization. With `REPAIR_CORPUS_OUT=FILE`, the value read for each case (or null) is
//! written to FILE as `{id: value}`, for `scripts/repair-bench`.

use std::collections::BTreeMap;
use std::path::Path;

use corrigible::decision::{read_decision_json, read_json};
use serde_json::Value;

struct Case {
    id: String,
    category: String,
    native: bool,
    input: String,
    expect: Option<Value>,
}

fn corpus() -> Vec<Case> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/repair");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the corpus directory")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    let mut cases = Vec::new();
    for file in files {
        for line in std::fs::read_to_string(&file).unwrap().lines() {
            if line.trim().is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(line).unwrap();
            cases.push(Case {
                id: v["id"].as_str().unwrap().to_string(),
                category: v["category"].as_str().unwrap().to_string(),
                native: v["mode"] == "native",
                input: v["input"].as_str().unwrap().to_string(),
                expect: v.get("expect").cloned(),
            });
            assert!(
                cases.last().unwrap().expect.is_some() || v.get("refuse").is_some(),
                "{line}"
            );
        }
    }
    cases
}

#[test]
fn no_silent_corruption_and_most_cases_handled() {
    let cases = corpus();
    assert!(cases.len() >= 150, "{} cases", cases.len());
    let mut handled = 0;
    let mut corrupt = Vec::new();
    let mut recoverable = Vec::new();
    // category -> [recovered, refused correctly, refused but recoverable, silent corruption]
    let mut table: BTreeMap<&str, [usize; 4]> = BTreeMap::new();
    let mut values = serde_json::Map::new();
    for case in &cases {
        let read = if case.native {
            read_json(&case.input, true).0
        } else {
            read_decision_json(&case.input, true).0
        };
        let read = read.ok().filter(Value::is_object);
        values.insert(case.id.clone(), read.clone().unwrap_or(Value::Null));
        let outcome = match (read, &case.expect) {
            (Some(v), Some(e)) if &v == e => 0,
            (None, None) => 1,
            (None, Some(_)) => {
                recoverable.push(case.id.as_str());
                2
            }
            (Some(v), _) => {
                corrupt.push(format!("{}: read {v}", case.id));
                3
            }
        };
        if outcome < 2 {
            handled += 1;
        }
        table.entry(case.category.as_str()).or_default()[outcome] += 1;
    }
    println!("category              n  recovered  refused  refused-but-recoverable  corrupt");
    for (category, row) in &table {
        let n: usize = row.iter().sum();
        println!(
            "{category:<18} {n:>4} {:>10} {:>8} {:>24} {:>8}",
            row[0], row[1], row[2], row[3]
        );
    }
    println!(
        "handled correctly {handled}/{} ({:.1}%), silent corruptions {}",
        cases.len(),
        100.0 * handled as f64 / cases.len() as f64,
        corrupt.len()
    );
    if let Ok(path) = std::env::var("REPAIR_CORPUS_OUT") {
        std::fs::write(path, Value::Object(values).to_string()).unwrap();
    }
    assert!(corrupt.is_empty(), "silent corruptions: {corrupt:#?}");
    let share = handled as f64 / cases.len() as f64;
    assert!(
        share >= 0.85,
        "handled {handled}/{}; refused but recoverable: {recoverable:?}",
        cases.len()
    );
}
