//! A batch of writes as one SQL text of multi-row statements with all their bound values.
//!
//! Each call to sqlx is a round trip to the connection's worker thread, which costs more
//! than SQLite's own work on a row; so a batch is sent as one text, whose statements sqlx
//! prepares and runs one after the other, each taking its share of the bound values.

use sqlx::{QueryBuilder, Sqlite};

use crate::store::batch::{FailedRow, FinishedRow};
use crate::store::read::int;
use crate::store::{NewRun, StoreError, StoredEvent};

/// Rows written by one statement: at most eleven bound values each, far below SQLite's
/// limit of 32,766 per statement.
const ROWS_PER_STATEMENT: usize = 200;

/// The statements of one batch, built up kind by kind.
pub(super) struct Writes<'a> {
    sql: QueryBuilder<'a, Sqlite>,
    statements: usize,
}

impl<'a> Writes<'a> {
    pub(super) fn new() -> Self {
        Self {
            sql: QueryBuilder::new(""),
            statements: 0,
        }
    }

    /// Starts one more statement with `head`.
    fn statement(&mut self, head: &str) -> &mut QueryBuilder<'a, Sqlite> {
        if self.statements > 0 {
            self.sql.push("; ");
        }
        self.statements += 1;
        self.sql.push(head)
    }

    /// Inserts new runs, `running`.
    pub(super) fn runs(&mut self, runs: &'a [NewRun]) -> &mut Self {
        for chunk in runs.chunks(ROWS_PER_STATEMENT) {
            self.statement(
                "INSERT INTO runs (id, created_at, status, prompt, model, protocol, owner) ",
            )
            .push_values(chunk, |mut row, run| {
                row.push_bind(&run.id)
                    .push_bind(run.created_at)
                    .push("'running'")
                    .push_bind(&run.prompt)
                    .push_bind(&run.model)
                    .push_bind(&run.protocol)
                    .push_bind(&run.owner);
            });
        }
        self
    }

    /// Inserts events; one already stored (same run and sequence number) is left as it is.
    pub(super) fn events(&mut self, events: &'a [StoredEvent]) -> &mut Self {
        for chunk in events.chunks(ROWS_PER_STATEMENT) {
            self.statement("INSERT OR IGNORE INTO events (run_id, seq, kind, at, data) ")
                .push_values(chunk, |mut row, event| {
                    row.push_bind(&event.run_id)
                        .push_bind(int(event.seq))
                        .push_bind(&event.kind)
                        .push_bind(event.at)
                        .push_bind(&event.data);
                });
        }
        self
    }

    /// Marks runs `finished` with their reports.
    pub(super) fn finished(&mut self, rows: &'a [FinishedRow<'a>]) -> &mut Self {
        for chunk in rows.chunks(ROWS_PER_STATEMENT) {
            let sql = self.statement(
                "WITH v (id, finished_at, satisfied, stop_reason, corrections, tool_calls, \
                 model_calls, input_tokens, output_tokens, duration_ms, report) AS (",
            );
            sql.push_values(chunk, |mut row, end| {
                let usage = end.report.usage;
                row.push_bind(end.id)
                    .push_bind(end.at)
                    .push_bind(end.report.satisfied)
                    .push_bind(end.report.stop_reason.as_str())
                    .push_bind(i64::from(usage.corrections))
                    .push_bind(i64::from(usage.tool_calls))
                    .push_bind(i64::from(usage.model_calls))
                    .push_bind(int(usage.input_tokens))
                    .push_bind(int(usage.output_tokens))
                    .push_bind(end.report.duration_ms)
                    .push_bind(&end.json);
            });
            sql.push(
                ") UPDATE runs SET status = 'finished', finished_at = v.finished_at, \
                 satisfied = v.satisfied, stop_reason = v.stop_reason, \
                 corrections = v.corrections, tool_calls = v.tool_calls, \
                 model_calls = v.model_calls, input_tokens = v.input_tokens, \
                 output_tokens = v.output_tokens, duration_ms = v.duration_ms, \
                 report = v.report FROM v WHERE runs.id = v.id",
            );
        }
        self
    }

    /// Marks runs `failed` with their errors.
    pub(super) fn failed(&mut self, rows: &'a [FailedRow<'a>]) -> &mut Self {
        for chunk in rows.chunks(ROWS_PER_STATEMENT) {
            let sql = self.statement("WITH v (id, finished_at, error_kind, error) AS (");
            sql.push_values(chunk, |mut row, end| {
                row.push_bind(end.id)
                    .push_bind(end.at)
                    .push_bind(end.kind)
                    .push_bind(end.error);
            });
            sql.push(
                ") UPDATE runs SET status = 'failed', finished_at = v.finished_at, \
                 error_kind = v.error_kind, error = v.error, \
                 duration_ms = (v.finished_at - runs.created_at) FROM v WHERE runs.id = v.id",
            );
        }
        self
    }

    /// Runs every statement on `conn`, in one round trip; the text is not cached, as a batch's
    /// shape rarely repeats.
    pub(super) async fn execute(
        &mut self,
        conn: &mut sqlx::SqliteConnection,
    ) -> Result<(), StoreError> {
        if self.statements > 0 {
            self.sql.build().persistent(false).execute(conn).await?;
        }
        Ok(())
    }
}
