//! The report's narrative (ARCHITECTURE.md, "Outcome"): one model call when a run ends,
//! made before the commit like every other call of the iteration — a redelivery of a
//! committed iteration never calls again, one whose commit was lost calls again as part of
//! its redo — and priced and counted in the run's spend. When no model may or can write it,
//! a narrative built from the iteration records says why.

use longrun_domain::DocMeta;
use longrun_domain::decide::Outcome;
use longrun_domain::report::Narrative;
use longrun_domain::run::{PlanStep, Run, RunStatus};
use longrun_ports::LlmRole;

use super::model::{Iter, Llm};
use super::{Engine, EngineError};
use crate::prompt::{clip, reporter_messages};

/// The iteration summaries a narrative is written from, oldest first.
const SUMMARIES: usize = 20;
/// A narrative longer than this was not asked for; it is cut, not refused.
const MAX_NARRATIVE_CHARS: usize = 4_000;

/// What the run will look like once this iteration's stop is committed.
pub(super) struct Ending<'a> {
    pub outcome: &'a Outcome,
    pub plan: &'a [PlanStep],
    pub remaining_work: &'a [String],
    pub questions: Vec<String>,
    pub summary: &'a str,
    pub workspace: &'a [DocMeta],
}

impl Engine {
    /// The narrative of a stop; `None` while the run goes on.
    pub(super) async fn narrative(
        &self, it: &Iter<'_>, end: &Ending<'_>,
    ) -> Result<Option<Narrative>, EngineError> {
        if matches!(end.outcome, Outcome::Continue) {
            return Ok(None);
        }
        let run = preview(it, end, self.now());
        let mut summaries: Vec<String> = self
            .store()
            .scratchpad(&run.id, SUMMARIES)
            .await?
            .into_iter()
            .map(|p| p.summary)
            .collect();
        summaries.push(end.summary.to_string());
        let records = |note: &str| Narrative::from_records(&run, end.workspace, &summaries, note);
        let status = *run.status;
        if !status.is_ended() {
            return Ok(Some(records(
                "the run is waiting, not ended; a model writes the narrative when it ends",
            )));
        }
        if run.agent.is_some() {
            // Its model is the agent's own, reached only through the agent's CLI.
            return Ok(Some(records(
                "an agent run: its iterations are agent processes, and no platform model is called",
            )));
        }
        if status == RunStatus::Canceled || self.canceled_since(it).await? {
            return Ok(Some(records(
                "the run was canceled, and no model is called after a cancel",
            )));
        }
        let messages = reporter_messages(&run, &summaries, end.workspace);
        let narrative = match self.call_llm(it, LlmRole::Reporter, messages, None).await? {
            Llm::Answer(r) if !r.content.trim().is_empty() => {
                Narrative::by_model(&clip(&r.content, MAX_NARRATIVE_CHARS))
            }
            Llm::Answer(_) => records("the model's final summary was empty"),
            Llm::Failed(e) => records(&format!("no model answered the final summary call ({e})")),
            Llm::OutOfBudget => {
                let detail = it.spent().budget.clone().map(|b| b.detail);
                records(&format!(
                    "the budget that ended the run leaves nothing for a final model call ({})",
                    detail.unwrap_or_else(|| "spent".into())
                ))
            }
        };
        Ok(Some(narrative))
    }
}

impl Engine {
    /// A cancel committed since the claim. Read fresh, once per ended run: when no write took
    /// the claim yet (the planner failed), a cancel ends the queued run in the store at once.
    async fn canceled_since(&self, it: &Iter<'_>) -> Result<bool, EngineError> {
        Ok(match self.store().get_run(&it.run.id).await? {
            Some(r) => r.cancel_requested || r.status.is_ended(),
            None => true,
        })
    }
}

/// The claimed run with this iteration's stop applied, for the prompt and the records.
fn preview(it: &Iter<'_>, end: &Ending<'_>, now: i64) -> Run {
    let mut run = it.run.clone();
    run.iteration = it.n;
    run.plan = end.plan.to_vec();
    run.remaining_work = end.remaining_work.to_vec();
    // The claimed run is `running`, from which every stop is a legal move.
    let _ = run.transition_to(end.outcome.status(), now);
    run.questions = end.questions.clone();
    if let Outcome::Finish(reason) = end.outcome {
        run.stopping_reason = Some(reason.clone());
    }
    run
}
