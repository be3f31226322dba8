//! The OpenAI-compatible gateway: `POST /v1/chat/completions` and `GET /v1/models`. A client
//! on any OpenAI SDK points its `base_url` here; each request is forwarded to the upstream, and
//! the reply is checked against the client's own request (its tools, `tool_choice`,
//! `parallel_tool_calls`, `response_format`) before the client sees it. Damage with one
//! reading is repaired locally; anything else goes back to the upstream with precise feedback,
//! within a bound. The tools are never executed here: they stay in the client's process.

mod check;
mod correct;
mod fallback;
mod local;
mod passthrough;
mod record;
mod stream;
mod upstream;
mod verify;
mod wire;

pub use verify::Verification;

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use corrigible::policy::{BreakerPolicy, CircuitBreakers};
use corrigible::trace::spans;
use corrigible::{ModelError, Usage};
use serde_json::{Map, Value, json};
use tokio::sync::Semaphore;
use tracing::Instrument;

use crate::body::{read_limited, require_json};
use crate::errors::{
    ApiError, BadGateway, BadRequest, NotFound, ServiceUnavailable, error_response,
};
use crate::state::AppState;
use crate::traceparent;
use check::Contract;
use correct::{Outcome, UpstreamError};
pub use upstream::{ModelUpstream, Upstream};
use wire::ChatRequest;

/// The smallest body limit of a gateway request: a conversation with its tool schemas
/// outgrows `/v1/runs`'s 64 KiB default long before it outgrows a model's context.
pub const MIN_BODY_LIMIT: usize = 1 << 20;

/// Replies sent back to the upstream per request when none is configured.
pub const DEFAULT_MAX_CORRECTIONS: u32 = 2;

/// The gateway's upstreams and bounds.
pub struct Gateway {
    upstreams: Vec<Arc<dyn Upstream>>,
    breakers: CircuitBreakers,
    max_corrections: u32,
    slots: Arc<Semaphore>,
    queue_timeout: Duration,
    verification: Option<Verification>,
}

impl Gateway {
    /// A gateway in front of `endpoint` that sends at most `max_corrections` replies back per
    /// request, serves at most `max_in_flight` requests at once, and answers 503 to a request
    /// that waited `queue_timeout` for a slot.
    pub fn new(
        endpoint: impl Upstream + 'static,
        max_corrections: u32,
        max_in_flight: usize,
        queue_timeout: Duration,
    ) -> Self {
        Self {
            upstreams: vec![Arc::new(endpoint)],
            breakers: CircuitBreakers::default(),
            max_corrections,
            slots: Arc::new(Semaphore::new(max_in_flight.max(1))),
            queue_timeout,
            verification: None,
        }
    }
}

impl Gateway {
    /// The same gateway with `endpoint` tried after the others when their breakers are open,
    /// their transport fails, or their corrections are spent.
    pub fn with_fallback(mut self, endpoint: impl Upstream + 'static) -> Self {
        self.upstreams.push(Arc::new(endpoint));
        self
    }

    /// The same gateway with the upstreams' breakers following `policy` (default: open after
    /// 5 transport failures in a row, probe again after 60 s).
    pub fn with_breaker_policy(mut self, policy: BreakerPolicy) -> Self {
        self.breakers = CircuitBreakers::new(policy);
        self
    }

    /// The same gateway with final text replies after tool results verified by `verification`.
    pub fn with_verification(mut self, verification: Verification) -> Self {
        self.verification = Some(verification);
        self
    }

    fn primary(&self) -> &dyn Upstream {
        self.upstreams[0].as_ref()
    }
}

/// `GET /v1/models`: the upstream model, the one a request that names none goes to.
pub(crate) async fn models(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let gateway = gateway(&state)?;
    Ok(Json(json!({
        "object": "list",
        "data": [{
            "id": gateway.primary().model(),
            "object": "model",
            "created": 0,
            "owned_by": "corrigible",
        }],
    })))
}

/// `POST /v1/chat/completions`; a client's `traceparent` is continued, and passed on to the
/// upstream with the request's span as parent.
pub(crate) async fn chat_completions(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let trace = traceparent::continued(&headers, "POST /v1/chat/completions");
    answer(state, headers, body)
        .instrument(trace.unwrap_or_else(tracing::Span::none))
        .await
}

