//! Where the gateway sends a request: an OpenAI-compatible server, forwarded as the client
//! wrote it, or a model behind the [`Model`] trait (the embedded one), to which the request is
//! translated.

use std::sync::Arc;

use async_trait::async_trait;
use corrigible::Model;
use corrigible_models::ChatEndpoint;
use serde_json::{Map, Value};

use super::correct::UpstreamError;
use super::local;
use super::wire::{self, Completion};

/// A completion and the transport retries it took.
pub struct Answered {
    /// The completion.
    pub completion: Completion,
    /// Transport retries made.
    pub retries: u32,
}

/// One upstream of the gateway.
#[async_trait]
pub trait Upstream: Send + Sync {
    /// The model a request that names none goes to.
    fn model(&self) -> &str;

    /// The name of its circuit breaker: unique per upstream.
    fn breaker_name(&self) -> String;

    /// The model that answers a request naming `requested`, as the run record names it.
    fn answering(&self, requested: Option<&str>) -> String;

    /// Answers `body`, a Chat Completions request with `stream` off.
    async fn complete(&self, body: &Map<String, Value>) -> Result<Answered, UpstreamError>;

    /// The OpenAI-compatible server behind it, when there is one: a reply that needs no check
    /// can be streamed from it as it comes.
    fn server(&self) -> Option<&ChatEndpoint> {
        None
    }
}

#[async_trait]
impl Upstream for ChatEndpoint {
    fn model(&self) -> &str {
        ChatEndpoint::model(self)
    }

    fn breaker_name(&self) -> String {
        format!("upstream {} at {}", ChatEndpoint::model(self), self.url())
    }

    fn answering(&self, requested: Option<&str>) -> String {
        format!("openai:{}", requested.unwrap_or(ChatEndpoint::model(self)))
    }

    fn server(&self) -> Option<&ChatEndpoint> {
        Some(self)
    }

    async fn complete(&self, body: &Map<String, Value>) -> Result<Answered, UpstreamError> {
        let answer = self.post(&wire::for_upstream(body.clone())).await?;
        Ok(Answered {
            completion: Completion::parse(answer.body.as_bytes())?,
            retries: answer.retries,
        })
    }
}

/// A model behind the [`Model`] trait, asked under the json protocol: the client's tools are
/// rendered into the system prompt and, on the embedded model, held to their schemas while it
/// decodes; its decision comes back as a tool call or a text reply.
pub struct ModelUpstream {
    model: Arc<dyn Model>,
    name: String,
}

impl ModelUpstream {
    /// An upstream answering with `model`.
    pub fn new(model: Arc<dyn Model>) -> Self {
        let name = model.name().to_string();
        Self { model, name }
    }
}

#[async_trait]
impl Upstream for ModelUpstream {
    fn model(&self) -> &str {
        &self.name
    }

    fn breaker_name(&self) -> String {
        format!("upstream {}", self.name)
    }

    fn answering(&self, _requested: Option<&str>) -> String {
        self.name.clone()
    }

    async fn complete(&self, body: &Map<String, Value>) -> Result<Answered, UpstreamError> {
        let request = local::request(body, self.model.thinks())?;
        let reply = self.model.complete(&request).await?;
        Ok(Answered {
            completion: local::completion(&self.name, &reply)?,
            retries: reply.transport_retries,
        })
    }
}
