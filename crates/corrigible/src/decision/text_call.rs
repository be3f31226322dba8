//! Tool calls written as text under the native protocol.
//!
//! A model behind an OpenAI-compatible server may write its call in its own text format when
//! the server does not turn it into `tool_calls`. A reply that is such a call must not pass as
//! a final answer. Recognized: a bare JSON object (or list of them) with `name` and
//! `arguments` or `parameters`, possibly fenced, HTML-escaped or in doubled braces; Qwen/Hermes
//! `<tool_call>…</tool_call>`; Llama 3.x `<|python_tag|>` and `<function=NAME>…</function>`;
//! Mistral `[TOOL_CALLS] […]` and `[TOOL_CALLS]NAME[ARGS]{…}`.
//!
//! Precision comes first. Bare JSON counts only when it is the whole reply, has no other keys
//! and names a registered tool. A marker counts when the reply starts with it, or when every
//! call after it names a registered tool; prose that merely shows the format stays an answer.

use serde_json::{Map, Value};

use super::Decision;
use super::html_escaped::unescape_html;
use super::parse::{Parsed, parse_call};
use super::unique_keys;
use crate::correction::rejection::{Category, Rejection};
use crate::decision::repair::RepairKind;
use crate::message::ToolCall;
use crate::tool::FINAL_ANSWER;

