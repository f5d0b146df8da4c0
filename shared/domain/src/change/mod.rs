//! Every write to a run, as a pure function of the run's current state.
//!
//! Stores apply a `RunChange` atomically: the new run row, its events (seqs assigned by the
//! store), the iteration, docs, scratchpad entry and the per-user active counter, all or nothing.
//! Because the change is recomputed from the freshest run on every attempt, an adapter that
//! loses an optimistic race simply re-reads and calls the same function again.
//!
//! By concern: `claim` (an iteration's fenced claim, its release, the user's edit applied),
//! `spend` (live spend), `commit` (the iteration's one commit), `user` (cancel, pause, edit,
//! answer, continue) and `children` (child runs started and ended).

mod children;
mod claim;
mod commit;
mod spend;
mod user;

use crate::DomainError;
use crate::decide::{BudgetExhausted, BudgetKind};
use crate::events::RunEvent;
use crate::record::{Doc, DocMeta, EventDraft, IterationRecord, PadEntry};
use crate::report::{Narrative, build_report};
use crate::run::{Run, RunStatus, StopType, StoppingReason};

pub use children::{
    child_finished, child_id, child_wait_timed_out, children_to_start, spawn_child,
};
pub use claim::{claim, claimed, expire_lease, held, release};
pub use commit::CommitPlan;
pub use spend::{record_spend, record_spend_once};
pub use user::{
    Approval, CallDecision, MAX_ANSWER_CHARS, MAX_FOLLOW_UP_CHARS, MAX_MESSAGE_CHARS,
    MAX_PATCH_OBJECTIVE_BYTES, MAX_PENDING_MESSAGES, continue_run, follow_up, patch, post_message,
    request_cancel, request_pause, respond, resume,
};

/// How a change moves the owner's active-run counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActiveDelta {
    None,
    /// Take a slot, refused when the owner already has `limit` active runs.
    Acquire {
        limit: u32,
    },
    Release,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RunChange {
    pub run: Run,
    pub events: Vec<EventDraft>,
    pub iteration: Option<IterationRecord>,
    pub docs: Vec<Doc>,
    pub pad: Option<PadEntry>,
    pub active: ActiveDelta,
}

impl RunChange {
    pub fn of(run: Run, events: Vec<EventDraft>) -> Self {
        RunChange {
            run,
            events,
            iteration: None,
            docs: vec![],
            pad: None,
            active: ActiveDelta::None,
        }
    }
}

/// Why a change was not applied. Not an error of the store: the state says no.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Rejection {
    #[error("run not found")]
    NotFound,
    #[error("iteration already committed (run is at {iteration})")]
    AlreadyCommitted { iteration: u32 },
    #[error("iteration {got} is out of order; the next is {expected}")]
    OutOfOrder { expected: u32, got: u32 },
    #[error("run is {status}; it cannot be worked on")]
    NotRunnable { status: RunStatus },
    #[error("another worker holds the lease until {expires_at}")]
    LeaseHeld { expires_at: i64 },
    #[error("the lease was lost; another worker owns this iteration")]
    LeaseLost,
    #[error("active run limit of {limit} reached")]
    LimitExceeded { limit: u32 },
    #[error("{0}")]
    Conflict(String),
}

/// A move the status machine refuses is a conflict with the run's state, like any other.
impl From<DomainError> for Rejection {
    fn from(e: DomainError) -> Rejection {
        Rejection::Conflict(e.to_string())
    }
}

pub fn create(run: Run, active_limit: u32) -> RunChange {
    let event = RunEvent::RunCreated {
        objective: run.objective.clone(),
        budgets: run.budgets.clone(),
        model: run.model.clone(),
        parent_run_id: run.parent_run_id.clone(),
    };
    RunChange {
        active: ActiveDelta::Acquire {
            limit: active_limit,
        },
        ..RunChange::of(run, vec![event.into()])
    }
}

/// Ends a run between iterations whose budget has nothing left for what it waited for (an
/// answer, children's results); what arrived is kept for a `continue` with more budget.
fn stop_out_of_budget(
    mut next: Run, mut events: Vec<EventDraft>, spent: BudgetExhausted, workspace: &[DocMeta],
    now: i64,
) -> Result<RunChange, Rejection> {
    let kind = match spent.kind {
        BudgetKind::MaxIterations => StopType::MaxIterations,
        _ => StopType::Budget,
    };
    let reason = StoppingReason::new(
        kind,
        format!(
            "{}; continue the run with more budget to go on",
            spent.detail
        ),
    );
    next.transition_to(RunStatus::Stopped, now)?;
    next.stopping_reason = Some(reason.clone());
    let summary = format!(
        "Stopped after {} iteration(s): {}",
        next.iteration, reason.detail
    );
    report_from_records(
        &mut next,
        workspace,
        &summary,
        "the budget that ended the run leaves nothing for a final model call",
        now,
    );
    let stopped = RunEvent::Outcome {
        status: RunStatus::Stopped,
        stopping_reason: reason,
    };
    events.push(stopped.into());
    Ok(RunChange {
        active: ActiveDelta::Release,
        ..RunChange::of(next, events)
    })
}

/// After the outcome of `iteration` in `status` was published: marks the run notified only
/// if it is still that outcome. A run that moved on meanwhile (canceled while its wait was
/// being announced) owes its new outcome.
pub fn mark_notified(run: &Run, iteration: u32, status: RunStatus) -> Option<Run> {
    if run.notified || run.iteration != iteration || run.status != status {
        return None;
    }
    let mut next = run.clone();
    next.notified = true;
    Some(next)
}

/// The report of a run ended between iterations, where no model is called: its narrative is
/// built from the records, and says why.
pub(crate) fn report_from_records(
    next: &mut Run, workspace: &[DocMeta], summary: &str, note: &str, now: i64,
) {
    let narrative = Narrative::from_records(
        next,
        workspace,
        std::slice::from_ref(&summary.to_string()),
        note,
    );
    next.report = Some(build_report(next, workspace, summary, &[], narrative, now));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::sample_run;

    #[test]
    fn a_run_that_moved_on_while_its_outcome_was_published_is_not_marked_notified() {
        let run = sample_run().with_status_for_tests(RunStatus::Canceled);
        let run = Run {
            iteration: 2,
            ..run
        };

        let stale = mark_notified(&run, 2, RunStatus::WaitingOnUser);
        let current = mark_notified(&run, 2, RunStatus::Canceled);

        assert!(stale.is_none());
        assert!(current.is_some_and(|r| r.notified));
    }
}
