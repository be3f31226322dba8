//! Postgres over TLS: a cluster with `ssl = on` and a certificate authority made by the test
//! (`postgres_tls/cluster.rs`), libpq's `sslmode` and `sslrootcert` against it, and the
//! refusal of clear text to a database that is not on loopback.
#![cfg(feature = "postgres")]

#[path = "postgres_tls/cluster.rs"]
mod cluster;
#[path = "common/postgres.rs"]
mod common_postgres;

use corrigible_server::store::{NewRun, now_ms};
use corrigible_server::{RunStore, StoreError, StoreOptions, open_store, open_store_with};
use sqlx::Connection;
use sqlx::postgres::PgConnection;

use cluster::TlsCluster;

const OPT_IN: StoreOptions = StoreOptions {
    allow_plaintext: true,
    pool_size: 2,
};

async fn open(url: &str) -> Result<std::sync::Arc<dyn RunStore>, StoreError> {
    open_store(url).await
}

fn refused(result: Result<std::sync::Arc<dyn RunStore>, StoreError>, what: &str) -> StoreError {
    match result {
        Ok(_) => panic!("{what}: the store opened"),
        Err(err) => err,
    }
}

/// The store's connections to `database`, and how many of them are encrypted.
async fn connections(admin: &mut PgConnection, database: &str) -> (i64, i64) {
    sqlx::query_as(
        "SELECT count(*), count(*) FILTER (WHERE s.ssl) FROM pg_stat_activity a \
         JOIN pg_stat_ssl s USING (pid) WHERE a.datname = $1",
    )
    .bind(database)
    .fetch_one(admin)
    .await
    .expect("pg_stat_ssl is read")
}

/// Opens the store on a new database through `host` with `query`, and checks that every
/// connection it holds is encrypted.
async fn opens_over_tls(cluster: &TlsCluster, admin: &mut PgConnection, host: &str, query: &str) {
    let database = format!("tls_{}", uuid::Uuid::new_v4().simple());
    sqlx::query(&format!("CREATE DATABASE {database}"))
        .execute(&mut *admin)
        .await
        .expect("the database is created");
    let url = cluster.url(host, &database, query);
    let store = open(&url).await.unwrap_or_else(|e| panic!("{url}: {e}"));
    store.heartbeat("tls-test").await.expect("the store writes");
    let (all, encrypted) = connections(admin, &database).await;
    assert!(all > 0, "{url}: no connection to {database}");
    assert_eq!(encrypted, all, "{url}: a connection in clear text");
}

