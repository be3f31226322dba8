//! `POST /v1/runs`, `GET /v1/runs`, `GET /v1/runs/{id}`.

use axum::Json;
use axum::body::Body;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::run_path::RunPath;
use crate::access_log::RunIdExt;
use crate::body::{read_limited, require_json};
use crate::errors::{ApiError, BadRequest, NotFound, ServiceUnavailable};
use crate::request::RunRequest;
use crate::state::AppState;
use crate::store::{RunFilter, RunRecord, RunStatus, RunSummary};
use crate::traceparent;
use corrigible::{Category, StopReason};

/// Runs listed when `limit` is not given.
const DEFAULT_LIMIT: u32 = 50;
/// Most runs listed at once.
const MAX_LIMIT: u32 = 500;

/// `POST /v1/runs`: runs the prompt and answers with the run report; with
/// `Prefer: respond-async`, answers 202 `{run_id}` as soon as the run has started.
pub(super) async fn create(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    if state.is_shutting_down() {
        return Err(ServiceUnavailable::ShuttingDown.into());
    }
    require_json(&headers)?;
    let bytes = read_limited(&headers, body, state.body_limit, state.body_read_timeout).await?;
    let plan = RunRequest::parse(&bytes)?.validate(state.agent())?;
    let trace = traceparent::continued(&headers, "POST /v1/runs");
    let started = state.runner.start(plan, trace).await?;
    let run_id = started.run_id.clone();
    let location = HeaderValue::from_str(&format!("/v1/runs/{run_id}")).ok();
    let mut response = if prefers_async(&headers) {
        let body = json!({"run_id": run_id, "status": "running"});
        (StatusCode::ACCEPTED, Json(body)).into_response()
    } else {
        match started.report().await {
            Ok(report) => Json(report).into_response(),
            Err(error) => error.into_response(),
        }
    };
    if let Some(location) = location {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response.extensions_mut().insert(RunIdExt(run_id));
    Ok(response)
}

/// Whether the client sent `Prefer: respond-async` (RFC 7240): answer 202 at once.
fn prefers_async(headers: &HeaderMap) -> bool {
    headers
        .get_all("prefer")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split([',', ';']))
        .any(|token| token.trim().eq_ignore_ascii_case("respond-async"))
}

/// Query of `GET /v1/runs`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    limit: Option<u32>,
    before: Option<String>,
    status: Option<RunStatus>,
    stop_reason: Option<StopReason>,
    category: Option<Category>,
    model: Option<String>,
    since: Option<i64>,
    until: Option<i64>,
}

/// Answer of `GET /v1/runs`.
#[derive(Debug, Serialize)]
pub(super) struct RunList {
    runs: Vec<RunSummary>,
    /// Pass as `before` for the next page; `null` on the last page.
    next_before: Option<String>,
}

/// `GET /v1/runs?limit=&before=&status=&stop_reason=&category=&model=&since=&until=`: the runs the
/// filters keep, newest first.
pub(super) async fn list(
    State(state): State<AppState>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<RunList>, ApiError> {
    let Query(query) = query.map_err(|e| BadRequest::new("query", e.body_text()))?;
    let limit = match query.limit {
        None => DEFAULT_LIMIT,
        Some(0) => return Err(BadRequest::new("limit", "must be at least 1").into()),
        Some(n) if n > MAX_LIMIT => {
            return Err(BadRequest::new("limit", format!("must be at most {MAX_LIMIT}")).into());
        }
        Some(n) => n,
    };
    let before = query.before.filter(|b| !b.is_empty());
    let filter = RunFilter {
        status: query.status,
        stop_reason: query.stop_reason.map(|r| r.as_str().to_string()),
        category: query.category,
        model: query.model.filter(|m| !m.is_empty()),
        since: query.since,
        until: query.until,
    };
    let runs = state
        .store()
        .list_runs(limit, before.as_deref(), &filter)
        .await?;
    let next_before = (runs.len() == limit as usize)
        .then(|| runs.last().map(|r| r.id.clone()))
        .flatten();
    Ok(Json(RunList { runs, next_before }))
}

/// `GET /v1/runs/{id}`: the run's summary and, once finished, its report.
pub(super) async fn get(
    State(state): State<AppState>,
    RunPath(id): RunPath,
) -> Result<Json<RunRecord>, ApiError> {
    state
        .store()
        .get_run(&id)
        .await?
        .map(Json)
        .ok_or_else(|| NotFound::Run(id).into())
}
