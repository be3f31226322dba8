use crate::decision::Final;

/// Checks a final answer before the run accepts it; a rejection goes back to the model as
/// `output_rejected` under the output-retry budget.
pub trait OutputValidator: Send + Sync {
    /// `Err(message)` rejects the answer with a message for the model.
    fn validate(&self, answer: &Final) -> Result<(), String>;
}

impl<F> OutputValidator for F
where
    F: Fn(&Final) -> Result<(), String> + Send + Sync,
{
    fn validate(&self, answer: &Final) -> Result<(), String> {
        self(answer)
    }
}