/// What a native reply's text is, read as a call written as text.
#[derive(Debug, Clone, PartialEq)]
enum Found {
    /// Not a call: the text stays a final answer.
    NotACall,
    /// Calls, each a tool name and its arguments as written (`None` when absent).
    Calls(Vec<(String, Option<Value>)>),
    /// A reply that starts with a call marker whose content cannot be read.
    Unreadable(&'static str),
    /// A call of the named registered tool in a code block with prose after it: plainly a
    /// call, but what the prose around it means is not, so it is sent back, not executed.
    Embedded(String),
}

/// Reads the text of a native reply that has no tool call. `None`: the text is not a call and
/// stays a final answer. Otherwise the call is executed as an action (recorded as a
/// [`RepairKind::TextToolCall`] repair) when it is unambiguous (exactly one call, of a tool in
/// `tools`, with a JSON object of arguments) and `allow_repair` is set; any other call is
/// rejected with feedback that says to use the tool-calling interface.
pub fn parse_text_call(text: &str, tools: &[&str], allow_repair: bool) -> Option<Parsed> {
    let calls = match find(text, tools) {
        Found::NotACall => return None,
        Found::Calls(calls) => calls,
        Found::Embedded(name) => {
            return Some(rejected(
                Rejection::new(
                    Category::InvalidToolInput,
                    format!(
                        "your reply writes a call of `{name}` as text, in a code block among \
                         prose; do not write calls in the reply text: call `{name}` through the \
                         tool-calling interface"
                    ),
                )
                .with_tool(name),
            ));
        }
        Found::Unreadable(format) => {
            return Some(rejected(Rejection::new(
                Category::DecisionSchema,
                format!(
                    "your reply writes a tool call as text ({format}) that cannot be read; do not \
                     write calls in the reply text: call the tool through the tool-calling \
                     interface (a native tool call), or call `final_answer`"
                ),
            )));
        }
    };
    let [(name, arguments)] = calls.as_slice() else {
        let names: Vec<String> = calls.iter().map(|(n, _)| format!("`{n}`")).collect();
        return Some(rejected(Rejection::new(
            Category::DecisionSchema,
            format!(
                "your reply writes {} tool calls as text ({}); do not write calls in the reply \
                 text: make each one a native call through the tool-calling interface",
                calls.len(),
                names.join(", ")
            ),
        )));
    };
    if !tools.contains(&name.as_str()) {
        return Some(rejected(
            Rejection::new(
                Category::UnknownTool,
                format!(
                    "your reply writes a call of `{name}` as text, and no tool has that name; \
                     the tools are {}: call one through the tool-calling interface",
                    tools
                        .iter()
                        .map(|t| format!("`{t}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .with_tool(name.clone()),
        ));
    }
    let Some(arguments) = arguments_object(arguments.as_ref()) else {
        return Some(rejected(
            Rejection::new(
                Category::InvalidToolInput,
                format!(
                    "your reply writes a call of `{name}` as text, and its arguments are not a \
                     JSON object; call `{name}` through the tool-calling interface with an \
                     object of arguments"
                ),
            )
            .with_tool(name.clone()),
        ));
    };
    if !allow_repair {
        return Some(rejected(
            Rejection::new(
                Category::InvalidToolInput,
                format!(
                    "your reply writes a call of `{name}` as text; do not write calls in the \
                     reply text: call `{name}` through the tool-calling interface"
                ),
            )
            .with_tool(name.clone()),
        ));
    }
    let call = ToolCall {
        id: String::new(),
        name: name.clone(),
        arguments: Value::Object(arguments).to_string(),
    };
    let parsed = parse_call(&call, "", false);
    Some(Parsed {
        decision: parsed.decision.map(|d| match d {
            Decision::Action(a) => Decision::Action(super::Action { call_id: None, ..a }),
            Decision::Final(f) => Decision::Final(super::Final { call_id: None, ..f }),
        }),
        repairs: vec![RepairKind::TextToolCall],
        call_id: None,
    })
}

fn rejected(rejection: Rejection) -> Parsed {
    Parsed {
        decision: Err(rejection),
        repairs: Vec::new(),
        call_id: None,
    }
}

/// Arguments as an object: absent is `{}`, JSON text holding an object is that object.
fn arguments_object(arguments: Option<&Value>) -> Option<Map<String, Value>> {
    match arguments {
        None => Some(Map::new()),
        Some(Value::Object(map)) => Some(map.clone()),
        Some(Value::String(text)) => match unique_keys::from_str(text) {
            Ok(Value::Object(map)) => Some(map),
            _ => None,
        },
        Some(_) => None,
    }
}

const MARKERS: [&str; 4] = [
    "<tool_call>",
    "<|python_tag|>",
    "[TOOL_CALLS]",
    "<function=",
];

fn find(text: &str, tools: &[&str]) -> Found {
    let text = text.trim();
    if let Some((start, marker)) = MARKERS
        .iter()
        .filter_map(|m| text.find(m).map(|i| (i, *m)))
        .min_by_key(|(i, _)| *i)
    {
        let at_start = start == 0;
        return match tagged(&text[start..], marker) {
            Some(calls) if at_start || calls.iter().all(|(n, _)| tools.contains(&n.as_str())) => {
                Found::Calls(calls)
            }
            None if at_start => Found::Unreadable(marker),
            _ => Found::NotACall,
        };
    }
    if let Some(calls) = bare(text, tools) {
        return Found::Calls(calls);
    }
    if let Some(call) =
        trailing_fenced_call(text, tools).or_else(|| trailing_bare_call(text, tools))
    {
        return Found::Calls(vec![call]);
    }
    if let Some(name) = embedded_fenced_call(text, tools) {
        return Found::Embedded(name);
    }
    if starts_as_call(text, tools) {
        return Found::Unreadable("a JSON call cut off or broken");
    }
    Found::NotACall
}

/// Prose that ends with a code block (untagged or `json`, opening a line) holding exactly one
/// call of a registered tool in the strict bare shape: a plan written out, then its call.
fn trailing_fenced_call(text: &str, tools: &[&str]) -> Option<(String, Option<Value>)> {
    let text = text.trim_end();
    let blocks = fenced_blocks(text);
    let (range, body) = blocks.last()?;
    if range.end != text.len() || text[..range.start].trim().is_empty() {
        return None;
    }
    fenced_call(body, tools)
}

/// Prose that ends with a JSON object opening a line, holding exactly one call of a registered
/// tool in the strict bare shape: the same plan and call as [`trailing_fenced_call`], unfenced.
fn trailing_bare_call(text: &str, tools: &[&str]) -> Option<(String, Option<Value>)> {
    let text = text.trim_end();
    text.match_indices('\n')
        .map(|(i, _)| i + 1)
        .filter(|&start| {
            text[start..]
                .trim_start_matches([' ', '\t'])
                .starts_with('{')
        })
        .filter(|&start| !text[..start].trim().is_empty())
        .find_map(|start| fenced_call(&text[start..], tools))
}

/// The tool called in a code block that has prose after it, when the block holds exactly one
/// strict call of a registered tool.
fn embedded_fenced_call(text: &str, tools: &[&str]) -> Option<String> {
    let text = text.trim_end();
    fenced_blocks(text)
        .into_iter()
        .filter(|(range, _)| !text[range.end..].trim().is_empty())
        .find_map(|(_, body)| fenced_call(body, tools))
        .map(|(name, _)| name)
}

/// The code blocks of `text` whose fence opens a line and is untagged or `json`: each block's
/// byte range, fences included, and its body.
fn fenced_blocks(text: &str) -> Vec<(std::ops::Range<usize>, &str)> {
    let mut blocks = Vec::new();
    let mut from = 0;
    while let Some(open) = text[from..].find("```").map(|i| from + i) {
        let Some(close) = text[open + 3..].find("```").map(|i| open + 3 + i) else {
            break;
        };
        from = close + 3;
        let before = text[..open].trim_end_matches([' ', '\t']);
        let line_start = before.is_empty() || before.ends_with('\n');
        let Some((info, body)) = text[open + 3..close].split_once('\n') else {
            continue;
        };
        let info = info.trim();
        if line_start && (info.is_empty() || info.eq_ignore_ascii_case("json")) {
            blocks.push((open..from, body));
        }
    }
    blocks
}

/// A code block's body that is exactly one strict call of a registered tool.
fn fenced_call(body: &str, tools: &[&str]) -> Option<(String, Option<Value>)> {
    let value = unique_keys::from_str(body.trim()).ok()?;
    let call = call_shape(&value, true)?;
    tools.contains(&call.0.as_str()).then_some(call)
}

/// The calls after `marker` at the start of `text`, when every one of them reads.
fn tagged(text: &str, marker: &str) -> Option<Vec<(String, Option<Value>)>> {
    match marker {
        "<tool_call>" => {
            let mut calls = Vec::new();
            for block in text.split("<tool_call>").skip(1) {
                let body = block.split("</tool_call>").next().unwrap_or(block);
                calls.extend(json_calls(body)?);
            }
            non_empty(calls)
        }
        "<|python_tag|>" => {
            let body = text.trim_start_matches(marker);
            let body = ["<|eom_id|>", "<|eot_id|>"]
                .iter()
                .fold(body, |b, end| b.split(end).next().unwrap_or(b));
            json_calls(body)
        }
        "[TOOL_CALLS]" => {
            let body = text.trim_start_matches(marker).trim();
            json_calls(body).or_else(|| mistral_args_calls(body))
        }
        _ => {
            let mut calls = Vec::new();
            for block in text.split("<function=").skip(1) {
                let (name, rest) = block.split_once('>')?;
                let body = rest.split("</function>").next().unwrap_or(rest);
                let arguments = unique_keys::from_str(body.trim()).ok()?;
                calls.push((name.trim().to_string(), Some(arguments)));
            }
            non_empty(calls)
        }
    }
}

fn non_empty<T>(items: Vec<T>) -> Option<Vec<T>> {
    (!items.is_empty()).then_some(items)
}

/// Calls in JSON text after a marker: one call object, a list of them, or several separated by
/// whitespace or `;`.
fn json_calls(body: &str) -> Option<Vec<(String, Option<Value>)>> {
    let mut calls = Vec::new();
    let mut rest = body.trim();
    while !rest.is_empty() {
        let (value, end) = unique_keys::leading(rest)?;
        rest = rest[end..].trim_start_matches([';', ' ', '\n', '\r', '\t']);
        match value {
            Value::Array(items) => {
                for item in items {
                    calls.push(call_shape(&item, false)?);
                }
            }
            item => calls.push(call_shape(&item, false)?),
        }
    }
    non_empty(calls)
}

/// Mistral's newer form: `NAME[ARGS]{…}`, repeated.
fn mistral_args_calls(body: &str) -> Option<Vec<(String, Option<Value>)>> {
    let mut calls = Vec::new();
    let mut rest = body.trim();
    while !rest.is_empty() {
        let (name, after) = rest.split_once("[ARGS]")?;
        let (arguments, end) = unique_keys::leading(after)?;
        let name = name.trim().trim_start_matches("[TOOL_CALLS]").trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return None;
        }
        calls.push((name.to_string(), Some(arguments)));
        rest = after[end..].trim();
    }
    non_empty(calls)
}

/// A whole reply that is bare JSON call(s) of registered tools, or the JSON protocol's own
/// decision written as text.
fn bare(text: &str, tools: &[&str]) -> Option<Vec<(String, Option<Value>)>> {
    let value = candidates(text).iter().find_map(|c| leading_json(c))?;
    let calls = match &value {
        Value::Array(items) if !items.is_empty() => items
            .iter()
            .map(|item| call_shape(item, true))
            .collect::<Option<Vec<_>>>()?,
        Value::Object(_) => vec![call_shape(&value, true).or_else(|| decision_shape(&value))?],
        _ => return None,
    };
    calls
        .iter()
        .all(|(name, _)| tools.contains(&name.as_str()))
        .then_some(calls)
}

/// The texts a bare call may be written as: the reply without its code fence (also one left
/// open), with one brace of doubled braces dropped (`{{"name": …}}`), each also HTML-unescaped.
fn candidates(text: &str) -> Vec<String> {
    let text = text.trim();
    let text = unfence(text)
        .or_else(|| open_fence(text))
        .unwrap_or(text)
        .trim();
    let mut out = vec![text.to_string()];
    if text.starts_with("{{") {
        out.push(text[1..].to_string());
    }
    for candidate in out.clone() {
        if let Some(unescaped) = unescape_html(&candidate) {
            out.push(unescaped);
        }
    }
    out
}

/// The JSON value at the start of `text`, when all that follows it is closing braces, fence
/// backticks and whitespace (`{"name": …}}}` after doubled braces, a fence left behind).
fn leading_json(text: &str) -> Option<Value> {
    let (value, end) = unique_keys::leading(text)?;
    text[end..]
        .chars()
        .all(|c| c.is_whitespace() || c == '}' || c == '`')
        .then_some(value)
}

/// The JSON protocol's decision written as text: a final (`satisfied`, `final_summary`) is a
/// `final_answer` call, an action (`tool`, `tool_input`) a call of that tool. No other key.
fn decision_shape(value: &Value) -> Option<(String, Option<Value>)> {
    let map = value.as_object()?;
    let state = map.get("state").and_then(Value::as_str);
    let only = |keys: &[&str]| map.keys().all(|k| keys.contains(&k.as_str()));
    if map.get("final_summary").is_some_and(Value::is_string)
        && state.is_none_or(|s| s == "final")
        && only(&["state", "satisfied", "final_summary"])
    {
        let mut arguments = map.clone();
        arguments.remove("state");
        return Some((FINAL_ANSWER.to_string(), Some(Value::Object(arguments))));
    }
    let tool = map.get("tool").and_then(Value::as_str)?;
    (state.is_none_or(|s| s == "action") && only(&["state", "reason", "tool", "tool_input"])).then(
        || {
            let input = map.get("tool_input").cloned();
            (
                tool.to_string(),
                Some(input.unwrap_or_else(|| Value::Object(Map::new()))),
            )
        },
    )
}

/// Whether a reply that reads as no JSON at all starts as a call or a decision: its first key
/// is `name` with a registered tool, `tool` with one, `state` with `action` or `final`, or
/// `satisfied` or `final_summary`. Such a reply was cut off or broken, and is no answer.
fn starts_as_call(text: &str, tools: &[&str]) -> bool {
    let candidates = candidates(text);
    if candidates.iter().any(|c| leading_json(c).is_some()) {
        return false;
    }
    candidates.iter().any(|candidate| {
        let Some((key, value)) = first_member(candidate) else {
            return false;
        };
        let registered = value.is_some_and(|v| tools.contains(&v));
        match key {
            "name" | "tool" => registered,
            "state" => matches!(value, Some("action" | "final")),
            "satisfied" | "final_summary" => true,
            _ => false,
        }
    })
}

/// The first key of the JSON object `text` opens, and its value when that is a string without
/// escapes.
fn first_member(text: &str) -> Option<(&str, Option<&str>)> {
    let rest = text.strip_prefix('{')?.trim_start().strip_prefix('"')?;
    let (key, rest) = rest.split_once('"')?;
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let value = rest
        .strip_prefix('"')
        .and_then(|r| r.split_once('"'))
        .map(|(v, _)| v)
        .filter(|v| !v.contains('\\'));
    Some((key, value))
}

/// The body of a reply that is wholly one fenced code block, untagged or `json`.
fn unfence(text: &str) -> Option<&str> {
    let body = text.strip_prefix("```")?.strip_suffix("```")?;
    let (info, body) = body.split_once('\n')?;
    let info = info.trim();
    (info.is_empty() || info.eq_ignore_ascii_case("json")).then_some(body)
}

/// The body of a reply that opens a code block, untagged or `json`, and never closes it.
fn open_fence(text: &str) -> Option<&str> {
    let (info, body) = text.strip_prefix("```")?.split_once('\n')?;
    let info = info.trim();
    (info.is_empty() || info.eq_ignore_ascii_case("json")).then_some(body)
}

/// A call object: `{name, arguments | parameters}`, or OpenAI's `{type, function: {…}}`.
/// `strict` (bare JSON) allows no other keys and needs the arguments key.
fn call_shape(value: &Value, strict: bool) -> Option<(String, Option<Value>)> {
    let map = value.as_object()?;
    if let Some(function) = map.get("function").filter(|f| f.is_object()) {
        if strict
            && map
                .keys()
                .any(|k| !matches!(k.as_str(), "type" | "id" | "function"))
        {
            return None;
        }
        return call_shape(function, strict);
    }
    let name = map.get("name")?.as_str()?.trim();
    if name.is_empty() || name.contains(char::is_whitespace) {
        return None;
    }
    let arguments = map.get("arguments").or_else(|| map.get("parameters"));
    if strict
        && (arguments.is_none()
            || map.keys().any(|k| {
                !matches!(
                    k.as_str(),
                    "name" | "arguments" | "parameters" | "type" | "id"
                )
            }))
    {
        return None;
    }
    Some((name.to_string(), arguments.cloned()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const TOOLS: [&str; 3] = ["calculator", "weather", "final_answer"];

    fn one(text: &str) -> (String, Value) {
        match find(text, &TOOLS) {
            Found::Calls(calls) if calls.len() == 1 => {
                let (name, arguments) = calls.into_iter().next().unwrap_or_default();
                (name, arguments.unwrap_or(Value::Null))
            }
            other => panic!("expected one call in {text:?}, got {other:?}"),
        }
    }

    fn calc(expression: &str) -> (String, Value) {
        ("calculator".into(), json!({"expression": expression}))
    }

    #[test]
    fn the_formats_models_write() {
        let cases = [
            r#"{"name": "calculator", "arguments": {"expression": "2*3"}}"#,
            r#"{"type": "function", "name": "calculator", "parameters": {"expression": "2*3"}}"#,
            "```json\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"2*3\"}}\n```",
            r#"{{"name": "calculator", "arguments": {"expression": "2*3"}}}"#,
            r#"{&#34;name&#34;: &#34;calculator&#34;, &#34;arguments&#34;: {&#34;expression&#34;: &#34;2*3&#34;}}"#,
            r#"[{"name": "calculator", "arguments": {"expression": "2*3"}}]"#,
            r#"{"type": "function", "function": {"name": "calculator", "arguments": "{\"expression\": \"2*3\"}"}}"#,
            "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"2*3\"}}\n</tool_call>",
            "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"2*3\"}}",
            "I will compute it.\n<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"2*3\"}}\n</tool_call>",
            "<|python_tag|>{\"name\": \"calculator\", \"parameters\": {\"expression\": \"2*3\"}}<|eom_id|>",
            "<function=calculator>{\"expression\": \"2*3\"}</function>",
            "[TOOL_CALLS] [{\"name\": \"calculator\", \"arguments\": {\"expression\": \"2*3\"}}]",
            "[TOOL_CALLS]calculator[ARGS]{\"expression\": \"2*3\"}",
            r#"{{"name": "calculator", "arguments": {"expression": "2*3"}}}}"#,
            "{{\"name\": \"calculator\", \"arguments\": {\"expression\": \"2*3\"}}}}\n```",
            "```json\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"2*3\"}}",
            r#"{"state": "action", "reason": "r", "tool": "calculator", "tool_input": {"expression": "2*3"}}"#,
        ];
        for text in cases {
            let (name, arguments) = one(text);
            let arguments = arguments_object(Some(&arguments)).map(Value::Object);
            assert_eq!((name, arguments.unwrap_or_default()), calc("2*3"), "{text}");
        }
    }

    #[test]
    fn answers_that_mention_tools_or_hold_json_stay_answers() {
        let answers = [
            "1234 * 5678 = 7006652.",
            "I used the calculator tool: the result is 42.",
            "The weather tool says Paris is 18°C.",
            r#"The result is {"expression": "2*3", "value": 6}."#,
            r#"Here is the call I made: {"name": "calculator", "arguments": {"expression": "2*3"}}, which gave 6."#,
            r#"{"name": "Alice", "arguments": ["she", "said"]}"#,
            r#"{"name": "calculator", "arguments": {"expression": "2*3"}, "result": 6}"#,
            r#"{"city": "Paris", "temp_c": 18}"#,
            r#"[1, 2, 3]"#,
            "Qwen models write calls as <tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call>.",
            "Mistral prefixes calls with [TOOL_CALLS] in its output.",
            "```json\n{\"total\": 7006652}\n```",
            r#"{"state": "final", "answer": 42}"#,
            r#"{"state": "CA", "capital": "Sacramento"}"#,
            r#"{"name": "Bob", "age": "#,
            r#"{"tool": "a hammer", "use": "nails"}"#,
            "",
            "Call it like this:\n```python\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"2*3\"}}\n```",
            "A call looks like this:\n```json\n{\"name\": \"search\", \"arguments\": {\"q\": \"x\"}}\n```",
            "The call was:\n```json\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"2*3\"}, \"result\": 6}\n```",
            "The result:\n```json\n{\"name\": \"calculator\", \"value\": 6}\n```",
            "Inline ```{\"name\": \"calculator\", \"arguments\": {}}```",
            "The call was:\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"2*3\"}, \"result\": 6}",
            "The call was:\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"2*3\"}}\nand it gave 6.",
            "A search call:\n{\"name\": \"search\", \"arguments\": {\"q\": \"x\"}}",
            "The result:\n{\"name\": \"calculator\", \"value\": 6}",
        ];
        for text in answers {
            assert_eq!(find(text, &TOOLS), Found::NotACall, "{text}");
            assert!(parse_text_call(text, &TOOLS, true).is_none(), "{text}");
        }
    }

    #[test]
    fn a_call_fenced_after_its_plan_is_a_call() {
        let text = "I'll multiply with the calculator.\n\n```json\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"1234 * 5678\"}}\n```\n";
        assert_eq!(
            find(text, &TOOLS),
            Found::Calls(vec![(
                "calculator".into(),
                Some(json!({"expression": "1234 * 5678"}))
            )])
        );
        let parsed = parse_text_call(text, &TOOLS, true).unwrap_or_else(|| panic!("a call"));
        assert_eq!(parsed.repairs, vec![RepairKind::TextToolCall]);
        assert!(matches!(parsed.decision, Ok(Decision::Action(_))));
    }

    #[test]
    fn a_call_on_its_own_lines_after_its_plan_is_a_call() {
        let text = "I apologize for the oversight. Let's correct the decision:\n\n{\"name\": \"calculator\", \"arguments\": \"{\\\"expression\\\":\\\"72 * 2.5\\\"}\"}";
        let parsed = parse_text_call(text, &TOOLS, true).unwrap_or_else(|| panic!("a call"));
        assert_eq!(parsed.repairs, vec![RepairKind::TextToolCall]);
        match parsed.decision {
            Ok(Decision::Action(action)) => {
                assert_eq!(action.tool, "calculator");
                assert_eq!(action.input, json!({"expression": "72 * 2.5"}));
            }
            other => panic!("{other:?}"),
        }
        let multiline = "I'll look it up.\n{\n  \"name\": \"weather\",\n  \"arguments\": {\"city\": \"Lisbon\"}\n}\n";
        assert_eq!(
            find(multiline, &TOOLS),
            Found::Calls(vec![("weather".into(), Some(json!({"city": "Lisbon"})))])
        );
    }

    #[test]
    fn a_call_fenced_among_prose_is_sent_back() {
        let text = "<request>What time is it in Lisbon right now?</request>\n\nThe request needs \
                    a tool call.\n\n```json\n{\n  \"name\": \"weather\",\n  \"arguments\": {\n    \
                    \"city\": \"Lisbon\"\n  }\n}\n```\n\nThis request is now satisfied.";
        assert_eq!(find(text, &TOOLS), Found::Embedded("weather".into()));
        let parsed = parse_text_call(text, &TOOLS, true).unwrap_or_else(|| panic!("a call"));
        match parsed.decision {
            Err(r) => {
                assert_eq!(r.category, Category::InvalidToolInput);
                assert_eq!(r.tool.as_deref(), Some("weather"));
                assert!(
                    r.message.contains("tool-calling interface"),
                    "{}",
                    r.message
                );
            }
            other => panic!("expected a rejection, got {other:?}"),
        }
        let shown = "Call it like this:\n```json\n{\"name\": \"calculator\", \"arguments\": \
                     {\"expression\": \"2*3\"}}\n```\nand it returns 6.";
        assert_eq!(find(shown, &TOOLS), Found::Embedded("calculator".into()));
    }

    #[test]
    fn one_registered_call_is_executed_as_a_repair() {
        let parsed = parse_text_call(
            r#"{{"name": "calculator", "arguments": {"expression": "1234 * 5678"}}}"#,
            &TOOLS,
            true,
        )
        .unwrap_or_else(|| panic!("a call"));
        assert_eq!(parsed.repairs, vec![RepairKind::TextToolCall]);
        assert_eq!(parsed.call_id, None);
        match parsed.decision {
            Ok(Decision::Action(a)) => {
                assert_eq!(a.tool, "calculator");
                assert_eq!(a.input, json!({"expression": "1234 * 5678"}));
                assert_eq!(a.call_id, None);
            }
            other => panic!("expected an action, got {other:?}"),
        }
    }

    #[test]
    fn a_final_answer_written_as_text_is_that_final() {
        let text =
            r#"{"name": "final_answer", "arguments": {"satisfied": false, "final_summary": "no"}}"#;
        let parsed = parse_text_call(text, &TOOLS, true).unwrap_or_else(|| panic!("a call"));
        match parsed.decision {
            Ok(Decision::Final(f)) => assert!(!f.satisfied && f.summary == "no"),
            other => panic!("expected a final, got {other:?}"),
        }
    }

    #[test]
    fn a_json_final_decision_written_as_text_is_that_final() {
        for text in [
            r#"{{"satisfied": false, "final_summary": "no"}}"#,
            r#"{"state": "final", "satisfied": false, "final_summary": "no"}"#,
        ] {
            let parsed = parse_text_call(text, &TOOLS, true).unwrap_or_else(|| panic!("{text}"));
            match parsed.decision {
                Ok(Decision::Final(f)) => assert!(!f.satisfied && f.summary == "no"),
                other => panic!("expected a final, got {other:?}"),
            }
        }
    }

    #[test]
    fn a_call_cut_off_is_sent_back_not_taken_as_the_answer() {
        for text in [
            "```json\n{\n  \"name\": \"calculator\",\n  \"arguments\": {\n    \"expressio",
            r#"{"name": "final_answer", "arguments": "{\"satisfied\":true,\"final"#,
            r#"{{"satisfied": true, "final_summary": "The answer is"#,
        ] {
            let rejection = parse_text_call(text, &TOOLS, true)
                .and_then(|p| p.decision.err())
                .unwrap_or_else(|| panic!("{text}"));
            assert_eq!(rejection.category, Category::DecisionSchema, "{text}");
            assert!(rejection.message.contains("tool-calling interface"));
        }
    }

    #[test]
    fn ambiguous_calls_are_sent_back() {
        let category = |text: &str, allow: bool| {
            parse_text_call(text, &TOOLS, allow)
                .and_then(|p| p.decision.err())
                .map(|r| {
                    (
                        r.category,
                        r.tool,
                        r.message.contains("tool-calling interface"),
                    )
                })
        };
        let two = "<tool_call>{\"name\": \"calculator\", \"arguments\": {}}</tool_call>\n\
                   <tool_call>{\"name\": \"weather\", \"arguments\": {}}</tool_call>";
        assert_eq!(
            category(two, true),
            Some((Category::DecisionSchema, None, true))
        );
        assert_eq!(
            category(
                "<tool_call>{\"name\": \"teleport\", \"arguments\": {}}</tool_call>",
                true
            ),
            Some((Category::UnknownTool, Some("teleport".into()), true))
        );
        assert_eq!(
            category(r#"{"name": "calculator", "arguments": "2*3"}"#, true),
            Some((Category::InvalidToolInput, Some("calculator".into()), true))
        );
        assert_eq!(
            category(
                r#"{"name": "calculator", "arguments": {"expression": "2"}}"#,
                false
            ),
            Some((Category::InvalidToolInput, Some("calculator".into()), true))
        );
        assert_eq!(
            category("<|python_tag|>calculator.call(expression=\"2*3\")", true),
            Some((Category::DecisionSchema, None, true))
        );
    }
}
