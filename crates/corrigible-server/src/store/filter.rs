//! Which runs a listing keeps: by status, stop reason, correction category, model and creation
//! time.

use corrigible::Category;

use super::record::RunStatus;

/// The runs a listing keeps; every field left `None` keeps all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFilter {
    /// Only runs in this status.
    pub status: Option<RunStatus>,
    /// Only runs that stopped for this reason (`final`, `corrections_exhausted`, …).
    pub stop_reason: Option<String>,
    /// Only runs that sent back at least one correction of this category.
    pub category: Option<Category>,
    /// Only runs of this model, as the run names it (`openai:gpt-4o-mini`, `replay`, …).
    pub model: Option<String>,
    /// Only runs created at or after this time, in unix milliseconds.
    pub since: Option<i64>,
    /// Only runs created before this time, in unix milliseconds.
    pub until: Option<i64>,
}

impl RunFilter {
    /// Whether the filter keeps every run.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}
