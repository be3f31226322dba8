//! The HTTP routes: the `/v1` API (behind the API key when one is configured), health,
//! metrics, the OpenAPI document and the dashboard.

mod events;
mod ops;
mod runs;

use axum::Router;
use axum::http::Uri;
use axum::middleware::from_fn_with_state;
use axum::routing::get;

use crate::auth::require_api_key;
use crate::dashboard;
use crate::errors::NotFound;
use crate::state::AppState;

/// The server's routes over `state`, ready for `axum::serve` (tests use it directly).
pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .route("/v1/runs", get(runs::list).post(runs::create))
        .route("/v1/runs/{id}", get(runs::get))
        .route("/v1/runs/{id}/events", get(events::stream))
        .route("/v1/info", get(ops::info))
        .route_layer(from_fn_with_state(state.clone(), require_api_key));
    Router::new()
        .merge(api)
        .route("/healthz", get(ops::healthz))
        .route("/metrics", get(ops::metrics))
        .route("/openapi.json", get(ops::openapi))
        .merge(dashboard::routes())
        .fallback(not_found)
        .with_state(state)
}

async fn not_found(uri: Uri) -> NotFound {
    NotFound::Route(uri.path().to_string())
}
