//! The verifier on a final text reply that follows tool results: the verifying model sets the
//! reply's values beside the conversation's tool messages, and a comparison the engine proves
//! wrong goes back to the upstream as `verifier_objection`. The same reply given again after
//! an objection passes, as in a run.

use std::sync::Arc;

use corrigible::trace::VerificationRecord;
use corrigible::verify::check_answer;
use corrigible::{Model, Protocol, Stage};

use super::check::Contract;

/// Which model verifies final replies, and how often per request.
#[derive(Clone)]
pub struct Verification {
    model: Arc<dyn Model>,
    protocol: Protocol,
    max_per_request: u32,
}

impl Verification {
    /// Verification by `model`, spoken to in `protocol`, at most `max_per_request` times a
    /// request.
    pub fn new(model: Arc<dyn Model>, protocol: Protocol, max_per_request: u32) -> Self {
        Self {
            model,
            protocol,
            max_per_request,
        }
    }
}

/// The verifications of one request so far.
#[derive(Default)]
pub struct Verified {
    /// Each verification, in order.
    pub records: Vec<VerificationRecord>,
    objected: Vec<String>,
}

impl Verified {
    /// The objection to `text`, a final reply, when verification is on, the conversation has
    /// tool results, the request's verifications are not spent, and `text` was not objected to
    /// already; `round` is the reply's upstream call, from 0.
    pub async fn objection(
        &mut self,
        verification: Option<&Verification>,
        contract: &Contract,
        text: &str,
        round: u32,
    ) -> Option<String> {
        let verification = verification?;
        let text = text.trim();
        if contract.results().is_empty()
            || text.is_empty()
            || self.records.len() as u32 >= verification.max_per_request
            || self.objected.iter().any(|t| t == text)
        {
            return None;
        }
        let checked = check_answer(
            verification.model.as_ref(),
            verification.protocol,
            1,
            Stage::new(1, round),
            contract.request(),
            contract.results(),
            text,
        )
        .await;
        self.records.push(checked.record);
        let objection = checked.objection?;
        self.objected.push(text.to_string());
        Some(objection)
    }
}
