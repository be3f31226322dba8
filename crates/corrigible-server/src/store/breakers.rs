//! Circuit-breaker records in the run store, so that every instance on one database shares
//! one breaker per tool ([`BreakerStore`]). Each change happens under a lock on the tool's
//! row (Postgres) or on the database (SQLite), with the same state machine as in memory.

use async_trait::async_trait;
use corrigible::policy::{
    BreakerChange, BreakerRecord, BreakerState, BreakerStore, BreakerStoreError,
};
use sqlx::Row;

#[cfg(feature = "postgres")]
use super::PostgresStore;
#[cfg(feature = "postgres")]
use super::postgres::DB_NOW_MS;
use super::{SqliteStore, StoreError, now_ms};

fn record<R: Row>(row: &R) -> Result<BreakerRecord, StoreError>
where
    for<'r> &'r str: sqlx::ColumnIndex<R>,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    let state: String = row.try_get("state")?;
    let failures: i64 = row.try_get("failures")?;
    Ok(BreakerRecord {
        state: BreakerState::parse(&state)
            .ok_or_else(|| StoreError::Corrupt(format!("unknown breaker state `{state}`")))?,
        failures: u32::try_from(failures).unwrap_or(u32::MAX),
        since_ms: row.try_get("since_ms")?,
    })
}

/// Applies `change` to a copy of the record read without a lock: `true` when it leaves the
/// record as it was (a call through a closed breaker, a success on a closed one), so that
/// nothing needs writing and the answer `change` gave stands.
fn unchanged(read: Option<BreakerRecord>, now: i64, change: &mut BreakerChange<'_>) -> bool {
    let before = read.unwrap_or_default();
    let mut after = before;
    change(&mut after, now);
    after == before
}

/// Every stored breaker.
const SELECT_ALL: &str = "SELECT tool, state, failures, since_ms FROM breakers";

/// Rows of [`SELECT_ALL`] as records with their tools' names.
fn named<R: Row>(rows: &[R]) -> Result<Vec<(String, BreakerRecord)>, StoreError>
where
    for<'r> &'r str: sqlx::ColumnIndex<R>,
    for<'r> String: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
    for<'r> i64: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,
{
    rows.iter()
        .map(|row| Ok((row.try_get("tool")?, record(row)?)))
        .collect()
}

fn shared(error: StoreError) -> BreakerStoreError {
    BreakerStoreError(Box::new(error))
}

#[async_trait]
impl BreakerStore for SqliteStore {
    async fn update(
        &self,
        tool: &str,
        change: &mut BreakerChange<'_>,
    ) -> Result<(), BreakerStoreError> {
        self.update_breaker(tool, change).await.map_err(shared)
    }

    async fn records(&self) -> Result<Vec<(String, BreakerRecord)>, BreakerStoreError> {
        let rows = sqlx::query(SELECT_ALL)
            .fetch_all(self.pool())
            .await
            .map_err(|e| shared(e.into()))?;
        named(&rows).map_err(shared)
    }
}

impl SqliteStore {
    async fn update_breaker(
        &self,
        tool: &str,
        change: &mut BreakerChange<'_>,
    ) -> Result<(), StoreError> {
        const SELECT: &str = "SELECT state, failures, since_ms FROM breakers WHERE tool = ?";
        let row = sqlx::query(SELECT)
            .bind(tool)
            .fetch_optional(self.pool())
            .await?;
        if unchanged(row.as_ref().map(record).transpose()?, now_ms(), change) {
            return Ok(());
        }
        // IMMEDIATE takes the write lock first, so that no other instance changes the row
        // between this read and this write.
        let mut tx = self.pool().begin_with("BEGIN IMMEDIATE").await?;
        let row = sqlx::query(SELECT)
            .bind(tool)
            .fetch_optional(&mut *tx)
            .await?;
        let before = row.as_ref().map(record).transpose()?.unwrap_or_default();
        let mut after = before;
        change(&mut after, now_ms());
        if after != before {
            sqlx::query(
                "INSERT INTO breakers (tool, state, failures, since_ms) VALUES (?, ?, ?, ?) \
                 ON CONFLICT (tool) DO UPDATE SET state = excluded.state, \
                 failures = excluded.failures, since_ms = excluded.since_ms",
            )
            .bind(tool)
            .bind(after.state.as_str())
            .bind(i64::from(after.failures))
            .bind(after.since_ms)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

#[cfg(feature = "postgres")]
#[async_trait]
impl BreakerStore for PostgresStore {
    async fn update(
        &self,
        tool: &str,
        change: &mut BreakerChange<'_>,
    ) -> Result<(), BreakerStoreError> {
        self.update_breaker(tool, change).await.map_err(shared)
    }

    async fn records(&self) -> Result<Vec<(String, BreakerRecord)>, BreakerStoreError> {
        let rows = sqlx::query(SELECT_ALL)
            .fetch_all(self.pool())
            .await
            .map_err(|e| shared(e.into()))?;
        named(&rows).map_err(shared)
    }
}

#[cfg(feature = "postgres")]
impl PostgresStore {
    async fn update_breaker(
        &self,
        tool: &str,
        change: &mut BreakerChange<'_>,
    ) -> Result<(), StoreError> {
        let select = format!(
            "SELECT state, failures, since_ms, {} AS now FROM breakers WHERE tool = $1",
            DB_NOW_MS
        );
        let row = sqlx::query(&select)
            .bind(tool)
            .fetch_optional(self.pool())
            .await?;
        // No row is a closed breaker, whose answers do not read the clock.
        let now: i64 = row.as_ref().map_or(Ok(0), |row| row.try_get("now"))?;
        if unchanged(row.as_ref().map(record).transpose()?, now, change) {
            return Ok(());
        }
        let mut tx = self.pool().begin().await?;
        sqlx::query(
            "INSERT INTO breakers (tool, state, failures, since_ms) VALUES ($1, 'closed', 0, 0) \
             ON CONFLICT (tool) DO NOTHING",
        )
        .bind(tool)
        .execute(&mut *tx)
        .await?;
        let row = sqlx::query(&format!("{select} FOR UPDATE"))
            .bind(tool)
            .fetch_one(&mut *tx)
            .await?;
        let before = record(&row)?;
        let mut after = before;
        change(&mut after, row.try_get("now")?);
        if after != before {
            sqlx::query(
                "UPDATE breakers SET state = $2, failures = $3, since_ms = $4 WHERE tool = $1",
            )
            .bind(tool)
            .bind(after.state.as_str())
            .bind(i64::from(after.failures))
            .bind(after.since_ms)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}
