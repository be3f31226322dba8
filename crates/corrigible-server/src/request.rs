//! The body of `POST /v1/runs`, parsed strictly and validated against the agent.

use corrigible::{Agent, Policy, Protocol};
use serde::Deserialize;

use crate::errors::BadRequest;

/// Largest `limits.max_actions` a request may ask for.
pub const MAX_ACTIONS_CAP: u32 = 100;
/// Largest `limits.max_corrections` a request may ask for.
pub const MAX_CORRECTIONS_CAP: u32 = 20;
/// Largest `limits.tool_retries` a request may ask for.
pub const TOOL_RETRIES_CAP: u32 = 10;

/// `POST /v1/runs` body: `{prompt, tools?, protocol?, limits?}`; unknown fields are refused.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRequest {
    /// The user's request.
    pub prompt: String,
    /// Restricts the run to these registered tools.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Must equal the agent's protocol when given.
    #[serde(default)]
    pub protocol: Option<String>,
    /// Per-run bounds over the agent's policy.
    #[serde(default)]
    pub limits: Option<RunLimits>,
}

/// Per-run bounds; each one given replaces the agent's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunLimits {
    /// Executed tool actions per run.
    #[serde(default)]
    pub max_actions: Option<u32>,
    /// Decision corrections per action slot.
    #[serde(default)]
    pub max_corrections: Option<u32>,
    /// Corrections of a repeated action per slot before only a final answer is left.
    #[serde(default)]
    pub max_repeats: Option<u32>,
    /// Execution retries after a tool `Failed`.
    #[serde(default)]
    pub tool_retries: Option<u32>,
    /// Model calls per run.
    #[serde(default)]
    pub max_model_calls: Option<u32>,
    /// Input plus output tokens per run.
    #[serde(default)]
    pub max_tokens: Option<u64>,
}

/// A validated run request, ready for `Agent::run_with`.
#[derive(Debug, Clone, PartialEq)]
pub struct RunPlan {
    /// The user's request.
    pub prompt: String,
    /// The tools the run may use (all of the agent's when `None`).
    pub tools: Option<Vec<String>>,
    /// The policy of the run (the agent's when `None`).
    pub policy: Option<Policy>,
}

impl RunRequest {
    /// Parses a body; errors name the field at fault.
    pub fn parse(body: &[u8]) -> Result<Self, BadRequest> {
        let first = body.iter().find(|b| !b.is_ascii_whitespace());
        if first != Some(&b'{') {
            return Err(BadRequest::new(
                "body",
                "must be a JSON object such as {\"prompt\": \"...\"}",
            ));
        }
        let mut deserializer = serde_json::Deserializer::from_slice(body);
        let request: Self = serde_path_to_error::deserialize(&mut deserializer)
            .map_err(|e| json_error(e.path().to_string(), e.into_inner()))?;
        deserializer
            .end()
            .map_err(|e| BadRequest::new("body", format!("malformed JSON: {e}")))?;
        Ok(request)
    }

    /// Checks the request against `agent`: a non-empty prompt, registered tools, the agent's
    /// protocol, limits within their caps.
    pub fn validate(self, agent: &Agent) -> Result<RunPlan, BadRequest> {
        if self.prompt.trim().is_empty() {
            return Err(BadRequest::new("prompt", "must not be empty"));
        }
        if let Some(tools) = &self.tools {
            let registered = agent.tools().names();
            if let Some(unknown) = tools.iter().find(|t| !registered.contains(&t.as_str())) {
                return Err(BadRequest::new(
                    "tools",
                    format!(
                        "unknown tool `{unknown}`; this server's tools are: {}",
                        registered.join(", ")
                    ),
                ));
            }
        }
        if let Some(protocol) = &self.protocol {
            let asked: Protocol = protocol
                .parse()
                .map_err(|e: String| BadRequest::new("protocol", e))?;
            if asked != agent.protocol() {
                return Err(BadRequest::new(
                    "protocol",
                    format!(
                        "this server runs the `{}` protocol; a run cannot choose `{protocol}` \
                         (omit `protocol` or send `{}`)",
                        protocol_name(agent.protocol()),
                        protocol_name(agent.protocol()),
                    ),
                ));
            }
        }
        let policy = self
            .limits
            .map(|limits| limits.apply(agent.policy().clone()))
            .transpose()?;
        Ok(RunPlan {
            prompt: self.prompt,
            tools: self.tools,
            policy,
        })
    }
}

