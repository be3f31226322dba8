use std::time::Duration;

/// Configuring, reaching or listing an MCP server failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum McpError {
    /// The server's configuration is unusable (an empty command, a bad header, a bad URL).
    #[error("MCP server configuration: {0}")]
    Config(String),
    /// The command could not be started.
    #[error("MCP server `{server}`: cannot start `{command}`: {message}")]
    Spawn {
        /// The server's name.
        server: String,
        /// The program that failed to start.
        command: String,
        /// Why.
        message: String,
    },
    /// The MCP handshake or a request failed on the transport.
    #[error("MCP server `{server}`: {message}")]
    Transport {
        /// The server's name.
        server: String,
        /// What failed.
        message: String,
    },
    /// The server did not answer in time.
    #[error("MCP server `{server}`: no answer to {what} within {} ms", .after.as_millis())]
    Timeout {
        /// The server's name.
        server: String,
        /// The request that timed out.
        what: &'static str,
        /// The time waited.
        after: Duration,
    },
    /// Registering the server's tools failed (a name registered twice, a reserved name).
    #[error("MCP server `{server}`: {message}")]
    Register {
        /// The server's name.
        server: String,
        /// Why.
        message: String,
    },
}
