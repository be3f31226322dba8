//! How to reach one MCP server: a command to spawn (stdio) or a URL (Streamable HTTP).

use std::time::Duration;

use crate::error::McpError;
use crate::header::Header;

/// Default time one tool call may take before it counts as failed.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Default time the connection and the MCP handshake (with the tool listing) may take.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Programs that only launch the real server, so that a server named after its command is
/// named after its package (`uvx mcp-server-time` is `mcp-server-time`).
const LAUNCHERS: &[&str] = &[
    "npx", "uvx", "pipx", "bunx", "node", "python", "python3", "uv", "deno", "bun", "env",
];

/// Where an MCP server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpTransport {
    /// A child process speaking MCP on its stdin and stdout.
    Stdio {
        /// The program.
        program: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables.
        env: Vec<(String, String)>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// The endpoint's URL.
        url: String,
        /// Headers sent with every request (for auth); their values never appear in output.
        headers: Vec<Header>,
    },
}

/// One MCP server: its name (the prefix of its tools' names when two servers declare the same
/// name), its transport and its timeouts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServerConfig {
    /// Short name of the server.
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
    /// Longest a tool call may take; past it the call is `Failed`.
    pub call_timeout: Duration,
    /// Longest the connection, the handshake and the tool listing may take.
    pub connect_timeout: Duration,
}

impl McpServerConfig {
    /// A server spawned from a shell-like command line (`uvx mcp-server-time --local-timezone UTC`),
    /// named after its program, or after its package for launchers such as `npx` and `uvx`.
    pub fn command(line: &str) -> Result<Self, McpError> {
        let words = shlex::split(line)
            .ok_or_else(|| McpError::Config(format!("cannot split command `{line}`")))?;
        let (program, args) = words
            .split_first()
            .ok_or_else(|| McpError::Config("empty MCP server command".into()))?;
        Ok(Self::stdio(program.clone(), args.to_vec()))
    }

    /// A server spawned from `program` with `args`.
    pub fn stdio(program: String, args: Vec<String>) -> Self {
        let name = command_name(&program, &args);
        Self {
            name,
            transport: McpTransport::Stdio {
                program,
                args,
                env: Vec::new(),
            },
            call_timeout: DEFAULT_CALL_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        }
    }

    /// A Streamable HTTP server at `url`, named after its host.
    pub fn http(url: &str, headers: Vec<Header>) -> Result<Self, McpError> {
        let rest = url
            .strip_prefix("http://")
            .or_else(|| url.strip_prefix("https://"))
            .ok_or_else(|| {
                McpError::Config(format!(
                    "MCP URL `{url}` must start with http:// or https://"
                ))
            })?;
        let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let host = host.rsplit('@').next().unwrap_or_default();
        if host.is_empty() {
            return Err(McpError::Config(format!("MCP URL `{url}` has no host")));
        }
        Ok(Self {
            name: sanitize(host),
            transport: McpTransport::Http {
                url: url.to_string(),
                headers,
            },
            call_timeout: DEFAULT_CALL_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        })
    }

    /// The same server under another name.
    pub fn named(mut self, name: &str) -> Self {
        self.name = sanitize(name);
        self
    }

    /// The same server with another per-call timeout.
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// A one-line description for messages: the command or the URL, never a header value.
    pub fn describe(&self) -> String {
        match &self.transport {
            McpTransport::Stdio { program, args, .. } => std::iter::once(program.as_str())
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            McpTransport::Http { url, .. } => url.clone(),
        }
    }
}

fn command_name(program: &str, args: &[String]) -> String {
    let base = basename(program);
    if LAUNCHERS.contains(&base) {
        let package = args
            .iter()
            .filter(|a| !a.starts_with('-') && !a.contains('='))
            .find(|a| !LAUNCHERS.contains(&a.as_str()) && *a != "run" && *a != "tool");
        if let Some(package) = package {
            let package = basename(package);
            let package = package
                .split('@')
                .find(|p| !p.is_empty())
                .unwrap_or(package);
            return sanitize(package.trim_end_matches(".py").trim_end_matches(".js"));
        }
    }
    sanitize(base)
}

fn basename(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Keeps ASCII letters, digits, `-` and `_`; anything else becomes `_`.
fn sanitize(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() {
        "mcp".into()
    } else {
        cleaned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_is_split_like_a_shell_and_named_after_its_package() {
        let config =
            McpServerConfig::command("uvx mcp-server-time --local-timezone 'Europe/Paris'")
                .unwrap();
        assert_eq!(config.name, "mcp-server-time");
        let McpTransport::Stdio { program, args, .. } = &config.transport else {
            panic!("stdio expected");
        };
        assert_eq!(program, "uvx");
        assert_eq!(
            args,
            &["mcp-server-time", "--local-timezone", "Europe/Paris"]
        );

        let npx =
            McpServerConfig::command("npx -y @modelcontextprotocol/server-everything").unwrap();
        assert_eq!(npx.name, "server-everything");
        let python = McpServerConfig::command("python3 -m mcp_server_time").unwrap();
        assert_eq!(python.name, "mcp_server_time");
        let direct = McpServerConfig::command("/usr/local/bin/mcp-server-time").unwrap();
        assert_eq!(direct.name, "mcp-server-time");
    }

    #[test]
    fn bad_commands_and_urls_are_errors() {
        assert!(McpServerConfig::command("").is_err());
        assert!(McpServerConfig::command("unterminated 'quote").is_err());
        assert!(McpServerConfig::http("ftp://example.com", Vec::new()).is_err());
        assert!(McpServerConfig::http("http:///mcp", Vec::new()).is_err());
    }

    #[test]
    fn url_server_is_named_after_its_host() {
        let config = McpServerConfig::http("http://127.0.0.1:3001/mcp", Vec::new()).unwrap();
        assert_eq!(config.name, "127_0_0_1_3001");
        assert_eq!(config.describe(), "http://127.0.0.1:3001/mcp");
    }
}
