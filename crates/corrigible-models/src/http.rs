//! One JSON POST to a provider's endpoint, with the transport policy: the provider's URL and
//! headers, timeouts, bounded retries with backoff for connection errors, 429, 500, 502, 503,
//! 504 and 529, and errors that never carry the API key.

use corrigible::ModelError;
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry_http::HeaderInjector;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::anthropic::ANTHROPIC_VERSION;
use crate::error::ModelsError;
use crate::options::{ApiKey, ProviderOptions};
use crate::retry::{TransportRetry, parse_retry_after};
use crate::spec::Provider;

/// A provider's successful answer: its body and how many transport retries it took.
pub(crate) struct Answer {
    pub body: String,
    pub retries: u32,
}

/// The HTTP side of one provider's endpoint: its URL, its clients, its retry policy and the key
/// to keep secret.
pub(crate) struct Transport {
    url: String,
    client: reqwest::Client,
    /// For a streamed body: no bound on the whole response, which may outlast the request
    /// timeout while tokens keep coming, but each read waits at most the request timeout.
    stream_client: reqwest::Client,
    policy: TransportRetry,
    provider: Provider,
    key: Option<ApiKey>,
}

impl Transport {
    /// The endpoint at `path` under the configured base URL (or the provider's default).
    pub fn new(
        provider: Provider,
        options: &ProviderOptions,
        path: &str,
    ) -> Result<Self, ModelsError> {
        let url = format!("{}{path}", base_url(provider, options.base_url.as_deref())?);
        let client = reqwest::Client::builder()
            .connect_timeout(options.timeouts.connect)
            .timeout(options.timeouts.request)
            .build()
            .map_err(|e| ModelsError::Client(e.to_string()))?;
        let stream_client = reqwest::Client::builder()
            .connect_timeout(options.timeouts.connect)
            .read_timeout(options.timeouts.request)
            .build()
            .map_err(|e| ModelsError::Client(e.to_string()))?;
        Ok(Self {
            url,
            client,
            stream_client,
            policy: options.retry,
            provider,
            key: options.api_key.clone(),
        })
    }

