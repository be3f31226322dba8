//! Command-line arguments, as parsed (validation into engine types happens in `setup`).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Bounded self-correction for LLM agents.
#[derive(Debug, Parser)]
#[command(name = "corrigible", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one agent task and show its trace.
    Run(RunArgs),
    /// Serve the HTTP API and the dashboard.
    Serve(ServeArgs),
    /// Check or show a configuration file (`corrigible.toml`).
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Does self-correction pay? Compare policies on a task suite, or measure the embedded
    /// model's speed (`bench model`).
    Bench(BenchArgs),
    /// Read one model reply from stdin as the engine would, and print what it read: the JSON
    /// after local repairs, the normalized decision and the repairs, or the rejection.
    Parse(ParseArgs),
    /// Print a shell completion script (`corrigible completions bash > ~/.local/share/bash-completion/completions/corrigible`).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print a man page, as roff: `corrigible man | man -l -` for corrigible(1), `corrigible
    /// man run` for corrigible-run(1).
    Man {
        /// The subcommand whose page to print (default: the command's own page).
        subcommand: Option<String>,
    },
}

/// `corrigible config …`.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Validate a configuration file; errors name the key.
    Check {
        /// The file to check.
        file: PathBuf,
    },
    /// Print the effective configuration (defaults, then the file, then nothing else).
    Show {
        /// The file (default: CORRIGIBLE_CONFIG, else the defaults alone).
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

/// Which model to use and how to reach it.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Model")]
pub struct ModelArgs {
    /// `local` (the embedded Qwen2.5-Coder-1.5B), `local:smollm2-135m` (small machines), `local:FILE.gguf`, `replay:FILE`, `openai:MODEL`, `gemini:MODEL` or `anthropic:MODEL`.
    #[arg(long)]
    pub model: Option<String>,
    /// Base URL of the provider (OpenAI-compatible: up to and including `/v1`; Gemini and Anthropic: the host root).
    #[arg(long)]
    pub base_url: Option<String>,
    /// API key of the provider (default: OPENAI_API_KEY, GEMINI_API_KEY or GOOGLE_API_KEY, ANTHROPIC_API_KEY).
    #[arg(long)]
    pub provider_key: Option<String>,
    /// Decision protocol: `json` (a JSON decision in the text) or `native` (the provider's tool calling).
    #[arg(long)]
    pub protocol: Option<String>,
    /// Constraint of the embedded model's decoding: `schema` (default), `envelope` or `off`
    /// (`bench`: a comma-separated list of modes to compare, default all three).
    #[arg(long)]
    pub constrain: Option<String>,
    /// Path of a GGUF file for the embedded model (default: CORRIGIBLE_MODEL, or the model directory).
    #[arg(long)]
    pub model_path: Option<PathBuf>,
    /// Sampling temperature sent to a provider's model (default: the provider's own; an
    /// OpenAI-compatible server such as llama.cpp's samples at 0.8 unless told). The embedded
    /// model decodes greedily and takes none.
    #[arg(long)]
    pub temperature: Option<f32>,
    /// When the embedded model thinks before it decides: `auto` (default: when its first
    /// decision reaches for the calculator, it first reasons on the request step by step),
    /// `always` (before every decision) or `off`.
    #[arg(long, value_name = "auto|always|off")]
    pub think: Option<String>,
    /// The most tokens of one thought of the embedded model (default 448). Given without
    /// `--think`, N > 0 thinks before every decision and 0 never thinks. A provider's model
    /// is asked for a thinking budget of N.
    #[arg(long)]
    pub think_tokens: Option<usize>,
    /// Leave the embedded model's thought as written: by default each calculation it states
    /// (`20 + 80 = 110`) is checked as its line ends, and a wrong value replaced by the right
    /// one before the model goes on.
    #[arg(long)]
    pub no_thought_calculator: bool,
    /// Keep the embedded model's pre-filled system prompt and examples in memory only: by
    /// default they are saved under `prefixes/` in the cache directory (CORRIGIBLE_CACHE_DIR,
    /// else `$XDG_CACHE_HOME/corrigible` or `~/.cache/corrigible`) and loaded by the next
    /// process, which then skips pre-filling them.
    #[arg(long)]
    pub no_prefix_cache: bool,
    /// Embedded model: model calls decoded at once, each on a sequence of its own, one forward
    /// pass a token for all of them (continuous batching); further calls wait for a sequence.
    /// Default 1; on `serve`, --max-concurrent-model-calls; on `bench`, --concurrency.
    #[arg(long, value_name = "N")]
    pub max_sequences: Option<usize>,
}

/// Tools and where the weather tool reaches Open-Meteo.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Tools")]
pub struct ToolArgs {
    /// Comma-separated built-in tools to offer (default: calculator,time,weather).
    #[arg(long, value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// Base URL of the Open-Meteo geocoding API.
    #[arg(long, env = "CORRIGIBLE_WEATHER_GEOCODING_URL")]
    pub weather_geocoding_url: Option<String>,
    /// Base URL of the Open-Meteo forecast API.
    #[arg(long, env = "CORRIGIBLE_WEATHER_FORECAST_URL")]
    pub weather_forecast_url: Option<String>,
    /// Worked examples shown before the request, as a JSON array of
    /// `{"request", "steps": [{"reason", "tool", "input", "result"}], "answer", "satisfied"}`
    /// (default: the built-in ones, a direct answer, a refusal, a knowledge answer and one
    /// per built-in tool).
    #[arg(long, value_name = "FILE", conflicts_with = "no_examples")]
    pub examples: Option<std::path::PathBuf>,
    /// Show no worked examples.
    #[arg(long)]
    pub no_examples: bool,
    /// Tool discovery: `auto` (default: when the catalog is large), `on` or `off`. Under it
    /// the model sees each tool's name and one line, and calls `describe_tool` for a schema.
    #[arg(long)]
    pub discovery: Option<String>,
    /// `--discovery auto`: more tools than this make the catalog large (default 16).
    #[arg(long)]
    pub discovery_max_tools: Option<usize>,
    /// `--discovery auto`: declarations over this share of the context budget make the catalog
    /// large (default 0.25).
    #[arg(long)]
    pub discovery_max_share: Option<f64>,
}

/// MCP servers whose tools the agent may use (with any of them, `--tools` defaults to none).
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Tools from MCP servers")]
pub struct McpArgs {
    /// An MCP server spawned over stdio, as one command line (`--mcp "uvx mcp-server-time"`);
    /// repeatable.
    #[arg(long = "mcp", value_name = "COMMAND")]
    pub commands: Vec<String>,
    /// The URL of a Streamable HTTP MCP server; repeatable.
    #[arg(long = "mcp-url", value_name = "URL")]
    pub urls: Vec<String>,
    /// A header sent to every `--mcp-url` server, as `"Name: value"` (for auth; its value is
    /// never printed); repeatable.
    #[arg(long = "mcp-header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// Longest one MCP tool call may take, in ms, before it counts as failed (default 30000).
    #[arg(long)]
    pub mcp_timeout_ms: Option<u64>,
}

/// Every bound, as flags (unset flags keep the defaults).
#[derive(Debug, Clone, Default, Args)]
#[command(next_help_heading = "Bounds")]
pub struct BoundArgs {
    /// Executed tool actions per run (default 8).
    #[arg(long)]
    pub max_actions: Option<u32>,
    /// Decision corrections per action slot (default 2).
    #[arg(long)]
    pub max_corrections: Option<u32>,
    /// Corrections of a repeated action per slot before only a final answer is left (default 1).
    #[arg(long)]
    pub max_repeats: Option<u32>,
    /// Tool execution retries after a failure (default 1).
    #[arg(long)]
    pub tool_retries: Option<u32>,
    /// Output-validator rejections sent back (default 1).
    #[arg(long)]
    pub output_retries: Option<u32>,
    /// First backoff delay between tool retries, in ms (default 500).
    #[arg(long)]
    pub backoff_initial_ms: Option<u64>,
    /// Backoff cap, in ms (default 30000).
    #[arg(long)]
    pub backoff_max_ms: Option<u64>,
    /// Consecutive failures that open a tool's circuit breaker; 0 disables it (default 5).
    #[arg(long)]
    pub breaker_threshold: Option<u32>,
    /// Time an open breaker waits before one probe call, in ms (default 60000).
    #[arg(long)]
    pub breaker_reset_ms: Option<u64>,
    /// Which evidence rules judge decisions: `precise` (default: only rules that send back no
    /// correct reply) or `strict` (adds the heuristics on arguments, stated results and
    /// coverage; see docs/corrections.md)
    #[arg(long, help_heading = "Rules")]
    pub profile: Option<corrigible::Profile>,
    /// Turns the answer rules on top of the profile on (`values`: the answer states a fact the
    /// tools returned, and covers every value the request names) or off (`failures`)
    #[arg(long, help_heading = "Rules")]
    pub grounding: Option<corrigible::Grounding>,
    /// Model calls per run (default: unlimited).
    #[arg(long)]
    pub max_model_calls: Option<u32>,
    /// Input plus output tokens per run (default: unlimited).
    #[arg(long)]
    pub max_tokens: Option<u64>,
    /// Has every satisfied answer checked before it is accepted: a verifier model reads the
    /// request, the tool results and the answer, and an objection that the run's text proves
    /// goes back as `verifier_objection` (default: off; docs/corrections.md)
    #[arg(long, help_heading = "Rules")]
    pub verify: bool,
    /// The verifying model, a spec as `--model` takes (default: the run's own model); implies
    /// `--verify`
    #[arg(long, value_name = "MODEL", help_heading = "Rules")]
    pub verifier: Option<String>,
    /// Verifications per run; later answers are accepted unchecked (default 2).
    #[arg(long)]
    pub max_verifications: Option<u32>,
}

/// `corrigible run`.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct RunArgs {
    /// The request for the agent; `-` reads it from standard input.
    #[arg(required_unless_present = "prompt_file")]
    pub prompt: Option<String>,
    /// Read the request from this file instead.
    #[arg(long, value_name = "FILE", conflicts_with = "prompt")]
    pub prompt_file: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub tools: ToolArgs,
    #[command(flatten)]
    pub mcp: McpArgs,
    #[command(flatten)]
    pub bounds: BoundArgs,
    /// Configuration file (default: CORRIGIBLE_CONFIG); flags override it.
    #[arg(long, help_heading = "Configuration")]
    pub config: Option<PathBuf>,
    /// Print the run report as JSON (and nothing else on stdout).
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// Append each model call's exact request and reply to this JSONL file.
    #[arg(long, help_heading = "Output")]
    pub transcript: Option<PathBuf>,
}

