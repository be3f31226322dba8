//! The fault-injecting model wrapper.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use corrigible::{Model, ModelError, ModelLayer, ModelReply, ModelRequest, Stage};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use super::{FaultKind, applicable, corrupt};

/// A fault that was injected, and the model call it hit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InjectedFault {
    /// The stage of the corrupted call.
    pub stage: Stage,
    /// What was done to the reply.
    pub kind: FaultKind,
}

/// Wraps a model and corrupts about `rate` of its replies (never transport errors).
pub struct FaultyModel {
    inner: Arc<dyn Model>,
    rate: f64,
    rng: Mutex<StdRng>,
    forced: Mutex<Vec<FaultKind>>,
    injected: Mutex<Vec<InjectedFault>>,
}

impl FaultyModel {
    /// Corrupts about `rate` of `inner`'s replies, reproducibly for `seed`.
    pub fn new(inner: Arc<dyn Model>, rate: f64, seed: u64) -> Self {
        Self {
            inner,
            rate,
            rng: Mutex::new(StdRng::seed_from_u64(seed)),
            forced: Mutex::new(Vec::new()),
            injected: Mutex::new(Vec::new()),
        }
    }

    /// Corrupts the next replies with exactly these kinds, in order (then none), when each
    /// applies to the reply; for tests.
    pub fn scripted(inner: Arc<dyn Model>, kinds: Vec<FaultKind>) -> Self {
        let model = Self::new(inner, 0.0, 0);
        if let Ok(mut forced) = model.forced.lock() {
            *forced = kinds.into_iter().rev().collect();
        }
        model
    }

    /// The faults injected so far, in call order.
    pub fn injected(&self) -> Vec<InjectedFault> {
        self.injected.lock().map(|v| v.clone()).unwrap_or_default()
    }

    fn choose(&self, reply: &ModelReply) -> Option<FaultKind> {
        if let Ok(mut forced) = self.forced.lock()
            && let Some(kind) = forced.pop()
        {
            return applicable(reply).contains(&kind).then_some(kind);
        }
        let kinds = applicable(reply);
        let mut rng = self.rng.lock().ok()?;
        // Always draw twice, so the stream does not depend on which kinds apply.
        let hit = rng.random::<f64>() < self.rate;
        let pick = rng.random_range(0..FaultKind::ALL.len());
        if !hit || kinds.is_empty() {
            return None;
        }
        Some(kinds[pick % kinds.len()])
    }
}

#[async_trait]
impl ModelLayer for FaultyModel {
    fn inner(&self) -> &dyn Model {
        self.inner.as_ref()
    }

    async fn call(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let reply = self.inner.complete(request).await?;
        let Some(kind) = self.choose(&reply) else {
            return Ok(reply);
        };
        let corrupted = corrupt(reply, kind);
        if let Ok(mut injected) = self.injected.lock() {
            injected.push(InjectedFault {
                stage: request.stage,
                kind,
            });
        }
        Ok(corrupted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::FaultConfig;
    use corrigible::ModelError;

    const ACTION: &str =
        r#"{"state":"action","reason":"r","tool":"calculator","tool_input":{"expression":"1+1"}}"#;

    fn text(t: &str) -> ModelReply {
        ModelReply {
            text: Some(t.into()),
            ..Default::default()
        }
    }

    #[test]
    fn the_same_seed_injects_the_same_faults() {
        let draw = |seed| {
            let model = FaultyModel::new(Arc::new(NoModel), 0.5, seed);
            (0..50)
                .map(|_| model.choose(&text(ACTION)))
                .collect::<Vec<_>>()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
        let hits = draw(7).iter().filter(|k| k.is_some()).count();
        assert!((10..=40).contains(&hits), "{hits}");
        assert!(FaultConfig::new(1.5, 0).is_err());
    }

    struct NoModel;

    #[async_trait]
    impl Model for NoModel {
        fn name(&self) -> &str {
            "none"
        }
        async fn complete(&self, _: &ModelRequest) -> Result<ModelReply, ModelError> {
            Err(ModelError::Transport("none".into()))
        }
    }
}
