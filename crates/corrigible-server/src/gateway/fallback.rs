//! The upstreams of a request, in order: the configured one, then each `--fallback`. An
//! upstream is skipped while its breaker is open; the next one is tried when its transport
//! fails or its corrections are spent. Each upstream's breaker counts its transport failures.

use corrigible::policy::{BreakerDecision, CircuitBreakers};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::check::Contract;
use super::correct::{Exchange, Outcome, UpstreamError, exchange};
use super::upstream::Upstream;
use super::verify::Verification;

/// What the upstreams did with one request.
#[derive(Debug)]
pub struct Routed {
    /// The exchange that answered (or the last one spent), with the cost of every upstream
    /// tried before it.
    pub exchange: Exchange,
    /// The index of the upstream that answered: 0 for the configured one.
    pub upstream: usize,
    /// Why each upstream before it was passed over, in order.
    pub passed_over: Vec<String>,
}

/// Tries `upstreams` in order for `body`. The first keeps the client's `model`; a fallback is
/// asked for its own.
pub async fn route(
    upstreams: &[Arc<dyn Upstream>],
    breakers: &CircuitBreakers,
    body: &Map<String, Value>,
    contract: &Contract,
    max_corrections: u32,
    verification: Option<&Verification>,
) -> Result<Routed, UpstreamError> {
    let mut passed_over = Vec::new();
    let mut spent: Option<(usize, Exchange)> = None;
    let mut last_error = None;
    for (index, endpoint) in upstreams.iter().enumerate() {
        let name = endpoint.breaker_name();
        if let (BreakerDecision::Reject { retry_in }, _) = breakers.acquire(&name).await {
            passed_over.push(format!(
                "{}: breaker open for {} s more",
                endpoint.model(),
                retry_in.as_secs()
            ));
            continue;
        }
        match exchange(
            endpoint.as_ref(),
            body.clone(),
            index > 0,
            contract,
            max_corrections,
            verification,
        )
        .await
        {
            Ok(this) => {
                breakers.record(&name, true).await;
                let this = match spent.take() {
                    Some((_, earlier)) => this.after(earlier),
                    None => this,
                };
                let is_spent = matches!(this.outcome, Outcome::Spent(_));
                if is_spent && index + 1 < upstreams.len() {
                    passed_over.push(format!("{}: corrections spent", endpoint.model()));
                    spent = Some((index, this));
                    continue;
                }
                return Ok(Routed {
                    exchange: this,
                    upstream: index,
                    passed_over,
                });
            }
            Err(error) => {
                if matches!(
                    error,
                    UpstreamError::Model(corrigible::ModelError::Transport(_))
                ) {
                    breakers.record(&name, false).await;
                }
                passed_over.push(format!("{}: {error}", endpoint.model()));
                last_error = Some(error);
            }
        }
    }
    match spent {
        Some((upstream, exchange)) => Ok(Routed {
            upstream,
            exchange,
            passed_over,
        }),
        None => Err(last_error.unwrap_or_else(|| {
            UpstreamError::Model(corrigible::ModelError::Transport(format!(
                "every upstream's breaker is open ({})",
                passed_over.join("; ")
            )))
        })),
    }
}
