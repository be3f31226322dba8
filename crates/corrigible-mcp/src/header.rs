//! HTTP headers for MCP servers (usually credentials): parsed from `K: V`, never printed.

use std::fmt;

use http::{HeaderName, HeaderValue};

use crate::error::McpError;

/// Headers the Streamable HTTP transport sets itself.
const RESERVED: &[&str] = &["accept", "mcp-session-id", "last-event-id", "content-type"];

/// One header sent to an MCP server. Its value is a secret: `Debug` and `Display` show
/// `NAME: ***`.
#[derive(Clone, PartialEq, Eq)]
pub struct Header {
    name: HeaderName,
    value: HeaderValue,
}

impl Header {
    /// Parses `Name: value`, as `--mcp-header` takes it.
    pub fn parse(text: &str) -> Result<Self, McpError> {
        let (name, value) = text.split_once(':').ok_or_else(|| {
            McpError::Config(format!(
                "header `{}` must look like `Name: value`",
                redacted_prefix(text)
            ))
        })?;
        Self::new(name.trim(), value.trim())
    }

    /// A header from its name and value.
    pub fn new(name: &str, value: &str) -> Result<Self, McpError> {
        let parsed = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| McpError::Config(format!("`{name}` is not a valid header name")))?;
        if RESERVED.contains(&parsed.as_str()) {
            return Err(McpError::Config(format!(
                "header `{name}` is set by the MCP transport itself"
            )));
        }
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| McpError::Config(format!("the value of header `{name}` is not valid")))?;
        value.set_sensitive(true);
        Ok(Self {
            name: parsed,
            value,
        })
    }

    /// The header's name.
    pub fn name(&self) -> &str {
        self.name.as_str()
    }

    pub(crate) fn pair(&self) -> (HeaderName, HeaderValue) {
        (self.name.clone(), self.value.clone())
    }
}

impl fmt::Debug for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ***", self.name)
    }
}

impl fmt::Display for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ***", self.name)
    }
}

/// What a malformed header may show of itself: nothing after a few characters.
fn redacted_prefix(text: &str) -> String {
    let shown: String = text.chars().take(3).collect();
    format!("{shown}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_name_and_value_and_hides_the_value() {
        let header = Header::parse("Authorization: Bearer s3cr3t-token").unwrap();
        assert_eq!(header.name(), "authorization");
        let shown = format!("{header:?} {header}");
        assert!(!shown.contains("s3cr3t"), "{shown}");
        assert_eq!(header.pair().1.to_str().unwrap(), "Bearer s3cr3t-token");
    }

    #[test]
    fn malformed_headers_are_errors_that_do_not_echo_the_secret() {
        let err = Header::parse("Bearer s3cr3t-token")
            .unwrap_err()
            .to_string();
        assert!(!err.contains("s3cr3t"), "{err}");
        assert!(Header::parse("Bad Name: x").is_err());
        assert!(Header::parse("Accept: text/html").is_err());
        let err = Header::parse("X-Key: line\nbreak").unwrap_err().to_string();
        assert!(!err.contains("line"), "{err}");
    }
}
