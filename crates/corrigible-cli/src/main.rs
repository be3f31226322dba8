//! The `corrigible` binary: `run` one agent task, `serve` the API, `bench` the policies,
//! `parse` one model reply.

mod args;
mod bench;
mod config;
mod help;
mod mcp;
mod parse;
mod prompt;
mod render;
mod setup;
mod telemetry;
mod transcript;
mod verifier;

use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use corrigible::policy::BreakerStore;
use corrigible::trace::TraceSink;
use corrigible::{Agent, RunError, RunOptions};
use opentelemetry::metrics::Meter;
use serde_json::json;

use args::{Cli, Command, ConfigCommand, RunArgs, ServeArgs};

/// How a command failed, which decides the exit code.
enum Failure {
    /// Usage or configuration error: exit 2.
    Usage(anyhow::Error),
    /// The model's transport failed: exit 3.
    Transport(String),
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Failure::Usage(e)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // A server logs its requests and warnings unless told otherwise; the other commands
    // print only their own output.
    let default_log = match cli.command {
        Command::Serve(_) => "warn,corrigible_server=info",
        _ => "off",
    };
    let telemetry_file = match &cli.command {
        Command::Run(args) => config::telemetry(args.config.as_deref()),
        Command::Serve(args) => config::telemetry(args.config.as_deref()),
        _ => config::TelemetryConfig::default(),
    };
    let serves = matches!(cli.command, Command::Serve(_));
    let telemetry = telemetry::Telemetry::init(default_log, &telemetry_file, serves);
    match &cli.command {
        Command::Parse(args) => return parse::parse(args),
        Command::Completions { shell } => return help::completions(*shell),
        Command::Man { subcommand } => return help::man(subcommand.as_deref()),
        _ => {}
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let json_output = match &cli.command {
        Command::Run(args) => args.json,
        Command::Bench(args) => args.json,
        _ => false,
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Run(args) => run(args).await,
            Command::Serve(args) => serve(args, telemetry.meter()).await,
            Command::Config(command) => config_command(command),
            Command::Bench(args) => bench::bench(args).await.map_err(Failure::Usage),
            Command::Parse(_) | Command::Completions { .. } | Command::Man { .. } => Ok(()),
        }
    });
    drop(runtime);
    telemetry.shutdown();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(e)) => {
            if json_output {
                println!(
                    "{}",
                    json!({"error": {"kind": "usage", "message": format!("{e:#}")}})
                );
            }
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
        Err(Failure::Transport(message)) => {
            if json_output {
                println!(
                    "{}",
                    json!({"error": {"kind": "transport", "message": message}})
                );
            }
            eprintln!("error: model transport failed: {message}");
            ExitCode::from(3)
        }
    }
}

fn config_command(command: ConfigCommand) -> Result<(), Failure> {
    match command {
        ConfigCommand::Check { file } => {
            config::load(&file)?;
            println!("{}: ok", file.display());
        }
        ConfigCommand::Show { config } => {
            let (file, source) = match config::locate(config.as_deref()) {
                Some(path) => (config::load(&path)?, path.display().to_string()),
                None => (config::FileConfig::default(), "none, the defaults".into()),
            };
            println!("# configuration file: {source}");
            println!(
                "# cache directory: {} (moved by {})",
                corrigible_local::cache_dir().display(),
                corrigible_local::CACHE_DIR_ENV
            );
            println!(
                "# embedded models: {}",
                corrigible_local::model_dir().display()
            );
            print!("{}", file.with_defaults().to_toml()?);
        }
    }
    Ok(())
}

/// Reads the configuration file, merges it under the flags, connects the MCP servers and
/// builds the agent.
async fn build_agent(
    config_flag: Option<&std::path::Path>,
    model_args: &mut args::ModelArgs,
    tool_args: &mut args::ToolArgs,
    mcp_args: &args::McpArgs,
    bounds: &args::BoundArgs,
    breaker_store: Option<Arc<dyn BreakerStore>>,
) -> Result<(Agent, setup::ModelSetup, Option<corrigible_mcp::McpCatalog>), Failure> {
    let file = match config::locate(config_flag) {
        Some(path) => config::load(&path)?,
        None => config::FileConfig::default(),
    };
    setup::merge(model_args, tool_args, &file);
    let servers = mcp::servers(mcp_args, &file.mcp)?;
    if !servers.is_empty() && tool_args.tools.is_none() {
        tool_args.tools = Some(Vec::new());
    }
    let mut model = setup::model(model_args)?;
    setup::probe(&mut model).await.map_err(probe_failure)?;
    let mut tools = setup::tools(tool_args)?;
    let catalog = mcp::connect(servers, &tools.names()).await?;
    if let Some(catalog) = &catalog {
        catalog.register(&mut tools).map_err(anyhow::Error::from)?;
    }
    let examples = setup::examples(tool_args, &tools)?;
    let policy = setup::policy(file.policy()?, bounds)?;
    let mut builder = Agent::builder_shared(model.model.clone())
        .tools(tools)
        .worked_examples(examples)
        .policy(policy)
        .discovery(setup::discovery(tool_args)?)
        .protocol(model.protocol)
        .protocol_reason(model.protocol_reason)
        .capture_content(telemetry::captures_content(&file.telemetry));
    if let Some(template) = &file.feedback.template {
        builder = builder.feedback_template(template.clone());
    }
    if let Some(verifier) = verifier::verifier(bounds, &file.verify, model_args).await? {
        builder = builder.verifier(verifier);
    }
    if let Some(store) = breaker_store {
        builder = builder.breaker_store(store);
    }
    Ok((
        builder.build().map_err(anyhow::Error::from)?,
        model,
        catalog,
    ))
}