async fn answer(state: AppState, headers: HeaderMap, body: Body) -> Result<Response, ApiError> {
    let gateway = gateway(&state)?;
    if state.is_shutting_down() {
        return Err(ServiceUnavailable::ShuttingDown.into());
    }
    require_json(&headers)?;
    let limit = state.body_limit.max(MIN_BODY_LIMIT);
    let bytes = read_limited(&headers, body, limit, state.body_read_timeout).await?;
    let body: Map<String, Value> = serde_json::from_slice(&bytes)
        .map_err(|e| BadRequest::new("body", format!("not a JSON object: {e}")))?;
    let request: ChatRequest =
        serde_json::from_slice(&bytes).map_err(|e| BadRequest::new("body", e.to_string()))?;
    if request.messages.is_empty() {
        return Err(BadRequest::new("messages", "must not be empty").into());
    }
    let contract = Contract::new(&request).map_err(|e| BadRequest::new(e.field, e.message))?;
    let slot = tokio::time::timeout(gateway.queue_timeout, gateway.slots.clone().acquire_owned())
        .await
        .ok()
        .and_then(Result::ok)
        .ok_or(ServiceUnavailable::AtCapacity {
            why: "gateway requests",
        })?;
    let id = uuid::Uuid::now_v7().to_string();
    let created_at = crate::store::now_ms();
    let started = std::time::Instant::now();
    let prompt = wire::last_user_text(&request.messages);
    if request.stream == Some(true)
        && contract.is_plain()
        && let Some(server) = gateway.primary().server()
    {
        return stream_through(&state, server, body, id, created_at, prompt, slot).await;
    }
    let routed = match fallback::route(
        &gateway.upstreams,
        &gateway.breakers,
        &body,
        &contract,
        gateway.max_corrections,
        gateway.verification.as_ref(),
    )
    .await
    {
        Ok(routed) => routed,
        Err(error) => {
            state.metrics.gateway_request("failed", &[], &[]);
            return Err(upstream_failure(error, &id).into());
        }
    };
    let exchange = routed.exchange;
    observe_calls(&state, &exchange);
    let corrections: Vec<&'static str> = exchange.corrections.iter().map(|c| c.as_str()).collect();
    let repairs: Vec<String> = match &exchange.outcome {
        Outcome::Passed(passed) => passed
            .repairs
            .iter()
            .map(|k| k.as_str().to_string())
            .collect(),
        Outcome::Spent(_) => Vec::new(),
    };
    let outcome = match &exchange.outcome {
        Outcome::Passed(_) if !corrections.is_empty() => "corrected",
        Outcome::Passed(_) if !repairs.is_empty() => "repaired",
        Outcome::Passed(_) => "passed",
        Outcome::Spent(_) => "spent",
    };
    state
        .metrics
        .gateway_request(outcome, &corrections, &repairs);
    let requested = request
        .model
        .as_deref()
        .filter(|m| !m.trim().is_empty() && routed.upstream == 0);
    let model = gateway.upstreams[routed.upstream].answering(requested);
    let report = record::report(
        &id,
        prompt,
        &model,
        &exchange,
        started.elapsed().as_secs_f64() * 1000.0,
    );
    let events = record::events(&report, &exchange);
    let (run, end) = record::rows(&state.instance_id(), created_at, report);
    if let Err(error) = state.runner.store_finished(run, events, end).await {
        tracing::warn!(run_id = %id, "the gateway request could not be stored: {error}");
    }
    let mut response = match &exchange.outcome {
        Outcome::Passed(passed) => {
            let answer = exchange.completion.answer(&passed.message, exchange.usage);
            if request.stream == Some(true) {
                let include_usage = request.stream_options.is_some_and(|o| o.include_usage);
                (
                    [
                        (header::CONTENT_TYPE, "text/event-stream"),
                        (header::CACHE_CONTROL, "no-cache"),
                    ],
                    stream::events(&answer, include_usage),
                )
                    .into_response()
            } else {
                Json(answer).into_response()
            }
        }
        Outcome::Spent(refused) => error_response(
            StatusCode::BAD_GATEWAY,
            "corrections_spent",
            &format!(
                "the upstream's reply was still refused after {} corrections ({}): {}",
                gateway.max_corrections,
                refused.category.as_str(),
                refused.feedback
            ),
            &[("run_id", Some(&id))],
        ),
    };
    let marks = [
        ("x-corrigible-outcome", outcome.to_string()),
        ("x-corrigible-corrections", corrections.join(",")),
        ("x-corrigible-repairs", repairs.join(",")),
        (
            "x-corrigible-upstream-calls",
            exchange.calls.len().to_string(),
        ),
        (
            "x-corrigible-transport-retries",
            exchange.retries.to_string(),
        ),
        ("x-corrigible-upstream", model),
        ("x-corrigible-fallbacks", routed.passed_over.join("; ")),
        ("x-corrigible-run-id", id),
    ];
    mark(&mut response, marks);
    Ok(response)
}

