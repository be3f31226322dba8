//! One gateway request: ask the upstream, check the reply against the client's request, and
//! while it is refused and the bound allows, ask again with the rejected reply and the
//! feedback. The client sees only the reply that passed, or an error once the bound is spent.

use std::time::Instant;

use corrigible::trace::{VerificationRecord, spans};
use corrigible::{Category, ModelError, Usage};
use serde_json::{Map, Value, json};
use tracing::Instrument;

use super::check::{Contract, Passed, Refused};
use super::upstream::{Answered, Upstream};
use super::verify::{Verification, Verified};
use super::wire::{Completion, NotACompletion, TokenUsage};

/// How a request ended.
#[derive(Debug)]
pub enum Outcome {
    /// A reply passed the checks (at once, after local repairs, or after corrections).
    Passed(Passed),
    /// Every reply within the bound was refused; the last refusal.
    Spent(Refused),
}

/// Everything one request cost and produced.
#[derive(Debug)]
pub struct Exchange {
    /// The last completion the upstream sent.
    pub completion: Completion,
    /// How it ended.
    pub outcome: Outcome,
    /// Tokens over every upstream call.
    pub usage: TokenUsage,
    /// Each upstream call, in order.
    pub calls: Vec<UpstreamCall>,
    /// The category of each reply sent back, in order.
    pub corrections: Vec<Category>,
    /// The feedback of each, in the same order.
    pub feedback: Vec<String>,
    /// Transport retries over every call.
    pub retries: u32,
    /// The verifications of final replies, in order.
    pub verifications: Vec<VerificationRecord>,
}

impl Exchange {
    /// This exchange, counting also what an earlier upstream's `spent` exchange cost: its
    /// calls, tokens, retries and the replies it sent back.
    pub fn after(mut self, earlier: Exchange) -> Self {
        let mut calls = earlier.calls;
        calls.append(&mut self.calls);
        self.calls = calls;
        self.usage += earlier.usage;
        self.retries += earlier.retries;
        let mut corrections = earlier.corrections;
        corrections.append(&mut self.corrections);
        self.corrections = corrections;
        let mut feedback = earlier.feedback;
        feedback.append(&mut self.feedback);
        self.feedback = feedback;
        let mut verifications = earlier.verifications;
        verifications.append(&mut self.verifications);
        self.verifications = verifications;
        self
    }
}

/// One upstream call: the messages it was sent, how long it took, its tokens, its transport
/// retries.
#[derive(Debug, Clone)]
pub struct UpstreamCall {
    /// The conversation as the upstream got it: the client's messages, then each reply sent
    /// back with its feedback.
    pub sent: Vec<Value>,
    /// Milliseconds from sending to the whole body.
    pub latency_ms: f64,
    /// Its tokens.
    pub usage: TokenUsage,
    /// Transport retries it took.
    pub retries: u32,
}

/// Why no completion came.
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// The upstream could not be reached or refused the request.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// It answered something that is not a completion.
    #[error(transparent)]
    NotACompletion(#[from] NotACompletion),
}

/// One call upstream in its own `chat` span (`round_0` the first, `round_N` the Nth
/// correction): the model that answered, its tokens, why it stopped, its transport retries, or
/// the kind of failure.
async fn call(
    endpoint: &dyn Upstream,
    body: &Map<String, Value>,
    round: usize,
) -> Result<Answered, UpstreamError> {
    let answering = endpoint.answering(body.get("model").and_then(Value::as_str));
    let span = spans::chat(&answering, &format!("round_{round}"));
    let answer = endpoint.complete(body).instrument(span.clone()).await;
    match &answer {
        Ok(answer) => {
            let completion = &answer.completion;
            let usage = Usage {
                input_tokens: completion.usage.prompt_tokens,
                output_tokens: completion.usage.completion_tokens,
            };
            let model = completion
                .raw
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or_else(|| spans::provider_and_model(&answering).1);
            let finish = completion.finish_reason.as_deref().unwrap_or("stop");
            spans::completed(&span, model, usage, finish, answer.retries);
        }
        Err(UpstreamError::Model(ModelError::Transport(_))) => {
            spans::failed_with(&span, "transport")
        }
        Err(UpstreamError::Model(_)) => spans::failed_with(&span, "model"),
        Err(UpstreamError::NotACompletion(_)) => spans::failed_with(&span, "not_a_completion"),
    }
    answer
}

