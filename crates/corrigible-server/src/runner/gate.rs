//! Backpressure on runs: a model whose calls wait while the store writer's queue is full.

use std::sync::Arc;

use async_trait::async_trait;
use corrigible::{Model, ModelError, ModelReply, ModelRequest};

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
impl Model for GatedModel {
    fn name(&self) -> &str {
        self.inner.name()
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        self.writer.room().await;
        self.inner.complete(request).await
    }

    fn count_tokens(&self, text: &str) -> Option<usize> {
        self.inner.count_tokens(text)
    }
}
