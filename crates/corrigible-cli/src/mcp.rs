//! MCP servers from `--mcp`, `--mcp-url`, `--mcp-header`, `--mcp-timeout-ms` and `[[mcp]]`
//! tables, connected and turned into tools.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use corrigible_mcp::{Header, McpCatalog, McpServerConfig, McpTransport};
use serde::{Deserialize, Serialize};

use crate::args::McpArgs;

/// `[[mcp]]`: one MCP server, by `command` (stdio) or by `url` (Streamable HTTP).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpTable {
    /// The server's name, the prefix of its tools' names when two servers declare one name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Command line of a server spawned over stdio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// URL of a Streamable HTTP server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Headers sent to `url`; `${VAR}` in a value is read from the environment.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Environment variables of the `command`'s process.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Longest one tool call may take, in ms (default 30000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

impl McpTable {
    /// Hides the header values, for printing.
    pub fn redact(&mut self) {
        for value in self.headers.values_mut() {
            *value = "***".into();
        }
    }

    fn server(&self) -> anyhow::Result<McpServerConfig> {
        let mut server = match (&self.command, &self.url) {
            (Some(command), None) => {
                if !self.headers.is_empty() {
                    bail!("headers: only a `url` server takes headers");
                }
                let mut server = McpServerConfig::command(command).context("command")?;
                if let McpTransport::Stdio { env, .. } = &mut server.transport {
                    env.extend(self.env.iter().map(|(k, v)| (k.clone(), v.clone())));
                }
                server
            }
            (None, Some(url)) => {
                if !self.env.is_empty() {
                    bail!("env: only a `command` server takes environment variables");
                }
                let headers = self
                    .headers
                    .iter()
                    .map(|(name, value)| {
                        let value = expand(value).with_context(|| format!("headers.{name}"))?;
                        Header::new(name, &value).with_context(|| format!("headers.{name}"))
                    })
                    .collect::<anyhow::Result<Vec<_>>>()?;
                McpServerConfig::http(url, headers).context("url")?
            }
            _ => bail!("give exactly one of `command` and `url`"),
        };
        if let Some(name) = &self.name {
            server = server.named(name);
        }
        if let Some(ms) = self.timeout_ms {
            server = server.with_call_timeout(timeout(ms).context("timeout_ms")?);
        }
        Ok(server)
    }
}

/// The servers of the `[[mcp]]` tables; errors name the table (`mcp[2].url: …`).
pub fn servers_from_file(tables: &[McpTable]) -> anyhow::Result<Vec<McpServerConfig>> {
    tables
        .iter()
        .enumerate()
        .map(|(i, table)| table.server().with_context(|| format!("mcp[{i}]")))
        .collect()
}

/// The file's servers, then the flags' (the timeout flag applies to all of them).
pub fn servers(args: &McpArgs, file: &[McpTable]) -> anyhow::Result<Vec<McpServerConfig>> {
    let mut servers = servers_from_file(file)?;
    for command in &args.commands {
        servers.push(McpServerConfig::command(command).context("--mcp")?);
    }
    let headers = args
        .headers
        .iter()
        .map(|h| Header::parse(h).context("--mcp-header"))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if !headers.is_empty() && args.urls.is_empty() {
        bail!("--mcp-header: give the server with --mcp-url");
    }
    for url in &args.urls {
        servers.push(McpServerConfig::http(url, headers.clone()).context("--mcp-url")?);
    }
    if let Some(ms) = args.mcp_timeout_ms {
        let timeout = timeout(ms).context("--mcp-timeout-ms")?;
        for server in &mut servers {
            server.call_timeout = timeout;
        }
    }
    Ok(servers)
}

