//! WAL checkpoints in the background.
//!
//! By default SQLite's commit that takes the log past 1,000 pages copies the log into the
//! database file itself, so every run waiting on that commit waits for the copy and its
//! `fsync`: under load, a stall of about 10 ms every few hundred commits. Here a task on its
//! own connection copies the log every [`BUSY`] with a passive checkpoint, which never blocks
//! a writer. A commit still checkpoints by itself past [`AUTOCHECKPOINT_PAGES`]: by then the
//! background has copied almost all of the log, and that checkpoint, run between two write
//! transactions, lets the log start over from its beginning.

use std::time::Duration;

use sqlx::SqlitePool;
use tokio::task::JoinHandle;

/// Pages of log after which a commit checkpoints by itself (about 8 MB of 4 KiB pages).
pub(super) const AUTOCHECKPOINT_PAGES: u32 = 2_000;

/// Time between two checkpoints while the log grows.
const BUSY: Duration = Duration::from_millis(25);

/// The longest time between two checkpoints: while the log does not grow, the wait doubles
/// up to this.
const IDLE: Duration = Duration::from_secs(1);

/// The background checkpoint task of one database; it stops when this is dropped or the
/// pool is closed.
#[derive(Debug)]
pub(super) struct Checkpoints(JoinHandle<()>);

impl Checkpoints {
    /// Starts checkpointing the database of `pool` (needs a Tokio runtime).
    pub(super) fn spawn(pool: SqlitePool) -> Self {
        Self(tokio::spawn(async move {
            let mut wait = BUSY;
            let mut last_log = None;
            loop {
                tokio::time::sleep(wait).await;
                if pool.is_closed() {
                    return;
                }
                let checkpoint: Result<(i64, i64, i64), sqlx::Error> =
                    sqlx::query_as("PRAGMA wal_checkpoint(PASSIVE)")
                        .fetch_one(&pool)
                        .await;
                match checkpoint {
                    Ok((_, log, _)) => {
                        wait = if last_log == Some(log) {
                            (wait * 2).min(IDLE)
                        } else {
                            BUSY
                        };
                        last_log = Some(log);
                    }
                    Err(_) if pool.is_closed() => return,
                    Err(error) => {
                        tracing::warn!(%error, "background WAL checkpoint failed");
                        wait = IDLE;
                    }
                }
            }
        }))
    }
}

impl Drop for Checkpoints {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use crate::store::{NewRun, RunStore, SqliteStore, StoredEvent, now_ms};

    #[tokio::test]
    async fn the_log_reaches_the_database_file_without_a_commit_copying_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.db");
        let store = SqliteStore::open(path.to_str().unwrap()).await.unwrap();
        let before = std::fs::metadata(&path).unwrap().len();
        let run = NewRun {
            id: "run-1".into(),
            created_at: now_ms(),
            prompt: "p".into(),
            model: "m".into(),
            protocol: "json".into(),
            owner: "test".into(),
        };
        // About 2 MB: some 500 pages, fewer than a commit would wait for.
        let events: Vec<StoredEvent> = (1..=1000)
            .map(|seq| StoredEvent {
                run_id: run.id.clone(),
                seq,
                kind: "decision".into(),
                at: now_ms(),
                data: format!("{{\"n\":\"{}\"}}", "x".repeat(2000)),
            })
            .collect();
        store.write_batch(&[run], &events, &[]).await.unwrap();

        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let after = std::fs::metadata(&path).unwrap().len();
            if after > before + 1_000_000 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the database file stayed at {after} bytes (from {before}): nothing copied the log"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert_eq!(store.events("run-1", 0).await.unwrap().len(), 1000);
    }
}
