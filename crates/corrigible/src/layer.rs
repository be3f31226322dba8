//! Model layers: wrappers that change one thing about a model's calls and pass the rest on.

use async_trait::async_trait;

use crate::model::{Model, ModelError, ModelReply, ModelRequest};

/// A wrapper around a model that changes only how a call is made: waiting for a permit,
/// injecting faults, counting. Every type that implements it is a [`Model`] whose name, token
/// counting and thinking are the wrapped model's, so no wrapper can forget to pass one on.
#[async_trait]
pub trait ModelLayer: Send + Sync {
    /// The wrapped model.
    fn inner(&self) -> &dyn Model;

    /// Makes one call, usually around `self.inner().complete(request)`.
    async fn call(&self, request: &ModelRequest) -> Result<ModelReply, ModelError>;
}

#[async_trait]
impl<L: ModelLayer> Model for L {
    fn name(&self) -> &str {
        self.inner().name()
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelReply, ModelError> {
        self.call(request).await
    }

    fn count_tokens(&self, text: &str) -> Option<usize> {
        self.inner().count_tokens(text)
    }

    fn thinks(&self) -> bool {
        self.inner().thinks()
    }
}