/// Connects to `servers` and lists their tools, beside the tools named `taken`.
pub async fn connect(
    servers: Vec<McpServerConfig>,
    taken: &[&str],
) -> anyhow::Result<Option<McpCatalog>> {
    if servers.is_empty() {
        return Ok(None);
    }
    let catalog = McpCatalog::connect_beside(servers, taken).await?;
    for skipped in catalog.skipped() {
        eprintln!(
            "warning: MCP server `{}`: tool `{}` left out: {}",
            skipped.server, skipped.tool, skipped.reason
        );
    }
    Ok(Some(catalog))
}

fn timeout(ms: u64) -> anyhow::Result<Duration> {
    if ms == 0 {
        bail!("must be at least 1");
    }
    Ok(Duration::from_millis(ms))
}

/// Replaces each `${VAR}` with the environment variable `VAR`.
fn expand(value: &str) -> anyhow::Result<String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| anyhow!("`${{` without a closing `}}`"))?;
        let name = &after[..end];
        let var =
            std::env::var(name).map_err(|_| anyhow!("environment variable {name} is not set"))?;
        out.push_str(&var);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> McpTable {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn tables_become_servers_with_names_timeouts_and_env() {
        let servers = servers_from_file(&[
            table("name = \"time\"\ncommand = \"uvx mcp-server-time\"\ntimeout_ms = 500\nenv = { TZ = \"UTC\" }"),
            table("url = \"http://127.0.0.1:3001/mcp\"\nheaders = { \"X-Team\" = \"blue\" }"),
        ])
        .unwrap();
        assert_eq!(servers[0].name, "time");
        assert_eq!(servers[0].call_timeout, Duration::from_millis(500));
        let McpTransport::Stdio { env, .. } = &servers[0].transport else {
            panic!("stdio expected");
        };
        assert_eq!(env, &[("TZ".to_string(), "UTC".to_string())]);
        assert!(
            matches!(&servers[1].transport, McpTransport::Http { headers, .. } if headers.len() == 1)
        );
    }

    #[test]
    fn bad_tables_name_their_key() {
        let both = table("command = \"a\"\nurl = \"http://x/mcp\"");
        let err = format!("{:#}", servers_from_file(&[both]).unwrap_err());
        assert!(
            err.contains("mcp[0]") && err.contains("exactly one"),
            "{err}"
        );
        let unset = table(
            "url = \"http://x/mcp\"\nheaders = { Authorization = \"Bearer ${CORRIGIBLE_TEST_UNSET_VAR}\" }",
        );
        let err = format!("{:#}", servers_from_file(&[unset]).unwrap_err());
        assert!(
            err.contains("headers.Authorization") && err.contains("CORRIGIBLE_TEST_UNSET_VAR"),
            "{err}"
        );
        let zero = table("command = \"a\"\ntimeout_ms = 0");
        assert!(servers_from_file(&[zero]).is_err());
        assert!(toml::from_str::<McpTable>("comand = \"a\"").is_err());
    }

    #[test]
    fn flags_add_servers_and_the_timeout_applies_to_all() {
        let args = McpArgs {
            commands: vec!["mcp-server-time --local-timezone UTC".into()],
            urls: vec!["http://127.0.0.1:9/mcp".into()],
            headers: vec!["Authorization: Bearer s3cr3t".into()],
            mcp_timeout_ms: Some(1500),
        };
        let servers = servers(&args, &[table("command = \"other-server\"")]).unwrap();
        let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["other-server", "mcp-server-time", "127_0_0_1_9"]);
        assert!(
            servers
                .iter()
                .all(|s| s.call_timeout == Duration::from_millis(1500))
        );
        assert!(!format!("{servers:?}").contains("s3cr3t"));
        let orphan = McpArgs {
            headers: vec!["X: y".into()],
            ..Default::default()
        };
        assert!(super::servers(&orphan, &[]).is_err());
    }

    #[test]
    fn expansion_reads_the_environment() {
        assert_eq!(expand("plain").unwrap(), "plain");
        let path = std::env::var("PATH").unwrap_or_default();
        assert_eq!(expand("a ${PATH} b").unwrap(), format!("a {path} b"));
        assert!(expand("${UNCLOSED").is_err());
    }
}
