//! What the gateway checks in a reply before the client sees it, against the client's own
//! request: the calls name declared functions with arguments valid for their schemas,
//! `tool_choice` and `parallel_tool_calls` are obeyed, `response_format` is met, the reply is
//! not empty, a call written as text is read as a call, and a text reply neither claims an
//! action no tool call did, nor writes the template markup of calls and results, nor repeats
//! the feedback the gateway sent.

use std::collections::HashMap;

use corrigible::Category;
use corrigible::decision::repair::{RepairKind, repair_value};
use corrigible::evidence::claimed_action::claimed_actions;
use corrigible::evidence::echo::{echo_in, markup_in, without_quotes};
use corrigible::tool::InputValidator;
use serde_json::Value;

use super::wire::{CallOut, ChatRequest, FunctionCall, ReplyMessage, last_user_text, text_of};

/// What the client's request allows, compiled once for every reply of one request.
pub struct Contract {
    tools: Vec<String>,
    failed: Vec<FailedCall>,
    request: String,
    /// Every text of the client's messages: words they hold are the client's, never our echo.
    theirs: String,
    /// The conversation's tool results that report no error, as `(function, text)`.
    results: Vec<(String, String)>,
    validators: HashMap<String, Option<InputValidator>>,
    choice: Choice,
    parallel: bool,
    format: Format,
}

/// A call of the conversation whose tool message reported an error.
#[derive(Debug, Clone, PartialEq)]
struct FailedCall {
    name: String,
    arguments: Value,
    error: String,
}

/// The request's `tool_choice`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Choice {
    Auto,
    None,
    Required,
    Named(String),
}

/// The request's `response_format`.
enum Format {
    Text,
    JsonObject,
    Schema(Box<InputValidator>),
}

/// A reply the client may see: the message (with any repaired arguments) and the local
/// repairs made to it.
#[derive(Debug, Clone, PartialEq)]
pub struct Passed {
    /// The message to return.
    pub message: ReplyMessage,
    /// The repairs made, in order.
    pub repairs: Vec<RepairKind>,
}

/// A reply sent back: why, and the feedback for the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    /// The rejection's category.
    pub category: Category,
    /// The feedback, for the whole reply.
    pub feedback: String,
    /// For each call of the reply, by id, what to answer it with in the correction round.
    pub calls: Vec<(String, String)>,
}

/// A request the gateway cannot check: a schema that does not compile, a `tool_choice` that
/// names no declared function, a tool that is not a function.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("{field}: {message}")]
pub struct BadContract {
    /// The field at fault.
    pub field: &'static str,
    /// What is wrong with it.
    pub message: String,
}

