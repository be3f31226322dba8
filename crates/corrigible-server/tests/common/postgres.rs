//! A fresh Postgres database per test, on the server named by `CORRIGIBLE_TEST_POSTGRES_URL`
//! (`scripts/pg-test-cluster start` prints one). Without it the Postgres tests are skipped,
//! except in CI (`CI` set), where they fail.
#![allow(dead_code)]

use sqlx::Connection;
use sqlx::postgres::PgConnection;

/// The variable naming the test server.
pub const URL_VAR: &str = "CORRIGIBLE_TEST_POSTGRES_URL";

/// A new empty database's URL, or `None` (test skipped) when no server is configured.
pub async fn fresh_database() -> Option<String> {
    let Ok(base) = std::env::var(URL_VAR) else {
        if std::env::var_os("CI").is_some() {
            panic!("{URL_VAR} is not set: CI must run the Postgres tests (see .ci/run)");
        }
        eprintln!(
            "skipped: set {URL_VAR} (scripts/pg-test-cluster start) to run the Postgres tests"
        );
        return None;
    };
    let name = format!("corrigible_test_{}", uuid::Uuid::new_v4().simple());
    let mut admin = PgConnection::connect(&base)
        .await
        .unwrap_or_else(|e| panic!("{URL_VAR}={base}: cannot connect: {e}"));
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut admin)
        .await
        .expect("test database is created");
    let (server, _) = base.rsplit_once('/').expect("the URL names a database");
    Some(format!("{server}/{name}"))
}
