//! Fault injection: a [`Model`] wrapper that corrupts a fraction of replies with realistic
//! malformations, deterministically for a seed, so correction efficacy can be measured apart
//! from model skill.

use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use corrigible::{Model, ModelError, ModelReply, ModelRequest, Stage};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A kind of injected malformation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// The JSON wrapped in a markdown code fence.
    CodeFence,
    /// A comma before the closing brace.
    TrailingComma,
    /// Prose before and after the JSON.
    SurroundingProse,
    /// A field renamed (`tool_input` → `arguments`, `final_summary` → `answer`).
    WrongField,
    /// A tool that does not exist.
    UnknownTool,
    /// The reply cut off midway.
    Truncated,
    /// No text and no tool call.
    Empty,
}

impl FaultKind {
    /// Every kind.
    pub const ALL: [FaultKind; 7] = [
        FaultKind::CodeFence,
        FaultKind::TrailingComma,
        FaultKind::SurroundingProse,
        FaultKind::WrongField,
        FaultKind::UnknownTool,
        FaultKind::Truncated,
        FaultKind::Empty,
    ];

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::CodeFence => "code_fence",
            FaultKind::TrailingComma => "trailing_comma",
            FaultKind::SurroundingProse => "surrounding_prose",
            FaultKind::WrongField => "wrong_field",
            FaultKind::UnknownTool => "unknown_tool",
            FaultKind::Truncated => "truncated",
            FaultKind::Empty => "empty",
        }
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The name of the tool an [`FaultKind::UnknownTool`] fault calls.
pub const UNKNOWN_TOOL: &str = "search_everything";

/// How often to inject faults, and the seed that makes them reproducible.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FaultConfig {
    /// Fraction of replies corrupted, in `[0, 1]`.
    pub rate: f64,
    /// The seed; each task derives its own stream from it.
    pub seed: u64,
}

impl FaultConfig {
    /// A validated configuration: `rate` must be within `[0, 1]`.
    pub fn new(rate: f64, seed: u64) -> Result<Self, String> {
        if !(0.0..=1.0).contains(&rate) {
            return Err(format!("--faults {rate}: must be between 0 and 1"));
        }
        Ok(Self { rate, seed })
    }

