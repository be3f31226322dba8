//! corrigible-bench: does self-correction pay?
//!
//! A [`Suite`] of [`Task`]s (the BFCL subset in [`bfcl`], or the built-in tools suite in
//! [`tools_suite`]) is run once per [`PolicyKind`] and per model [`Variant`] (the embedded
//! model's constraint modes), optionally through a [`FaultyModel`] that corrupts a fraction of
//! replies. Each run's [`corrigible::RunReport`] is graded by its task, and [`metrics`]
//! aggregates success, cost, latency, corrections, repairs and fault recovery into a
//! [`BenchReport`] that [`output`] renders as a table, JSON and an SVG chart.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod bare;
pub mod bfcl;
pub mod correct;
mod error;
pub mod faults;
pub mod gsm8k;
pub mod metrics;
pub mod output;
pub mod policy;
mod progress;
pub mod runner;
pub mod suite;
pub mod tools_suite;

pub use error::BenchError;
pub use faults::{FaultConfig, FaultKind, FaultyModel, InjectedFault};
pub use metrics::{BenchReport, ColumnReport, FaultStats, TaskResult};
pub use policy::PolicyKind;
pub use runner::{BenchConfig, Examples, ModelFactory, Variant, run_bench};
pub use suite::{Grade, Suite, SuiteSpec, Task};
