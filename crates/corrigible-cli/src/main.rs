//! The `corrigible` binary: `run` one agent task from the command line.

mod args;
mod config;
mod render;
mod setup;
mod transcript;

use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use corrigible::trace::TraceSink;
use corrigible::{Agent, RunError, RunOptions};
use serde_json::json;

use args::{Cli, Command, ConfigCommand, RunArgs};

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
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("CORRIGIBLE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("off")),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let json_output = matches!(&cli.command, Command::Run(args) if args.json);
    let result = runtime.block_on(async {
        match cli.command {
            Command::Run(args) => run(args).await,
            Command::Config(command) => config_command(command),
        }
    });
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
            let file = match config::locate(config.as_deref()) {
                Some(path) => config::load(&path)?,
                None => config::FileConfig::default(),
            };
            print!("{}", file.to_toml()?);
        }
    }
    Ok(())
}

async fn run(mut args: RunArgs) -> Result<(), Failure> {
    let file = match config::locate(args.config.as_deref()) {
        Some(path) => config::load(&path)?,
        None => config::FileConfig::default(),
    };
    setup::merge(&mut args.model, &mut args.tools, &file);
    let model = setup::model(&args.model)?;
    let tools = setup::tools(&args.tools)?;
    let policy = setup::policy(file.policy()?, &args.bounds)?;
    let mut builder = Agent::builder_shared(model.model)
        .tools(tools)
        .policy(policy)
        .protocol(model.protocol);
    if let Some(template) = &file.feedback.template {
        builder = builder.feedback_template(template.clone());
    }
    let agent = builder.build().map_err(anyhow::Error::from)?;

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
    match agent.run_with(&args.prompt, options).await {
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
