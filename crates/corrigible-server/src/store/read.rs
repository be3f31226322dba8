//! The read side of both stores: the same queries, each database's placeholders, the same
//! records.

use sqlx::{ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Pool, Row, Type};

use super::error::StoreError;
use super::filter::RunFilter;
use super::record::{RunRecord, RunStatus, RunSummary, StoredEvent};
use super::stats::{CorrectionCount, Window};

/// The columns of a run's summary.
pub(super) const SUMMARY_COLUMNS: &str = "id, status, created_at, finished_at, prompt, model, \
     protocol, satisfied, stop_reason, corrections, tool_calls, model_calls, input_tokens, \
     output_tokens, duration_ms, error_kind, error";

/// How a database writes a statement's parameters, and reads a field of an event's JSON.
pub(super) trait Placeholders {
    /// `sql`, written with `?` for each parameter, in this database's form.
    fn sql(sql: &str) -> String;

    /// The expression that reads a `rejection` event's category from its `data` column.
    const CATEGORY: &'static str;
}

impl Placeholders for sqlx::Sqlite {
    const CATEGORY: &'static str = "json_extract(data, '$.record.category')";

    fn sql(sql: &str) -> String {
        sql.to_string()
    }
}

#[cfg(feature = "postgres")]
impl Placeholders for sqlx::Postgres {
    const CATEGORY: &'static str = "(data::jsonb #>> '{record,category}')";

    fn sql(sql: &str) -> String {
        let mut numbered = String::with_capacity(sql.len() + 8);
        for (n, part) in sql.split('?').enumerate() {
            if n > 0 {
                numbered.push_str(&format!("${n}"));
            }
            numbered.push_str(part);
        }
        numbered
    }
}

/// Counters are signed in both databases: saturate large ones instead of wrapping.
pub(super) fn int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// Reads runs and their events from a pool of either database.
pub(super) struct Reader<'p, DB: Database>(pub &'p Pool<DB>);

impl<DB> Reader<'_, DB>
where
    DB: Database + Placeholders,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'r> String: Decode<'r, DB> + Type<DB>,
    for<'r> bool: Decode<'r, DB> + Type<DB>,
    for<'r> f64: Decode<'r, DB> + Type<DB>,
    for<'n> &'n str: ColumnIndex<DB::Row>,
{
    /// Runs that `filter` keeps, newest first, older than the run `before` when given.
    pub async fn list_runs(
        &self,
        limit: u32,
        before: Option<&str>,
        filter: &RunFilter,
    ) -> Result<Vec<RunSummary>, StoreError> {
        let with_category = filter.category.map(|category| {
            let condition = format!(
                "EXISTS (SELECT 1 FROM events WHERE events.run_id = runs.id \
                 AND events.kind = 'rejection' AND {} = ?)",
                DB::CATEGORY
            );
            (condition, category.as_str())
        });
        let mut texts: Vec<(&str, &str)> = Vec::new();
        let mut numbers: Vec<(&str, i64)> = Vec::new();
        if let Some(before) = before {
            texts.push(("id < ?", before));
        }
        if let Some(status) = filter.status {
            texts.push(("status = ?", status.as_str()));
        }
        if let Some(reason) = &filter.stop_reason {
            texts.push(("stop_reason = ?", reason));
        }
        if let Some((condition, category)) = &with_category {
            texts.push((condition, category));
        }
        if let Some(model) = &filter.model {
            texts.push(("model = ?", model));
        }
        if let Some(since) = filter.since {
            numbers.push(("created_at >= ?", since));
        }
        if let Some(until) = filter.until {
            numbers.push(("created_at < ?", until));
        }
        let mut sql = format!("SELECT {SUMMARY_COLUMNS} FROM runs");
        let conditions = texts.iter().map(|t| t.0).chain(numbers.iter().map(|n| n.0));
        for (n, condition) in conditions.enumerate() {
            sql.push_str(if n == 0 { " WHERE " } else { " AND " });
            sql.push_str(condition);
        }
        sql.push_str(" ORDER BY id DESC LIMIT ?");
        let sql = DB::sql(&sql);
        let mut query = sqlx::query(&sql);
        for (_, value) in &texts {
            query = query.bind(*value);
        }
        for (_, value) in &numbers {
            query = query.bind(*value);
        }
        let rows = query.bind(i64::from(limit)).fetch_all(self.0).await?;
        rows.iter().map(summary).collect()
    }

    /// The corrections sent back from `window.since` until `window.until`, counted by category
    /// in `window.buckets` equal spans of time.
    pub async fn corrections_over_time(
        &self,
        window: &Window,
    ) -> Result<Vec<CorrectionCount>, StoreError> {
        let sql = DB::sql(&format!(
            "SELECT (at - ?) / ? AS bucket, {category} AS category, COUNT(*) AS n FROM events \
             WHERE kind = 'rejection' AND at >= ? AND at < ? AND {category} IS NOT NULL \
             GROUP BY 1, 2 ORDER BY 1, 2",
            category = DB::CATEGORY
        ));
        let rows = sqlx::query(&sql)
            .bind(window.since)
            .bind(window.bucket_ms())
            .bind(window.since)
            .bind(window.until)
            .fetch_all(self.0)
            .await?;
        rows.iter()
            .map(|row| {
                let bucket: i64 = row.try_get("bucket")?;
                let count: i64 = row.try_get("n")?;
                Ok(CorrectionCount {
                    bucket: u32::try_from(bucket).unwrap_or(0),
                    category: row.try_get("category")?,
                    count: u64::try_from(count).unwrap_or(0),
                })
            })
            .collect()
    }

    /// One run with its report, if it exists.
    pub async fn get_run(&self, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
        let sql = DB::sql(&format!(
            "SELECT {SUMMARY_COLUMNS}, report FROM runs WHERE id = ?"
        ));
        let row = sqlx::query(&sql)
            .bind(run_id)
            .fetch_optional(self.0)
            .await?;
        let Some(row) = row else { return Ok(None) };
        let report: Option<String> = row.try_get("report")?;
        let report = report
            .map(|json| serde_json::from_str(&json))
            .transpose()
            .map_err(|e| StoreError::Corrupt(format!("report of run {run_id}: {e}")))?;
        Ok(Some(RunRecord {
            summary: summary(&row)?,
            report,
        }))
    }

    /// The events of a run with a sequence number above `after`, in order.
    pub async fn events(&self, run_id: &str, after: u64) -> Result<Vec<StoredEvent>, StoreError> {
        let sql = DB::sql(
            "SELECT run_id, seq, kind, at, data FROM events WHERE run_id = ? AND seq > ? \
             ORDER BY seq",
        );
        let rows = sqlx::query(&sql)
            .bind(run_id)
            .bind(int(after))
            .fetch_all(self.0)
            .await?;
        rows.iter()
            .map(|row| {
                let seq: i64 = row.try_get("seq")?;
                Ok(StoredEvent {
                    run_id: row.try_get("run_id")?,
                    seq: u64::try_from(seq).unwrap_or(0),
                    kind: row.try_get("kind")?,
                    at: row.try_get("at")?,
                    data: row.try_get("data")?,
                })
            })
            .collect()
    }
}

