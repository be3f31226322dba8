//! `GET /healthz`, `GET /metrics`, `GET /openapi.json`, `GET /v1/info`.

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use corrigible::policy::BreakerState;
use serde_json::json;

use crate::request::{MAX_ACTIONS_CAP, MAX_CORRECTIONS_CAP, TOOL_RETRIES_CAP, protocol_name};
use crate::state::AppState;

use crate::OPENAPI_JSON as OPENAPI;

/// `GET /healthz`: 200 while serving, 503 while shutting down; the runs in flight and those
/// waiting for a slot.
pub(super) async fn healthz(State(state): State<AppState>) -> Response {
    let (status, text) = if state.is_shutting_down() {
        (StatusCode::SERVICE_UNAVAILABLE, "shutting_down")
    } else {
        (StatusCode::OK, "ok")
    };
    let body = json!({
        "status": text,
        "runs_in_flight": state.runs_in_flight(),
        "runs_queued": state.runs_queued(),
    });
    (status, Json(body)).into_response()
}

/// `GET /metrics`: Prometheus text format.
pub(super) async fn metrics(State(state): State<AppState>) -> Response {
    let agent = state.agent();
    let known = agent.breakers().states().await;
    let mut states: Vec<_> = agent
        .tools()
        .names()
        .into_iter()
        .map(|name| {
            let state = known
                .iter()
                .find(|(tool, _)| tool == name)
                .map_or(BreakerState::Closed, |(_, state)| *state);
            (name.to_string(), state)
        })
        .collect();
    for (tool, st) in known {
        if !states.iter().any(|(t, _)| *t == tool) {
            states.push((tool, st));
        }
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.metrics.render(&states, state.load()),
    )
        .into_response()
}

/// `GET /openapi.json`.
pub(super) async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI).into_response()
}

/// `GET /v1/info`: the model, protocol, tools and default limits runs get.
pub(super) async fn info(State(state): State<AppState>) -> Json<serde_json::Value> {
    let agent = state.agent();
    let policy = agent.policy();
    Json(json!({
        "model": &*state.model_name,
        "protocol": protocol_name(agent.protocol()),
        "protocol_reason": agent.protocol_reason(),
        "tools": agent.tools().specs().into_iter().map(|s| json!({
            "name": s.name, "description": s.description
        })).collect::<Vec<_>>(),
        "limits": {
            "max_actions": policy.limits.max_actions,
            "max_corrections": policy.limits.max_corrections,
            "max_repeats": policy.limits.max_repeats,
            "tool_retries": policy.retry.max_retries,
            "max_model_calls": policy.limits.max_model_calls,
            "max_tokens": policy.limits.max_tokens,
        },
        "caps": {
            "max_actions": MAX_ACTIONS_CAP,
            "max_corrections": MAX_CORRECTIONS_CAP,
            "max_repeats": MAX_CORRECTIONS_CAP,
            "tool_retries": TOOL_RETRIES_CAP,
        },
        "body_limit": state.body_limit,
    }))
}
