/// The run store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database could not be opened, read or written.
    #[error("run store: {0}")]
    Database(#[from] sqlx::Error),
    /// The schema could not be brought up to date.
    #[error("run store migration failed: {0}")]
    Migration(#[from] sqlx::migrate::MigrateError),
    /// A stored value could not be decoded (e.g. a report that is not valid JSON).
    #[error("run store holds a malformed value: {0}")]
    Corrupt(String),
    /// The server's store writer has stopped (the server is going down).
    #[error("the run store writer has stopped")]
    WriterStopped,
    /// The URL names a backend that is not available.
    #[error("unsupported run store `{0}`")]
    Unsupported(String),
    /// A Postgres host that is not loopback, to be reached without TLS, and no explicit
    /// opt-in.
    #[error(
        "refusing to connect to the database at {host} with sslmode={mode}: its password and \
         every run would cross the network in clear text. Add sslmode=verify-full (with \
         sslrootcert=CA.pem for a private certificate authority) or sslmode=require to the \
         URL, reach it on a loopback address or a Unix socket, or pass \
         --insecure-db-plaintext to accept the risk"
    )]
    PlaintextRefused {
        /// The database's host.
        host: String,
        /// The URL's `sslmode`.
        mode: &'static str,
    },
    /// TLS to a Postgres host that is not loopback failed where the URL asked for no TLS
    /// mode, so `prefer` had been raised to `require`.
    #[error(
        "cannot connect to the database at {host} over TLS ({error}). For a host that is not \
         loopback, sslmode=prefer (the default) is raised to require: turn TLS on in the \
         server (ssl = on), or pass --insecure-db-plaintext to accept clear text"
    )]
    TlsRequired {
        /// The database's host.
        host: String,
        /// What TLS failed with.
        error: sqlx::Error,
    },
}