/// Each upstream call of `exchange` as a GenAI `chat` operation on the metrics.
fn observe_calls(state: &AppState, exchange: &correct::Exchange) {
    for call in &exchange.calls {
        state.metrics.gateway_call(
            call.latency_ms,
            call.usage.prompt_tokens,
            call.usage.completion_tokens,
        );
    }
}

/// Passes a streamed plain-text reply on as it comes (see [`passthrough`]), holding the
/// request's slot until the stream ends, and stores the run once the upstream has finished.
async fn stream_through(
    state: &AppState,
    server: &corrigible_models::ChatEndpoint,
    mut body: Map<String, Value>,
    id: String,
    created_at: i64,
    prompt: String,
    slot: tokio::sync::OwnedSemaphorePermit,
) -> Result<Response, ApiError> {
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .filter(|m| !m.trim().is_empty())
        .unwrap_or(server.model())
        .to_string();
    body.insert("model".into(), Value::from(model.as_str()));
    let started = std::time::Instant::now();
    let recorder = state.clone();
    let run_id = id.clone();
    let name = format!("openai:{model}");
    let sent = correct::messages_of(&body);
    let span = spans::chat(&name, "round_0");
    let call = span.clone();
    let answering = model.clone();
    let done = move |tap: passthrough::Tap, retries: u32| {
        drop(slot);
        let usage = Usage {
            input_tokens: tap.usage.prompt_tokens,
            output_tokens: tap.usage.completion_tokens,
        };
        spans::completed(&call, &answering, usage, "stop", retries);
        let exchange = tap.exchange(sent, &name, started, retries);
        observe_calls(&recorder, &exchange);
        let elapsed = started.elapsed().as_secs_f64() * 1000.0;
        let report = record::report(&run_id, prompt, &name, &exchange, elapsed);
        let events = record::events(&report, &exchange);
        let (run, end) = record::rows(&recorder.instance_id(), created_at, report);
        tokio::spawn(async move {
            if let Err(error) = recorder.runner.store_finished(run, events, end).await {
                tracing::warn!(run_id, "the gateway request could not be stored: {error}");
            }
        });
    };
    let stream = match passthrough::open(server, body, done)
        .instrument(span.clone())
        .await
    {
        Ok(stream) => stream,
        Err(error) => {
            state.metrics.gateway_request("failed", &[], &[]);
            return Err(upstream_failure(error, &id).into());
        }
    };
    state.metrics.gateway_request("streamed", &[], &[]);
    let mut response = (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        stream,
    )
        .into_response();
    let marks = [
        ("x-corrigible-outcome", "streamed".to_string()),
        ("x-corrigible-upstream", format!("openai:{model}")),
        ("x-corrigible-run-id", id),
    ];
    mark(&mut response, marks);
    Ok(response)
}

/// Sets each `x-corrigible-*` header of `marks` whose value a header can carry.
fn mark<const N: usize>(response: &mut Response, marks: [(&'static str, String); N]) {
    for (name, value) in marks {
        if let Ok(value) = HeaderValue::from_str(&value) {
            response
                .headers_mut()
                .insert(HeaderName::from_static(name), value);
        }
    }
}

fn gateway(state: &AppState) -> Result<&Arc<Gateway>, NotFound> {
    state.gateway.as_ref().ok_or_else(|| {
        NotFound::Route(
            "/v1/chat/completions: this server was built without a gateway \
             (AppState::with_gateway)"
                .into(),
        )
    })
}

fn upstream_failure(error: UpstreamError, id: &str) -> BadGateway {
    let (kind, message) = match error {
        UpstreamError::Model(ModelError::Transport(m)) => ("transport", m),
        UpstreamError::Model(other) => ("model", other.to_string()),
        UpstreamError::NotACompletion(e) => ("model", e.to_string()),
    };
    BadGateway {
        kind,
        message,
        run_id: id.to_string(),
    }
}
