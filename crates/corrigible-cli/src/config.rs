//! `corrigible.toml`: every bound, per-tool sections, the model and the feedback template.
//!
//! Unknown keys and out-of-range values are errors that name the key; flags override the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use corrigible::Policy;
use corrigible::policy::{Backoff, BreakerPolicy, Jitter, RetryScope, ToolPolicy};
use serde::{Deserialize, Serialize};

/// The configuration file, as written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    /// Model spec, as `--model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `json` or `native`, as `--protocol`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// Provider base URL, as `--base-url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Built-in tools to offer, as `--tools`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Which evidence rules judge decisions, as `--profile`: `precise` or `strict`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Sampling temperature sent to a provider's model, as `--temperature`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// When the embedded model thinks, as `--think`: `auto`, `always` or `off`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think: Option<String>,
    /// The most tokens of one thought, as `--think-tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub think_tokens: Option<usize>,
    /// Whether the embedded model's thought calculator rewrites wrong values (default true);
    /// `false` is `--no-thought-calculator`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_calculator: Option<bool>,
    /// Whether the embedded model's pre-filled prompt prefix is kept on disk between runs
    /// (default true); `false` is `--no-prefix-cache`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache: Option<bool>,
    /// The answer rules on top of the profile, as `--grounding`: `values` or `failures`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grounding: Option<String>,
    /// `corrigible serve`'s run store, as `--db`: a SQLite path or URL, or `postgres://…`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database_url: Option<String>,
    /// Per-run bounds.
    #[serde(default)]
    pub limits: LimitsConfig,
    /// Tool execution retries.
    #[serde(default)]
    pub retry: RetryConfig,
    /// Circuit breakers.
    #[serde(default)]
    pub breaker: BreakerConfig,
    /// Per-tool overrides, by tool name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tool: BTreeMap<String, ToolConfig>,
    /// Correction feedback.
    #[serde(default)]
    pub feedback: FeedbackConfig,
    /// Verification of satisfied answers.
    #[serde(default)]
    pub verify: VerifyConfig,
    /// OpenTelemetry export; the standard `OTEL_*` variables override it.
    #[serde(default)]
    pub telemetry: TelemetryConfig,
    /// MCP servers, as `[[mcp]]` tables.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp: Vec<crate::mcp::McpTable>,
}

/// `[limits]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    /// Executed tool actions per run.
    pub max_actions: u32,
    /// Decision corrections per action slot.
    pub max_corrections: u32,
    /// Corrections of a repeated action per slot before only a final answer is left.
    pub max_repeats: u32,
    /// Output-validator rejections sent back per run.
    pub output_retries: u32,
    /// `Retry` rejections allowed per tool (per-tool sections override it).
    pub tool_rejections: u32,
    /// Model calls per run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_model_calls: Option<u32>,
    /// Input plus output tokens per run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Input tokens per run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_input_tokens: Option<u64>,
    /// Output tokens per run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        let defaults = Policy::default();
        Self {
            max_actions: defaults.limits.max_actions,
            max_corrections: defaults.limits.max_corrections,
            max_repeats: defaults.limits.max_repeats,
            output_retries: defaults.limits.output_retries,
            tool_rejections: defaults.max_rejections,
            max_model_calls: None,
            max_tokens: None,
            max_input_tokens: None,
            max_output_tokens: None,
        }
    }
}

/// `[retry]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetryConfig {
    /// Retries after a `Failed` execution.
    pub max_retries: u32,
    /// First delay, ms.
    pub backoff_initial_ms: u64,
    /// Growth factor (>= 1).
    pub backoff_multiplier: f64,
    /// Cap, ms.
    pub backoff_max_ms: u64,
    /// `full` or `none`.
    pub jitter: String,
    /// Only these tools get automatic retries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include: Option<Vec<String>>,
    /// These tools never get automatic retries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exclude: Option<Vec<String>>,
}

