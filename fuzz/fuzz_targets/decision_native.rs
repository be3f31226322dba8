//! Native tool calls: arguments, names and reply text of any shape give one decision or
//! rejection per call, never a panic. Input: the reply text, then one record per call
//! (`name`, newline, `arguments`), records separated by U+001E.
#![no_main]

use corrigible::decision::parse_native;
use corrigible::{ModelReply, ToolCall};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &str| {
    let mut records = input.split('\u{1e}');
    let text = records.next().filter(|t| !t.is_empty()).map(str::to_string);
    let tool_calls = records
        .enumerate()
        .map(|(i, record)| {
            let (name, arguments) = record.split_once('\n').unwrap_or((record, ""));
            ToolCall {
                id: format!("call_{i}"),
                name: name.to_string(),
                arguments: arguments.to_string(),
            }
        })
        .collect::<Vec<_>>();
    let reply = ModelReply {
        text,
        tool_calls,
        ..Default::default()
    };
    for allow in [false, true] {
        let parsed = parse_native(&reply, allow);
        assert_eq!(parsed.len(), reply.tool_calls.len().max(1));
    }
});
