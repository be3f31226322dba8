//! Every BFCL answer, turned into the call it describes, passes the engine's schema validation
//! and the checker: the dialect mapping and the checker agree with the data.

use corrigible_bench::bfcl::schema::tool_name;
use corrigible_bench::bfcl::{BfclCategory, Call, check, load};
use corrigible_bench::suite::TaskKind;
use serde_json::{Map, Value};

/// The first allowed value of each parameter, leaving out those that may be omitted.
fn ideal_args(params: &Map<String, Value>) -> Map<String, Value> {
    let mut arguments = Map::new();
    for (param, allowed) in params {
        let first = allowed.as_array().and_then(|a| a.first()).cloned();
        match first {
            Some(Value::String(s)) if s.is_empty() => {}
            Some(value) => {
                arguments.insert(param.clone(), ideal_value(value));
            }
            None => {}
        }
    }
    arguments
}

/// Dicts inside allowed values list allowed values per key in turn.
fn ideal_value(value: Value) -> Value {
    match value {
        Value::Object(dict) => Value::Object(ideal_args(&dict)),
        Value::Array(items) => Value::Array(items.into_iter().map(ideal_value).collect()),
        other => other,
    }
}

fn ideal_call(entry: &Map<String, Value>) -> Call {
    let (name, params) = entry.iter().next().unwrap();
    Call {
        name: tool_name(name),
        arguments: ideal_args(params.as_object().unwrap()),
    }
}

#[test]
fn ideal_calls_validate_and_pass() {
    let mut failures = Vec::new();
    let mut total = 0;
    for category in [
        BfclCategory::Simple,
        BfclCategory::Multiple,
        BfclCategory::Parallel,
    ] {
        for task in load(category).unwrap() {
            let TaskKind::Bfcl(bfcl) = &task.kind else {
                unreachable!()
            };
            let registry = bfcl.registry().unwrap();
            let calls: Vec<Call> = bfcl.answer.iter().map(ideal_call).collect();
            total += 1;
            for call in &calls {
                if let Some(Err(e)) =
                    registry.validate(&call.name, &Value::Object(call.arguments.clone()))
                {
                    failures.push(format!("{}: schema: {e}", task.id));
                }
            }
            if let Err(e) = check(category, &bfcl.functions, &bfcl.answer, &calls) {
                failures.push(format!("{}: checker: {e}", task.id));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {total}:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
