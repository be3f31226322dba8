//! `corrigible parse`: what the engine reads in one model reply, for debugging a model and for
//! running the repair corpus from outside.

use std::io::Read;
use std::process::ExitCode;

use corrigible::ModelReply;
use corrigible::decision::repair::RepairKind;
use corrigible::decision::{
    Parsed, call_arguments, parse_native, parse_text, read_decision_json, read_json,
};
use serde_json::{Value, json};

use crate::args::ParseArgs;

/// Reads one reply from stdin and prints one JSON object; exit 0 when every decision was
/// read, 1 when one was refused, 2 on a usage error.
pub fn parse(args: &ParseArgs) -> ExitCode {
    let mut input = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut input) {
        eprintln!("error: cannot read stdin: {e}");
        return ExitCode::from(2);
    }
    let repair = !args.no_repair;
    let (out, ok) = if args.native {
        match serde_json::from_str::<ModelReply>(&input) {
            Ok(reply) => native(&reply, repair),
            Err(e) => {
                eprintln!(
                    "error: --native reads a reply as JSON {{\"text\", \"tool_calls\": [{{\"id\", \"name\", \"arguments\"}}]}}: {e}"
                );
                return ExitCode::from(2);
            }
        }
    } else {
        let parsed = parse_text(&input, repair);
        let value = read_decision_json(&input, repair).0.ok();
        let ok = parsed.decision.is_ok();
        (outcome(&parsed, value), ok)
    };
    println!("{out}");
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn native(reply: &ModelReply, repair: bool) -> (Value, bool) {
    let parsed = parse_native(reply, repair);
    let mut calls = Vec::with_capacity(parsed.len());
    for (i, p) in parsed.iter().enumerate() {
        let call = reply.tool_calls.get(i);
        let value = call.and_then(|c| read_json(call_arguments(c), repair).0.ok());
        let mut entry = outcome(p, value);
        if let (Some(obj), Some(call)) = (entry.as_object_mut(), call) {
            obj.insert("call_id".into(), json!(call.id));
            obj.insert("name".into(), json!(call.name));
        }
        calls.push(entry);
    }
    let ok = parsed.iter().all(|p| p.decision.is_ok());
    (json!({ "calls": calls }), ok)
}

fn outcome(parsed: &Parsed, value: Option<Value>) -> Value {
    match &parsed.decision {
        Ok(decision) => json!({
            "json": value,
            "decision": decision.to_json(),
            "repairs": parsed.repairs.iter().map(|k| k.as_str()).collect::<Vec<_>>(),
        }),
        Err(rejection) => {
            let mut out = json!({
                "rejection": {"category": rejection.category, "message": rejection.message},
            });
            if !parsed.repairs.is_empty() {
                out["repairs"] = json!(
                    parsed
                        .repairs
                        .iter()
                        .copied()
                        .map(RepairKind::as_str)
                        .collect::<Vec<_>>()
                );
            }
            if let Some(v) = value {
                out["json"] = v;
            }
            out
        }
    }
}