impl RunLimits {
    /// `policy` with these limits in force.
    pub fn apply(self, mut policy: Policy) -> Result<Policy, BadRequest> {
        let capped = |field: &str, value: Option<u32>, cap: u32| match value {
            Some(v) if v > cap => Err(BadRequest::new(
                format!("limits.{field}"),
                format!("{v} is above the cap of {cap}"),
            )),
            other => Ok(other),
        };
        if let Some(v) = capped("max_actions", self.max_actions, MAX_ACTIONS_CAP)? {
            policy.limits.max_actions = v;
        }
        if let Some(v) = capped("max_corrections", self.max_corrections, MAX_CORRECTIONS_CAP)? {
            policy.limits.max_corrections = v;
        }
        if let Some(v) = capped("max_repeats", self.max_repeats, MAX_CORRECTIONS_CAP)? {
            policy.limits.max_repeats = v;
        }
        if let Some(v) = capped("tool_retries", self.tool_retries, TOOL_RETRIES_CAP)? {
            policy.retry.max_retries = v;
        }
        if let Some(v) = self.max_model_calls {
            policy.limits.max_model_calls = Some(v);
        }
        if let Some(v) = self.max_tokens {
            policy.limits.max_tokens = Some(v);
        }
        Ok(policy)
    }
}

/// The snake_case name of a protocol.
pub fn protocol_name(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Json => "json",
        Protocol::Native => "native",
    }
}

/// A serde error as a bad request naming its field: `limits.max_actions`, or the unknown or
/// missing field itself.
fn json_error(path: String, error: serde_json::Error) -> BadRequest {
    let message = error.to_string();
    if error.is_syntax() || error.is_eof() || error.is_io() {
        return BadRequest::new("body", format!("malformed JSON: {message}"));
    }
    let named = ["unknown field `", "missing field `"]
        .iter()
        .find_map(|prefix| message.strip_prefix(prefix))
        .and_then(|rest| rest.split('`').next());
    let field = match (path.as_str(), named) {
        (".", Some(name)) => name.to_string(),
        (".", None) => "body".to_string(),
        (path, Some(name)) if path == name || path.ends_with(&format!(".{name}")) => {
            path.to_string()
        }
        (path, Some(name)) => format!("{path}.{name}"),
        (path, None) => path.to_string(),
    };
    BadRequest::new(field, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(body: &str) -> String {
        RunRequest::parse(body.as_bytes()).unwrap_err().field
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(field("{"), "body");
        assert_eq!(field("[1]"), "body");
        assert_eq!(field(""), "body");
        assert_eq!(field("{}"), "prompt");
        assert_eq!(field(r#"{"prompt":"x","colour":1}"#), "colour");
        assert_eq!(field(r#"{"prompt":3}"#), "prompt");
        assert_eq!(
            field(r#"{"prompt":"x","limits":{"max_actions":-1}}"#),
            "limits.max_actions"
        );
        assert_eq!(
            field(r#"{"prompt":"x","limits":{"speed":1}}"#),
            "limits.speed"
        );
        assert_eq!(field(r#"{"prompt":"x","tools":"calculator"}"#), "tools");
        assert_eq!(field(r#"{"prompt":"x"} trailing"#), "body");
    }

    #[test]
    fn limits_map_onto_the_policy() {
        let limits = RunLimits {
            max_actions: Some(3),
            max_corrections: Some(1),
            max_repeats: Some(0),
            tool_retries: Some(0),
            max_model_calls: Some(9),
            max_tokens: Some(1000),
        };
        let policy = limits.apply(Policy::default()).unwrap();
        assert_eq!(policy.limits.max_actions, 3);
        assert_eq!(policy.limits.max_corrections, 1);
        assert_eq!(policy.limits.max_repeats, 0);
        assert_eq!(policy.retry.max_retries, 0);
        assert_eq!(policy.limits.max_model_calls, Some(9));
        assert_eq!(policy.limits.max_tokens, Some(1000));
        let too_many = RunLimits {
            max_actions: Some(MAX_ACTIONS_CAP + 1),
            ..RunLimits::default()
        };
        assert_eq!(
            too_many.apply(Policy::default()).unwrap_err().field,
            "limits.max_actions"
        );
    }
}