    /// The URL requests are posted to.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn redact(&self, text: &str) -> String {
        match &self.key {
            Some(key) => key.redact(text),
            None => text.to_string(),
        }
    }

    /// The provider's headers: its key, marked sensitive so it is never logged, in the header
    /// the provider reads it from, and Anthropic's API version.
    fn headers(&self) -> Result<HeaderMap, ModelError> {
        let mut headers = HeaderMap::new();
        if self.provider == Provider::Anthropic {
            headers.insert(
                HeaderName::from_static("anthropic-version"),
                HeaderValue::from_static(ANTHROPIC_VERSION),
            );
        }
        let Some(key) = &self.key else {
            return Ok(headers);
        };
        let (name, value) = match self.provider {
            Provider::OpenAi => ("authorization", format!("Bearer {}", key.expose())),
            Provider::Anthropic => ("x-api-key", key.expose().to_string()),
            Provider::Gemini => ("x-goog-api-key", key.expose().to_string()),
        };
        let mut value = HeaderValue::from_str(&value).map_err(|_| {
            ModelError::Config(format!(
                "the {} API key contains characters not allowed in an HTTP header",
                self.provider.display_name()
            ))
        })?;
        value.set_sensitive(true);
        headers.insert(HeaderName::from_static(name), value);
        Ok(headers)
    }

    /// POSTs `body` as JSON, retrying transient failures within the policy.
    pub async fn post_json<B: Serialize + ?Sized>(&self, body: &B) -> Result<Answer, ModelError> {
        let (response, retries) = self.send(&self.client, body).await?;
        let name = self.provider.display_name();
        let body = response.text().await.map_err(|e| {
            ModelError::Transport(
                self.redact(&format!("{name}: could not read the response body: {e}")),
            )
        })?;
        Ok(Answer { body, retries })
    }

    /// POSTs `body` as JSON like [`post_json`](Self::post_json), and returns the successful
    /// response as soon as its headers arrive, for its body to be read as a stream: the whole
    /// response is unbounded, each read bounded by the request timeout.
    pub async fn send_streaming<B: Serialize + ?Sized>(
        &self,
        body: &B,
    ) -> Result<(reqwest::Response, u32), ModelError> {
        self.send(&self.stream_client, body).await
    }

    async fn send<B: Serialize + ?Sized>(
        &self,
        client: &reqwest::Client,
        body: &B,
    ) -> Result<(reqwest::Response, u32), ModelError> {
        let name = self.provider.display_name();
        let mut headers = self.headers()?;
        propagate(&mut headers);
        let mut retries = 0u32;
        loop {
            let sent = client
                .post(&self.url)
                .headers(headers.clone())
                .json(body)
                .send()
                .await;
            let failure = match sent {
                Ok(response) => {
                    let status = response.status();
                    if status.is_success() {
                        return Ok((response, retries));
                    }
                    let retry_after = response
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(parse_retry_after);
                    let text = response.text().await.map_err(|e| {
                        ModelError::Transport(
                            self.redact(&format!("{name}: could not read the response body: {e}")),
                        )
                    })?;
                    let message = self.redact(&provider_message(&text));
                    if !is_retryable(status) {
                        return Err(self.status_error(status, &message));
                    }
                    Failure {
                        what: format!("{name} answered {status}: {message}"),
                        retry_after,
                    }
                }
                Err(e) if e.is_connect() || e.is_timeout() || e.is_request() => Failure {
                    what: self.redact(&format!("{name} unreachable: {}", error_chain(&e))),
                    retry_after: None,
                },
                Err(e) => {
                    return Err(ModelError::Transport(
                        self.redact(&format!("{name}: {}", error_chain(&e))),
                    ));
                }
            };
            match self.policy.next_delay(retries, failure.retry_after) {
                Some(wait) => {
                    retries += 1;
                    tracing::warn!(
                        provider = self.provider.as_str(),
                        retry = retries,
                        wait_ms = wait.as_millis() as u64,
                        "transport failure, retrying: {}",
                        failure.what
                    );
                    tokio::time::sleep(wait).await;
                }
                None => {
                    return Err(ModelError::Transport(format!(
                        "{} (after {retries} transport retries)",
                        failure.what
                    )));
                }
            }
        }
    }

    fn status_error(&self, status: StatusCode, message: &str) -> ModelError {
        let name = self.provider.display_name();
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            let vars = self.provider.key_env_vars().join(" or ");
            let state = if self.key.is_some() {
                "was refused"
            } else {
                "is missing"
            };
            return ModelError::Config(format!(
                "{name} answered {status}: the API key {state} (missing or wrong key: set {vars}): {message}"
            ));
        }
        if status.is_client_error() {
            return ModelError::Config(format!("{name} refused the request ({status}): {message}"));
        }
        ModelError::Transport(format!("{name} answered {status}: {message}"))
    }
}

struct Failure {
    what: String,
    retry_after: Option<std::time::Duration>,
}

fn is_retryable(status: StatusCode) -> bool {
    matches!(status.as_u16(), 429 | 500 | 502 | 503 | 504 | 529)
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The provider's own error message from an error body (`error.message` in all three APIs),
/// or the start of the body.
pub(crate) fn provider_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let message = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error").filter(|e| e.is_string()))
            .and_then(|m| m.as_str())
            .map(str::to_string)
    });
    match message {
        Some(m) => m,
        None if body.trim().is_empty() => "(empty body)".to_string(),
        None => body.trim().chars().take(300).collect(),
    }
}

/// Adds the W3C `traceparent` (and `tracestate`) of the span the request is made in, when an
/// OpenTelemetry layer records it, so the provider's own spans continue the run's trace.
fn propagate(headers: &mut HeaderMap) {
    let context = tracing::Span::current().context();
    TraceContextPropagator::new().inject_context(&context, &mut HeaderInjector(headers));
}

/// The configured base URL without trailing slashes, or the provider's default.
fn base_url(provider: Provider, configured: Option<&str>) -> Result<String, ModelsError> {
    let url = configured.unwrap_or(provider.default_base_url()).trim();
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(ModelsError::InvalidBaseUrl {
            url: url.to_string(),
        });
    }
    Ok(url.trim_end_matches('/').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_messages_are_found() {
        assert_eq!(
            provider_message(r#"{"error":{"message":"Incorrect API key","type":"x"}}"#),
            "Incorrect API key"
        );
        assert_eq!(
            provider_message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded"
        );
        assert_eq!(provider_message(r#"{"error":"boom"}"#), "boom");
        assert_eq!(provider_message(""), "(empty body)");
        assert_eq!(provider_message("<html>bad gateway"), "<html>bad gateway");
    }
}
