//! Correction: why a reply was refused, the feedback the model gets, what the next round
//! still allows, and the fingerprints that tell a repeated action.

pub mod feedback;
pub mod fingerprint;
pub mod narrowing;
pub mod rejection;
mod round;

pub use narrowing::Allowed;
pub use rejection::{Category, Rejection};
pub use round::{CorrectionContext, CorrectionDetail};