/// A probe of the server's tool calling that could not be made.
fn probe_failure(e: corrigible::ModelError) -> Failure {
    match e {
        corrigible::ModelError::Transport(m) => Failure::Transport(setup::probe_failure_message(m)),
        other => Failure::Usage(anyhow::anyhow!(setup::probe_failure_message(other))),
    }
}

async fn serve(mut args: ServeArgs, meter: Option<Meter>) -> Result<(), Failure> {
    let at_least_one = [
        (
            "--max-concurrent-model-calls",
            args.max_concurrent_model_calls,
        ),
        ("--max-connections", args.max_connections),
        ("--max-runs", args.max_runs),
        ("--db-pool-size", args.db_pool_size as usize),
        ("--event-queue", args.event_queue),
        ("--header-read-timeout", args.header_read_timeout as usize),
        ("--body-read-timeout", args.body_read_timeout as usize),
        ("--idle-timeout", args.idle_timeout as usize),
        ("--queue-timeout", args.queue_timeout as usize),
        ("--lease", args.lease as usize),
    ];
    if let Some((flag, _)) = at_least_one.iter().find(|(_, value)| *value == 0) {
        return Err(anyhow::anyhow!("{flag}: must be at least 1").into());
    }
    args.model.max_sequences.get_or_insert(
        args.max_concurrent_model_calls
            .min(corrigible_local::MAX_SEQUENCES),
    );
    let api_key = match &args.api_key_file {
        Some(path) => Some(read_key_file(path)?),
        None => args.api_key.take(),
    };
    let file = config::locate(args.config.as_deref())
        .map(|path| config::load(&path))
        .transpose()?;
    let db = args
        .db
        .take()
        .or_else(|| file.as_ref().and_then(|file| file.database_url.clone()))
        .unwrap_or_else(|| corrigible_server::DEFAULT_DB.to_string());
    let secs = std::time::Duration::from_secs;
    let config = corrigible_server::ServerConfig {
        addr: args.addr.clone(),
        db: db.clone(),
        api_key,
        body_limit: args.body_limit,
        max_concurrent_model_calls: args.max_concurrent_model_calls,
        allow_insecure: args.insecure_no_auth,
        allowed_hosts: std::mem::take(&mut args.allowed_hosts),
        header_read_timeout: secs(args.header_read_timeout),
        body_read_timeout: secs(args.body_read_timeout),
        idle_timeout: secs(args.idle_timeout),
        max_connections: args.max_connections,
        max_runs: args.max_runs,
        max_queued_runs: args.max_queued_runs,
        queue_timeout: secs(args.queue_timeout),
        event_queue: args.event_queue,
        instance_id: args.instance_id.take(),
        lease: secs(args.lease),
        ..Default::default()
    };
    corrigible_server::check_config(&config)
        .await
        .map_err(anyhow::Error::from)?;
    let shared_breakers =
        args.shared_breakers || file.as_ref().is_some_and(|file| file.breaker.shared);
    let store_options = corrigible_server::StoreOptions {
        allow_plaintext: args.insecure_db_plaintext,
        pool_size: args.db_pool_size,
    };
    let store = corrigible_server::open_store_with(&db, &store_options)
        .await
        .map_err(anyhow::Error::from)?;
    let (agent, model, _catalog) = build_agent(
        args.config.as_deref(),
        &mut args.model,
        &mut args.tools,
        &args.mcp,
        &args.bounds,
        shared_breakers.then(|| store.breakers()),
    )
    .await?;
    let mut gateway = gateway(&args, &config, model.model.clone())?;
    if let Some(verifier) = agent.verifier() {
        let (verifying, protocol) = match verifier.model() {
            Some((verifying, protocol)) => (verifying.clone(), protocol),
            None => (model.model.clone(), model.protocol),
        };
        gateway = gateway.with_verification(corrigible_server::Verification::new(
            verifying,
            protocol,
            verifier.max(),
        ));
    }
    let mut state =
        corrigible_server::AppState::new(Arc::new(agent), model.factory, store, &config)
            .with_gateway(gateway);
    if let Some(meter) = meter {
        state = state.with_meter(meter);
    }
    let listener = corrigible_server::bind(&config)
        .await
        .map_err(anyhow::Error::from)?;
    let local = listener.local_addr().map_err(anyhow::Error::from)?;
    eprintln!(
        "corrigible: serving on http://{local} (dashboard at /, API at /v1/runs, \
         OpenAI-compatible gateway at /v1/chat/completions)"
    );
    corrigible_server::serve_listener(
        listener,
        state,
        config,
        corrigible_server::shutdown_signal(),
    )
    .await
    .map_err(anyhow::Error::from)?;
    Ok(())
}

