//! corrigible: bounded self-correction for LLM agents.
//!
//! The engine asks a [`Model`] for a [`Decision`], parses and validates it, and either
//! executes a [`Tool`] or sends a [`Rejection`] back as correction feedback, within explicit
//! bounds ([`policy`]). Everything that happens is recorded in a [`trace`] that becomes the
//! run report. The engine knows nothing of HTTP, SQL or model weights.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod agent;
pub mod arithmetic;
pub mod context;
pub mod correction;
pub mod decision;
mod discovery;
pub mod evidence;
mod examples;
mod layer;
mod message;
mod model;
pub mod policy;
pub mod probe;
pub mod prompt;
pub mod rule;
mod stage;
pub mod tool;
pub mod trace;
pub mod verify;

pub use agent::{Agent, AgentBuilder, BuildError, OutputValidator, RunError, RunOptions};
pub use correction::{Allowed, Category, CorrectionContext, CorrectionDetail, Rejection};
pub use decision::{Action, Decision, Final};
pub use discovery::{Discovery, DiscoveryMode};
pub use evidence::grounding::Grounding;
pub use evidence::provenance::{GroundedArgument, Provenance};
pub use examples::{ExampleStep, WorkedExample};
pub use layer::ModelLayer;
pub use message::{Message, MessageKind, Role, ToolCall};
pub use model::{
    Model, ModelError, ModelFactory, ModelReply, ModelRequest, Protocol, Reasoning, Recalculation,
    ToolSpec, Usage,
};
pub use policy::{Checks, Limits, Policy, Profile, ToolPolicy};
pub use probe::{ProbeFinding, ProtocolReason, probe_tool_calling};
pub use rule::Rule;
pub use stage::{Stage, StageParseError};
pub use tool::{Tool, ToolContext, ToolOutcome, ToolRegistry, TypedTool};
pub use trace::{RunReport, StopReason, TraceEvent, TraceSink};
pub use verify::Verifier;
