//! The SQLite run store: WAL journal, embedded migrations, one pool.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use corrigible::policy::{Backoff, BreakerStore, Jitter};
use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

mod checkpoints;
mod writes;

use self::checkpoints::{AUTOCHECKPOINT_PAGES, Checkpoints};
use self::writes::Writes;
use super::batch::split;
use super::read::{Reader, int};
use super::{
    CorrectionCount, Ending, NewRun, RunEnd, RunFilter, RunRecord, RunStore, RunSummary,
    StoreError, StoredEvent, Totals, Window, now_ms,
};

/// A [`RunStore`] in a SQLite database.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    /// The background checkpoints of a database file, shared by the store's clones.
    _checkpoints: Option<Arc<Checkpoints>>,
}

/// How long instances that start together on one new file wait for each other, at most: the
/// sum of the schedule's delays before jitter.
const STARTUP_WAIT: Duration = Duration::from_secs(14);

/// The waits between start-up tries: growing from 20 ms to 500 ms, each drawn at random up to
/// its bound so that racing instances spread out, until [`STARTUP_WAIT`] is spent.
fn startup_waits() -> impl Iterator<Item = Duration> {
    let backoff = Backoff::new(
        Duration::from_millis(20),
        1.5,
        Duration::from_millis(500),
        Jitter::Full,
    )
    .unwrap_or_default();
    let mut spent = Duration::ZERO;
    let mut bounds = (0u32..).map(move |n| backoff.base_delay(n));
    backoff
        .delays(u64::from(std::process::id()))
        .take_while(move |_| {
            spent += bounds.next().unwrap_or_default();
            spent <= STARTUP_WAIT
        })
}

/// Applies the embedded migrations. sqlx takes no lock for SQLite, so instances that start
/// together on a new file race: the loser's `CREATE TABLE` fails once the winner's is
/// committed. A second try then finds the migration recorded and skips it, so failures are
/// retried through [`startup_waits`] before one is returned.
async fn migrate(pool: &SqlitePool) -> Result<(), StoreError> {
    let mut waits = startup_waits();
    loop {
        match sqlx::migrate!("./migrations/sqlite").run(pool).await {
            Ok(()) => return Ok(()),
            Err(error) => match waits.next() {
                Some(wait) => tokio::time::sleep(wait).await,
                None => return Err(error.into()),
            },
        }
    }
}

/// Connects the pool. Its first connection switches a new file to WAL, which needs the
/// file's write lock; SQLite answers "database is locked" at once, without waiting its busy
/// timeout, to a connection that would otherwise deadlock with another one doing the same.
/// So instances that start together on a new file retry that through [`startup_waits`].
async fn connect(
    pool: SqlitePoolOptions,
    options: SqliteConnectOptions,
) -> Result<SqlitePool, StoreError> {
    let mut waits = startup_waits();
    loop {
        match pool.clone().connect_with(options.clone()).await {
            Ok(pool) => return Ok(pool),
            Err(error) if is_busy(&error) => match waits.next() {
                Some(wait) => tokio::time::sleep(wait).await,
                None => return Err(error.into()),
            },
            Err(error) => return Err(error.into()),
        }
    }
}

/// `true` for SQLite's `SQLITE_BUSY` and its extended codes.
fn is_busy(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .and_then(|error| error.code())
        .and_then(|code| code.parse::<i32>().ok())
        .is_some_and(|code| code & 0xff == 5)
}

