//! The bench's errors.

/// Why a bench could not run or write its output. Failing tasks are results, not errors.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A suite name or option is not understood.
    #[error("{0}")]
    Usage(String),
    /// A suite file has a malformed line.
    #[error("suite {suite}, line {line}: {message}")]
    Suite {
        /// The suite file.
        suite: String,
        /// The 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The local fake Open-Meteo server could not start.
    #[error("cannot start the fake weather server: {0}")]
    FakeServer(std::io::Error),
    /// The tools suites need the fake weather server, which this build leaves out.
    #[error(
        "the tools suites call a fake weather server, which this build leaves out: build with \
         the `bench-fixtures` feature (cargo install --path crates/corrigible-cli --features \
         bench-fixtures, or cargo run --release --features bench-fixtures -- bench …)"
    )]
    NoFixtures,
    /// A task's agent could not be built (a tool schema or name the engine refuses).
    #[error("task {task}: {message}")]
    Agent {
        /// The task id.
        task: String,
        /// The engine's message.
        message: String,
    },
    /// A run failed for a reason that would fail every run (model configuration, template).
    #[error("task {task}: {message}")]
    Run {
        /// The task id.
        task: String,
        /// The engine's message.
        message: String,
    },
    /// Writing an output file failed.
    #[error("cannot write {path}")]
    Write {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The chart could not be drawn.
    #[error("cannot draw the chart: {0}")]
    Chart(String),
}
