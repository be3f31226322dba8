//! Provider conformance against real recorded API exchanges (pydantic-ai's VCR cassettes, MIT;
//! see `tests/cassettes/README.md`). Each recorded conversation is replayed through our client:
//! the recorded responses are served over real HTTP on loopback, the replies our client reads
//! from them must carry the recorded tool calls, and every request it sends must have the
//! shape of the recorded request that the real API accepted.

mod common;

use common::{Canned, FakeServer, options};
use corrigible::{
    Category, CorrectionContext, Message, MessageKind, Model, ModelReply, ModelRequest, Protocol,
    Role, Stage, ToolCall, ToolSpec,
};
use corrigible_models::{AnthropicModel, GeminiModel, OpenAiModel};
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize)]
struct Cassette {
    source: String,
    interactions: Vec<Interaction>,
}

#[derive(Deserialize, Clone)]
struct Interaction {
    request: RecordedRequest,
    response: RecordedResponse,
}

#[derive(Deserialize, Clone)]
struct RecordedRequest {
    uri: String,
    body: Value,
}

#[derive(Deserialize, Clone)]
struct RecordedResponse {
    status: u16,
    body: Value,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Api {
    OpenAi,
    Anthropic,
    Gemini,
}

impl Api {
    fn serves(self, uri: &str) -> bool {
        match self {
            Api::OpenAi => uri.contains("/chat/completions"),
            Api::Anthropic => uri.contains("/v1/messages"),
            Api::Gemini => {
                uri.contains(":generateContent") && !uri.contains("gemini-2.0-flash-exp")
            }
        }
    }
}

fn load(name: &str) -> Cassette {
    let path = format!("{}/tests/cassettes/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The path of a recorded URI, without scheme, host or query.
fn path_of(uri: &str) -> String {
    let rest = uri.split_once("://").map_or(uri, |(_, r)| r);
    let path = rest.find('/').map_or("/", |i| &rest[i..]);
    path.split('?').next().unwrap_or(path).to_string()
}

fn tool_specs(api: Api, body: &Value) -> Vec<ToolSpec> {
    let spec = |name: &Value, description: &Value, parameters: &Value| ToolSpec {
        name: name.as_str().unwrap_or_default().to_string(),
        description: description.as_str().unwrap_or_default().to_string(),
        parameters: parameters.clone(),
        grounded: Vec::new(),
        computes: false,
    };
    let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    match api {
        Api::OpenAi => list(&body["tools"])
            .iter()
            .map(|t| {
                let f = &t["function"];
                spec(&f["name"], &f["description"], &f["parameters"])
            })
            .collect(),
        Api::Anthropic => list(&body["tools"])
            .iter()
            .map(|t| spec(&t["name"], &t["description"], &t["input_schema"]))
            .collect(),
        Api::Gemini => list(&body["tools"])
            .iter()
            .flat_map(|t| list(&t["functionDeclarations"]))
            .map(|f| {
                spec(
                    &f["name"],
                    &f["description"],
                    &lower_types(&f["parameters"]),
                )
            })
            .collect(),
    }
}

/// A Gemini SDK schema (`"type": "OBJECT"`) as JSON Schema (`"type": "object"`).
fn lower_types(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| match (k.as_str(), v) {
                    ("type", Value::String(t)) => (k.clone(), json!(t.to_lowercase())),
                    _ => (k.clone(), lower_types(v)),
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(lower_types).collect()),
        other => other.clone(),
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The recorded conversation as corrigible messages.
fn messages(api: Api, body: &Value) -> Vec<Message> {
    let mut out = Vec::new();
    let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    let call = |id: &Value, name: &Value, arguments: String| ToolCall {
        id: text_of(id),
        name: text_of(name),
        arguments,
    };
    match api {
        Api::OpenAi => {
            for m in list(&body["messages"]) {
                let content = text_of(&m["content"]);
                out.push(match m["role"].as_str().unwrap_or_default() {
                    "system" => Message::system(content),
                    "user" => Message::request(content),
                    "tool" => Message::tool_result(
                        text_of(&m["tool_call_id"]),
                        "",
                        content,
                        false,
                        MessageKind::ToolResult,
                    ),
                    _ => Message::assistant(
                        MessageKind::Reply,
                        content,
                        list(&m["tool_calls"])
                            .iter()
                            .map(|c| {
                                let f = &c["function"];
                                call(&c["id"], &f["name"], text_of(&f["arguments"]))
                            })
                            .collect(),
                    ),
                });
            }
        }
        Api::Anthropic => {
            if let Some(system) = body["system"].as_str() {
                out.push(Message::system(system));
            }
            for m in list(&body["messages"]) {
                let blocks = list(&m["content"]);
                if m["role"] == "assistant" {
                    let text: String = blocks
                        .iter()
                        .filter(|b| b["type"] == "text")
                        .map(|b| text_of(&b["text"]))
                        .collect();
                    let calls = blocks
                        .iter()
                        .filter(|b| b["type"] == "tool_use")
                        .map(|b| call(&b["id"], &b["name"], b["input"].to_string()))
                        .collect();
                    out.push(Message::assistant(MessageKind::Reply, text, calls));
                    continue;
                }
                for b in blocks {
                    out.push(if b["type"] == "tool_result" {
                        Message::tool_result(
                            text_of(&b["tool_use_id"]),
                            "",
                            text_of(&b["content"]),
                            b["is_error"] == true,
                            MessageKind::ToolResult,
                        )
                    } else {
                        Message::request(text_of(&b["text"]))
                    });
                }
            }
        }
        Api::Gemini => {
            let mut last_ids: Vec<String> = Vec::new();
            for c in list(&body["contents"]) {
                let parts = list(&c["parts"]);
                if c["role"] == "model" {
                    let calls: Vec<ToolCall> = parts
                        .iter()
                        .filter_map(|p| p.get("functionCall"))
                        .enumerate()
                        .map(|(i, f)| {
                            let id = f.get("id").cloned().unwrap_or(json!(format!("call_{i}")));
                            call(&id, &f["name"], f["args"].to_string())
                        })
                        .collect();
                    last_ids = calls.iter().map(|c| c.id.clone()).collect();
                    let text: String = parts.iter().map(|p| text_of(&p["text"])).collect();
                    out.push(Message::assistant(MessageKind::Reply, text, calls));
                    continue;
                }
                for (i, p) in parts.iter().enumerate() {
                    out.push(match p.get("functionResponse") {
                        Some(r) => Message::tool_result(
                            last_ids.get(i).cloned().unwrap_or_default(),
                            text_of(&r["name"]),
                            text_of(&r["response"]["return_value"]),
                            false,
                            MessageKind::ToolResult,
                        ),
                        None => Message::request(text_of(&p["text"])),
                    });
                }
            }
        }
    }
    out
}

/// The tool choice the recorded request forced: `required`, `any`, `ANY` → any tool.
fn forces_a_tool(api: Api, body: &Value) -> bool {
    match api {
        Api::OpenAi => body["tool_choice"] == "required",
        Api::Anthropic => body["tool_choice"]["type"] == "any",
        Api::Gemini => body["toolConfig"]["functionCallingConfig"]["mode"] == "ANY",
    }
}

/// A correction round that allows only an action (no `final_answer` is declared here), which
/// the clients send as a forced choice of any tool.
fn action_only() -> CorrectionContext {
    CorrectionContext::first_round(Category::UngroundedArgument, "")
}

/// Keys a recorded request may carry that ours leaves to the API's default.
const DEFAULTED: [&str; 6] = [
    "n",
    "stream",
    "tool_choice",
    "generationConfig",
    "id",
    "is_error",
];

/// Whether `ours` has the shape of `recorded`: every key we send was sent in the recording with
/// a value of the same shape, every key we leave out was optional there (a default value, or
/// the parameters of a function that takes none, which Gemini's declarations leave out), arrays
/// match item by item, and scalars are equal (JSON Schema `type` names compared without case).
fn conforms(ours: &Value, recorded: &Value, path: &str) -> Result<(), String> {
    match (ours, recorded) {
        (Value::Object(a), Value::Object(b)) => {
            if path.ends_with(".functionResponse.response") {
                return Ok(());
            }
            for (key, value) in a {
                let here = format!("{path}.{key}");
                let Some(theirs) = b.get(key) else {
                    if key == "content" && value == "" {
                        // Deliberate: `""` next to tool calls, which llama-cpp-python's server needs.
                        continue;
                    }
                    return Err(format!(
                        "{here}: we send {value}, the recording has no such key"
                    ));
                };
                conforms(value, theirs, &here)?;
            }
            for (key, value) in b {
                let left_out = !a.contains_key(key);
                let optional = DEFAULTED.contains(&key.as_str())
                    || matches!(value, Value::Bool(false) | Value::Null)
                    || value.as_object().is_some_and(|o| o.is_empty())
                    || (key == "parameters"
                        && value["properties"]
                            .as_object()
                            .is_some_and(|p| p.is_empty()));
                if left_out && !optional {
                    return Err(format!("{path}.{key}: recorded {value}, we leave it out"));
                }
            }
            Ok(())
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                return Err(format!("{path}: {} items, recorded {}", a.len(), b.len()));
            }
            a.iter()
                .zip(b)
                .enumerate()
                .try_for_each(|(i, (x, y))| conforms(x, y, &format!("{path}[{i}]")))
        }
        (Value::String(a), Value::String(b)) if path.ends_with(".type") => (a
            .eq_ignore_ascii_case(b))
        .then_some(())
        .ok_or_else(|| format!("{path}: {a} vs recorded {b}")),
        (a, b) => (a == b)
            .then_some(())
            .ok_or_else(|| format!("{path}: we send {a}, recorded {b}")),
    }
}

/// The tool calls and text a recorded response holds.
fn recorded_reply(api: Api, body: &Value) -> (Vec<(Option<String>, String, Value)>, String) {
    let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    let arguments = |v: &Value| match v {
        Value::String(s) => serde_json::from_str(s).unwrap_or(Value::Null),
        other => other.clone(),
    };
    match api {
        Api::OpenAi => {
            let m = &body["choices"][0]["message"];
            let calls = list(&m["tool_calls"])
                .iter()
                .map(|c| {
                    (
                        c["id"]
                            .as_str()
                            .filter(|id| !id.is_empty())
                            .map(String::from),
                        text_of(&c["function"]["name"]),
                        arguments(&c["function"]["arguments"]),
                    )
                })
                .collect();
            (calls, text_of(&m["content"]))
        }
        Api::Anthropic => {
            let blocks = list(&body["content"]);
            let calls = blocks
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| {
                    (
                        b["id"]
                            .as_str()
                            .filter(|id| !id.is_empty())
                            .map(String::from),
                        text_of(&b["name"]),
                        b["input"].clone(),
                    )
                })
                .collect();
            let text = blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .map(|b| text_of(&b["text"]))
                .collect();
            (calls, text)
        }
        Api::Gemini => {
            let parts = list(&body["candidates"][0]["content"]["parts"]);
            let calls = parts
                .iter()
                .filter_map(|p| p.get("functionCall"))
                .map(|f| {
                    (
                        f["id"]
                            .as_str()
                            .filter(|id| !id.is_empty())
                            .map(String::from),
                        text_of(&f["name"]),
                        f["args"].clone(),
                    )
                })
                .collect();
            let text = parts.iter().map(|p| text_of(&p["text"])).collect();
            (calls, text)
        }
    }
}

fn check_reply(api: Api, reply: &ModelReply, recorded: &Value, source: &str) {
    let (calls, text) = recorded_reply(api, recorded);
    assert_eq!(reply.tool_calls.len(), calls.len(), "{source}");
    for (ours, (id, name, arguments)) in reply.tool_calls.iter().zip(&calls) {
        match id {
            Some(id) => assert_eq!(&ours.id, id, "{source}"),
            None => assert!(ours.id.starts_with("call_"), "{source}: {}", ours.id),
        }
        assert_eq!(&ours.name, name, "{source}");
        let parsed: Value = serde_json::from_str(&ours.arguments).unwrap_or(Value::Null);
        assert_eq!(&parsed, arguments, "{source}");
    }
    assert_eq!(reply.text.clone().unwrap_or_default(), text, "{source}");
}

fn client(api: Api, base: &str, model: &str) -> Box<dyn Model> {
    let options = options(base);
    match api {
        Api::OpenAi => Box::new(OpenAiModel::new(model, options).unwrap()),
        Api::Anthropic => Box::new(AnthropicModel::new(model, options).unwrap()),
        Api::Gemini => Box::new(GeminiModel::new(model, options).unwrap()),
    }
}

/// The parts of a request body whose shape is compared: the conversation and the tools.
fn compared(api: Api, body: &Value) -> Value {
    let keys: &[&str] = match api {
        Api::OpenAi => &["model", "messages", "tools", "tool_choice"],
        Api::Anthropic => &[
            "model",
            "system",
            "messages",
            "tools",
            "tool_choice",
            "max_tokens",
        ],
        Api::Gemini => &["contents", "tools", "toolConfig", "systemInstruction"],
    };
    Value::Object(
        keys.iter()
            .filter_map(|k| body.get(*k).map(|v| (k.to_string(), v.clone())))
            .collect(),
    )
}

async fn replay(name: &str, api: Api) -> usize {
    let cassette = load(name);
    let interactions: Vec<Interaction> = cassette
        .interactions
        .iter()
        .filter(|i| api.serves(&i.request.uri))
        .cloned()
        .collect();
    assert!(
        !interactions.is_empty(),
        "{}: nothing for {api:?}",
        cassette.source
    );
    let server = FakeServer::start(
        interactions
            .iter()
            .map(|i| Canned::status(i.response.status, i.response.body.clone()))
            .collect(),
    )
    .await;
    let first = &interactions[0].request;
    let model_name = match api {
        Api::Gemini => first
            .uri
            .split("/models/")
            .nth(1)
            .unwrap_or_default()
            .split(':')
            .next()
            .unwrap_or_default()
            .to_string(),
        _ => text_of(&first.body["model"]),
    };
    let base = match api {
        Api::OpenAi => format!(
            "{}{}",
            server.base,
            path_of(&first.uri).trim_end_matches("/chat/completions")
        ),
        _ => server.base.clone(),
    };
    let model = client(api, &base, &model_name);
    for (step, interaction) in interactions.iter().enumerate() {
        let recorded = &interaction.request.body;
        let request = ModelRequest {
            stage: Stage::new(step as u32 + 1, 0),
            messages: messages(api, recorded),
            tools: tool_specs(api, recorded),
            protocol: Protocol::Native,
            correction: forces_a_tool(api, recorded).then(action_only),
            grounds: Default::default(),
        };
        assert!(
            request.messages.iter().any(|m| m.role == Role::User),
            "{}",
            cassette.source
        );
        let reply = model
            .complete(&request)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", cassette.source));
        check_reply(api, &reply, &interaction.response.body, &cassette.source);
        let sent = server
            .requests()
            .pop()
            .unwrap_or_else(|| panic!("no request"));
        assert_eq!(
            path_of(&sent.path),
            path_of(&interaction.request.uri),
            "{}",
            cassette.source
        );
        if let Err(difference) = conforms(&compared(api, &sent.body), &compared(api, recorded), "")
        {
            panic!(
                "{} request {step}: {difference}\nours: {}\nrecorded: {}",
                cassette.source,
                compared(api, &sent.body),
                compared(api, recorded)
            );
        }
    }
    interactions.len()
}

#[tokio::test]
async fn openai_forced_tool_output() {
    assert_eq!(replay("openai_tool_output", Api::OpenAi).await, 2);
}

#[tokio::test]
async fn openai_history_with_text_and_tool_results() {
    assert_eq!(
        replay("openai_multiple_agent_tool_calls", Api::OpenAi).await,
        2
    );
}

#[tokio::test]
async fn openai_compatible_calls_without_ids_get_ours() {
    assert_eq!(
        replay("openai_compatible_tool_calls_without_id", Api::OpenAi).await,
        2
    );
}

#[tokio::test]
async fn anthropic_forced_tool_output() {
    assert_eq!(replay("anthropic_tool_output", Api::Anthropic).await, 2);
}

#[tokio::test]
async fn anthropic_parallel_calls_and_their_results() {
    assert_eq!(
        replay("anthropic_parallel_tool_calls", Api::Anthropic).await,
        2
    );
}

#[tokio::test]
async fn gemini_forced_tool_output() {
    assert_eq!(replay("gemini_tool_output", Api::Gemini).await, 2);
}

#[tokio::test]
async fn gemini_call_without_arguments() {
    assert_eq!(replay("gemini_tool_without_args", Api::Gemini).await, 2);
}

#[test]
fn the_shape_check_catches_a_null_content_and_an_extra_key() {
    let recorded = json!({"messages": [{"role": "assistant", "tool_calls": []}]});
    let null = json!({"messages": [{"role": "assistant", "content": null, "tool_calls": []}]});
    assert!(conforms(&null, &recorded, "").is_err());
    let extra = json!({"messages": [{"role": "assistant", "name": "x", "tool_calls": []}]});
    assert!(conforms(&extra, &recorded, "").is_err());
    let empty = json!({"messages": [{"role": "assistant", "content": "", "tool_calls": []}]});
    assert!(conforms(&empty, &recorded, "").is_ok());
    let missing = json!({"messages": [{"role": "assistant"}]});
    assert!(conforms(&missing, &recorded, "").is_err());
}