impl SqliteStore {
    /// Opens (creating when missing) the database at `url`, a `sqlite:` URL or a file path,
    /// in WAL mode, and applies the embedded migrations.
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        let memory = url.contains(":memory:") || url.contains("mode=memory");
        let options = if url.starts_with("sqlite:") {
            SqliteConnectOptions::from_str(url)?
        } else {
            SqliteConnectOptions::new().filename(url)
        };
        let mut options = options
            .create_if_missing(true)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10))
            .synchronous(SqliteSynchronous::Normal);
        if !memory {
            options = options
                .journal_mode(SqliteJournalMode::Wal)
                .pragma("wal_autocheckpoint", AUTOCHECKPOINT_PAGES.to_string());
        }
        // An in-memory database lives in one connection: keep exactly that one.
        let pool = if memory {
            SqlitePoolOptions::new()
                .max_connections(1)
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None)
        } else {
            SqlitePoolOptions::new().max_connections(8)
        }
        // A connection to a file does not go stale the way a network one does; testing it
        // on every acquire is one more round trip to its worker thread per statement.
        .test_before_acquire(false);
        let pool = connect(pool, options).await?;
        migrate(&pool).await?;
        let _checkpoints = (!memory).then(|| Arc::new(Checkpoints::spawn(pool.clone())));
        Ok(Self { pool, _checkpoints })
    }

    /// Closes every connection (checkpointing the WAL).
    pub async fn close(&self) {
        self.pool.close().await;
    }

    pub(super) fn pool(&self) -> &SqlitePool {
        &self.pool
    }
}

impl SqliteStore {
    /// Marks runs `interrupted` with the totals of their events, at their last event's time.
    async fn interrupt_all(&self, ids: &[String]) -> Result<u64, StoreError> {
        let mut marked = 0;
        for id in ids {
            let events = self.events(id, 0).await?;
            let at = events.iter().map(|e| e.at).max().unwrap_or_else(now_ms);
            if self
                .interrupt_counted(id, &Totals::from_events(&events), at)
                .await?
            {
                marked += 1;
            }
        }
        Ok(marked)
    }

    async fn interrupt(&self, id: &str, totals: &Totals, at: i64) -> Result<(), StoreError> {
        self.interrupt_counted(id, totals, at).await.map(|_| ())
    }

    /// `true` when the run was still running and is now interrupted.
    async fn interrupt_counted(
        &self,
        id: &str,
        totals: &Totals,
        at: i64,
    ) -> Result<bool, StoreError> {
        let result = sqlx::query(
            "UPDATE runs SET status = 'interrupted', finished_at = ?, \
             duration_ms = (? - created_at), model_calls = ?, tool_calls = ?, corrections = ?, \
             input_tokens = ?, output_tokens = ? WHERE id = ? AND status = 'running'",
        )
        .bind(at)
        .bind(at)
        .bind(i64::from(totals.model_calls))
        .bind(i64::from(totals.tool_calls))
        .bind(i64::from(totals.corrections))
        .bind(int(totals.input_tokens))
        .bind(int(totals.output_tokens))
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(result.rows_affected() > 0)
    }
}

