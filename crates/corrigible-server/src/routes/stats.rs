//! `GET /v1/stats/corrections`: the corrections sent back over a window of time, by category,
//! for the dashboard's chart.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use serde::{Deserialize, Serialize};

use crate::errors::{ApiError, BadRequest};
use crate::state::AppState;
use crate::store::{Window, now_ms};

/// The window when the query names none: the last 24 hours in 24 spans.
const DEFAULT_SPAN_MS: i64 = 24 * 3_600_000;
const DEFAULT_BUCKETS: u32 = 24;

/// Query of `GET /v1/stats/corrections`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct WindowQuery {
    since: Option<i64>,
    until: Option<i64>,
    buckets: Option<u32>,
}

/// One span of the window and its corrections by category.
#[derive(Debug, Serialize)]
pub(super) struct Bucket {
    /// Its start, unix milliseconds.
    start: i64,
    /// Corrections by category; categories with none are absent.
    counts: BTreeMap<String, u64>,
}

/// A category seen in the window and its corrections in all of it.
#[derive(Debug, Serialize)]
pub(super) struct CategoryTotal {
    category: String,
    total: u64,
}

/// Answer of `GET /v1/stats/corrections`.
#[derive(Debug, Serialize)]
pub(super) struct CorrectionChart {
    since: i64,
    until: i64,
    bucket_ms: i64,
    /// Every category seen in the window with its total, most frequent first.
    categories: Vec<CategoryTotal>,
    buckets: Vec<Bucket>,
}

/// `GET /v1/stats/corrections?since=&until=&buckets=`: corrections by category in each of
/// `buckets` equal spans from `since` to `until` (default: the last 24 hours in 24 spans).
pub(super) async fn corrections(
    State(state): State<AppState>,
    query: Result<Query<WindowQuery>, QueryRejection>,
) -> Result<Json<CorrectionChart>, ApiError> {
    let Query(query) = query.map_err(|e| BadRequest::new("query", e.body_text()))?;
    let until = query.until.unwrap_or_else(|| now_ms() + 1);
    let since = query
        .since
        .unwrap_or_else(|| until.saturating_sub(DEFAULT_SPAN_MS).max(0));
    let window = Window::new(since, until, query.buckets.unwrap_or(DEFAULT_BUCKETS))
        .map_err(|e| BadRequest::new("query", e.to_string()))?;
    let counts = state.store().corrections_over_time(&window).await?;
    let bucket_ms = window.bucket_ms();
    let mut buckets: Vec<Bucket> = (0..window.buckets())
        .map(|n| Bucket {
            start: since.saturating_add(bucket_ms.saturating_mul(i64::from(n))),
            counts: BTreeMap::new(),
        })
        .collect();
    let mut totals: BTreeMap<String, u64> = BTreeMap::new();
    for count in counts {
        *totals.entry(count.category.clone()).or_default() += count.count;
        if let Some(bucket) = buckets.get_mut(count.bucket as usize) {
            *bucket.counts.entry(count.category).or_default() += count.count;
        }
    }
    let mut categories: Vec<CategoryTotal> = totals
        .into_iter()
        .map(|(category, total)| CategoryTotal { category, total })
        .collect();
    categories.sort_by(|a, b| {
        b.total
            .cmp(&a.total)
            .then_with(|| a.category.cmp(&b.category))
    });
    Ok(Json(CorrectionChart {
        since,
        until,
        bucket_ms,
        categories,
        buckets,
    }))
}
