//! A throwaway Postgres cluster with `ssl = on` on a free loopback port, its server
//! certificate (for `localhost`) signed by a certificate authority made here, and a second,
//! unrelated authority. Started by `scripts/pg-test-cluster start-tls`, stopped and removed
//! when dropped. Without PostgreSQL installed the tests are skipped, except in CI (`CI` set),
//! where they fail.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/pg-test-cluster");

/// A running TLS cluster; `postgres` may log in without a password over TCP.
pub struct TlsCluster {
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// The authority that signed the server's certificate (PEM file).
    pub ca: PathBuf,
    /// An authority that did not (PEM file).
    pub other_ca: PathBuf,
    data: PathBuf,
    _certs: tempfile::TempDir,
}

impl TlsCluster {
    /// Starts a cluster, or returns `None` (test skipped) when PostgreSQL is not installed.
    pub fn start() -> Option<Self> {
        if !postgres_installed() {
            if std::env::var_os("CI").is_some() {
                panic!("PostgreSQL is not installed: CI must run the TLS tests (see .ci/run)");
            }
            eprintln!("skipped: install PostgreSQL (apt-get install -y postgresql) to run them");
            return None;
        }
        let certs = tempfile::tempdir().expect("a temporary directory");
        let (ca_cert, ca_key) = authority("corrigible test CA");
        let ca = write(certs.path(), "ca.pem", &ca_cert.pem());
        let other_ca = write(
            certs.path(),
            "other-ca.pem",
            &authority("another CA").0.pem(),
        );
        let server_key = KeyPair::generate().expect("a key");
        let mut params = CertificateParams::new(vec!["localhost".to_string()]).expect("params");
        params
            .distinguished_name
            .push(DnType::CommonName, "localhost");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let server_cert = params
            .signed_by(&server_key, &ca_cert, &ca_key)
            .expect("the server certificate is signed");
        let cert = write(certs.path(), "server.crt", &server_cert.pem());
        let key = write(certs.path(), "server.key", &server_key.serialize_pem());

        let port = free_port();
        let data = std::env::temp_dir().join(format!(
            "corrigible-pg-tls-{}",
            uuid::Uuid::new_v4().simple()
        ));
        let cluster = Self {
            port,
            ca,
            other_ca,
            data,
            _certs: certs,
        };
        let output = Command::new("bash")
            .arg(SCRIPT)
            .args(["start-tls", &port.to_string()])
            .arg(&cluster.data)
            .arg(&cert)
            .arg(&key)
            .output()
            .expect("pg-test-cluster runs");
        assert!(
            output.status.success(),
            "pg-test-cluster start-tls failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        Some(cluster)
    }

    /// The superuser's URL for `database` on `host` with `query` (e.g. `sslmode=require`).
    pub fn url(&self, host: &str, database: &str, query: &str) -> String {
        format!(
            "postgres://postgres@{host}:{}/{database}?{query}",
            self.port
        )
    }
}

impl Drop for TlsCluster {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(SCRIPT)
            .arg("stop")
            .arg(&self.data)
            .output();
        let _ = std::fs::remove_dir_all(&self.data);
        let mut log = self.data.clone().into_os_string();
        log.push(".initdb.log");
        let _ = std::fs::remove_file(log);
    }
}

fn postgres_installed() -> bool {
    std::fs::read_dir("/usr/lib/postgresql").is_ok_and(|versions| {
        versions
            .flatten()
            .any(|version| version.path().join("bin/initdb").exists())
    })
}

fn authority(name: &str) -> (rcgen::Certificate, KeyPair) {
    let key = KeyPair::generate().expect("a key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params.distinguished_name.push(DnType::CommonName, name);
    let cert = params
        .self_signed(&key)
        .expect("the authority signs itself");
    (cert, key)
}

fn write(dir: &Path, name: &str, pem: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, pem).expect("the PEM file is written");
    path
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port()
}