    /// The seed of `task`'s stream: the same for every policy, so each policy meets the same
    /// first faults.
    pub fn task_seed(&self, task: usize) -> u64 {
        // SplitMix64 of seed and task index.
        let mut z = self
            .seed
            .wrapping_add((task as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// A fault that was injected, and the model call it hit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InjectedFault {
    /// The stage of the corrupted call.
    pub stage: Stage,
    /// What was done to the reply.
    pub kind: FaultKind,
}

/// Wraps a model and corrupts about `rate` of its replies (never transport errors).
pub struct FaultyModel {
    inner: Arc<dyn Model>,
    rate: f64,
    rng: Mutex<StdRng>,
    forced: Mutex<Vec<FaultKind>>,
    injected: Mutex<Vec<InjectedFault>>,
}

impl FaultyModel {
    /// Corrupts about `rate` of `inner`'s replies, reproducibly for `seed`.
    pub fn new(inner: Arc<dyn Model>, rate: f64, seed: u64) -> Self {
        Self {
            inner,
            rate,
            rng: Mutex::new(StdRng::seed_from_u64(seed)),
            forced: Mutex::new(Vec::new()),
            injected: Mutex::new(Vec::new()),
        }
    }

    /// Corrupts the next replies with exactly these kinds, in order (then none), when each
    /// applies to the reply; for tests.
    pub fn scripted(inner: Arc<dyn Model>, kinds: Vec<FaultKind>) -> Self {
        let model = Self::new(inner, 0.0, 0);
        if let Ok(mut forced) = model.forced.lock() {
            *forced = kinds.into_iter().rev().collect();
        }
        model
    }

    /// The faults injected so far, in call order.
    pub fn injected(&self) -> Vec<InjectedFault> {
        self.injected.lock().map(|v| v.clone()).unwrap_or_default()
    }

    fn choose(&self, reply: &ModelReply) -> Option<FaultKind> {
        if let Ok(mut forced) = self.forced.lock()
            && let Some(kind) = forced.pop()
        {
            return applicable(reply).contains(&kind).then_some(kind);
        }
        let kinds = applicable(reply);
        let mut rng = self.rng.lock().ok()?;
        // Always draw twice, so the stream does not depend on which kinds apply.
        let hit = rng.random::<f64>() < self.rate;
        let pick = rng.random_range(0..FaultKind::ALL.len());
        if !hit || kinds.is_empty() {
            return None;
        }
        Some(kinds[pick % kinds.len()])
    }
}

#[async_trait]
impl Model for FaultyModel {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let reply = self.inner.complete(request).await?;
        let Some(kind) = self.choose(&reply) else {
            return Ok(reply);
        };
        let corrupted = corrupt(reply, kind);
        if let Ok(mut injected) = self.injected.lock() {
            injected.push(InjectedFault {
                stage: request.stage.clone(),
                kind,
            });
        }
        Ok(corrupted)
    }

    fn count_tokens(&self, text: &str) -> Option<usize> {
        self.inner.count_tokens(text)
    }
}

/// The kinds that can be applied to `reply`: on text, all of them when it is a JSON object
/// (only the textual ones otherwise); on native tool calls, the ones that make sense for
/// call arguments.
pub fn applicable(reply: &ModelReply) -> Vec<FaultKind> {
    if let Some(call) = reply.tool_calls.first() {
        let mut kinds = vec![
            FaultKind::UnknownTool,
            FaultKind::Truncated,
            FaultKind::Empty,
        ];
        if matches!(serde_json::from_str::<Value>(&call.arguments), Ok(Value::Object(ref o)) if !o.is_empty())
        {
            kinds.extend([FaultKind::TrailingComma, FaultKind::WrongField]);
        }
        kinds.sort();
        return kinds;
    }
    let text = reply.text.as_deref().unwrap_or("").trim();
    if text.is_empty() {
        return Vec::new();
    }
    if matches!(serde_json::from_str::<Value>(text), Ok(Value::Object(_))) {
        FaultKind::ALL.to_vec()
    } else {
        vec![
            FaultKind::CodeFence,
            FaultKind::SurroundingProse,
            FaultKind::Truncated,
            FaultKind::Empty,
        ]
    }
}

/// Applies `kind` to `reply` (usage and metadata are kept: the tokens were spent).
pub fn corrupt(mut reply: ModelReply, kind: FaultKind) -> ModelReply {
    if kind == FaultKind::Empty {
        reply.text = None;
        reply.tool_calls.clear();
        return reply;
    }
    if let Some(call) = reply.tool_calls.first_mut() {
        match kind {
            FaultKind::UnknownTool => call.name = UNKNOWN_TOOL.to_string(),
            FaultKind::Truncated => call.arguments = truncate(&call.arguments),
            FaultKind::TrailingComma => call.arguments = trailing_comma(&call.arguments),
            FaultKind::WrongField => {
                if let Ok(Value::Object(mut args)) = serde_json::from_str::<Value>(&call.arguments)
                    && let Some(key) = args.keys().next().cloned()
                    && let Some(value) = args.remove(&key)
                {
                    args.insert(format!("{key}_value"), value);
                    call.arguments = Value::Object(args).to_string();
                }
            }
            _ => {}
        }
        return reply;
    }
    let text = reply.text.take().unwrap_or_default();
    let trimmed = text.trim();
    let corrupted = match kind {
        FaultKind::CodeFence => format!("```json\n{trimmed}\n```"),
        FaultKind::SurroundingProse => {
            format!("Sure, here is my decision:\n{trimmed}\nLet me know if you need anything else.")
        }
        FaultKind::TrailingComma => trailing_comma(trimmed),
        FaultKind::Truncated => truncate(trimmed),
        FaultKind::WrongField => wrong_field(trimmed),
        FaultKind::UnknownTool => unknown_tool(trimmed),
        FaultKind::Empty => String::new(),
    };
    reply.text = Some(corrupted);
    reply
}

fn trailing_comma(json: &str) -> String {
    let json = json.trim_end();
    match json.strip_suffix('}') {
        Some(body) => format!("{},}}", body.trim_end()),
        None => json.to_string(),
    }
}

fn truncate(text: &str) -> String {
    let keep = text.chars().count() * 3 / 5;
    text.chars().take(keep.max(1)).collect()
}

fn wrong_field(text: &str) -> String {
    let Ok(Value::Object(mut obj)) = serde_json::from_str::<Value>(text) else {
        return text.to_string();
    };
    for (from, to) in [("tool_input", "arguments"), ("final_summary", "answer")] {
        if let Some(value) = obj.remove(from) {
            obj.insert(to.to_string(), value);
            return Value::Object(obj).to_string();
        }
    }
    // Neither field: drop the state, the one field every decision has.
    obj.remove("state");
    obj.insert("status".into(), Value::String("unknown".into()));
    Value::Object(obj).to_string()
}

fn unknown_tool(text: &str) -> String {
    let Ok(Value::Object(mut obj)) = serde_json::from_str::<Value>(text) else {
        return text.to_string();
    };
    let query = obj
        .get("final_summary")
        .cloned()
        .unwrap_or(Value::String(String::new()));
    if !obj.contains_key("tool") {
        obj.clear();
        obj.insert("state".into(), Value::String("action".into()));
        obj.insert(
            "reason".into(),
            Value::String("look it up to be sure".into()),
        );
        obj.insert("tool_input".into(), serde_json::json!({ "query": query }));
    }
    obj.insert("tool".into(), Value::String(UNKNOWN_TOOL.into()));
    Value::Object(obj).to_string()
}

impl FromStr for FaultKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FaultKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown fault kind `{s}`"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use corrigible::ToolCall;

    fn text(t: &str) -> ModelReply {
        ModelReply {
            text: Some(t.into()),
            ..Default::default()
        }
    }

    const ACTION: &str =
        r#"{"state":"action","reason":"r","tool":"calculator","tool_input":{"expression":"1+1"}}"#;

    #[test]
    fn each_kind_changes_a_json_reply() {
        for kind in FaultKind::ALL {
            let out = corrupt(text(ACTION), kind);
            assert_ne!(out.text.as_deref(), Some(ACTION), "{kind}");
        }
        assert_eq!(
            corrupt(text(ACTION), FaultKind::TrailingComma)
                .text
                .unwrap(),
            r#"{"state":"action","reason":"r","tool":"calculator","tool_input":{"expression":"1+1"},}"#
        );
    }

    #[test]
    fn native_calls_get_argument_faults() {
        let reply = ModelReply {
            tool_calls: vec![ToolCall {
                id: "1".into(),
                name: "calculator".into(),
                arguments: r#"{"expression":"1+1"}"#.into(),
            }],
            ..Default::default()
        };
        assert_eq!(
            corrupt(reply.clone(), FaultKind::WrongField).tool_calls[0].arguments,
            r#"{"expression_value":"1+1"}"#
        );
        assert_eq!(
            corrupt(reply.clone(), FaultKind::UnknownTool).tool_calls[0].name,
            UNKNOWN_TOOL
        );
        assert!(!applicable(&reply).contains(&FaultKind::CodeFence));
    }

    #[test]
    fn the_same_seed_injects_the_same_faults() {
        let draw = |seed| {
            let model = FaultyModel::new(Arc::new(NoModel), 0.5, seed);
            (0..50)
                .map(|_| model.choose(&text(ACTION)))
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
        let hits = draw(7).iter().filter(|k| k.is_some()).count();
        assert!((10..=40).contains(&hits), "{hits}");
        assert!(FaultConfig::new(1.5, 0).is_err());
    }

    struct NoModel;

    #[async_trait]
    impl Model for NoModel {
        fn name(&self) -> &str {
            "none"
        }
        async fn complete(&self, _: &ModelRequest) -> Result<ModelReply, ModelError> {
            Err(ModelError::Transport("none".into()))
        }
    }
}
