//! A streamed request that asks for plain text (no tools, no response format) is passed through
//! to an OpenAI-compatible server as it comes: there is nothing to check but emptiness, so the
//! client's first token is not held back. The events are read on their way for the run record.

use std::time::Instant;

use axum::body::{Body, Bytes};
use futures_util::StreamExt;
use serde_json::{Map, Value};

use super::check::Passed;
use super::correct::{Exchange, Outcome, UpstreamCall, UpstreamError};
use super::wire::{Completion, ReplyMessage, TokenUsage};

/// The text and usage read from a stream of `data:` events, which may arrive split anywhere.
#[derive(Debug, Default)]
pub struct Tap {
    pending: String,
    /// The text deltas so far.
    pub text: String,
    /// The usage, when an event carried it.
    pub usage: TokenUsage,
}

impl Tap {
    /// Reads `chunk`, keeping an incomplete last line for the next one.
    pub fn feed(&mut self, chunk: &[u8]) {
        self.pending.push_str(&String::from_utf8_lossy(chunk));
        while let Some(end) = self.pending.find('\n') {
            let line: String = self.pending.drain(..=end).collect();
            let Some(data) = line.trim_end().strip_prefix("data:") else {
                continue;
            };
            let Ok(event) = serde_json::from_str::<Value>(data.trim()) else {
                continue;
            };
            if let Some(text) = event
                .pointer("/choices/0/delta/content")
                .and_then(Value::as_str)
            {
                self.text.push_str(text);
            }
            if let Some(usage) = event
                .get("usage")
                .filter(|u| u.is_object())
                .and_then(|u| serde_json::from_value(u.clone()).ok())
            {
                self.usage = usage;
            }
        }
    }

    /// What was streamed in answer to `sent`, as the exchange the run record is made of.
    pub fn exchange(
        self,
        sent: Vec<Value>,
        model: &str,
        started: Instant,
        retries: u32,
    ) -> Exchange {
        let message = ReplyMessage {
            content: Some(self.text),
            ..ReplyMessage::default()
        };
        let mut raw = Map::new();
        raw.insert("model".into(), Value::from(model));
        let completion = Completion {
            raw,
            message: message.clone(),
            finish_reason: Some("stop".into()),
            usage: self.usage,
            unreadable: None,
        };
        Exchange {
            completion,
            outcome: Outcome::Passed(Passed {
                message,
                repairs: Vec::new(),
            }),
            usage: self.usage,
            calls: vec![UpstreamCall {
                sent,
                latency_ms: started.elapsed().as_secs_f64() * 1000.0,
                usage: self.usage,
                retries,
            }],
            corrections: Vec::new(),
            feedback: Vec::new(),
            retries,
            verifications: Vec::new(),
        }
    }
}

/// Opens the upstream's stream for `body` (the client's, `stream` on) and returns it as a
/// response body that calls `done` with the tap and the transport retries once the upstream has
/// sent everything. A client that goes away stops the stream, and `done` is not called.
pub async fn open(
    endpoint: &corrigible_models::ChatEndpoint,
    body: Map<String, Value>,
    done: impl FnOnce(Tap, u32) + Send + 'static,
) -> Result<Body, UpstreamError> {
    let (response, retries) = endpoint
        .post_streaming(&super::wire::for_upstream(body))
        .await?;
    let upstream = Box::pin(response.bytes_stream());
    let state = (upstream, Tap::default(), Some(done));
    let stream =
        futures_util::stream::unfold(state, move |(mut upstream, mut tap, mut done)| async move {
            match upstream.next().await {
                Some(Ok(bytes)) => {
                    tap.feed(&bytes);
                    Some((Ok::<Bytes, reqwest::Error>(bytes), (upstream, tap, done)))
                }
                Some(Err(error)) => Some((Err(error), (upstream, tap, done))),
                None => {
                    if let Some(done) = done.take() {
                        done(tap, retries);
                    }
                    None
                }
            }
        });
    Ok(Body::from_stream(stream))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tap_reads_text_and_usage_from_events_split_anywhere() {
        let events = concat!(
            "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"Bon\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"jour\"}}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2,\"total_tokens\":7}}\n\n",
            "data: [DONE]\n\n"
        );
        let mut tap = Tap::default();
        for piece in events.as_bytes().chunks(7) {
            tap.feed(piece);
        }
        assert_eq!(tap.text, "Bonjour");
        assert_eq!(tap.usage.total_tokens, 7);
    }
}
