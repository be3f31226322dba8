//! Turns parsed arguments into validated engine values: the model, the tools and the policy.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use corrigible::policy::{Backoff, BreakerPolicy};
use corrigible::{
    Model, ModelError, Policy, Protocol, ProtocolReason, ToolRegistry, WorkedExample,
    probe_tool_calling,
};
use corrigible_local::{Constrain, LocalConfig, LocalModel, Think};
use corrigible_models::{ModelSpec, Provider, ProviderOptions};
use corrigible_tools::{BuiltinConfig, WeatherConfig, builtin_registry};

use crate::args::{BoundArgs, ModelArgs, ToolArgs};
use crate::config::FileConfig;

/// A model ready to use, with the protocol it speaks.
pub struct ModelSetup {
    /// The model.
    pub model: Arc<dyn Model>,
    /// The decision protocol.
    pub protocol: Protocol,
    /// Why that protocol.
    pub protocol_reason: ProtocolReason,
    /// Whether the protocol is still to be chosen by probing the server ([`probe`]).
    needs_probe: bool,
    /// A fresh model for each run: a replay restarts from its first line, others are shared.
    pub factory: corrigible_server::ModelFactory,
}

/// The worked examples: none with `--no-examples`, the file given by `--examples`, else the
/// built-in ones for the registered tools.
pub fn examples(args: &ToolArgs, tools: &ToolRegistry) -> anyhow::Result<Vec<WorkedExample>> {
    if args.no_examples {
        return Ok(Vec::new());
    }
    match &args.examples {
        Some(path) => examples_file(path),
        None => Ok(corrigible_tools::builtin_examples(&tools.names())),
    }
}

/// The worked examples in `path`, a JSON array (`--examples` of `run`, `serve` and `bench`).
pub fn examples_file(path: &std::path::Path) -> anyhow::Result<Vec<WorkedExample>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--examples: cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "--examples: {} is not a JSON array of worked examples",
            path.display()
        )
    })
}

/// Fills unset flags from the configuration file.
pub fn merge(model: &mut ModelArgs, tools: &mut ToolArgs, file: &FileConfig) {
    if model.model.is_none() {
        model.model = file.model.clone();
    }
    if model.protocol.is_none() {
        model.protocol = file.protocol.clone();
    }
    if model.base_url.is_none() {
        model.base_url = file.base_url.clone();
    }
    if model.think.is_none() && model.think_tokens.is_none() {
        model.think = file.think.clone();
    }
    if model.think_tokens.is_none() {
        model.think_tokens = file.think_tokens;
    }
    if model.temperature.is_none() {
        model.temperature = file.temperature;
    }
    if file.thought_calculator == Some(false) {
        model.no_thought_calculator = true;
    }
    if file.prefix_cache == Some(false) {
        model.no_prefix_cache = true;
    }
    if tools.tools.is_none() {
        tools.tools = file.tools.clone();
    }
}

/// The embedded model's thinking from `--think` and `--think-tokens`: a bound given without a
/// mode thinks before every decision (N > 0) or never (0), as it always has.
pub fn thinking(config: &mut LocalConfig, args: &ModelArgs) -> anyhow::Result<()> {
    if let Some(n) = args.think_tokens {
        config.think_tokens = n;
    }
    config.think = match (args.think.as_deref(), args.think_tokens) {
        (Some(mode), _) => mode.parse().map_err(|e| anyhow!("--think: {e}"))?,
        (None, Some(n)) => Think::implied_by(n),
        (None, None) => config.think,
    };
    Ok(())
}

/// The embedded model's file: `--model-path`, else `local:ARG` (a known name or a file), else
/// the environment's default.
pub fn local_path(model_path: Option<&Path>, arg: Option<&str>) -> anyhow::Result<PathBuf> {
    Ok(match (model_path, arg) {
        (Some(path), _) => path.to_path_buf(),
        (None, Some(arg)) => corrigible_local::local_model_path(arg)?,
        (None, None) => corrigible_local::resolve_model_path()?,
    })
}

/// `--max-sequences`, checked.
pub fn sequences(n: usize) -> anyhow::Result<usize> {
    if !(1..=corrigible_local::MAX_SEQUENCES).contains(&n) {
        bail!(
            "--max-sequences: from 1 to {}, got {n}",
            corrigible_local::MAX_SEQUENCES
        );
    }
    Ok(n)
}