/// `corrigible serve`.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true, next_help_heading = "Service")]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = corrigible_server::DEFAULT_ADDR)]
    pub addr: String,
    /// The run store: a SQLite file path, a `sqlite:` URL or a `postgres://` URL (default:
    /// `database_url` in the config file, else corrigible.db).
    #[arg(long)]
    pub db: Option<String>,
    /// Connect to a Postgres database that is not on loopback without TLS (`sslmode=disable`,
    /// or `prefer` falling back to clear text): its password and every run cross the network
    /// readable by anyone on the path.
    #[arg(long)]
    pub insecure_db_plaintext: bool,
    /// Postgres connections this instance keeps open at most.
    #[arg(long, value_name = "N", default_value_t = corrigible_server::store::DEFAULT_POOL_SIZE)]
    pub db_pool_size: u32,
    /// Require `Authorization: Bearer KEY` on the API. Prefer CORRIGIBLE_API_KEY or
    /// --api-key-file: a flag's value is visible to every local user in the process list.
    #[arg(long, env = "CORRIGIBLE_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Read the API key from this file (its first line, surrounding whitespace removed).
    #[arg(long, value_name = "PATH", conflicts_with = "api_key")]
    pub api_key_file: Option<PathBuf>,
    /// Serve without an API key on a non-loopback address (anyone who reaches it can start
    /// runs and read them).
    #[arg(long)]
    pub insecure_no_auth: bool,
    /// Another `Host` the server answers to (`name` or `name:port`), also checked against a
    /// browser's `Origin`; repeatable.
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// Seconds a client may take to send a request's headers.
    #[arg(long, value_name = "SECS", default_value_t = corrigible_server::DEFAULT_HEADER_READ_TIMEOUT.as_secs())]
    pub header_read_timeout: u64,
    /// Seconds a client may take to send a request's whole body (slower bodies get 408).
    #[arg(long, value_name = "SECS", default_value_t = corrigible_server::DEFAULT_BODY_READ_TIMEOUT.as_secs())]
    pub body_read_timeout: u64,
    /// Seconds a connection may stay open with no request in progress and no traffic.
    #[arg(long, value_name = "SECS", default_value_t = corrigible_server::DEFAULT_IDLE_TIMEOUT.as_secs())]
    pub idle_timeout: u64,
    /// Connections served at once; past it the connection that has waited longest for a
    /// request is closed to make room, or the new one gets 503 when all are busy.
    #[arg(long, default_value_t = corrigible_server::DEFAULT_MAX_CONNECTIONS)]
    pub max_connections: usize,
    /// Runs in flight at once.
    #[arg(long, value_name = "N", default_value_t = corrigible_server::DEFAULT_MAX_RUNS)]
    pub max_runs: usize,
    /// Run requests waiting for a slot; past it new runs get 503 with Retry-After.
    #[arg(long, value_name = "N", default_value_t = corrigible_server::DEFAULT_MAX_QUEUED_RUNS)]
    pub max_queued_runs: usize,
    /// Seconds a run request may wait for a slot before it gets 503.
    #[arg(long, value_name = "SECS", default_value_t = corrigible_server::DEFAULT_QUEUE_TIMEOUT.as_secs())]
    pub queue_timeout: u64,
    /// Events waiting to be written past which runs wait before their next model call, and
    /// new runs before they start.
    #[arg(long, value_name = "N", default_value_t = corrigible_server::DEFAULT_EVENT_QUEUE)]
    pub event_queue: usize,
    /// This instance's id in a shared database (default: HOSTNAME:PORT).
    #[arg(long)]
    pub instance_id: Option<String>,
    /// Seconds this instance's runs stay its own without a heartbeat; other instances mark
    /// a crashed instance's runs interrupted after that.
    #[arg(long, value_name = "SECS", default_value_t = corrigible_server::DEFAULT_LEASE.as_secs())]
    pub lease: u64,
    /// Keep the circuit breakers in the database, shared by every instance that also passes
    /// this flag: a tool that is down opens its breaker for all of them (config:
    /// `[breaker] shared = true`).
    #[arg(long)]
    pub shared_breakers: bool,
    /// Model calls in flight at once over all runs.
    #[arg(long, default_value_t = corrigible_server::DEFAULT_MAX_CONCURRENT_MODEL_CALLS)]
    pub max_concurrent_model_calls: usize,
    /// Largest accepted request body, in bytes.
    #[arg(long, default_value_t = corrigible_server::DEFAULT_BODY_LIMIT)]
    pub body_limit: usize,
    /// Replies the OpenAI-compatible gateway (`/v1/chat/completions`, served with an
    /// `openai:` model) sends back to the upstream per request before it answers 502.
    #[arg(long, value_name = "N", default_value_t = corrigible_server::DEFAULT_MAX_CORRECTIONS)]
    pub gateway_corrections: u32,
    /// An upstream the gateway tries when the ones before it have their breaker open, fail
    /// in transport, or spend their corrections: `openai:MODEL`, or `openai:MODEL@BASE_URL`
    /// for another server (same key); repeatable, tried in order.
    #[arg(long = "fallback", value_name = "SPEC")]
    pub fallbacks: Vec<String>,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub tools: ToolArgs,
    #[command(flatten)]
    pub mcp: McpArgs,
    #[command(flatten)]
    pub bounds: BoundArgs,
    /// Configuration file (default: CORRIGIBLE_CONFIG); flags override it.
    #[arg(long, help_heading = "Configuration")]
    pub config: Option<PathBuf>,
}

