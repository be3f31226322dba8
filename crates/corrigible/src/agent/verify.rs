use super::execute::result_text;
use super::run::Run;
use crate::correction::rejection::{Category, Rejection};
use crate::decision::Decision;
use crate::stage::Stage;
use crate::verify::check::check_answer;

impl Run<'_> {
    /// Has a satisfied final answer that rests on tool results verified, when the agent has a
    /// verifier and the run's verifications are not spent: the first comparison the run's
    /// text proves wrong comes back as a `verifier_objection`. An answer given again unchanged
    /// after an objection is accepted.
    pub(crate) async fn verify(
        &mut self,
        step: u32,
        stage: &Stage,
        decision: Decision,
    ) -> Result<Decision, Rejection> {
        let Decision::Final(answer) = &decision else {
            return Ok(decision);
        };
        let Some(verifier) = self.agent.verifier.clone() else {
            return Ok(decision);
        };
        let summary = answer.summary.trim();
        if !answer.satisfied
            || self.state.results.is_empty()
            || self.state.verifications >= verifier.max_per_run
            || self.state.objected.iter().any(|s| s == summary)
        {
            return Ok(decision);
        }
        self.state.verifications += 1;
        let (model, protocol) = verifier
            .model
            .clone()
            .unwrap_or_else(|| (self.model.clone(), self.agent.protocol));
        let results: Vec<(String, String)> = self
            .state
            .results
            .iter()
            .map(|s| (s.tool.clone(), result_text(&s.output)))
            .collect();
        let checked = check_answer(
            model.as_ref(),
            protocol,
            step,
            *stage,
            &self.request,
            &results,
            &answer.summary,
        )
        .await;
        self.rec.verification(checked.record);
        match checked.objection {
            Some(message) => {
                self.state.objected.push(summary.to_string());
                Err(Rejection::new(Category::VerifierObjection, message))
            }
            None => Ok(decision),
        }
    }
}
