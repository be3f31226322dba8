//! Verification: before a satisfied answer is accepted, a model reads the request, the tool
//! results and the answer, and sets each value of the answer beside the evidence it rests on.
//! The engine rules on each comparison from the run's own text ([`proof`]): one it proves wrong
//! is an objection, sent back to the model; the rest are dropped and recorded.

pub mod check;
pub mod objection;
pub mod proof;
pub mod request;

use std::sync::Arc;

pub use check::{Checked, check_answer};
pub use objection::{Comparison, ObjectionKind};
pub use proof::{Dropped, Proven, Source};

use crate::model::{Model, Protocol};

/// How satisfied answers are verified: by which model, in which protocol, how often per run.
#[derive(Clone)]
pub struct Verifier {
    pub(crate) model: Option<(Arc<dyn Model>, Protocol)>,
    pub(crate) max_per_run: u32,
}

/// Verifications per run unless set.
pub const DEFAULT_MAX_PER_RUN: u32 = 2;

impl Default for Verifier {
    fn default() -> Self {
        Self {
            model: None,
            max_per_run: DEFAULT_MAX_PER_RUN,
        }
    }
}

impl Verifier {
    /// Verification by the run's own model, at most [`DEFAULT_MAX_PER_RUN`] times a run.
    pub fn new() -> Self {
        Self::default()
    }

    /// Verification by `model`, spoken to in `protocol`, instead of the run's own model.
    pub fn with_model(mut self, model: Arc<dyn Model>, protocol: Protocol) -> Self {
        self.model = Some((model, protocol));
        self
    }

    /// At most `n` verifications a run; later satisfied answers are accepted unchecked.
    pub fn max_per_run(mut self, n: u32) -> Self {
        self.max_per_run = n;
        self
    }

    /// The verifying model and its protocol, when it is not the run's own.
    pub fn model(&self) -> Option<(&Arc<dyn Model>, Protocol)> {
        self.model.as_ref().map(|(m, p)| (m, *p))
    }

    /// Verifications allowed per run.
    pub fn max(&self) -> u32 {
        self.max_per_run
    }

    /// The verifying model's name, when it is not the run's own.
    pub fn model_name(&self) -> Option<&str> {
        self.model.as_ref().map(|(m, _)| m.name())
    }
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("model", &self.model_name())
            .field("max_per_run", &self.max_per_run)
            .finish()
    }
}