#[async_trait]
impl RunStore for SqliteStore {
    async fn insert_run(&self, run: &NewRun) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO runs (id, created_at, status, prompt, model, protocol, owner) \
             VALUES (?, ?, 'running', ?, ?, ?, ?)",
        )
        .bind(&run.id)
        .bind(run.created_at)
        .bind(&run.prompt)
        .bind(&run.model)
        .bind(&run.protocol)
        .bind(&run.owner)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn append_events(&self, events: &[StoredEvent]) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        self.write_batch(&[], events, &[]).await
    }

    async fn write_batch(
        &self,
        runs: &[NewRun],
        events: &[StoredEvent],
        ends: &[Ending],
    ) -> Result<(), StoreError> {
        let (finished, failed) = split(ends)?;
        let mut writes = Writes::new();
        writes
            .runs(runs)
            .events(events)
            .finished(&finished)
            .failed(&failed);
        let mut tx = self.pool.begin().await?;
        writes.execute(&mut tx).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn end_run(
        &self,
        run_id: &str,
        end: &RunEnd,
        finished_at: i64,
    ) -> Result<(), StoreError> {
        let query = match end {
            RunEnd::Finished(report) => {
                let json = serde_json::to_string(report)
                    .map_err(|e| StoreError::Corrupt(format!("report: {e}")))?;
                let usage = report.usage;
                sqlx::query(
                    "UPDATE runs SET status = 'finished', finished_at = ?, satisfied = ?, \
                     stop_reason = ?, corrections = ?, tool_calls = ?, model_calls = ?, \
                     input_tokens = ?, output_tokens = ?, duration_ms = ?, report = ? \
                     WHERE id = ?",
                )
                .bind(finished_at)
                .bind(report.satisfied)
                .bind(report.stop_reason.as_str())
                .bind(i64::from(usage.corrections))
                .bind(i64::from(usage.tool_calls))
                .bind(i64::from(usage.model_calls))
                .bind(int(usage.input_tokens))
                .bind(int(usage.output_tokens))
                .bind(report.duration_ms)
                .bind(json)
            }
            RunEnd::Failed { kind, error } => sqlx::query(
                "UPDATE runs SET status = 'failed', finished_at = ?, error_kind = ?, error = ?, \
                 duration_ms = (? - created_at) WHERE id = ?",
            )
            .bind(finished_at)
            .bind(kind)
            .bind(error)
            .bind(finished_at),
            RunEnd::Interrupted => {
                let totals = Totals::from_events(&self.events(run_id, 0).await?);
                return self.interrupt(run_id, &totals, finished_at).await;
            }
        };
        query.bind(run_id).execute(&self.pool).await?;
        Ok(())
    }

    async fn heartbeat(&self, instance: &str) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO instances (id, heartbeat_at) VALUES (?, ?) \
             ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at",
        )
        .bind(instance)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn interrupt_orphans(&self, instance: &str, lease_ms: i64) -> Result<u64, StoreError> {
        let ids: Vec<String> = sqlx::query_scalar(
            "SELECT id FROM runs WHERE status = 'running' AND owner <> ? AND owner NOT IN \
             (SELECT id FROM instances WHERE heartbeat_at >= ?)",
        )
        .bind(instance)
        .bind(now_ms().saturating_sub(lease_ms))
        .fetch_all(&self.pool)
        .await?;
        self.interrupt_all(&ids).await
    }

    async fn interrupt_owned(&self, instance: &str) -> Result<u64, StoreError> {
        let ids: Vec<String> =
            sqlx::query_scalar("SELECT id FROM runs WHERE status = 'running' AND owner = ?")
                .bind(instance)
                .fetch_all(&self.pool)
                .await?;
        self.interrupt_all(&ids).await
    }

    async fn list_runs(
        &self,
        limit: u32,
        before: Option<&str>,
        filter: &RunFilter,
    ) -> Result<Vec<RunSummary>, StoreError> {
        Reader(&self.pool).list_runs(limit, before, filter).await
    }

    async fn corrections_over_time(
        &self,
        window: &Window,
    ) -> Result<Vec<CorrectionCount>, StoreError> {
        Reader(&self.pool).corrections_over_time(window).await
    }

    async fn get_run(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
        Reader(&self.pool).get_run(run_id).await
    }

    async fn events(&self, run_id: &str, after: u64) -> Result<Vec<StoredEvent>, StoreError> {
        Reader(&self.pool).events(run_id, after).await
    }

    fn breakers(&self) -> Arc<dyn BreakerStore> {
        Arc::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::{STARTUP_WAIT, SqliteStore, startup_waits};

    #[test]
    fn start_up_waits_grow_spread_and_end() {
        let waits: Vec<std::time::Duration> = startup_waits().collect();
        assert!(waits.len() > 20, "{}", waits.len());
        assert!(waits.iter().sum::<std::time::Duration>() <= STARTUP_WAIT);
        assert!(
            waits
                .iter()
                .all(|w| *w <= std::time::Duration::from_millis(500))
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn instances_that_open_one_new_file_together_all_start() {
        for round in 0..20 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("runs.db").display().to_string();
            let opens = (0..6).map(|_| {
                let path = path.clone();
                tokio::spawn(async move { SqliteStore::open(&path).await })
            });
            for open in opens.collect::<Vec<_>>() {
                if let Err(error) = open.await.unwrap() {
                    panic!("round {round}: {error}");
                }
            }
        }
    }
}
