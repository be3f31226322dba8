//! An OpenAI-compatible `/chat/completions` endpoint that takes a request body as a client
//! wrote it, for a gateway that forwards requests rather than building them.

use corrigible::ModelError;
use serde_json::Value;

use crate::error::ModelsError;
use crate::http::Transport;
use crate::options::ProviderOptions;
use crate::spec::Provider;

/// `POST {base_url}/chat/completions` with the transport policy of [`OpenAiModel`](super::OpenAiModel):
/// timeouts, bounded retries with backoff, and errors that never carry the key.
pub struct ChatEndpoint {
    model: String,
    transport: Transport,
}

impl std::fmt::Debug for ChatEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatEndpoint")
            .field("model", &self.model)
            .field("url", &self.transport.url())
            .finish_non_exhaustive()
    }
}

/// What the endpoint answered: its JSON body and the transport retries it took.
#[derive(Debug, Clone)]
pub struct EndpointAnswer {
    /// The body, as sent.
    pub body: String,
    /// Transport retries made.
    pub retries: u32,
}

impl ChatEndpoint {
    /// The endpoint serving `model` (the name sent when a request names none); unset options
    /// are filled from the environment (`OPENAI_BASE_URL`, `OPENAI_API_KEY`).
    pub fn new(model: impl Into<String>, options: ProviderOptions) -> Result<Self, ModelsError> {
        let options = options.with_env(Provider::OpenAi);
        Ok(Self {
            model: model.into(),
            transport: Transport::new(Provider::OpenAi, &options, "/chat/completions")?,
        })
    }

    /// The model requests go to by default.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The URL requests are posted to.
    pub fn url(&self) -> &str {
        self.transport.url()
    }

    /// POSTs `body` as it is and returns the response once its headers arrive, for a
    /// streamed body (`stream: true`) to be passed on as it comes: the stream may outlast the
    /// request timeout, but no wait for its next bytes may.
    pub async fn post_streaming(
        &self,
        body: &Value,
    ) -> Result<(reqwest::Response, u32), ModelError> {
        self.transport.send_streaming(body).await
    }

    /// POSTs `body` as it is.
    pub async fn post(&self, body: &Value) -> Result<EndpointAnswer, ModelError> {
        let answer = self.transport.post_json(body).await?;
        Ok(EndpointAnswer {
            body: answer.body,
            retries: answer.retries,
        })
    }
}
