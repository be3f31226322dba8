//! Tool discovery for large catalogs: the model sees each tool's name and one line, and looks
//! a tool's input schema up with `describe_tool` instead of reading every schema up front.

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::model::ToolSpec;
use crate::tool::{Tool, ToolContext, ToolOutcome};

/// The name of the tool that returns another tool's full declaration.
pub const DESCRIBE_TOOL: &str = "describe_tool";

/// Longest one-line description shown in a short catalog, in characters.
const MAX_LINE_CHARS: usize = 100;

/// Most names a correction suggests.
const MAX_SUGGESTIONS: usize = 3;

/// Similarity (Sørensen-Dice on character pairs, 0 to 1) a registered name needs to be
/// suggested. Pairs, unlike Jaro-Winkler's prefix weight, rank `get_current_time` above
/// `get_weather` for `get_time`.
const MIN_SIMILARITY: f64 = 0.5;

/// Whether a run shows the short catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DiscoveryMode {
    /// When the catalog is large (see [`Discovery`]).
    #[default]
    Auto,
    /// Always.
    On,
    /// Never: every schema is in the prompt.
    Off,
}

impl std::str::FromStr for DiscoveryMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Self::Auto),
            "on" => Ok(Self::On),
            "off" => Ok(Self::Off),
            other => Err(format!("expected auto, on or off, got `{other}`")),
        }
    }
}

/// When a catalog counts as large: more tools than `max_tools`, or declarations that would
/// take more than `max_share` of the context budget.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Discovery {
    /// Whether to decide by size, or always or never show the short catalog.
    pub mode: DiscoveryMode,
    /// More tools than this make the catalog large.
    pub max_tools: usize,
    /// Declarations over this share (0 to 1) of the context budget make the catalog large.
    pub max_share: f64,
}

impl Default for Discovery {
    fn default() -> Self {
        Self {
            mode: DiscoveryMode::Auto,
            max_tools: 16,
            max_share: 0.25,
        }
    }
}

impl Discovery {
    /// Whether `tools`, whose full declarations take `declared_tokens`, get the short catalog
    /// under a context budget of `budget_tokens`.
    pub fn applies(&self, tools: usize, declared_tokens: usize, budget_tokens: usize) -> bool {
        match self.mode {
            DiscoveryMode::On => tools > 0,
            DiscoveryMode::Off => false,
            DiscoveryMode::Auto => {
                tools > self.max_tools
                    || declared_tokens as f64 > self.max_share * budget_tokens as f64
            }
        }
    }
}

/// The first line (or sentence) of a description, cut at [`MAX_LINE_CHARS`].
pub fn one_line(description: &str) -> String {
    let line = description
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .trim();
    let line = match line.find(". ") {
        Some(end) => &line[..=end],
        None => line,
    };
    if line.chars().count() <= MAX_LINE_CHARS {
        return line.to_string();
    }
    line.chars().take(MAX_LINE_CHARS).collect::<String>() + "…"
}

/// The registered names closest to `name`, best first.
pub fn closest<'a>(name: &str, names: &[&'a str]) -> Vec<&'a str> {
    let wanted = name.to_lowercase();
    let mut scored: Vec<(f64, &str)> = names
        .iter()
        .map(|n| (strsim::sorensen_dice(&wanted, &n.to_lowercase()), *n))
        .filter(|(score, _)| *score >= MIN_SIMILARITY)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, n)| n)
        .collect()
}

/// A schema cut to fit a correction: descriptions, titles and examples dropped, then the JSON
/// text cut at `max_chars`.
pub fn shortened_schema(schema: &Value, max_chars: usize) -> String {
    let text = strip(schema).to_string();
    if text.chars().count() <= max_chars {
        return text;
    }
    text.chars().take(max_chars).collect::<String>() + "…"
}

fn strip(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| {
                    !matches!(k.as_str(), "description" | "title" | "examples" | "$schema")
                })
                .map(|(k, v)| (k.clone(), strip(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(strip).collect()),
        other => other.clone(),
    }
}

/// `describe_tool {"name": …}`: a registered tool's full description and input schema.
#[derive(Debug, Clone)]
pub struct DescribeTool {
    specs: Vec<ToolSpec>,
}