impl Default for RetryConfig {
    fn default() -> Self {
        let backoff = Backoff::default();
        Self {
            max_retries: Policy::default().retry.max_retries,
            backoff_initial_ms: backoff.initial().as_millis() as u64,
            backoff_multiplier: backoff.multiplier(),
            backoff_max_ms: backoff.max().as_millis() as u64,
            jitter: "full".into(),
            include: None,
            exclude: None,
        }
    }
}

/// `[breaker]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BreakerConfig {
    /// Consecutive failures that open a breaker (0 disables breakers).
    pub threshold: u32,
    /// Time open before one probe, ms.
    pub reset_ms: u64,
    /// `corrigible serve` keeps the breakers in its database, shared by its instances.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shared: bool,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        let breaker = BreakerPolicy::default();
        Self {
            threshold: breaker.threshold(),
            reset_ms: breaker.reset().as_millis() as u64,
            shared: false,
        }
    }
}

/// `[tool.NAME]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolConfig {
    /// Execution retries after `Failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// `Retry` rejections allowed; 0 makes them terminal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rejections: Option<u32>,
    /// Whether the tool may be re-executed automatically.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// Whether an identical call may run again after a success in one run (a polling tool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeatable: Option<bool>,
}

/// `[feedback]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeedbackConfig {
    /// A minijinja template replacing the default feedback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
}

/// `[verify]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyConfig {
    /// Whether satisfied answers are verified, as `--verify`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// The verifying model, as `--verifier` (implies `enabled`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Verifications per run, as `--max-verifications`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_per_run: Option<u32>,
}

/// `[telemetry]`: where spans are exported, under which service name, and whether they carry
/// content. Each key yields to its standard variable.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// The OTLP/HTTP base URL (`/v1/traces` is appended), as `OTEL_EXPORTER_OTLP_ENDPOINT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// The service name, as `OTEL_SERVICE_NAME` (default `corrigible`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    /// Whether spans carry messages, tool arguments and results, as
    /// `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture_content: Option<bool>,
}

/// The `[telemetry]` table of the configuration `flag` names (or `CORRIGIBLE_CONFIG`), read
/// before anything else; a file that does not load yields the defaults here and its error
/// later, where the command reads it whole.
pub fn telemetry(flag: Option<&Path>) -> TelemetryConfig {
    locate(flag)
        .and_then(|path| load(&path).ok())
        .map(|file| file.telemetry)
        .unwrap_or_default()
}

/// Where the configuration comes from: `--config`, else `CORRIGIBLE_CONFIG`, else nothing.
pub fn locate(flag: Option<&Path>) -> Option<PathBuf> {
    flag.map(Path::to_path_buf)
        .or_else(|| std::env::var_os("CORRIGIBLE_CONFIG").map(PathBuf::from))
}

/// Reads and validates a configuration file.
pub fn load(path: &Path) -> anyhow::Result<FileConfig> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("config file {}", path.display()))?;
    parse(&text).with_context(|| format!("config file {}", path.display()))
}

/// Parses and validates a configuration's text: its policy and its MCP servers.
pub fn parse(text: &str) -> anyhow::Result<FileConfig> {
    let config: FileConfig =
        toml::from_str(text).map_err(|e| anyhow!("{}", e.to_string().trim_end()))?;
    config.policy()?;
    crate::mcp::servers_from_file(&config.mcp)?;
    Ok(config)
}

