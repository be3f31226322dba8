//! The HTTP routes: the `/v1` API (behind the API key when one is configured), health,
//! metrics, the OpenAPI document and the dashboard.

mod events;
mod ops;
mod run_path;
mod runs;
mod stats;

use axum::Router;
use axum::http::{Method, Uri};
use axum::middleware::from_fn_with_state;
use axum::routing::{get, post};

use crate::auth::require_api_key;
use crate::errors::{MethodNotAllowed, NotFound};
use crate::state::AppState;
use crate::{dashboard, gateway, security_headers};

/// The server's routes over `state`, with the security headers; [`serve`](crate::serve) adds
/// the `Host`/`Origin` check, the access log and the connection limits.
pub fn router(state: AppState) -> Router {
    let api = Router::new()
        .route("/v1/runs", get(runs::list).post(runs::create))
        .route("/v1/runs/{id}", get(runs::get))
        .route("/v1/runs/{id}/events", get(events::stream))
        .route("/v1/stats/corrections", get(stats::corrections))
        .route("/v1/info", get(ops::info))
        .route("/v1/chat/completions", post(gateway::chat_completions))
        .route("/v1/models", get(gateway::models))
        .route_layer(from_fn_with_state(state.clone(), require_api_key));
    let routes = Router::new()
        .merge(api)
        .route("/healthz", get(ops::healthz))
        .route("/metrics", get(ops::metrics))
        .route("/openapi.json", get(ops::openapi))
        .merge(dashboard::routes())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state);
    routes.layer(axum::middleware::from_fn(security_headers::add))
}

async fn not_found(uri: Uri) -> NotFound {
    NotFound::Route(uri.path().to_string())
}

async fn method_not_allowed(method: Method, uri: Uri) -> MethodNotAllowed {
    MethodNotAllowed {
        method,
        path: uri.path().to_string(),
    }
}