impl DescribeTool {
    /// Describes the tools declared by `specs`.
    pub fn new(specs: Vec<ToolSpec>) -> Self {
        Self { specs }
    }
}

#[async_trait]
impl Tool for DescribeTool {
    fn name(&self) -> &str {
        DESCRIBE_TOOL
    }

    fn read_only(&self) -> bool {
        true
    }

    fn description(&self) -> &str {
        "Returns a tool's full description and input schema; call it before using a tool."
    }

    fn input_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"name": {"type": "string", "description": "a tool name from the list"}},
            "required": ["name"],
            "additionalProperties": false
        })
    }

    async fn call(&self, input: Value, _ctx: &ToolContext) -> ToolOutcome {
        let name = input
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match self.specs.iter().find(|s| s.name == name) {
            Some(spec) => ToolOutcome::Ok(json!({
                "name": spec.name,
                "description": spec.description,
                "input_schema": spec.parameters,
            })),
            None => {
                let names: Vec<&str> = self.specs.iter().map(|s| s.name.as_str()).collect();
                let near = closest(name, &names);
                ToolOutcome::Retry(if near.is_empty() {
                    format!("no tool is named `{name}`; use a name from the tool list")
                } else {
                    format!("no tool is named `{name}`; closest: {}", near.join(", "))
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: format!("Does {name}. More detail here."),
            parameters: json!({"type": "object", "properties": {"x": {"type": "string", "description": "long words"}}}),
            grounded: Vec::new(),
            computes: false,
        }
    }

    #[test]
    fn large_by_count_or_by_share() {
        let d = Discovery::default();
        assert!(!d.applies(16, 100, 6000));
        assert!(d.applies(17, 100, 6000));
        assert!(d.applies(3, 1501, 6000));
        let off = Discovery {
            mode: DiscoveryMode::Off,
            ..d
        };
        assert!(!off.applies(100, 100_000, 6000));
        let on = Discovery {
            mode: DiscoveryMode::On,
            ..d
        };
        assert!(on.applies(1, 1, 6000));
        assert!("sometimes".parse::<DiscoveryMode>().is_err());
    }

    #[test]
    fn one_line_keeps_the_first_sentence() {
        assert_eq!(
            one_line("Gets the time. Uses IANA names.\nMore."),
            "Gets the time."
        );
        assert_eq!(
            one_line(&"x".repeat(150)).chars().count(),
            MAX_LINE_CHARS + 1
        );
        assert_eq!(one_line(""), "");
    }

    #[test]
    fn closest_names_rank_by_similarity() {
        let names = ["get_current_time", "convert_time", "get_weather"];
        assert_eq!(closest("get_time", &names)[0], "get_current_time");
        assert_eq!(
            closest("calculater", &["calculator", "time"]),
            ["calculator"]
        );
        assert!(closest("zzzz", &names).is_empty());
    }

    #[test]
    fn schemas_lose_descriptions_then_length() {
        let schema = spec("a").parameters;
        let short: Value = serde_json::from_str(&shortened_schema(&schema, 500)).unwrap();
        assert_eq!(
            short,
            json!({"type": "object", "properties": {"x": {"type": "string"}}})
        );
        assert!(shortened_schema(&schema, 10).ends_with('…'));
    }

    #[tokio::test]
    async fn describe_tool_returns_the_schema_or_the_closest_names() {
        let tool = DescribeTool::new(vec![spec("get_current_time"), spec("convert_time")]);
        let ctx = ToolContext {
            run_id: "r".into(),
            step: 1,
            attempt: 1,
            idempotency_key: "k".into(),
        };
        let ToolOutcome::Ok(found) = tool.call(json!({"name": "convert_time"}), &ctx).await else {
            panic!("found expected");
        };
        assert_eq!(found["input_schema"]["properties"]["x"]["type"], "string");
        let missing = tool.call(json!({"name": "get_time"}), &ctx).await;
        assert!(
            matches!(missing, ToolOutcome::Retry(m) if m.contains("closest: get_current_time"))
        );
    }
}