/// Builds the model named by `args`.
pub fn model(args: &ModelArgs) -> anyhow::Result<ModelSetup> {
    let spec: ModelSpec = args
        .model
        .as_deref()
        .unwrap_or("local")
        .parse()
        .map_err(|e| anyhow!("--model: {e}"))?;
    let default_protocol = match spec {
        ModelSpec::Remote { .. } => Protocol::Native,
        _ => Protocol::Json,
    };
    let (protocol, protocol_reason) = match &args.protocol {
        Some(p) => (
            p.parse::<Protocol>()
                .map_err(|e| anyhow!("--protocol: {e}"))?,
            ProtocolReason::Configured,
        ),
        None => (default_protocol, ProtocolReason::ProviderDefault),
    };
    let needs_probe = args.protocol.is_none()
        && matches!(
            spec,
            ModelSpec::Remote {
                provider: Provider::OpenAi,
                ..
            }
        )
        && compatible_server(
            ProviderOptions {
                base_url: args.base_url.clone(),
                ..Default::default()
            }
            .with_env_from(Provider::OpenAi, |name| std::env::var(name).ok())
            .base_url
            .as_deref(),
        );
    let mut factory = None;
    let model: Arc<dyn Model> = match &spec {
        ModelSpec::Local { arg } => {
            if protocol == Protocol::Native {
                bail!("--protocol native: the embedded model speaks the json protocol only");
            }
            if args.temperature.is_some() {
                bail!("--temperature: the embedded model decodes greedily and takes none");
            }
            let mut config =
                LocalConfig::new(local_path(args.model_path.as_deref(), arg.as_deref())?);
            config.constrain = args
                .constrain
                .as_deref()
                .unwrap_or("schema")
                .parse::<Constrain>()
                .map_err(|e| anyhow!("--constrain: {e}"))?;
            thinking(&mut config, args)?;
            config.thought_calculator = !args.no_thought_calculator;
            config.prefix_cache =
                (!args.no_prefix_cache).then(corrigible_local::default_prefix_cache_dir);
            config.sequences = sequences(args.max_sequences.unwrap_or(1))?;
            Arc::new(LocalModel::load(config)?)
        }
        ModelSpec::Replay(path) => {
            let replay = corrigible_models::ReplayModel::from_file(path)?;
            let model = Arc::new(replay.restarted());
            factory = Some(corrigible_server::replay_factory(replay));
            model
        }
        other => {
            if args.think.is_some() {
                eprintln!(
                    "note: --think applies to the embedded model only (a provider's model \
                     reasons on its own; --think-tokens asks it for a budget); ignored"
                );
            }
            let options = ProviderOptions {
                base_url: args.base_url.clone(),
                api_key: args
                    .provider_key
                    .clone()
                    .map(corrigible_models::ApiKey::new),
                think_tokens: args
                    .think_tokens
                    .map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
                temperature: temperature(args.temperature)?,
                ..Default::default()
            };
            corrigible_models::build(other, options)?
        }
    };
    let factory = factory.unwrap_or_else(|| corrigible_server::shared_factory(model.clone()));
    Ok(ModelSetup {
        model,
        protocol,
        protocol_reason,
        needs_probe,
        factory,
    })
}

/// Whether the configured `openai:` base URL is a server other than OpenAI's own API, whose
/// tool calling is not known.
fn compatible_server(base_url: Option<&str>) -> bool {
    !Provider::OpenAi.is_own_api(base_url)
}

/// What a failed probe says, with how to skip it.
pub fn probe_failure_message(error: impl std::fmt::Display) -> String {
    format!(
        "probing the server's tool calling: {error} (choose --protocol json or native to skip \
         the probe)"
    )
}

/// For an OpenAI-compatible server with no protocol configured, sends one probe request and
/// takes the protocol it shows the server can carry: native when the call comes back in
/// `tool_calls`, else json. Does nothing for any other setup.
pub async fn probe(setup: &mut ModelSetup) -> Result<(), ModelError> {
    if !setup.needs_probe {
        return Ok(());
    }
    let finding = probe_tool_calling(setup.model.as_ref()).await?;
    setup.protocol = finding.protocol();
    setup.protocol_reason = ProtocolReason::Probe { finding };
    setup.needs_probe = false;
    Ok(())
}

