//! The events the domain writes to a run's log, typed. Each variant's fields are its payload
//! exactly as clients read it (`Event::payload`, described by the API document); the variant
//! picks the `EventKind`.

use serde::Serialize;

use crate::criteria::CriterionVerdict;
use crate::record::{EventDraft, EventKind};
use crate::run::{Budgets, Decision, PlanStepEdit, RunStatus, StoppingReason};

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum RunEvent {
    RunCreated {
        objective: String,
        budgets: Budgets,
        model: String,
        parent_run_id: Option<String>,
    },
    IterationStarted {
        iteration: u32,
        reclaimed: bool,
        /// The user's edit applied by this claim.
        #[serde(skip_serializing_if = "Option::is_none")]
        patched: Option<PatchApplied>,
    },
    IterationDeferred {
        iteration: u32,
        reason: String,
    },
    IterationCostUpdate {
        iteration: u32,
        role: String,
        model: String,
        input_tokens: u64,
        output_tokens: u64,
        cached_tokens: u64,
        /// `null` when the model has no price.
        cost_usd: Option<f64>,
        latency_ms: u64,
        run_tokens: u64,
        run_cost_usd: f64,
    },
    WaitingForCapacity {
        iteration: u32,
        role: String,
        model: String,
        waited_ms: u64,
    },
    Warning {
        message: String,
    },
    IterationCommitted {
        iteration: u32,
        status: RunStatus,
        summary: String,
        progress: bool,
        created_docs: Vec<String>,
        updated_docs: Vec<String>,
        tokens: u64,
        cost_usd: f64,
    },
    CriteriaChecked {
        iteration: u32,
        accepted: bool,
        verdicts: Vec<CriterionVerdict>,
    },
    ChildSpawned {
        child_run_id: String,
        objective: String,
        budgets: Budgets,
        /// Fire-and-forget: the parent neither waits for it nor ends it.
        detached: bool,
    },
    RunPaused {
        after_iteration: u32,
    },
    /// `run_waiting` for the children still active.
    WaitingOnChildren {
        children: Vec<String>,
    },
    /// The run waited `waited_ms` for its children (its `child_wait_timeout_s`) and goes on:
    /// those still running (`still_running`) are left running on their own, as if detached.
    ChildWaitTimedOut {
        waited_ms: i64,
        still_running: Vec<String>,
    },
    /// `run_waiting` for the user's answers.
    WaitingOnUser {
        questions: Vec<String>,
    },
    /// The run ended (or waits) for `stopping_reason`: `run_completed`, `run_stopped`,
    /// `run_canceled`, `run_failed` (or `run_waiting`), after `status`.
    Outcome {
        #[serde(skip)]
        status: RunStatus,
        stopping_reason: StoppingReason,
    },
    CancelRequested {},
    PauseRequested {},
    RunPatched {
        changed: PatchRequested,
        applies_from_iteration: u32,
    },
    RunResumed {
        from_iteration: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    UserResponded {
        questions: Vec<String>,
        answer: String,
        approve: Option<bool>,
        decisions: Vec<CallDecided>,
    },
    MessagePosted {
        text: String,
        /// The first iteration whose planner sees it.
        for_iteration: u32,
    },
    RunContinued {
        budgets: Budgets,
        from_iteration: u32,
    },
    /// An ended run was asked a follow-up question and queued again; the report it ended with
    /// is superseded by the one its next end writes, and is summed up here.
    FollowUpAsked {
        question: String,
        from_iteration: u32,
        budgets: Budgets,
        superseded: SupersededReport,
    },
    ChildFinished {
        child_run_id: String,
        status: RunStatus,
        summary: String,
        tokens: u64,
        cost_usd: f64,
    },
}

/// The user's edit as a claim applied it: the new objective, the plan steps edited.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PatchApplied {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objective: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub plan: Vec<PlanStepEdit>,
}

/// The user's edit as it was asked for.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PatchRequested {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objective: Option<ObjectiveChange>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub plan: Vec<PlanStepEdit>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ObjectiveChange {
    pub from: String,
    pub to: String,
}

/// A held call and what the user decided (`null`: nothing yet).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CallDecided {
    pub id: String,
    pub name: String,
    pub decision: Option<Decision>,
}

