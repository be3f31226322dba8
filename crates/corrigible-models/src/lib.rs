//! Model backends for corrigible: implementations of [`corrigible::Model`].
//!
//! [`ReplayModel`] serves recorded replies from a JSONL file, in order (DESIGN §6.2).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod replay;

pub use replay::{ReplayError, ReplayModel};
