//! Backpressure on runs: a model whose calls wait while the store writer's queue is full.

use std::sync::Arc;

use async_trait::async_trait;
use corrigible::{Model, ModelError, ModelLayer, ModelReply, ModelRequest};

use super::writer::StoreWriter;

/// Wraps a run's model: each call first waits for room in the store writer's queue.
pub(crate) struct GatedModel {
    inner: Arc<dyn Model>,
    writer: StoreWriter,
}

impl GatedModel {
    pub(crate) fn new(inner: Arc<dyn Model>, writer: StoreWriter) -> Self {
        Self { inner, writer }
    }
}

#[async_trait]
impl ModelLayer for GatedModel {
    fn inner(&self) -> &dyn Model {
        self.inner.as_ref()
    }

    async fn call(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        self.writer.room().await;
        self.inner.complete(request).await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::writer::tests::{Held, queued};
    use super::*;
    use crate::store::open_store;

    struct Thinker;

    #[async_trait]
    impl Model for Thinker {
        fn name(&self) -> &str {
            "thinker"
        }

        async fn complete(&self, _: &ModelRequest) -> Result<ModelReply, ModelError> {
            Ok(ModelReply::default())
        }

        fn count_tokens(&self, text: &str) -> Option<usize> {
            Some(text.len())
        }

        fn thinks(&self) -> bool {
            true
        }
    }

    fn request() -> ModelRequest {
        ModelRequest {
            stage: corrigible::Stage::new(1, 0),
            messages: Vec::new(),
            tools: Vec::new(),
            protocol: corrigible::Protocol::Json,
            correction: None,
            grounds: Default::default(),
        }
    }

    #[tokio::test]
    async fn a_model_call_waits_while_the_queue_is_full() {
        let store = Held::with_run().await;
        let writer = StoreWriter::spawn(store.clone(), 4);
        let gated = Arc::new(GatedModel::new(Arc::new(Thinker), writer.clone()));
        let live = super::super::live::LiveRuns::default().open("r");
        for seq in 1..=4 {
            writer.event(queued(&live, seq));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let call = tokio::spawn({
            let gated = gated.clone();
            async move { gated.complete(&request()).await }
        });
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert!(
            !call.is_finished(),
            "a model call went on past a full queue"
        );
        store.release();
        let reply = tokio::time::timeout(Duration::from_secs(5), call)
            .await
            .expect("the call goes on once the store writes")
            .expect("joins");
        assert!(reply.is_ok());
        // Under the bound, calls do not wait.
        tokio::time::timeout(Duration::from_secs(5), gated.complete(&request()))
            .await
            .expect("no wait with room")
            .expect("reply");
    }

    #[tokio::test]
    async fn the_gate_passes_on_what_the_model_is() {
        let store = open_store("sqlite::memory:").await.unwrap();
        let gated = GatedModel::new(Arc::new(Thinker), StoreWriter::spawn(store, 8));
        assert_eq!(gated.name(), "thinker");
        assert_eq!(gated.count_tokens("four"), Some(4));
        assert!(
            gated.thinks(),
            "a thinking model's prompt must say it thinks first"
        );
    }
}
