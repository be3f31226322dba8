//! `Host` and `Origin` checks against DNS rebinding and cross-site requests: a request must
//! name this server (its listen address, a loopback name when it listens on loopback, or an
//! allowed host), and a browser's `Origin`, when sent, must name one of the same.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::errors::{BadRequest, Forbidden};

/// Which `Host` and `Origin` values the server answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostPolicy {
    /// `None`: any host (a wildcard listen address with no allow-list).
    allowed: Option<Vec<Allowed>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Allowed {
    name: String,
    port: Option<u16>,
}

impl HostPolicy {
    /// The policy of a server listening on `addr` that also accepts `extra` hosts (`name` for
    /// any port, `name:port` for one).
    pub(crate) fn new(addr: SocketAddr, extra: &[String]) -> Self {
        let port = addr.port();
        let ip = addr.ip();
        let mut allowed: Vec<Allowed> = extra.iter().filter_map(|h| parse_authority(h)).collect();
        if ip.is_unspecified() && allowed.is_empty() {
            return Self { allowed: None };
        }
        let own = |name: &str| Allowed {
            name: name.to_string(),
            port: Some(port),
        };
        if ip.is_loopback() || ip.is_unspecified() {
            allowed.extend(["localhost", "127.0.0.1", "[::1]"].map(own));
        }
        if !ip.is_unspecified() {
            let name = match ip {
                std::net::IpAddr::V4(v4) => v4.to_string(),
                std::net::IpAddr::V6(v6) => format!("[{v6}]"),
            };
            allowed.push(own(&name));
        }
        Self {
            allowed: Some(allowed),
        }
    }

    fn allows(&self, authority: &str) -> bool {
        let Some(allowed) = &self.allowed else {
            return true;
        };
        let Some(asked) = parse_authority(authority) else {
            return false;
        };
        allowed
            .iter()
            .any(|a| a.name == asked.name && (a.port.is_none() || a.port == asked.port))
    }

    /// `Ok` when the request's `Host` (or HTTP/2 authority) and `Origin` are allowed.
    pub(crate) fn check(&self, uri: &Uri, headers: &HeaderMap) -> Result<(), Forbidden> {
        if self.allowed.is_none() {
            return Ok(());
        }
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(str::to_string)
            .or_else(|| uri.authority().map(|a| a.as_str().to_string()))
            .unwrap_or_default();
        if !self.allows(&host) {
            return Err(Forbidden::Host(host));
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let text = String::from_utf8_lossy(origin.as_bytes()).into_owned();
            let authority = origin_authority(&text);
            if !authority.is_some_and(|a| self.allows(&a)) {
                return Err(Forbidden::Origin(text));
            }
        }
        Ok(())
    }
}

/// `name[:port]` in lower case; `None` when it is not a plausible authority.
fn parse_authority(text: &str) -> Option<Allowed> {
    let text = text.trim().to_ascii_lowercase();
    if text.is_empty() || text.contains(['/', '@', ' ']) {
        return None;
    }
    let (name, port) = if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p.parse().ok()?),
            None if after.is_empty() => None,
            None => return None,
        };
        (format!("[{inside}]"), port)
    } else {
        match text.rsplit_once(':') {
            Some((name, port)) => (name.to_string(), Some(port.parse().ok()?)),
            None => (text, None),
        }
    };
    Some(Allowed { name, port })
}

/// The `host:port` of an `Origin` such as `http://localhost:8080` (default ports filled in).
fn origin_authority(origin: &str) -> Option<String> {
    let (scheme, rest) = origin.split_once("://")?;
    let default = match scheme.to_ascii_lowercase().as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let parsed = parse_authority(rest)?;
    Some(format!(
        "{}:{}",
        parsed.name,
        parsed.port.unwrap_or(default)
    ))
}

/// Answers 400 to a request with more than one `Host` (RFC 9112, 3.2: which one counts would
/// be a guess), and 403 when the `Host` or `Origin` is not allowed (`/healthz` is exempt from
/// the latter, for load balancers that probe by IP).
pub(crate) async fn check_host(
    State(policy): State<Arc<HostPolicy>>,
    request: Request,
    next: Next,
) -> Response {
    if request
        .headers()
        .get_all(header::HOST)
        .iter()
        .nth(1)
        .is_some()
    {
        return BadRequest::new("host", "more than one Host header").into_response();
    }
    if request.uri().path() == "/healthz" {
        return next.run(request).await;
    }
    match policy.check(request.uri(), request.headers()) {
        Ok(()) => next.run(request).await,
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(host: &str, origin: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::HOST,
            HeaderValue::from_str(host).unwrap_or(HeaderValue::from_static("")),
        );
        if let Some(o) = origin {
            h.insert(
                header::ORIGIN,
                HeaderValue::from_str(o).unwrap_or(HeaderValue::from_static("")),
            );
        }
        h
    }

    #[test]
    fn loopback_accepts_its_own_names_and_nothing_else() {
        let policy = HostPolicy::new("127.0.0.1:8080".parse().expect("addr"), &[]);
        let uri = Uri::from_static("/v1/runs");
        for ok in [
            "127.0.0.1:8080",
            "localhost:8080",
            "LOCALHOST:8080",
            "[::1]:8080",
        ] {
            assert_eq!(policy.check(&uri, &headers(ok, None)), Ok(()), "{ok}");
        }
        for bad in [
            "evil.example:8080",
            "localhost:8081",
            "localhost",
            "127.0.0.1",
            "",
        ] {
            assert!(policy.check(&uri, &headers(bad, None)).is_err(), "{bad}");
        }
        let same = headers("localhost:8080", Some("http://localhost:8080"));
        assert_eq!(policy.check(&uri, &same), Ok(()));
        for origin in [
            "http://evil.example",
            "null",
            "http://localhost:8081",
            "file://x",
        ] {
            let h = headers("localhost:8080", Some(origin));
            assert!(
                matches!(policy.check(&uri, &h), Err(Forbidden::Origin(_))),
                "{origin}"
            );
        }
    }

    #[test]
    fn the_allow_list_adds_names_with_or_without_a_port() {
        let extra = [
            "runs.example.com".to_string(),
            "lb.internal:443".to_string(),
        ];
        let policy = HostPolicy::new("0.0.0.0:8080".parse().expect("addr"), &extra);
        let uri = Uri::from_static("/");
        assert_eq!(
            policy.check(&uri, &headers("runs.example.com", None)),
            Ok(())
        );
        assert_eq!(
            policy.check(&uri, &headers("runs.example.com:9000", None)),
            Ok(())
        );
        assert_eq!(
            policy.check(&uri, &headers("lb.internal:443", None)),
            Ok(())
        );
        assert!(
            policy
                .check(&uri, &headers("lb.internal:80", None))
                .is_err()
        );
        let origin = headers("runs.example.com", Some("https://lb.internal"));
        assert_eq!(policy.check(&uri, &origin), Ok(()));
        let open = HostPolicy::new("0.0.0.0:8080".parse().expect("addr"), &[]);
        assert_eq!(
            open.check(&uri, &headers("anything:1", Some("http://x"))),
            Ok(())
        );
    }
}
