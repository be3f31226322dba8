//! The run store: runs, their trace events as they happen, and their reports.
//!
//! [`RunStore`] is the small interface the server needs; [`SqliteStore`] implements it (WAL,
//! embedded migrations). A Postgres backend can follow by implementing the same trait and
//! adding its URL scheme to [`open_store`].

mod error;
mod record;
mod sqlite;

use std::sync::Arc;

use async_trait::async_trait;

pub use error::StoreError;
pub use record::{NewRun, RunEnd, RunRecord, RunStatus, RunSummary, StoredEvent, now_ms};
pub use sqlite::SqliteStore;

/// Where runs and their events are kept.
///
/// Writes happen in the order the server issues them: a run is inserted before its events,
/// and ended after them. Implementations must be safe to share between tasks.
#[async_trait]
pub trait RunStore: Send + Sync {
    /// Records a run that is starting (status `running`).
    async fn insert_run(&self, run: &NewRun) -> Result<(), StoreError>;

    /// Appends trace events (of one or more runs), atomically.
    async fn append_events(&self, events: &[StoredEvent]) -> Result<(), StoreError>;

    /// Records how a run ended: its report, its failure, or its interruption.
    async fn end_run(&self, run_id: &str, end: &RunEnd, finished_at: i64)
    -> Result<(), StoreError>;

    /// Marks every run still `running` as `interrupted` (start-up after a crash); returns how
    /// many were marked.
    async fn interrupt_in_flight(&self) -> Result<u64, StoreError>;

    /// Runs, newest first, older than the run `before` when given.
    async fn list_runs(
        &self,
        limit: u32,
        before: Option<&str>,
    ) -> Result<Vec<RunSummary>, StoreError>;

    /// One run with its report, if it exists.
    async fn get_run(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError>;

    /// The events of a run with a sequence number above `after`, in order.
    async fn events(&self, run_id: &str, after: u64) -> Result<Vec<StoredEvent>, StoreError>;
}

/// Opens the store at `url` and applies its migrations.
///
/// `url` is a SQLite URL (`sqlite:runs.db`, `sqlite::memory:`) or a plain file path
/// (`corrigible.db`), created when missing.
pub async fn open_store(url: &str) -> Result<Arc<dyn RunStore>, StoreError> {
    let url = url.trim();
    if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        return Err(StoreError::Unsupported(
            "postgres: only SQLite is built in so far; use a file path or a `sqlite:` URL".into(),
        ));
    }
    Ok(Arc::new(SqliteStore::open(url).await?))
}
