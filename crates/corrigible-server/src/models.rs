//! Models for the server: a factory called once per run, and a decorator that bounds the
//! model calls in flight over all runs, older runs first.

use std::sync::Arc;

use async_trait::async_trait;
use corrigible::{Model, ModelError, ModelLayer, ModelReply, ModelRequest};
use corrigible_models::{ModelSpec, ModelsError, ProviderOptions, ReplayModel};

use crate::scheduler::CallScheduler;

pub use corrigible::ModelFactory;

/// A factory that restarts `replay` from its first line for every run, so demos and load
/// tests are repeatable.
pub fn replay_factory(replay: ReplayModel) -> ModelFactory {
    Arc::new(move || Arc::new(replay.restarted()) as Arc<dyn Model>)
}

/// A factory that hands every run the same model (HTTP backends, the embedded model).
pub fn shared_factory(model: Arc<dyn Model>) -> ModelFactory {
    Arc::new(move || model.clone())
}

/// The factory for a model spec, as `run` takes it: `replay:FILE` restarts for each run, an
/// HTTP provider is shared. `local` is an error here: the CLI builds the embedded model and
/// passes it to [`shared_factory`].
pub fn factory_for_spec(
    spec: &ModelSpec,
    options: ProviderOptions,
) -> Result<ModelFactory, ModelsError> {
    match spec {
        ModelSpec::Replay(path) => Ok(replay_factory(ReplayModel::from_file(path)?)),
        other => Ok(shared_factory(corrigible_models::build(other, options)?)),
    }
}

/// A model whose calls wait for a permit of a [`CallScheduler`] shared by all runs, bounding
/// the model calls in flight; a run's `priority` (its admission order) decides who goes next.
pub struct LimitedModel {
    inner: Arc<dyn Model>,
    scheduler: CallScheduler,
    priority: u64,
}

impl LimitedModel {
    /// Wraps `inner`; each call holds a permit of `scheduler`, waiting behind the calls of
    /// runs with a lower `priority`.
    pub fn new(inner: Arc<dyn Model>, scheduler: CallScheduler, priority: u64) -> Self {
        Self {
            inner,
            scheduler,
            priority,
        }
    }
}

#[async_trait]
impl ModelLayer for LimitedModel {
    fn inner(&self) -> &dyn Model {
        self.inner.as_ref()
    }

    async fn call(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        let _permit = self.scheduler.acquire(self.priority).await;
        self.inner.complete(request).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use corrigible::{Protocol, Stage};

    use super::*;

    struct Slow {
        now: AtomicUsize,
        peak: AtomicUsize,
    }

    #[async_trait]
    impl Model for Slow {
        fn name(&self) -> &str {
            "slow"
        }

        async fn complete(&self, _request: &ModelRequest) -> Result<ModelReply, ModelError> {
            let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
            self.peak.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(20)).await;
            self.now.fetch_sub(1, Ordering::SeqCst);
            Ok(ModelReply::default())
        }
    }

    #[tokio::test]
    async fn bounds_calls_in_flight() {
        let slow = Arc::new(Slow {
            now: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        });
        let model = Arc::new(LimitedModel::new(slow.clone(), CallScheduler::new(2), 0));
        let request = ModelRequest {
            stage: Stage::new(1, 0),
            messages: Vec::new(),
            tools: Vec::new(),
            protocol: Protocol::Json,
            correction: None,
            grounds: Default::default(),
        };
        let calls: Vec<_> = (0..6)
            .map(|_| {
                let model = model.clone();
                let request = request.clone();
                tokio::spawn(async move { model.complete(&request).await })
            })
            .collect();
        for call in calls {
            assert!(call.await.unwrap().is_ok());
        }
        assert_eq!(slow.peak.load(Ordering::SeqCst), 2);
    }
}