#[tokio::test]
async fn sslmodes_against_a_server_with_its_own_certificate_authority() {
    let Some(cluster) = TlsCluster::start() else {
        return;
    };
    let mut admin = PgConnection::connect(&cluster.url("127.0.0.1", "postgres", "sslmode=disable"))
        .await
        .expect("the cluster accepts connections");
    let ca = cluster.ca.display().to_string();
    let other_ca = cluster.other_ca.display().to_string();

    opens_over_tls(&cluster, &mut admin, "127.0.0.1", "sslmode=require").await;
    // `prefer`, the default, takes TLS when the server offers it.
    opens_over_tls(&cluster, &mut admin, "127.0.0.1", "").await;
    opens_over_tls(
        &cluster,
        &mut admin,
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    )
    .await;
    // `verify-ca` checks the chain. (With sqlx 0.8 and rustls 0.23.24 on it checks the name
    // too, so that 127.0.0.1 would fail: docs/service.md says so.)
    opens_over_tls(
        &cluster,
        &mut admin,
        "localhost",
        &format!("sslmode=verify-ca&sslrootcert={ca}"),
    )
    .await;
    let url = cluster.url(
        "localhost",
        "postgres",
        &format!("sslmode=verify-ca&sslrootcert={other_ca}"),
    );
    let message = refused(open(&url).await, "verify-ca, another authority").to_string();
    assert!(message.contains("UnknownIssuer"), "{message}");

    let url = cluster.url(
        "localhost",
        "postgres",
        &format!("sslmode=verify-full&sslrootcert={other_ca}"),
    );
    let message = refused(open(&url).await, "verify-full, another authority").to_string();
    assert!(
        message.contains("invalid peer certificate: UnknownIssuer"),
        "{message}"
    );

    let url = cluster.url(
        "127.0.0.1",
        "postgres",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    let message = refused(open(&url).await, "verify-full, another host name").to_string();
    assert!(message.contains("invalid peer certificate"), "{message}");
    assert!(message.contains("not valid for name"), "{message}");

    // As in libpq, `require` with a root certificate verifies the chain.
    let url = cluster.url(
        "127.0.0.1",
        "postgres",
        &format!("sslmode=require&sslrootcert={other_ca}"),
    );
    let message = refused(open(&url).await, "require, another authority").to_string();
    assert!(message.contains("UnknownIssuer"), "{message}");
}

/// The role and database of docs/service.md: no superuser, the store's tables created by
/// their owner's migrations, over `verify-full`.
#[tokio::test]
async fn a_least_privilege_role_runs_the_migrations_over_tls() {
    let Some(cluster) = TlsCluster::start() else {
        return;
    };
    let mut admin = PgConnection::connect(&cluster.url("127.0.0.1", "postgres", "sslmode=disable"))
        .await
        .expect("the cluster accepts connections");
    for statement in [
        "CREATE ROLE corrigible LOGIN PASSWORD 'secret'",
        "CREATE DATABASE corrigible OWNER corrigible",
        // The other way: a schema of its own in a shared database.
        "CREATE ROLE corrigible_app LOGIN PASSWORD 'secret'",
        "CREATE DATABASE shared",
    ] {
        sqlx::query(statement).execute(&mut admin).await.unwrap();
    }
    let mut shared = PgConnection::connect(&cluster.url("127.0.0.1", "shared", "sslmode=disable"))
        .await
        .unwrap();
    for statement in [
        "CREATE SCHEMA corrigible AUTHORIZATION corrigible_app",
        "ALTER ROLE corrigible_app IN DATABASE shared SET search_path = corrigible",
    ] {
        sqlx::query(statement).execute(&mut shared).await.unwrap();
    }

    let query = format!("sslmode=verify-full&sslrootcert={}", cluster.ca.display());
    for (role, database) in [("corrigible", "corrigible"), ("corrigible_app", "shared")] {
        let url = format!(
            "postgres://{role}:secret@localhost:{}/{database}?{query}",
            cluster.port
        );
        let store = open(&url).await.unwrap_or_else(|e| panic!("{url}: {e}"));
        let run = NewRun {
            id: format!("run-{role}"),
            created_at: now_ms(),
            prompt: "2+2".into(),
            model: "replay".into(),
            protocol: "json".into(),
            owner: "tls-test".into(),
        };
        store.insert_run(&run).await.unwrap();
        store.heartbeat("tls-test").await.unwrap();
        let runs = store
            .list_runs(10, None, &Default::default())
            .await
            .unwrap();
        assert_eq!(runs.len(), 1, "{role}");
        let (superuser,): (bool,) =
            sqlx::query_as("SELECT rolsuper FROM pg_roles WHERE rolname = $1")
                .bind(role)
                .fetch_one(&mut admin)
                .await
                .unwrap();
        assert!(!superuser);
    }
    let (tables,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM pg_tables WHERE schemaname = 'corrigible' AND tableowner = 'corrigible_app'",
    )
    .fetch_one(&mut shared)
    .await
    .unwrap();
    assert_eq!(
        tables, 5,
        "runs, events, instances, breakers and _sqlx_migrations"
    );
}

#[tokio::test]
async fn clear_text_to_a_remote_host_is_refused_before_connecting() {
    for mode in ["disable", "allow"] {
        let url = format!(
            "postgres://corrigible:secret@db.example.invalid:5432/corrigible?sslmode={mode}"
        );
        let err = refused(open(&url).await, &url);
        assert!(
            matches!(&err, StoreError::PlaintextRefused { host, .. } if host == "db.example.invalid"),
            "{err}"
        );
        let message = err.to_string();
        for way_out in [
            "sslmode=verify-full",
            "sslmode=require",
            "--insecure-db-plaintext",
        ] {
            assert!(message.contains(way_out), "{message}");
        }
        assert!(!message.contains("secret"), "{message}");
        // With the opt-in the check passes, and connecting fails on the name.
        let err = refused(open_store_with(&url, &OPT_IN).await, &url);
        assert!(matches!(err, StoreError::Database(_)), "{err}");
    }
}

/// Linux connects to 0.0.0.0 on the local host, but 0.0.0.0 is no loopback address: the
/// store takes the plain test cluster (`CORRIGIBLE_TEST_POSTGRES_URL`) for a database across
/// the network.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_database_off_loopback_without_tls_needs_the_opt_in() {
    let Some(url) = common_postgres::fresh_database().await else {
        return;
    };
    let Some(remote) = url
        .contains("@127.0.0.1:")
        .then(|| url.replacen("@127.0.0.1:", "@0.0.0.0:", 1))
    else {
        eprintln!("skipped: {url} is not on 127.0.0.1");
        return;
    };
    let err = refused(open(&remote).await, "the default, prefer");
    assert!(matches!(err, StoreError::TlsRequired { .. }), "{err}");
    let message = err.to_string();
    assert!(message.contains("server does not support TLS"), "{message}");
    assert!(message.contains("--insecure-db-plaintext"), "{message}");

    let disabled = format!("{remote}?sslmode=disable");
    let err = refused(open(&disabled).await, "sslmode=disable");
    assert!(matches!(err, StoreError::PlaintextRefused { .. }), "{err}");

    for url in [&remote, &disabled] {
        let store = open_store_with(url, &OPT_IN)
            .await
            .unwrap_or_else(|e| panic!("{url} with the opt-in: {e}"));
        store.heartbeat("plain").await.unwrap();
    }
}
