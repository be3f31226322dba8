//! Loads the small embedded model (SmolLM2-135M) once per test binary: these tests need a real
//! model, not a capable one, and the small one keeps them fast.
//!
//! The model is fetched by `scripts/fetch-model smollm2-135m`. Without it the model tests are
//! skipped with a message, except under CI (`CI` set), where a missing model fails them.

#![allow(dead_code)]

use std::sync::OnceLock;

use corrigible::{Message, ModelRequest, Protocol, Stage, ToolSpec};
use corrigible_local::{Constrain, LocalConfig, LocalModel, SMALL_MODEL, local_model_path};
use serde_json::json;

static MODEL: OnceLock<Option<LocalModel>> = OnceLock::new();

/// The small model with the default configuration, or `None` (skip) when it is not fetched.
pub fn model() -> Option<&'static LocalModel> {
    MODEL
        .get_or_init(|| {
            let path = match local_model_path(SMALL_MODEL) {
                Ok(p) => p,
                Err(e) if std::env::var_os("CI").is_some() => panic!("{e}"),
                Err(e) => {
                    eprintln!("skipping: {e}");
                    return None;
                }
            };
            Some(LocalModel::load(LocalConfig::new(path)).expect("the model loads"))
        })
        .as_ref()
}

/// The same model loaded with `configure` applied to the default configuration.
pub fn model_with(configure: impl FnOnce(&mut LocalConfig)) -> Option<LocalModel> {
    model()?;
    let mut config = LocalConfig::new(local_model_path(SMALL_MODEL).ok()?);
    configure(&mut config);
    Some(LocalModel::load(config).expect("the model loads"))
}

/// The built-in tools as the engine declares them.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "calculator".into(),
            description: "Evaluates an arithmetic expression.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"expression": {"type": "string", "description": "e.g. 2*(3+4)"}},
                "required": ["expression"]
            }),
            grounded: Vec::new(),
            computes: true,
        },
        ToolSpec {
            name: "time".into(),
            description: "The current time in a time zone.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"timezone": {"type": "string", "description": "IANA name, e.g. Europe/Paris"}},
                "required": ["timezone"]
            }),
            grounded: Vec::new(),
            computes: false,
        },
        ToolSpec {
            name: "weather".into(),
            description: "The current weather in a city.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "units": {"type": "string", "enum": ["metric", "imperial"]}
                },
                "required": ["city"]
            }),
            grounded: Vec::new(),
            computes: false,
        },
    ]
}

/// A system prompt in the engine's shape: the decision contract and the tools.
pub fn system_prompt(tools: &[ToolSpec]) -> String {
    let mut s = String::from(
        "You are a careful agent. Answer the user's request, calling a tool when one helps.\n\
         Reply with exactly one JSON object and nothing else, in one of two shapes:\n\
         {\"state\": \"action\", \"reason\": \"<why this tool>\", \"tool\": \"<tool name>\", \"tool_input\": {<input for the tool>}}\n\
         {\"state\": \"final\", \"satisfied\": true, \"final_summary\": \"<the answer for the user>\"}\n\
         Use \"satisfied\": false when the request cannot be fulfilled, and say why.\nTools:",
    );
    for t in tools {
        s.push_str(&format!(
            "\n- {}: {} Input schema: {}",
            t.name, t.description, t.parameters
        ));
    }
    s.push_str("\nTool results arrive as <tool_result> elements.");
    s
}

/// A first-step request for `prompt` with `tools`.
pub fn request(prompt: &str, tools: Vec<ToolSpec>) -> ModelRequest {
    ModelRequest {
        stage: Stage::new(1, 0),
        messages: vec![
            Message::system(system_prompt(&tools)),
            Message::request(prompt),
        ],
        tools,
        protocol: Protocol::Json,
        correction: None,
        grounds: Default::default(),
    }
}

/// The constraint modes worth exercising.
pub const MODES: [Constrain; 2] = [Constrain::Schema, Constrain::Envelope];

/// Runs the test `name` of this test binary again with the best kernels of this CPU turned
/// off, so that those of CPUs with less are checked too: without AMX tiles
/// (`CORRIGIBLE_NO_AMX`: AVX-512 VNNI products and group kernels), and without either
/// (`CORRIGIBLE_NO_VNNI` too: AVX2). In a child process each, as the switches are read once
/// per process; nothing runs in a child run itself.
pub fn on_lesser_kernels(name: &str) {
    if std::env::var_os("CORRIGIBLE_NO_AMX").is_some() {
        eprintln!("skipping: already a child run");
        return;
    }
    let flags = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let has = |flag: &str| flags.split_whitespace().any(|f| f == flag);
    let mut runs: Vec<&[(&str, &str)]> = Vec::new();
    if has("amx_int8") {
        runs.push(&[("CORRIGIBLE_NO_AMX", "1")]);
    }
    if has("avx512_vnni") {
        runs.push(&[("CORRIGIBLE_NO_AMX", "1"), ("CORRIGIBLE_NO_VNNI", "1")]);
    }
    let exe = std::env::current_exe().expect("test binary");
    for env in runs {
        let out = std::process::Command::new(&exe)
            .args(["--exact", name, "--nocapture"])
            .envs(env.iter().copied())
            .output()
            .expect("run the test binary");
        let log = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "with {env:?}:\n{log}");
        assert!(
            log.contains("1 passed"),
            "the test ran with {env:?}:\n{log}"
        );
    }
}