impl Contract {
    /// Compiles what `request` allows.
    pub fn new(request: &ChatRequest) -> Result<Self, BadContract> {
        let defs = request.tools.clone().unwrap_or_default();
        let mut tools = Vec::new();
        let mut validators = HashMap::new();
        for def in &defs {
            if def.kind != "function" {
                return Err(BadContract {
                    field: "tools",
                    message: format!("tool type `{}` is not supported: use `function`", def.kind),
                });
            }
            let name = def.function.name.clone();
            let validator = match &def.function.parameters {
                Some(schema) => {
                    Some(InputValidator::new(&name, schema).map_err(|e| BadContract {
                        field: "tools",
                        message: e.to_string(),
                    })?)
                }
                None => None,
            };
            validators.insert(name.clone(), validator);
            tools.push(name);
        }
        let choice = match &request.tool_choice {
            None => Choice::Auto,
            Some(Value::String(s)) => match s.as_str() {
                "auto" => Choice::Auto,
                "none" => Choice::None,
                "required" => Choice::Required,
                other => {
                    return Err(BadContract {
                        field: "tool_choice",
                        message: format!("`{other}` is not one of none, auto, required"),
                    });
                }
            },
            Some(value) => {
                let name = value
                    .pointer("/function/name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| BadContract {
                        field: "tool_choice",
                        message: "expected a string or {\"type\": \"function\", \"function\": {\"name\": …}}".into(),
                    })?;
                if !tools.iter().any(|t| t == name) {
                    return Err(BadContract {
                        field: "tool_choice",
                        message: format!("names `{name}`, which is not among the tools"),
                    });
                }
                Choice::Named(name.to_string())
            }
        };
        let format = match &request.response_format {
            None => Format::Text,
            Some(format) => match format.get("type").and_then(Value::as_str) {
                Some("text") | None => Format::Text,
                Some("json_object") => Format::JsonObject,
                Some("json_schema") => {
                    let schema =
                        format
                            .pointer("/json_schema/schema")
                            .ok_or_else(|| BadContract {
                                field: "response_format",
                                message: "json_schema.schema is missing".into(),
                            })?;
                    Format::Schema(Box::new(
                        InputValidator::new("response_format", schema).map_err(|e| {
                            BadContract {
                                field: "response_format",
                                message: e.to_string(),
                            }
                        })?,
                    ))
                }
                Some(other) => {
                    return Err(BadContract {
                        field: "response_format",
                        message: format!("type `{other}` is not supported"),
                    });
                }
            },
        };
        let rounds = tool_rounds(&request.messages);
        Ok(Self {
            tools,
            failed: failed_calls(&rounds),
            request: last_user_text(&request.messages),
            results: tool_results(&rounds),
            theirs: request
                .messages
                .iter()
                .map(|m| text_of(m.get("content")))
                .collect::<Vec<_>>()
                .join("\n"),
            validators,
            choice,
            parallel: request.parallel_tool_calls.unwrap_or(true),
            format,
        })
    }

    /// The conversation's last user message: what a reply answers.
    pub fn request(&self) -> &str {
        &self.request
    }

    /// The conversation's tool results that report no error, as `(function, text)`.
    pub fn results(&self) -> &[(String, String)] {
        &self.results
    }

    /// Whether a reply needs no check but not being empty: no tools, no response format.
    pub fn is_plain(&self) -> bool {
        self.tools.is_empty() && matches!(self.format, Format::Text)
    }

    /// Checks one reply; `sent` is the feedback this request has already sent the upstream.
    pub fn check(&self, message: &ReplyMessage, sent: &[String]) -> Result<Passed, Refused> {
        let mut message = message.clone();
        let mut repairs = Vec::new();
        if message.tool_calls.is_empty()
            && let Some(call) = self.text_call(message.content.as_deref().unwrap_or(""))?
        {
            message.tool_calls.push(call);
            message.content = None;
            repairs.push(RepairKind::TextToolCall);
        }
        if message.tool_calls.is_empty() {
            self.check_text(&message, sent, &mut repairs)?;
        } else {
            self.check_calls(&mut message, &mut repairs)?;
        }
        Ok(Passed { message, repairs })
    }

    fn check_text(
        &self,
        message: &ReplyMessage,
        sent: &[String],
        repairs: &mut Vec<RepairKind>,
    ) -> Result<(), Refused> {
        let text = message.content.as_deref().unwrap_or("");
        match &self.choice {
            Choice::Required => {
                return Err(whole(
                    Category::DecisionSchema,
                    format!(
                        "this request requires a tool call (tool_choice is required): call one of {}",
                        self.names()
                    ),
                ));
            }
            Choice::Named(name) => {
                return Err(whole(
                    Category::DecisionSchema,
                    format!(
                        "this request requires a call of `{name}` (tool_choice names it): call it"
                    ),
                ));
            }
            Choice::Auto | Choice::None => {}
        }
        if text.trim().is_empty() && message.rest.get("refusal").is_none_or(Value::is_null) {
            return Err(whole(
                Category::EmptyResponse,
                "your reply was empty: answer the request, or call one of the tools".into(),
            ));
        }
        if let Some(tag) = markup_in(text, &self.theirs) {
            return Err(whole(
                Category::Echo,
                format!(
                    "your reply writes `{tag}`, the markup that carries tool calls and their results, \
                     so it makes up a call or a result: call a tool through the tool-calling \
                     interface, or answer in plain words"
                ),
            ));
        }
        let ours: Vec<String> = sent.iter().map(|f| without_quotes(f)).collect();
        let ours: Vec<&str> = ours.iter().map(String::as_str).collect();
        if let Some(words) = echo_in(text, &ours, &[&self.theirs]) {
            return Err(whole(
                Category::Echo,
                format!(
                    "your reply repeats the feedback you were sent (`{words}`) instead of \
                     answering: answer the request in your own words, or call one of the tools"
                ),
            ));
        }
        if let Some(feedback) = self.unsupported_claim(text) {
            return Err(whole(Category::ClaimedAction, feedback));
        }
        match &self.format {
            Format::Text => Ok(()),
            Format::JsonObject => match read_json(text, repairs) {
                Some(Value::Object(_)) => Ok(()),
                _ => Err(whole(
                    Category::OutputRejected,
                    "the response format is json_object: reply with one JSON object and nothing else".into(),
                )),
            },
            Format::Schema(validator) => match read_json(text, repairs) {
                Some(value) => validator.validate(&value).map_err(|invalid| {
                    whole(
                        Category::OutputRejected,
                        format!(
                            "your reply does not match the response format's JSON Schema: {}",
                            invalid.under("reply")
                        ),
                    )
                }),
                None => Err(whole(
                    Category::OutputRejected,
                    "the response format is a JSON Schema: reply with one JSON value that matches it, and nothing else".into(),
                )),
            },
        }
    }

    /// Why `text` claims an action (`I have sent`, `has been booked`) when no tool call of the
    /// conversation succeeded. The client's functions say nothing of which ones act, so any
    /// tool message that reports no error supports a claim.
    fn unsupported_claim(&self, text: &str) -> Option<String> {
        if !self.results.is_empty() {
            return None;
        }
        let claim = claimed_actions(text, &self.request).into_iter().next()?;
        let next = if self.tools.is_empty() {
            format!(
                "no tool is available here to {}: say plainly that it cannot be done here, and why",
                claim.verb
            )
        } else {
            format!(
                "call the tool that does it, or, if none can {}, say plainly that it was not done",
                claim.verb
            )
        };
        Some(format!(
            "your reply says `{}`, but no tool call in this conversation succeeded, so nothing was done; {next}",
            claim.phrase
        ))
    }

    fn check_calls(
        &self,
        message: &mut ReplyMessage,
        repairs: &mut Vec<RepairKind>,
    ) -> Result<(), Refused> {
        let reply_level = match &self.choice {
            Choice::None => Some(
                "this request allows no tool call (tool_choice is none): answer in text"
                    .to_string(),
            ),
            _ if !self.parallel && message.tool_calls.len() > 1 => Some(format!(
                "this request allows one tool call per reply (parallel_tool_calls is false), and your reply made {}: make only the first",
                message.tool_calls.len()
            )),
            _ => None,
        };
        if let Some(feedback) = reply_level {
            let calls = message
                .tool_calls
                .iter()
                .map(|c| (c.id.clone(), format!("not executed: {feedback}")))
                .collect();
            return Err(Refused {
                category: Category::DecisionSchema,
                feedback,
                calls,
            });
        }
        let mut problems: Vec<(Category, String, String)> = Vec::new();
        for call in &mut message.tool_calls {
            let problem = self.check_call(&mut call.function, repairs);
            if let Err((category, feedback)) = problem {
                problems.push((category, call.id.clone(), feedback));
            }
        }
        if let Choice::Named(name) = &self.choice
            && let Some(call) = message.tool_calls.iter().find(|c| &c.function.name != name)
        {
            problems.push((
                Category::UnknownTool,
                call.id.clone(),
                format!(
                    "this request requires a call of `{name}` (tool_choice names it), not `{}`",
                    call.function.name
                ),
            ));
        }
        let Some((category, _, first)) = problems.first().cloned() else {
            return Ok(());
        };
        let calls = message
            .tool_calls
            .iter()
            .map(|c| {
                let feedback = problems
                    .iter()
                    .find(|(_, id, _)| id == &c.id)
                    .map(|(_, _, f)| format!("rejected, not executed: {f}"))
                    .unwrap_or_else(|| {
                        "not executed: another call of the same reply was rejected; make this call again with the corrected one".into()
                    });
                (c.id.clone(), feedback)
            })
            .collect();
        Err(Refused {
            category,
            feedback: first,
            calls,
        })
    }

    /// Checks one call, repairing its arguments in place when their damage has one reading.
    fn check_call(
        &self,
        call: &mut FunctionCall,
        repairs: &mut Vec<RepairKind>,
    ) -> Result<(), (Category, String)> {
        let Some(validator) = self.validators.get(&call.name) else {
            return Err((
                Category::UnknownTool,
                format!(
                    "there is no function `{}`: call one of {}",
                    call.name,
                    self.names()
                ),
            ));
        };
        let arguments = if call.arguments.trim().is_empty() {
            Value::Object(Default::default())
        } else {
            match serde_json::from_str::<Value>(&call.arguments) {
                Ok(value) => value,
                Err(parse) => match repair_value(&call.arguments) {
                    Ok((value, kinds)) if !kinds.is_empty() => {
                        repairs.extend(kinds);
                        call.arguments = value.to_string();
                        value
                    }
                    _ => {
                        return Err((
                            Category::InvalidJson,
                            format!(
                                "the arguments of `{}` are not valid JSON ({parse}): write them as one JSON object",
                                call.name
                            ),
                        ));
                    }
                },
            }
        };
        if !arguments.is_object() {
            return Err((
                Category::InvalidToolInput,
                format!("the arguments of `{}` must be a JSON object", call.name),
            ));
        }
        if let Some(failed) = self
            .failed
            .iter()
            .find(|f| f.name == call.name && f.arguments == arguments)
        {
            return Err((
                Category::RepeatedFailedAction,
                format!(
                    "this exact call of `{}` already failed in this conversation ({}): change its arguments or take another approach",
                    call.name, failed.error
                ),
            ));
        }
        if let Some(validator) = validator {
            validator.validate(&arguments).map_err(|invalid| {
                (
                    Category::InvalidToolInput,
                    format!(
                        "the arguments of `{}` do not match its parameters: {}",
                        call.name,
                        invalid.under("arguments")
                    ),
                )
            })?;
        }
        Ok(())
    }

    /// A call the model wrote as text, when the text is exactly one readable call of a
    /// declared function; refused when the text is plainly a call that cannot be read as one.
    fn text_call(&self, text: &str) -> Result<Option<CallOut>, Refused> {
        if self.tools.is_empty() || text.trim().is_empty() {
            return Ok(None);
        }
        let names: Vec<&str> = self.tools.iter().map(String::as_str).collect();
        let Some(parsed) = corrigible::decision::parse_text_call(text, &names, true) else {
            return Ok(None);
        };
        match parsed.decision {
            Err(rejection) => Err(whole(rejection.category, rejection.message)),
            Ok(corrigible::Decision::Action(action)) => Ok(Some(CallOut {
                id: format!("call_{}", uuid::Uuid::now_v7().simple()),
                kind: "function".into(),
                function: FunctionCall {
                    name: action.tool,
                    arguments: action.input.to_string(),
                },
            })),
            Ok(corrigible::Decision::Final(_)) => Ok(None),
        }
    }

    fn names(&self) -> String {
        self.tools
            .iter()
            .map(|t| format!("`{t}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn whole(category: Category, feedback: String) -> Refused {
    Refused {
        category,
        feedback,
        calls: Vec::new(),
    }
}

/// One tool message of the conversation with the call it answers (found by the call's id in
/// an earlier assistant message), when there is one.
struct ToolRound {
    /// The function its call named; the message's own `name` when no call is found.
    name: Option<String>,
    /// The call's arguments, when a call was found and they are JSON.
    arguments: Option<Value>,
    /// The message's text.
    text: String,
}

/// Every tool message of `messages`, in order, each with its call.
fn tool_rounds(messages: &[Value]) -> Vec<ToolRound> {
    let mut calls: HashMap<&str, (&str, Option<Value>)> = HashMap::new();
    let mut rounds = Vec::new();
    for message in messages {
        match message.get("role").and_then(Value::as_str) {
            Some("assistant") => {
                for call in message
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let (Some(id), Some(name)) = (
                        call.get("id").and_then(Value::as_str),
                        call.pointer("/function/name").and_then(Value::as_str),
                    ) else {
                        continue;
                    };
                    let arguments = call
                        .pointer("/function/arguments")
                        .and_then(Value::as_str)
                        .and_then(|a| serde_json::from_str(a).ok());
                    calls.insert(id, (name, arguments));
                }
            }
            Some("tool") => {
                let call = message
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .and_then(|id| calls.get(id));
                rounds.push(ToolRound {
                    name: call.map(|(name, _)| name.to_string()).or_else(|| {
                        message
                            .get("name")
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    }),
                    arguments: call.map(|(_, arguments)| arguments.clone().unwrap_or(Value::Null)),
                    text: text_of(message.get("content")),
                });
            }
            _ => {}
        }
    }
    rounds
}

/// The calls whose tool message reports an error, with the start of it.
fn failed_calls(rounds: &[ToolRound]) -> Vec<FailedCall> {
    rounds
        .iter()
        .filter(|r| reports_error(&r.text))
        .filter_map(|r| {
            Some(FailedCall {
                name: r.name.clone()?,
                arguments: r.arguments.clone()?,
                error: r.text.chars().take(160).collect(),
            })
        })
        .collect()
}

/// The tool messages that report no error, as `(function, text)`.
fn tool_results(rounds: &[ToolRound]) -> Vec<(String, String)> {
    rounds
        .iter()
        .filter(|r| !reports_error(&r.text))
        .map(|r| {
            (
                r.name.clone().unwrap_or_else(|| "tool".into()),
                r.text.clone(),
            )
        })
        .collect()
}

/// Whether a tool message reports an error: its text starts with `error`, `an error
/// occurred`, `exception` or `traceback` (any case), or it is a JSON object with a non-empty
/// `error`, `"is_error": true` or `"status": "error"`.
fn reports_error(content: &str) -> bool {
    let text = content.trim_start().to_lowercase();
    if ["error", "an error occurred", "exception", "traceback"]
        .iter()
        .any(|p| text.starts_with(p))
    {
        return true;
    }
    let Ok(Value::Object(object)) = serde_json::from_str::<Value>(content) else {
        return false;
    };
    let error = object
        .get("error")
        .is_some_and(|e| !matches!(e, Value::Null | Value::Bool(false)) && e != "");
    error
        || object.get("is_error") == Some(&Value::Bool(true))
        || object.get("status").and_then(Value::as_str) == Some("error")
}

/// The reply text read as JSON: as it is, or repaired when its damage has one reading.
fn read_json(text: &str, repairs: &mut Vec<RepairKind>) -> Option<Value> {
    if let Ok(value) = serde_json::from_str(text.trim()) {
        return Some(value);
    }
    let (value, kinds) = repair_value(text).ok()?;
    repairs.extend(kinds);
    Some(value)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(extra: Value) -> ChatRequest {
        let mut body = json!({
            "model": "m",
            "messages": [{"role": "user", "content": "weather in Paris?"}],
            "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {
                "type": "object", "properties": {"city": {"type": "string"}},
                "required": ["city"], "additionalProperties": false}}}]
        });
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        serde_json::from_value(body).unwrap()
    }

    fn call(name: &str, arguments: &str) -> ReplyMessage {
        ReplyMessage {
            content: None,
            tool_calls: vec![CallOut {
                id: "c1".into(),
                kind: "function".into(),
                function: FunctionCall {
                    name: name.into(),
                    arguments: arguments.into(),
                },
            }],
            rest: Default::default(),
        }
    }

    fn text(content: &str) -> ReplyMessage {
        ReplyMessage {
            content: Some(content.into()),
            ..Default::default()
        }
    }

    #[test]
    fn a_valid_call_and_a_plain_answer_pass_untouched() {
        let contract = Contract::new(&request(json!({}))).unwrap();
        let ok = call("get_weather", r#"{"city": "Paris"}"#);
        assert_eq!(contract.check(&ok, &[]).unwrap().message, ok);
        assert!(contract.check(&ok, &[]).unwrap().repairs.is_empty());
        let answer = text("It is sunny.");
        assert_eq!(contract.check(&answer, &[]).unwrap().message, answer);
    }

    #[test]
    fn unknown_functions_broken_and_invalid_arguments_are_refused() {
        let contract = Contract::new(&request(json!({}))).unwrap();
        let unknown = contract.check(&call("get_wether", "{}"), &[]).unwrap_err();
        assert_eq!(unknown.category, Category::UnknownTool);
        assert!(unknown.feedback.contains("`get_weather`"));
        let broken = contract
            .check(&call("get_weather", r#"{"city": "#), &[])
            .unwrap_err();
        assert_eq!(broken.category, Category::InvalidJson);
        let invalid = contract
            .check(&call("get_weather", r#"{"town": "Paris"}"#), &[])
            .unwrap_err();
        assert_eq!(invalid.category, Category::InvalidToolInput);
        assert!(
            invalid.feedback.contains("arguments"),
            "{}",
            invalid.feedback
        );
        assert_eq!(invalid.calls.len(), 1);
        assert!(invalid.calls[0].1.starts_with("rejected, not executed"));
    }

    #[test]
    fn damage_with_one_reading_is_repaired_locally() {
        let contract = Contract::new(&request(json!({}))).unwrap();
        let passed = contract
            .check(&call("get_weather", r#"{"city": "Paris",}"#), &[])
            .unwrap();
        assert_eq!(
            passed.message.tool_calls[0].function.arguments,
            r#"{"city":"Paris"}"#
        );
        assert_eq!(passed.repairs, [RepairKind::TrailingComma]);
    }

    #[test]
    fn tool_choice_and_parallel_calls_are_obeyed() {
        let required = Contract::new(&request(json!({"tool_choice": "required"}))).unwrap();
        assert!(required.check(&text("sunny"), &[]).is_err());
        let none = Contract::new(&request(json!({"tool_choice": "none"}))).unwrap();
        assert!(
            none.check(&call("get_weather", r#"{"city": "Paris"}"#), &[])
                .is_err()
        );
        let named =
            json!({"tool_choice": {"type": "function", "function": {"name": "get_weather"}}});
        assert!(
            Contract::new(&request(named))
                .unwrap()
                .check(&text("hi"), &[])
                .is_err()
        );
        let unknown = json!({"tool_choice": {"type": "function", "function": {"name": "nope"}}});
        assert!(Contract::new(&request(unknown)).is_err());
        let single = Contract::new(&request(json!({"parallel_tool_calls": false}))).unwrap();
        let mut two = call("get_weather", r#"{"city": "Paris"}"#);
        two.tool_calls.push(two.tool_calls[0].clone());
        assert_eq!(single.check(&two, &[]).unwrap_err().calls.len(), 2);
    }

    #[test]
    fn empty_replies_and_response_formats() {
        let contract = Contract::new(&request(json!({}))).unwrap();
        assert_eq!(
            contract.check(&text("  "), &[]).unwrap_err().category,
            Category::EmptyResponse
        );
        let schema = json!({"response_format": {"type": "json_schema", "json_schema": {"name": "a",
            "schema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}}});
        let contract = Contract::new(&request(schema)).unwrap();
        assert!(contract.check(&text(r#"{"n": 3}"#), &[]).is_ok());
        assert!(contract.check(&text(r#"{"n": "3"}"#), &[]).is_err());
        assert!(contract.check(&text("three"), &[]).is_err());
    }

    #[test]
    fn the_same_call_after_its_error_is_refused_and_other_calls_are_not() {
        let mut body = json!({});
        body["messages"] = json!([
            {"role": "user", "content": "weather in Paris?"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Pariss\"}"}},
                {"id": "b", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Rome\"}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "Error: unknown city Pariss"},
            {"role": "tool", "tool_call_id": "b", "content": "{\"error\": null, \"celsius\": 20}"}
        ]);
        let contract = Contract::new(&request(body)).unwrap();
        let again = contract
            .check(&call("get_weather", r#"{"city":"Pariss"}"#), &[])
            .unwrap_err();
        assert_eq!(again.category, Category::RepeatedFailedAction);
        assert!(
            again.feedback.contains("unknown city"),
            "{}",
            again.feedback
        );
        assert!(
            contract
                .check(&call("get_weather", r#"{"city": "Paris"}"#), &[])
                .is_ok()
        );
        assert!(
            contract
                .check(&call("get_weather", r#"{"city": "Rome"}"#), &[])
                .is_ok()
        );
    }

    #[test]
    fn a_claimed_action_needs_a_successful_call() {
        let mut body = json!({});
        body["messages"] = json!([{"role": "user", "content": "Email Bob the report."}]);
        let contract = Contract::new(&request(body.clone())).unwrap();
        let refused = contract
            .check(&text("I have sent the report to Bob."), &[])
            .unwrap_err();
        assert_eq!(refused.category, Category::ClaimedAction);
        assert!(
            contract
                .check(&text("I can't send email from here."), &[])
                .is_ok()
        );
        assert!(
            contract
                .check(&text("Here is a draft for Bob."), &[])
                .is_ok()
        );
        body["messages"] = json!([
            {"role": "user", "content": "Email Bob the report."},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "a", "type": "function",
                "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "queued"}
        ]);
        let contract = Contract::new(&request(body)).unwrap();
        assert!(
            contract
                .check(&text("I have sent the report to Bob."), &[])
                .is_ok()
        );
    }

    #[test]
    fn tool_messages_that_report_errors() {
        for error in [
            "Error: boom",
            "  error - no such file",
            "An error occurred while running the tool. Please try again. Error: x",
            "Traceback (most recent call last):",
            r#"{"error": "not found"}"#,
            r#"{"is_error": true, "content": "x"}"#,
            r#"{"status": "error"}"#,
        ] {
            assert!(reports_error(error), "{error}");
        }
        for fine in [
            "21 °C and sunny",
            r#"{"error": null, "ok": 1}"#,
            r#"{"error": false}"#,
            r#"{"errors_seen": 3}"#,
            "No errors were found in the file.",
        ] {
            assert!(!reports_error(fine), "{fine}");
        }
    }

    #[test]
    fn a_call_written_as_text_is_read_as_a_call() {
        let contract = Contract::new(&request(json!({}))).unwrap();
        let passed = contract
            .check(&text(
                r#"<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>"#,
            ), &[])
            .unwrap();
        assert_eq!(passed.message.tool_calls[0].function.name, "get_weather");
        assert_eq!(passed.message.content, None);
        assert_eq!(passed.repairs, [RepairKind::TextToolCall]);
    }

    #[test]
    fn made_up_markup_and_our_own_feedback_are_refused_and_the_clients_words_are_not() {
        let contract = Contract::new(&request(json!({}))).unwrap();
        let made_up = contract
            .check(
                &text("<tool_response>21 °C</tool_response> It is 21 °C."),
                &[],
            )
            .unwrap_err();
        assert_eq!(made_up.category, Category::Echo);
        let sent =
            ["your reply was empty: answer the request, or call one of the tools".to_string()];
        let parroted = contract
            .check(
                &text("Your reply was empty: answer the request, or call one of the tools."),
                &sent,
            )
            .unwrap_err();
        assert_eq!(parroted.category, Category::Echo);
        assert!(
            contract
                .check(&text("It is 21 °C and sunny in Paris."), &sent)
                .is_ok()
        );

        let quoting = Contract::new(&request(json!({"messages": [
            {"role": "user", "content": "What does <tool_response> mean in Qwen's template? \
                Answer the request, or call one of the tools, it says."}
        ]})))
        .unwrap();
        let explained = "`<tool_response>` wraps a tool's result. Answer the request, or call one of the tools: the client's words.";
        assert!(quoting.check(&text(explained), &sent).is_ok());
    }
}