/// `corrigible bench`: run a suite under several policies, or `bench model`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, allow_negative_numbers = true)]
pub struct BenchArgs {
    /// `bench model`: the embedded model's speed.
    #[command(subcommand)]
    pub command: Option<BenchCommand>,
    /// The suite: `tools` (all), `tools:dev` (for tuning), `tools:test` (held out),
    /// `tools:FILE`, `heldout` (tasks no rule was tuned on), `correct` or `correct:FILE` (the
    /// rules on correct and wrong trajectories), `bfcl` (all four categories), `bfcl:simple`,
    /// `bfcl:multiple`, `bfcl:parallel`, `bfcl:irrelevance`, or GSM8K with the calculator:
    /// `gsm8k:dev` (problems 0-99, for tuning), `gsm8k:test` (problems 100-199) or
    /// `gsm8k:heldout` (problems 200-499, a fresh split: report only, once per change).
    #[arg(long, default_value = "tools")]
    pub suite: String,
    /// Leave out the first N tasks (per category for `bfcl`), to run a suite in parts.
    #[arg(long, default_value_t = 0)]
    pub skip: usize,
    /// Run only the first N tasks (per category for `bfcl`), after `--skip`.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Tasks run at once; results are reported in task order. The embedded model then decodes
    /// that many sequences together (at least; see --max-sequences).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub concurrency: usize,
    /// Policies to compare, comma-separated: `one-shot`, `repair`, `self-correct`, and
    /// `bare` (the model alone, thinking step by step to `Answer: N`, no tools).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "one-shot,repair,self-correct"
    )]
    pub policies: Vec<String>,
    /// Corrupt this fraction of model replies (0 to 1) with realistic malformations.
    #[arg(long)]
    pub faults: Option<f64>,
    /// Seed of the fault injection.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print the report as JSON (and nothing else on stdout); no progress bar.
    #[arg(long)]
    pub json: bool,
    /// Also write table.txt, report.json and chart.svg into this directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Show the agent no worked examples (by default it sees the built-in ones, as `run` does).
    #[arg(long)]
    pub no_examples: bool,
    /// Show the agent these worked examples on every task instead of the built-in ones, a JSON
    /// array in the format of `run --examples`: to measure your own examples on a suite.
    #[arg(long, value_name = "FILE", conflicts_with = "no_examples")]
    pub examples: Option<PathBuf>,
    /// The verifying model of the `verify` policy, a spec as `--model` takes (default: the
    /// run's own model). With `--suite correct`, replays the corpus with this verifier alone.
    #[arg(long, value_name = "MODEL")]
    pub verifier: Option<String>,
    #[command(flatten)]
    pub model: ModelArgs,
}