impl FileConfig {
    /// The engine policy this file describes.
    pub fn policy(&self) -> anyhow::Result<Policy> {
        let mut policy = Policy::default();
        let l = &self.limits;
        if l.max_actions == 0 {
            bail!("limits.max_actions: must be at least 1");
        }
        policy.limits.max_actions = l.max_actions;
        policy.limits.max_corrections = l.max_corrections;
        policy.limits.max_repeats = l.max_repeats;
        policy.limits.output_retries = l.output_retries;
        policy.limits.max_model_calls = l.max_model_calls;
        policy.limits.max_tokens = l.max_tokens;
        policy.limits.max_input_tokens = l.max_input_tokens;
        policy.limits.max_output_tokens = l.max_output_tokens;
        policy.max_rejections = l.tool_rejections;
        if let Some(profile) = &self.profile {
            let profile: corrigible::Profile =
                profile.parse().map_err(|e| anyhow!("profile: {e}"))?;
            policy.checks = profile.checks();
        }
        if let Some(grounding) = &self.grounding {
            let grounding = grounding.parse().map_err(|e| anyhow!("grounding: {e}"))?;
            policy.checks = policy.checks.with_grounding(grounding);
        }

        let r = &self.retry;
        let jitter = match r.jitter.as_str() {
            "full" => Jitter::Full,
            "none" => Jitter::None,
            other => bail!("retry.jitter: expected \"full\" or \"none\", got \"{other}\""),
        };
        policy.retry.max_retries = r.max_retries;
        policy.retry.backoff = Backoff::new(
            Duration::from_millis(r.backoff_initial_ms),
            r.backoff_multiplier,
            Duration::from_millis(r.backoff_max_ms),
            jitter,
        )
        .map_err(|e| anyhow!("retry: {e}"))?;
        policy.retry_scope = match (&r.include, &r.exclude) {
            (Some(_), Some(_)) => bail!("retry.include and retry.exclude: give one or the other"),
            (Some(names), None) => RetryScope::Include(names.clone()),
            (None, Some(names)) => RetryScope::Exclude(names.clone()),
            (None, None) => RetryScope::All,
        };
        policy.breaker = BreakerPolicy::new(
            self.breaker.threshold,
            Duration::from_millis(self.breaker.reset_ms),
        )
        .map_err(|e| anyhow!("breaker: {e}"))?;
        for (name, tool) in &self.tool {
            policy.tools.insert(
                name.clone(),
                ToolPolicy {
                    max_retries: tool.max_retries,
                    max_rejections: tool.max_rejections,
                    idempotent: tool.idempotent,
                    repeatable: tool.repeatable,
                },
            );
        }
        if let Some(template) = &self.feedback.template {
            corrigible::correction::feedback::FeedbackTemplate::new(template.clone())
                .map_err(|e| anyhow!("feedback.template: {e}"))?;
        }
        Ok(policy)
    }

    /// This file with every unset choice a run would make filled in: the model (`local`), the
    /// profile (`precise`), the tools (the built-in ones, none beside MCP servers), the
    /// embedded model's thought settings, and whether answers are verified.
    pub fn with_defaults(&self) -> FileConfig {
        let mut effective = self.clone();
        effective.model.get_or_insert_with(|| "local".to_string());
        effective
            .profile
            .get_or_insert_with(|| "precise".to_string());
        effective.tools.get_or_insert_with(|| {
            if self.mcp.is_empty() {
                corrigible_tools::BUILTIN_TOOLS
                    .iter()
                    .map(|t| t.to_string())
                    .collect()
            } else {
                Vec::new()
            }
        });
        let embedded = effective
            .model
            .as_deref()
            .is_some_and(|m| matches!(m.parse(), Ok(corrigible_models::ModelSpec::Local { .. })));
        if embedded {
            if effective.think.is_none() {
                let think = effective.think_tokens.map_or_else(
                    corrigible_local::Think::default,
                    corrigible_local::Think::implied_by,
                );
                effective.think = Some(think.to_string());
            }
            effective
                .think_tokens
                .get_or_insert(corrigible_local::DEFAULT_THINK_TOKENS);
            effective.thought_calculator.get_or_insert(true);
            effective.prefix_cache.get_or_insert(true);
        }
        let verify = &mut effective.verify;
        let on = verify.enabled.unwrap_or(false) || verify.model.is_some();
        verify.enabled = Some(on);
        if on {
            verify
                .max_per_run
                .get_or_insert(corrigible::verify::DEFAULT_MAX_PER_RUN);
        }
        effective
    }