/// A sampling temperature as providers take it: finite, 0 to 2.
fn temperature(value: Option<f32>) -> anyhow::Result<Option<f32>> {
    match value {
        Some(t) if !(0.0..=2.0).contains(&t) => {
            bail!("--temperature: {t} is out of range: use 0 to 2")
        }
        other => Ok(other),
    }
}

/// Builds the registry of built-in tools named by `args`.
pub fn tools(args: &ToolArgs) -> anyhow::Result<ToolRegistry> {
    let mut weather = WeatherConfig::from_env();
    if let Some(url) = &args.weather_geocoding_url {
        weather.geocoding_url = url.clone();
    }
    if let Some(url) = &args.weather_forecast_url {
        weather.forecast_url = url.clone();
    }
    let config = BuiltinConfig {
        tools: args.tools.clone(),
        weather,
    };
    builtin_registry(&config).context("--tools")
}

/// Applies the bound flags to `policy`, validating each.
pub fn policy(mut policy: Policy, bounds: &BoundArgs) -> anyhow::Result<Policy> {
    let limits = &mut policy.limits;
    if let Some(n) = bounds.max_actions {
        limits.max_actions = n;
    }
    if let Some(n) = bounds.max_corrections {
        limits.max_corrections = n;
    }
    if let Some(n) = bounds.max_repeats {
        limits.max_repeats = n;
    }
    if let Some(n) = bounds.output_retries {
        limits.output_retries = n;
    }
    if bounds.max_model_calls.is_some() {
        limits.max_model_calls = bounds.max_model_calls;
    }
    if bounds.max_tokens.is_some() {
        limits.max_tokens = bounds.max_tokens;
    }
    if let Some(n) = bounds.tool_retries {
        policy.retry.max_retries = n;
    }
    if let Some(profile) = bounds.profile {
        policy.checks = profile.checks();
    }
    if let Some(grounding) = bounds.grounding {
        policy.checks = policy.checks.with_grounding(grounding);
    }
    if bounds.backoff_initial_ms.is_some() || bounds.backoff_max_ms.is_some() {
        let current = policy.retry.backoff;
        let initial = bounds
            .backoff_initial_ms
            .map(Duration::from_millis)
            .unwrap_or(current.initial());
        let max = bounds
            .backoff_max_ms
            .map(Duration::from_millis)
            .unwrap_or(current.max());
        policy.retry.backoff = Backoff::new(initial, current.multiplier(), max, current.jitter())
            .map_err(|e| anyhow!("--backoff: {e}"))?;
    }
    if bounds.breaker_threshold.is_some() || bounds.breaker_reset_ms.is_some() {
        let current = policy.breaker;
        let threshold = bounds.breaker_threshold.unwrap_or(current.threshold());
        let reset = bounds
            .breaker_reset_ms
            .map(Duration::from_millis)
            .unwrap_or(current.reset());
        policy.breaker =
            BreakerPolicy::new(threshold, reset).map_err(|e| anyhow!("--breaker: {e}"))?;
    }
    if policy.limits.max_actions == 0 {
        bail!("--max-actions: must be at least 1");
    }
    Ok(policy)
}

/// The discovery settings of the flags, validated.
pub fn discovery(args: &ToolArgs) -> anyhow::Result<corrigible::Discovery> {
    let mut discovery = corrigible::Discovery::default();
    if let Some(mode) = &args.discovery {
        discovery.mode = mode.parse().map_err(|e| anyhow!("--discovery: {e}"))?;
    }
    if let Some(n) = args.discovery_max_tools {
        discovery.max_tools = n;
    }
    if let Some(share) = args.discovery_max_share {
        if !(share.is_finite() && (0.0..=1.0).contains(&share)) {
            bail!("--discovery-max-share: must be between 0 and 1");
        }
        discovery.max_share = share;
    }
    Ok(discovery)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_server_other_than_openais_api_is_probed() {
        assert!(compatible_server(Some("http://127.0.0.1:8611/v1")));
        assert!(compatible_server(Some("http://localhost:11434/v1/")));
        assert!(!compatible_server(Some("https://api.openai.com/v1")));
        assert!(!compatible_server(Some("https://api.openai.com/v1/")));
    }
}