/// `corrigible bench …` subcommands.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Prefill and decode speed and peak memory of the embedded model.
    Model(BenchModelArgs),
}

/// `corrigible bench model`.
#[derive(Debug, Args)]
pub struct BenchModelArgs {
    /// Prompt lengths to measure, in tokens, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "40,500")]
    pub prompt_tokens: Vec<usize>,
    /// Tokens generated per measurement.
    #[arg(long, default_value_t = 128)]
    pub decode_tokens: usize,
    /// Measure instead the aggregate decode speed of this many sequences decoded together
    /// (comma-separated counts, e.g. `1,2,4,8,16`), each after a prompt of the first
    /// `--prompt-tokens` length.
    #[arg(long, value_delimiter = ',')]
    pub sequences: Vec<usize>,
    /// A model fetched by name (`local:qwen2.5-coder-1.5b`) or a GGUF file (`local:FILE.gguf`).
    #[arg(long, conflicts_with = "model_path")]
    pub model: Option<String>,
    /// Path of a GGUF file (default: CORRIGIBLE_MODEL, or the model directory).
    #[arg(long)]
    pub model_path: Option<PathBuf>,
}

/// `corrigible parse`.
#[derive(Debug, Args)]
pub struct ParseArgs {
    /// Read a native tool-call reply, `{"text", "tool_calls": [{"id", "name", "arguments"}]}`,
    /// and print `{"calls": [...]}`, one entry per decision.
    #[arg(long)]
    pub native: bool,
    /// Apply no local repair (the `one-shot` policy).
    #[arg(long)]
    pub no_repair: bool,
}