    /// The effective configuration as TOML.
    /// Header values are shown as `***`.
    pub fn to_toml(&self) -> anyhow::Result<String> {
        let mut shown = self.clone();
        for table in &mut shown.mcp {
            table.redact();
        }
        toml::to_string_pretty(&shown).map_err(|e| anyhow!("cannot print the configuration: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profile_is_read_and_grounding_applies_over_it() {
        let strict = parse("profile = \"strict\"\n").unwrap().policy().unwrap();
        assert_eq!(strict.checks, corrigible::Checks::STRICT);
        let precise = parse("").unwrap().policy().unwrap();
        assert_eq!(precise.checks, corrigible::Checks::PRECISE);
        let mixed = parse("profile = \"precise\"\ngrounding = \"values\"\n")
            .unwrap()
            .policy()
            .unwrap();
        assert!(mixed.checks.unstated_result && !mixed.checks.ungrounded_argument);
        let err = parse("profile = \"lenient\"\n").unwrap_err().to_string();
        assert!(err.contains("profile") && err.contains("lenient"), "{err}");
    }

    #[test]
    fn every_bound_is_read() {
        let config = parse(
            r#"
            model = "replay:x.jsonl"
            grounding = "failures"
            think = "always"
            think_tokens = 64
            thought_calculator = false
            prefix_cache = false
            [limits]
            max_actions = 4
            max_corrections = 1
            output_retries = 0
            tool_rejections = 3
            max_model_calls = 10
            max_tokens = 5000
            [retry]
            max_retries = 2
            backoff_initial_ms = 100
            backoff_max_ms = 1000
            exclude = ["send_email"]
            [breaker]
            threshold = 3
            reset_ms = 5000
            [tool.weather]
            max_retries = 4
            max_rejections = 0
            idempotent = true
            repeatable = true
            "#,
        )
        .unwrap();
        let policy = config.policy().unwrap();
        assert_eq!(policy.limits.max_actions, 4);
        assert!(!policy.checks.unstated_result && !policy.checks.uncovered_request);
        assert_eq!(config.think.as_deref(), Some("always"));
        assert_eq!(config.think_tokens, Some(64));
        assert_eq!(config.thought_calculator, Some(false));
        assert_eq!(config.prefix_cache, Some(false));
        assert_eq!(policy.limits.max_model_calls, Some(10));
        assert_eq!(policy.max_rejections, 3);
        assert_eq!(policy.retry.backoff.initial(), Duration::from_millis(100));
        assert_eq!(policy.breaker.threshold(), 3);
        assert_eq!(policy.rejections_for("weather"), 0);
        assert_eq!(policy.retries_for("weather", true), 4);
        assert_eq!(policy.retries_for("send_email", true), 0);
        assert!(policy.repeatable("weather", false));
        assert!(!policy.repeatable("calculator", false));
    }

    #[test]
    fn unknown_keys_are_named() {
        let err = parse("[limits]\nmax_action = 3\n").unwrap_err().to_string();
        assert!(err.contains("max_action"), "{err}");
        let err = parse("[tool.weather]\nretries = 3\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("retries"), "{err}");
    }

    #[test]
    fn negative_and_invalid_bounds_are_named() {
        let err = parse("[limits]\nmax_corrections = -1\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("max_corrections"), "{err}");
        let err = parse("[retry]\nbackoff_multiplier = 0.5\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("backoff.multiplier"), "{err}");
        let err = parse("[breaker]\nthreshold = 5\nreset_ms = 0\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("reset_ms"), "{err}");
        let err = parse("grounding = \"vibes\"\n").unwrap_err().to_string();
        assert!(err.contains("grounding") && err.contains("vibes"), "{err}");
    }

    #[test]
    fn the_verify_table_is_read_and_its_unknown_keys_refused() {
        let config =
            parse("[verify]\nenabled = true\nmodel = \"local\"\nmax_per_run = 3\n").unwrap();
        assert_eq!(config.verify.enabled, Some(true));
        assert_eq!(config.verify.model.as_deref(), Some("local"));
        assert_eq!(config.verify.max_per_run, Some(3));
        let err = parse("[verify]\nverifier = \"local\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("verifier"), "{err}");
    }

    #[test]
    fn defaults_round_trip_through_toml() {
        let config = FileConfig::default();
        let text = config.to_toml().unwrap();
        assert_eq!(parse(&text).unwrap(), config);
    }
}
