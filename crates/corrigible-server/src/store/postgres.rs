//! The Postgres run store: several server instances share one database. Lease times use the
//! database's clock, so the instances' clocks need not agree.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use corrigible::policy::BreakerStore;
use sqlx::postgres::{PgConnection, PgPool, PgPoolOptions};

use super::batch::{FailedRow, FinishedRow, split};
use super::postgres_tls::secure;
use super::read::{Reader, int};
use super::{
    CorrectionCount, Ending, NewRun, RunEnd, RunFilter, RunRecord, RunStore, RunSummary,
    StoreError, StoreOptions, StoredEvent, Totals, Window, now_ms,
};

/// The database's clock in unix milliseconds.
pub(super) const DB_NOW_MS: &str = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

/// A [`RunStore`] in a Postgres database.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: PgPool,
}

impl PostgresStore {
    /// Connects to `url` (`postgres://user:password@host:port/database`) and applies the
    /// embedded migrations (concurrent instances take turns through sqlx's migration lock),
    /// with the default [`StoreOptions`].
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        Self::open_with(url, &StoreOptions::default()).await
    }

    /// [`PostgresStore::open`] with `options`. Clear text to a host that is not loopback is
    /// refused unless `options.allow_plaintext`; `sslmode=prefer` is raised to `require`
    /// for such a host.
    pub async fn open_with(url: &str, options: &StoreOptions) -> Result<Self, StoreError> {
        let secured = secure(url, options.allow_plaintext)?;
        let host = secured.options.get_host().to_string();
        if secured.raised {
            tracing::info!(
                host,
                "sslmode=prefer raised to require: the database is not on loopback"
            );
        }
        let pool = PgPoolOptions::new()
            .max_connections(options.pool_size.max(1))
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(secured.options)
            .await
            .map_err(|error| match error {
                sqlx::Error::Tls(_) if secured.raised => StoreError::TlsRequired { host, error },
                error => StoreError::Database(error),
            })?;
        sqlx::migrate!("./migrations/postgres").run(&pool).await?;
        Ok(Self { pool })
    }

    /// Closes every connection.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    pub(super) fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Marks runs `interrupted` with the totals of their events, at their last event's time.
    async fn interrupt_all(&self, ids: &[String]) -> Result<u64, StoreError> {
        let mut marked = 0;
        for id in ids {
            let events = self.events(id, 0).await?;
            let at = events.iter().map(|e| e.at).max().unwrap_or_else(now_ms);
            if self
                .interrupt(id, &Totals::from_events(&events), at)
                .await?
            {
                marked += 1;
            }
        }
        Ok(marked)
    }

    /// `true` when the run was still running and is now interrupted.
    async fn interrupt(&self, id: &str, totals: &Totals, at: i64) -> Result<bool, StoreError> {
        let result = sqlx::query(
            "UPDATE runs SET status = 'interrupted', finished_at = $1, \
             duration_ms = ($1 - created_at)::double precision, model_calls = $2, \
             tool_calls = $3, corrections = $4, input_tokens = $5, output_tokens = $6 \
             WHERE id = $7 AND status = 'running'",
        )
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

// Each write below is one statement whatever the number of rows: the rows go as arrays,
// which `UNNEST` turns back into rows.

async fn insert_runs(db: &mut PgConnection, runs: &[NewRun]) -> Result<(), StoreError> {
    if runs.is_empty() {
        return Ok(());
    }
    let column = |f: fn(&NewRun) -> &str| -> Vec<&str> { runs.iter().map(f).collect() };
    sqlx::query(
        "INSERT INTO runs (id, created_at, status, prompt, model, protocol, owner) \
         SELECT id, created_at, 'running', prompt, model, protocol, owner \
         FROM UNNEST($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[]) \
         AS v (id, created_at, prompt, model, protocol, owner)",
    )
    .bind(column(|r| &r.id))
    .bind(runs.iter().map(|r| r.created_at).collect::<Vec<i64>>())
    .bind(column(|r| &r.prompt))
    .bind(column(|r| &r.model))
    .bind(column(|r| &r.protocol))
    .bind(column(|r| &r.owner))
    .execute(db)
    .await?;
    Ok(())
}

async fn insert_events(db: &mut PgConnection, events: &[StoredEvent]) -> Result<(), StoreError> {
    if events.is_empty() {
        return Ok(());
    }
    let run_ids: Vec<&str> = events.iter().map(|e| e.run_id.as_str()).collect();
    let seqs: Vec<i64> = events.iter().map(|e| int(e.seq)).collect();
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
    let ats: Vec<i64> = events.iter().map(|e| e.at).collect();
    let data: Vec<&str> = events.iter().map(|e| e.data.as_str()).collect();
    sqlx::query(
        "INSERT INTO events (run_id, seq, kind, at, data) \
         SELECT * FROM UNNEST($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::text[]) \
         ON CONFLICT DO NOTHING",
    )
    .bind(run_ids)
    .bind(seqs)
    .bind(kinds)
    .bind(ats)
    .bind(data)
    .execute(db)
    .await?;
    Ok(())
}

async fn end_finished(db: &mut PgConnection, rows: &[FinishedRow<'_>]) -> Result<(), StoreError> {
    if rows.is_empty() {
        return Ok(());
    }
    let count =
        |f: fn(&FinishedRow<'_>) -> u64| -> Vec<i64> { rows.iter().map(|r| int(f(r))).collect() };
    sqlx::query(
        "UPDATE runs SET status = 'finished', finished_at = v.finished_at, \
         satisfied = v.satisfied, stop_reason = v.stop_reason, corrections = v.corrections, \
         tool_calls = v.tool_calls, model_calls = v.model_calls, \
         input_tokens = v.input_tokens, output_tokens = v.output_tokens, \
         duration_ms = v.duration_ms, report = v.report \
         FROM UNNEST($1::text[], $2::bigint[], $3::boolean[], $4::text[], $5::bigint[], \
         $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[], $10::double precision[], \
         $11::text[]) AS v (id, finished_at, satisfied, stop_reason, corrections, tool_calls, \
         model_calls, input_tokens, output_tokens, duration_ms, report) \
         WHERE runs.id = v.id",
    )
    .bind(rows.iter().map(|r| r.id).collect::<Vec<&str>>())
    .bind(rows.iter().map(|r| r.at).collect::<Vec<i64>>())
    .bind(
        rows.iter()
            .map(|r| r.report.satisfied)
            .collect::<Vec<bool>>(),
    )
    .bind(
        rows.iter()
            .map(|r| r.report.stop_reason.as_str())
            .collect::<Vec<&str>>(),
    )
    .bind(count(|r| u64::from(r.report.usage.corrections)))
    .bind(count(|r| u64::from(r.report.usage.tool_calls)))
    .bind(count(|r| u64::from(r.report.usage.model_calls)))
    .bind(count(|r| r.report.usage.input_tokens))
    .bind(count(|r| r.report.usage.output_tokens))
    .bind(
        rows.iter()
            .map(|r| r.report.duration_ms)
            .collect::<Vec<f64>>(),
    )
    .bind(rows.iter().map(|r| r.json.as_str()).collect::<Vec<&str>>())
    .execute(db)
    .await?;
    Ok(())
}

async fn end_failed(db: &mut PgConnection, rows: &[FailedRow<'_>]) -> Result<(), StoreError> {
    if rows.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "UPDATE runs SET status = 'failed', finished_at = v.finished_at, \
         error_kind = v.error_kind, error = v.error, \
         duration_ms = (v.finished_at - runs.created_at)::double precision \
         FROM UNNEST($1::text[], $2::bigint[], $3::text[], $4::text[]) \
         AS v (id, finished_at, error_kind, error) WHERE runs.id = v.id",
    )
    .bind(rows.iter().map(|r| r.id).collect::<Vec<&str>>())
    .bind(rows.iter().map(|r| r.at).collect::<Vec<i64>>())
    .bind(rows.iter().map(|r| r.kind).collect::<Vec<&str>>())
    .bind(rows.iter().map(|r| r.error).collect::<Vec<&str>>())
    .execute(db)
    .await?;
    Ok(())
}

#[async_trait]
impl RunStore for PostgresStore {
    async fn insert_run(&self, run: &NewRun) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO runs (id, created_at, status, prompt, model, protocol, owner) \
             VALUES ($1, $2, 'running', $3, $4, $5, $6)",
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
        insert_events(&mut *self.pool.acquire().await?, events).await
    }

    async fn write_batch(
        &self,
        runs: &[NewRun],
        events: &[StoredEvent],
        ends: &[Ending],
    ) -> Result<(), StoreError> {
        let (finished, failed) = split(ends)?;
        let mut tx = self.pool.begin().await?;
        insert_runs(&mut tx, runs).await?;
        insert_events(&mut tx, events).await?;
        end_finished(&mut tx, &finished).await?;
        end_failed(&mut tx, &failed).await?;
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
                    "UPDATE runs SET status = 'finished', finished_at = $1, satisfied = $2, \
                     stop_reason = $3, corrections = $4, tool_calls = $5, model_calls = $6, \
                     input_tokens = $7, output_tokens = $8, duration_ms = $9, report = $10 \
                     WHERE id = $11",
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
                "UPDATE runs SET status = 'failed', finished_at = $1, error_kind = $2, \
                 error = $3, duration_ms = ($1 - created_at)::double precision WHERE id = $4",
            )
            .bind(finished_at)
            .bind(kind)
            .bind(error),
            RunEnd::Interrupted => {
                let totals = Totals::from_events(&self.events(run_id, 0).await?);
                return self
                    .interrupt(run_id, &totals, finished_at)
                    .await
                    .map(|_| ());
            }
        };
        query.bind(run_id).execute(&self.pool).await?;
        Ok(())
    }

    async fn heartbeat(&self, instance: &str) -> Result<(), StoreError> {
        sqlx::query(&format!(
            "INSERT INTO instances (id, heartbeat_at) VALUES ($1, {DB_NOW_MS}) \
             ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at"
        ))
        .bind(instance)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn interrupt_orphans(&self, instance: &str, lease_ms: i64) -> Result<u64, StoreError> {
        let ids: Vec<String> = sqlx::query_scalar(&format!(
            "SELECT id FROM runs WHERE status = 'running' AND owner <> $1 AND owner NOT IN \
             (SELECT id FROM instances WHERE heartbeat_at >= {DB_NOW_MS} - $2)"
        ))
        .bind(instance)
        .bind(lease_ms)
        .fetch_all(&self.pool)
        .await?;
        self.interrupt_all(&ids).await
    }

    async fn interrupt_owned(&self, instance: &str) -> Result<u64, StoreError> {
        let ids: Vec<String> =
            sqlx::query_scalar("SELECT id FROM runs WHERE status = 'running' AND owner = $1")
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
