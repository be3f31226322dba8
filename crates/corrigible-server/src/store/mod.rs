//! The run store: runs, their trace events as they happen, and their reports.
//!
//! [`RunStore`] is the small interface the server needs. `SqliteStore` (the embedded
//! default: WAL, embedded migrations) and `PostgresStore` (several instances on one
//! database; cargo feature `postgres`) implement it and pass the same test suite. Each run belongs to the instance
//! that executes it; instances renew a lease with [`RunStore::heartbeat`], and the runs of an
//! instance whose lease expired are marked `interrupted` by the others.

mod batch;
mod breakers;
mod error;
mod filter;
mod options;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
mod postgres_tls;
mod read;
mod record;
mod sqlite;
mod stats;
mod totals;

use std::sync::Arc;

use async_trait::async_trait;
use corrigible::policy::BreakerStore;

pub use batch::Ending;
pub use error::StoreError;
pub use filter::RunFilter;
pub use options::{DEFAULT_POOL_SIZE, StoreOptions};
#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;
pub use record::{NewRun, RunEnd, RunRecord, RunStatus, RunSummary, StoredEvent, now_ms};
pub use sqlite::SqliteStore;
pub use stats::{CorrectionCount, MAX_BUCKETS, Window, WindowError};
pub use totals::Totals;

/// Where runs and their events are kept.
///
/// Writes happen in the order the server issues them: a run is inserted before its events,
/// and ended after them. Implementations must be safe to share between tasks.
#[async_trait]
pub trait RunStore: Send + Sync {
    /// Records a run that is starting (status `running`), owned by `run.owner`.
    async fn insert_run(&self, run: &NewRun) -> Result<(), StoreError>;

    /// Appends trace events (of one or more runs), atomically.
    async fn append_events(&self, events: &[StoredEvent]) -> Result<(), StoreError>;

    /// Stores new runs, then events, then the endings of finished or failed runs, in one
    /// transaction: all of them or none. An interruption is refused here (it counts the run's
    /// stored events); [`RunStore::end_run`] writes it.
    async fn write_batch(
        &self,
        runs: &[NewRun],
        events: &[StoredEvent],
        ends: &[Ending],
    ) -> Result<(), StoreError>;

    /// Records how a run ended: its report, its failure, or its interruption (which keeps
    /// the model calls, tool calls, corrections and tokens its stored events show).
    async fn end_run(&self, run_id: &str, end: &RunEnd, finished_at: i64)
    -> Result<(), StoreError>;

    /// Renews the lease of `instance`: it is alive now.
    async fn heartbeat(&self, instance: &str) -> Result<(), StoreError>;

    /// Marks `interrupted` every run still `running` whose owner is not `instance` and has
    /// not renewed its lease for `lease_ms`; returns how many were marked.
    async fn interrupt_orphans(&self, instance: &str, lease_ms: i64) -> Result<u64, StoreError>;

    /// Marks `interrupted` every run still `running` owned by `instance` (at start-up: a
    /// previous process with the same id crashed); returns how many were marked.
    async fn interrupt_owned(&self, instance: &str) -> Result<u64, StoreError>;

    /// Runs that `filter` keeps, newest first, older than the run `before` when given.
    async fn list_runs(
        &self,
        limit: u32,
        before: Option<&str>,
        filter: &RunFilter,
    ) -> Result<Vec<RunSummary>, StoreError>;

    /// The corrections sent back within `window`, counted by category in each of its spans.
    async fn corrections_over_time(
        &self,
        window: &Window,
    ) -> Result<Vec<CorrectionCount>, StoreError>;

    /// One run with its report, if it exists.
    async fn get_run(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError>;

    /// The events of a run with a sequence number above `after`, in order.
    async fn events(&self, run_id: &str, after: u64) -> Result<Vec<StoredEvent>, StoreError>;

    /// The circuit breakers kept in the same database, for `--shared-breakers`.
    fn breakers(&self) -> Arc<dyn BreakerStore>;
}

/// Opens the store at `url` and applies its migrations, with the default [`StoreOptions`]
/// (clear text to a Postgres host that is not loopback is refused).
///
/// `url` is a Postgres URL (`postgres://user@host/db`, with libpq's `sslmode` and
/// `sslrootcert`), a SQLite URL (`sqlite:runs.db`, `sqlite::memory:`) or a plain file path
/// (`corrigible.db`, created when missing).
pub async fn open_store(url: &str) -> Result<Arc<dyn RunStore>, StoreError> {
    open_store_with(url, &StoreOptions::default()).await
}

/// [`open_store`] with `options` (which only a Postgres store uses).
#[cfg_attr(not(feature = "postgres"), allow(unused_variables))]
pub async fn open_store_with(
    url: &str,
    options: &StoreOptions,
) -> Result<Arc<dyn RunStore>, StoreError> {
    let url = url.trim();
    if url.starts_with("postgres:") || url.starts_with("postgresql:") {
        #[cfg(feature = "postgres")]
        return Ok(Arc::new(PostgresStore::open_with(url, options).await?));
        #[cfg(not(feature = "postgres"))]
        return Err(StoreError::Unsupported(
            "postgres: this build lacks the `postgres` feature of corrigible-server".into(),
        ));
    }
    Ok(Arc::new(SqliteStore::open(url).await?))
}