impl RunEvent {
    pub fn kind(&self) -> EventKind {
        match self {
            RunEvent::RunCreated { .. } => EventKind::RunCreated,
            RunEvent::IterationStarted { .. } => EventKind::IterationStarted,
            RunEvent::IterationDeferred { .. } => EventKind::IterationDeferred,
            RunEvent::IterationCostUpdate { .. } => EventKind::IterationCostUpdate,
            RunEvent::WaitingForCapacity { .. } => EventKind::WaitingForCapacity,
            RunEvent::Warning { .. } => EventKind::Warning,
            RunEvent::IterationCommitted { .. } => EventKind::IterationCommitted,
            RunEvent::CriteriaChecked { .. } => EventKind::CriteriaChecked,
            RunEvent::ChildSpawned { .. } => EventKind::ChildSpawned,
            RunEvent::RunPaused { .. } => EventKind::RunPaused,
            RunEvent::WaitingOnChildren { .. } | RunEvent::WaitingOnUser { .. } => {
                EventKind::RunWaiting
            }
            // Only ended and waiting statuses have a reason to stop for.
            RunEvent::Outcome { status, .. } => {
                EventKind::for_status(*status).unwrap_or(EventKind::RunStopped)
            }
            RunEvent::CancelRequested {} => EventKind::CancelRequested,
            RunEvent::PauseRequested {} => EventKind::PauseRequested,
            RunEvent::RunPatched { .. } => EventKind::RunPatched,
            RunEvent::RunResumed { .. } => EventKind::RunResumed,
            RunEvent::UserResponded { .. } => EventKind::UserResponded,
            RunEvent::MessagePosted { .. } => EventKind::MessagePosted,
            RunEvent::RunContinued { .. } => EventKind::RunContinued,
            RunEvent::FollowUpAsked { .. } => EventKind::FollowUpAsked,
            RunEvent::ChildFinished { .. } => EventKind::ChildFinished,
            RunEvent::ChildWaitTimedOut { .. } => EventKind::ChildWaitTimedOut,
        }
    }
}

/// What a report superseded by a follow-up said: the status the run had ended in, why, and the
/// report's one-line `headline`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SupersededReport {
    pub status: RunStatus,
    pub stopping_reason: Option<StoppingReason>,
    pub summary: Option<String>,
    pub ended_at: Option<i64>,
}

impl From<RunEvent> for EventDraft {
    fn from(event: RunEvent) -> EventDraft {
        let payload = serde_json::to_value(&event)
            .expect("event payloads are plain structs with string keys, which always serialize");
        EventDraft::new(event.kind(), payload)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::run::StopType;

    fn draft(e: RunEvent) -> EventDraft {
        e.into()
    }

    #[test]
    fn an_event_without_fields_is_an_empty_object() {
        let d = draft(RunEvent::CancelRequested {});
        assert_eq!((d.kind, d.payload), (EventKind::CancelRequested, json!({})));
    }

    #[test]
    fn absent_values_are_null_where_clients_read_null_and_missing_where_they_read_nothing() {
        // Arrange
        let created = RunEvent::RunCreated {
            objective: "o".into(),
            budgets: Budgets::default(),
            model: "m".into(),
            parent_run_id: None,
        };
        let started = RunEvent::IterationStarted {
            iteration: 2,
            reclaimed: false,
            patched: None,
        };
        let resumed = RunEvent::RunResumed {
            from_iteration: 3,
            reason: None,
        };

        // Act / Assert
        assert_eq!(
            draft(created).payload,
            json!({"objective": "o", "budgets": Budgets::default(), "model": "m",
                   "parent_run_id": null})
        );
        assert_eq!(
            draft(started).payload,
            json!({"iteration": 2, "reclaimed": false})
        );
        assert_eq!(draft(resumed).payload, json!({"from_iteration": 3}));
    }

    #[test]
    fn an_outcome_is_named_by_the_status_it_leads_to() {
        let reason = StoppingReason::new(StopType::Completed, "done");
        let d = draft(RunEvent::Outcome {
            status: RunStatus::Completed,
            stopping_reason: reason.clone(),
        });
        assert_eq!(d.kind, EventKind::RunCompleted);
        assert_eq!(d.payload, json!({"stopping_reason": reason}));
    }

    #[test]
    fn a_response_lists_each_held_call_with_its_decision_or_null() {
        let d = draft(RunEvent::UserResponded {
            questions: vec!["q".into()],
            answer: "a".into(),
            approve: None,
            decisions: vec![
                CallDecided {
                    id: "c1.1".into(),
                    name: "write_doc".into(),
                    decision: Some(Decision::Rejected {
                        reason: "no".into(),
                    }),
                },
                CallDecided {
                    id: "c1.2".into(),
                    name: "write_doc".into(),
                    decision: None,
                },
            ],
        });
        assert_eq!(
            d.payload,
            json!({"questions": ["q"], "answer": "a", "approve": null, "decisions": [
                {"id": "c1.1", "name": "write_doc",
                 "decision": {"decision": "rejected", "reason": "no"}},
                {"id": "c1.2", "name": "write_doc", "decision": null},
            ]})
        );
    }

    #[test]
    fn a_patch_shows_the_objective_before_and_after() {
        let d = draft(RunEvent::RunPatched {
            changed: PatchRequested {
                objective: Some(ObjectiveChange {
                    from: "a".into(),
                    to: "b".into(),
                }),
                plan: vec![],
            },
            applies_from_iteration: 4,
        });
        assert_eq!(
            d.payload,
            json!({"changed": {"objective": {"from": "a", "to": "b"}},
                   "applies_from_iteration": 4})
        );
    }
}