/// The OpenAI-compatible gateway: an `openai:` model's server gets requests as the client
/// wrote them (with the same key; a request that names no model gets this one); any other
/// model (the embedded one, a replay, Gemini, Anthropic) answers under the json protocol.
/// `--fallback` adds OpenAI-compatible upstreams after it.
fn gateway(
    args: &ServeArgs,
    config: &corrigible_server::ServerConfig,
    model: Arc<dyn corrigible::Model>,
) -> Result<corrigible_server::Gateway, Failure> {
    let spec: Option<corrigible_models::ModelSpec> =
        args.model.model.as_deref().unwrap_or("local").parse().ok();
    let options = corrigible_models::ProviderOptions {
        base_url: args.model.base_url.clone(),
        api_key: args
            .model
            .provider_key
            .clone()
            .map(corrigible_models::ApiKey::new),
        ..Default::default()
    };
    let (corrections, slots, wait) = (
        args.gateway_corrections,
        config.max_runs,
        config.queue_timeout,
    );
    let mut gateway = match spec {
        Some(corrigible_models::ModelSpec::Remote {
            provider: corrigible_models::Provider::OpenAi,
            model,
        }) => {
            let endpoint = corrigible_models::ChatEndpoint::new(model, options.clone())
                .map_err(anyhow::Error::from)?;
            corrigible_server::Gateway::new(endpoint, corrections, slots, wait)
        }
        _ => corrigible_server::Gateway::new(
            corrigible_server::ModelUpstream::new(model),
            corrections,
            slots,
            wait,
        ),
    };
    for spec in &args.fallbacks {
        let (spec, base_url) = match spec.split_once('@') {
            Some((spec, url)) => (spec, Some(url.to_string())),
            None => (spec.as_str(), options.base_url.clone()),
        };
        let Some(model) = spec.strip_prefix("openai:").filter(|m| !m.is_empty()) else {
            return Err(anyhow::anyhow!(
                "--fallback {spec}: expected openai:MODEL or openai:MODEL@BASE_URL"
            )
            .into());
        };
        let options = corrigible_models::ProviderOptions {
            base_url,
            ..options.clone()
        };
        let endpoint =
            corrigible_models::ChatEndpoint::new(model, options).map_err(anyhow::Error::from)?;
        gateway = gateway.with_fallback(endpoint);
    }
    Ok(gateway)
}

/// The API key in `path`: its first line, trimmed.
fn read_key_file(path: &std::path::Path) -> Result<String, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("--api-key-file {}: {e}", path.display()))?;
    Ok(text.lines().next().unwrap_or_default().trim().to_string())
}

async fn run(mut args: RunArgs) -> Result<(), Failure> {
    let request = prompt::read(args.prompt.as_deref(), args.prompt_file.as_deref())?;
    let (agent, _, catalog) = build_agent(
        args.config.as_deref(),
        &mut args.model,
        &mut args.tools,
        &args.mcp,
        &args.bounds,
        None,
    )
    .await?;

    let style = render::Style::detect();
    let mut sinks: Vec<Arc<dyn TraceSink>> = Vec::new();
    if !args.json {
        sinks.push(Arc::new(render::LiveTrace::new(style)));
    }
    if let Some(path) = &args.transcript {
        let transcript = transcript::Transcript::open(path)
            .map_err(|e| anyhow::anyhow!("--transcript {}: {e}", path.display()))?;
        sinks.push(Arc::new(transcript));
    }
    let options = RunOptions {
        sink: Some(Arc::new(transcript::Fanout(sinks))),
        ..Default::default()
    };
    let outcome = agent.run_with(&request, options).await;
    if let Some(catalog) = catalog {
        catalog.close().await;
    }
    match outcome {
        Ok(report) => {
            if args.json {
                let text = serde_json::to_string_pretty(&report).map_err(anyhow::Error::from)?;
                println!("{text}");
            } else {
                println!("{}", render::summary(&report, style));
            }
            Ok(())
        }
        Err(RunError::Transport(message)) => Err(Failure::Transport(message)),
        Err(other) => Err(Failure::Usage(other.into())),
    }
}
