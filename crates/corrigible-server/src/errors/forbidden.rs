use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::error_response;

/// 403: the request's `Host` or `Origin` is not this server's (a DNS-rebinding or
/// cross-site request).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Forbidden {
    /// The `Host` is neither the listen address nor an allowed host.
    #[error("host `{0}` is not allowed; add it with --allowed-host")]
    Host(String),
    /// The `Origin` is not an allowed host.
    #[error("origin `{0}` is not allowed; add its host with --allowed-host")]
    Origin(String),
}

impl IntoResponse for Forbidden {
    fn into_response(self) -> Response {
        let kind = match self {
            Forbidden::Host(_) => "forbidden_host",
            Forbidden::Origin(_) => "forbidden_origin",
        };
        error_response(StatusCode::FORBIDDEN, kind, &self.to_string(), &[])
    }
}
