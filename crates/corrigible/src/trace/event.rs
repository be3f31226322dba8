use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{CorrectionRecord, ModelCallRecord, RepairRecord, StepRecord, StopReason, UsageTotals};
use crate::message::Message;
use crate::model::{ModelReply, ModelRequest, Protocol};
use crate::policy::BreakerTransition;
use crate::probe::ProtocolReason;
use crate::stage::Stage;

/// One thing that happened in a run, in the order it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TraceEvent {
    /// The run began.
    RunStarted {
        /// The run's id.
        run_id: String,
        /// The user's request.
        prompt: String,
        /// The model's name.
        model: String,
        /// The decision protocol.
        protocol: Protocol,
        /// Why that protocol, when the agent was told.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        protocol_reason: Option<ProtocolReason>,
    },
    /// The messages a model call was sent, as a delta on the previous call's: the first
    /// `kept` of those, then `added`. Emitted just before the call's `ModelCall`.
    Messages {
        /// How many of the previous call's messages open this one unchanged.
        kept: usize,
        /// The messages that follow them.
        added: Vec<Message>,
    },
    /// A model call returned.
    ModelCall {
        /// The call.
        record: ModelCallRecord,
    },
    /// A decision was accepted.
    Decision {
        /// The action slot.
        step: u32,
        /// The model call it came from.
        stage: Stage,
        /// The decision in its canonical JSON shape.
        decision: Value,
    },
    /// A reply was repaired locally.
    Repair {
        /// The repair.
        record: RepairRecord,
    },
    /// A rejection was sent back to the model.
    Rejection {
        /// Its index in the report's `corrections`.
        index: usize,
        /// The rejection.
        record: CorrectionRecord,
    },
    /// A rejection was fixed by a later reply.
    Corrected {
        /// Its index in the report's `corrections`.
        index: usize,
    },
    /// A tool action was executed (or refused by its breaker).
    ToolCall {
        /// The step.
        record: StepRecord,
    },
    /// A satisfied answer was verified.
    Verification {
        /// The verification.
        record: super::VerificationRecord,
    },
    /// A circuit breaker changed state.
    Breaker {
        /// The change.
        transition: BreakerTransition,
    },
    /// The run ended.
    RunFinished {
        /// Whether it was satisfied.
        satisfied: bool,
        /// Why it stopped.
        stop_reason: StopReason,
        /// The final answer, if any.
        final_summary: Option<String>,
        /// Totals.
        usage: UsageTotals,
    },
    /// The run ended with an infrastructure error (the model's transport failed).
    RunFailed {
        /// What failed.
        error: String,
    },
}

impl TraceEvent {
    /// The `Messages` event of a call sent `messages` after a call sent `seen`, which becomes
    /// `messages`: what opens both unchanged is kept, the rest added.
    pub fn messages_after(seen: &mut Vec<Message>, messages: &[Message]) -> Self {
        let kept = seen
            .iter()
            .zip(messages)
            .take_while(|(seen, now)| seen == now)
            .count();
        seen.truncate(kept);
        seen.extend_from_slice(&messages[kept..]);
        TraceEvent::Messages {
            kept,
            added: messages[kept..].to_vec(),
        }
    }
}

/// Receives trace events as they happen (a store, a live stream, a transcript file).
pub trait TraceSink: Send + Sync {
    /// Called for every event, in order.
    fn event(&self, event: &TraceEvent);

    /// Called for every model call with the exact request and reply.
    fn exchange(&self, _request: &ModelRequest, _reply: &ModelReply) {}
}

/// A sink that drops everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NullSink;

impl TraceSink for NullSink {
    fn event(&self, _event: &TraceEvent) {}
}