fn summary<R>(row: &R) -> Result<RunSummary, StoreError>
where
    R: Row,
    for<'r> i64: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> String: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> bool: Decode<'r, R::Database> + Type<R::Database>,
    for<'r> f64: Decode<'r, R::Database> + Type<R::Database>,
    for<'n> &'n str: ColumnIndex<R>,
{
    let status: String = row.try_get("status")?;
    let status = RunStatus::parse(&status)
        .ok_or_else(|| StoreError::Corrupt(format!("unknown run status `{status}`")))?;
    let count = |name: &str| -> Result<u32, StoreError> {
        let value: i64 = row.try_get(name)?;
        Ok(u32::try_from(value).unwrap_or(u32::MAX))
    };
    let tokens = |name: &str| -> Result<u64, StoreError> {
        let value: i64 = row.try_get(name)?;
        Ok(u64::try_from(value).unwrap_or(0))
    };
    Ok(RunSummary {
        id: row.try_get("id")?,
        status,
        created_at: row.try_get("created_at")?,
        finished_at: row.try_get("finished_at")?,
        prompt: row.try_get("prompt")?,
        model: row.try_get("model")?,
        protocol: row.try_get("protocol")?,
        satisfied: row.try_get("satisfied")?,
        stop_reason: row.try_get("stop_reason")?,
        corrections: count("corrections")?,
        tool_calls: count("tool_calls")?,
        model_calls: count("model_calls")?,
        input_tokens: tokens("input_tokens")?,
        output_tokens: tokens("output_tokens")?,
        duration_ms: row.try_get("duration_ms")?,
        error_kind: row.try_get("error_kind")?,
        error: row.try_get("error")?,
    })
}

#[cfg(all(test, feature = "postgres"))]
mod tests {
    use super::*;

    #[test]
    fn postgres_numbers_its_parameters() {
        assert_eq!(
            sqlx::Postgres::sql("WHERE id < ? ORDER BY id LIMIT ?"),
            "WHERE id < $1 ORDER BY id LIMIT $2"
        );
        assert_eq!(sqlx::Sqlite::sql("WHERE id = ?"), "WHERE id = ?");
    }
}
