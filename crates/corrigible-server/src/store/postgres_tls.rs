//! The TLS a Postgres URL gets. A host that is not loopback (nor a Unix socket) is refused
//! clear text unless the caller allows it, and `sslmode=prefer` (the default) is raised to
//! `require` for it, so that a server without TLS fails to connect rather than receiving the
//! password in clear. As in libpq, `require` with a root certificate verifies the server's
//! chain (`verify-ca`).

use std::net::IpAddr;
use std::str::FromStr;

use sqlx::postgres::{PgConnectOptions, PgSslMode};

use super::StoreError;

/// Connect options for a URL, with the TLS rules applied.
#[derive(Debug)]
pub(super) struct SecuredOptions {
    /// What to connect with.
    pub options: PgConnectOptions,
    /// `sslmode=prefer` was raised to `require` (the host is not loopback).
    pub raised: bool,
}

/// Parses `url` (and the `PG*` environment variables sqlx reads) and applies the TLS rules.
pub(super) fn secure(url: &str, allow_plaintext: bool) -> Result<SecuredOptions, StoreError> {
    let mut options = PgConnectOptions::from_str(url)?;
    if matches!(options.get_ssl_mode(), PgSslMode::Require) && root_cert_given(url) {
        options = options.ssl_mode(PgSslMode::VerifyCa);
    }
    let mut raised = false;
    if !allow_plaintext && !is_local(&options) {
        match options.get_ssl_mode() {
            mode @ (PgSslMode::Disable | PgSslMode::Allow) => {
                return Err(StoreError::PlaintextRefused {
                    host: options.get_host().to_string(),
                    mode: mode_name(mode),
                });
            }
            PgSslMode::Prefer => {
                options = options.ssl_mode(PgSslMode::Require);
                raised = true;
            }
            PgSslMode::Require | PgSslMode::VerifyCa | PgSslMode::VerifyFull => {}
        }
    }
    Ok(SecuredOptions { options, raised })
}

/// A Unix socket, `localhost`, or a loopback address (127.0.0.0/8, `::1`).
fn is_local(options: &PgConnectOptions) -> bool {
    let host = options.get_host();
    if options.get_socket().is_some() || host.starts_with('/') {
        return true;
    }
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    bare.parse::<IpAddr>()
        .is_ok_and(|ip| ip.to_canonical().is_loopback())
}

/// `sslrootcert` (or one of sqlx's aliases) in the URL's query, or `PGSSLROOTCERT`.
fn root_cert_given(url: &str) -> bool {
    let query = url.split_once('?').map_or("", |(_, query)| query);
    let in_url = query.split('&').any(|pair| {
        let key = pair.split_once('=').map_or(pair, |(key, _)| key);
        matches!(key, "sslrootcert" | "ssl-root-cert" | "ssl-ca")
    });
    in_url || std::env::var_os("PGSSLROOTCERT").is_some()
}

fn mode_name(mode: PgSslMode) -> &'static str {
    match mode {
        PgSslMode::Disable => "disable",
        PgSslMode::Allow => "allow",
        PgSslMode::Prefer => "prefer",
        PgSslMode::Require => "require",
        PgSslMode::VerifyCa => "verify-ca",
        PgSslMode::VerifyFull => "verify-full",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(url: &str, allow_plaintext: bool) -> Result<&'static str, StoreError> {
        secure(url, allow_plaintext).map(|secured| mode_name(secured.options.get_ssl_mode()))
    }

    #[test]
    fn a_remote_host_without_tls_is_refused_unless_allowed() {
        for url in [
            "postgres://u@db.example.invalid/db?sslmode=disable",
            "postgres://u@10.1.2.3:5432/db?sslmode=allow",
            "postgres://u@[2001:db8::1]/db?sslmode=disable",
        ] {
            let err = mode(url, false).unwrap_err();
            assert!(
                matches!(err, StoreError::PlaintextRefused { .. }),
                "{url}: {err}"
            );
            let message = err.to_string();
            for way_out in [
                "sslmode=verify-full",
                "sslmode=require",
                "--insecure-db-plaintext",
            ] {
                assert!(message.contains(way_out), "{message}");
            }
            let asked = url.rsplit_once("sslmode=").unwrap().1;
            assert_eq!(mode(url, true).unwrap(), asked, "{url}");
        }
    }

    #[test]
    fn prefer_is_raised_to_require_for_a_remote_host_only() {
        let remote = secure("postgres://u@db.example.invalid/db", false).unwrap();
        assert!(remote.raised);
        assert_eq!(mode_name(remote.options.get_ssl_mode()), "require");
        assert_eq!(
            mode("postgres://u@db.example.invalid/db?sslmode=prefer", true).unwrap(),
            "prefer"
        );
        assert_eq!(
            mode("postgres://u@127.0.0.1/db?sslmode=prefer", false).unwrap(),
            "prefer"
        );
    }

    #[test]
    fn loopback_hosts_and_sockets_keep_clear_text() {
        for url in [
            "postgres://u@127.0.0.1:5432/db?sslmode=disable",
            "postgres://u@127.8.9.10/db?sslmode=disable",
            "postgres://u@localhost/db?sslmode=disable",
            "postgres://u@LOCALHOST/db?sslmode=disable",
            "postgres://u@[::1]:5432/db?sslmode=disable",
            "postgres://u@[::ffff:127.0.0.1]/db?sslmode=disable",
            "postgres://u@%2Fvar%2Frun%2Fpostgresql/db?sslmode=disable",
            "postgres:///db?host=/var/run/postgresql&sslmode=disable",
        ] {
            assert_eq!(mode(url, false).unwrap(), "disable", "{url}");
        }
    }

    #[test]
    fn names_that_merely_look_local_are_remote() {
        for url in [
            "postgres://u@localhost.example.com/db?sslmode=disable",
            "postgres://u@0.0.0.0/db?sslmode=disable",
            "postgres://u@128.0.0.1/db?sslmode=disable",
        ] {
            assert!(mode(url, false).is_err(), "{url}");
        }
    }

    #[test]
    fn require_with_a_root_certificate_verifies_the_chain() {
        let url = "postgres://u@db.example.invalid/db?sslmode=require&sslrootcert=/ca.pem";
        assert_eq!(mode(url, false).unwrap(), "verify-ca");
        let url = "postgres://u@db.example.invalid/db?sslmode=verify-full&sslrootcert=/ca.pem";
        assert_eq!(mode(url, false).unwrap(), "verify-full");
    }
}