/// Runs one request on one upstream: `body` is the client's, forwarded with `stream` off and,
/// when `own_model` is set or the client named none, the upstream's own model;
/// `max_corrections` bounds the replies sent back; `verification`, when set, checks a final
/// text reply against the conversation's tool results.
pub async fn exchange(
    endpoint: &dyn Upstream,
    mut body: Map<String, Value>,
    own_model: bool,
    contract: &Contract,
    max_corrections: u32,
    verification: Option<&Verification>,
) -> Result<Exchange, UpstreamError> {
    body.insert("stream".into(), Value::Bool(false));
    body.remove("stream_options");
    let named = body
        .get("model")
        .and_then(Value::as_str)
        .is_some_and(|m| !m.trim().is_empty());
    if own_model || !named {
        body.insert("model".into(), Value::from(endpoint.model()));
    }
    let mut usage = TokenUsage::default();
    let mut corrections = Vec::new();
    let mut feedback = Vec::new();
    let mut calls = Vec::new();
    let mut retries = 0;
    let mut verified = Verified::default();
    loop {
        let started = Instant::now();
        let answer = call(endpoint, &body, calls.len()).await?;
        retries += answer.retries;
        let completion = answer.completion;
        usage += completion.usage;
        calls.push(UpstreamCall {
            sent: messages_of(&body),
            latency_ms: started.elapsed().as_secs_f64() * 1000.0,
            usage: completion.usage,
            retries: answer.retries,
        });
        let checked = match &completion.unreadable {
            Some((category, feedback)) => Err(Refused {
                category: *category,
                feedback: feedback.clone(),
                calls: Vec::new(),
            }),
            None => contract.check(&completion.message, &feedback),
        };
        let round = calls.len() as u32 - 1;
        let checked = match checked {
            Ok(passed) if passed.message.tool_calls.is_empty() => {
                let text = passed.message.content.as_deref().unwrap_or("");
                match verified
                    .objection(verification, contract, text, round)
                    .await
                {
                    Some(objection) => Err(Refused {
                        category: Category::VerifierObjection,
                        feedback: objection,
                        calls: Vec::new(),
                    }),
                    None => Ok(passed),
                }
            }
            other => other,
        };
        let refused = match checked {
            Ok(passed) => {
                return Ok(Exchange {
                    completion,
                    outcome: Outcome::Passed(passed),
                    usage,
                    calls,
                    corrections,
                    feedback,
                    retries,
                    verifications: verified.records,
                });
            }
            Err(refused) => refused,
        };
        corrections.push(refused.category);
        feedback.push(refused.feedback.clone());
        if corrections.len() as u32 > max_corrections {
            return Ok(Exchange {
                completion,
                outcome: Outcome::Spent(refused),
                usage,
                calls,
                corrections,
                feedback,
                retries,
                verifications: verified.records,
            });
        }
        send_back(&mut body, &completion, &refused);
    }
}

/// The messages of a Chat Completions request body.
pub fn messages_of(body: &Map<String, Value>) -> Vec<Value> {
    body.get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Appends the refused reply and its feedback to the conversation: a tool message answering
/// each call of a reply that made calls (the API requires every call to be answered), a user
/// message otherwise.
fn send_back(body: &mut Map<String, Value>, completion: &Completion, refused: &Refused) {
    let Some(Value::Array(messages)) = body.get_mut("messages") else {
        return;
    };
    messages.push(completion.as_turn());
    if refused.calls.is_empty() {
        messages.push(json!({
            "role": "user",
            "content": format!("Your last reply was not accepted: {}. Reply again.", refused.feedback),
        }));
    } else {
        for (id, feedback) in &refused.calls {
            messages.push(json!({"role": "tool", "tool_call_id": id, "content": feedback}));
        }
    }
}
