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
}
