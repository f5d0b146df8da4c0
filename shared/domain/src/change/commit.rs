//! The iteration's one commit: everything it staged, applied in one fenced write.

use super::{ActiveDelta, Rejection, RunChange};
use crate::criteria::CriterionVerdict;
use crate::decide::{Outcome, Verdict};
use crate::events::RunEvent;
use crate::record::{Doc, DocMeta, EventDraft, IterationRecord, PadEntry};
use crate::report::{Narrative, build_report};
use crate::run::{
    ChildRun, LastIteration, PendingCall, PlanStep, Run, RunStatus, StopType, StoppingReason,
};

/// Everything iteration `n` staged, ready to be committed in one transaction.
#[derive(Clone, Debug)]
pub struct CommitPlan {
    pub n: u32,
    pub owner: String,
    pub verdict: Verdict,
    pub plan: Vec<PlanStep>,
    pub remaining_work: Vec<String>,
    pub last_iteration: LastIteration,
    pub answers_consumed: bool,
    /// How many of the run's pending messages the planner was shown: those are dropped, any
    /// posted while the iteration ran stay for the next one.
    pub messages_consumed: usize,
    pub running_ms: u64,
    pub record: IterationRecord,
    pub docs: Vec<Doc>,
    pub pad: PadEntry,
    pub summary: String,
    /// The whole workspace after this commit, for the report.
    pub workspace: Vec<DocMeta>,
    pub evidence: Vec<String>,
    /// The narrative the iteration's final model call wrote, or the one built from the
    /// records when no model wrote it; `None` while the run goes on.
    pub narrative: Option<Narrative>,
    /// Writes this iteration proposed under `per_write`, waiting for the user.
    pub pending_calls: Vec<PendingCall>,
    /// Child runs this iteration spawns. The commit lists them on the run; they are created
    /// and started only once it landed (`spawn_child`), so an attempt that loses its commit
    /// leaves no child behind.
    pub children: Vec<ChildRun>,
    /// The hints the iteration's prompt was given; hints added to the run while it worked (a
    /// child's end) are kept for the next prompt.
    pub seen_hints: Vec<String>,
    /// The verdicts on the run's criteria when this iteration claimed completion.
    pub verdicts: Vec<CriterionVerdict>,
    pub now: i64,
}

impl CommitPlan {
    /// Fenced on the lease: only the claimant of iteration `n` may commit it.
    pub fn apply(&self, run: &Run) -> Result<RunChange, Rejection> {
        self.check_fence(run)?;
        let (mut next, spawned) = self.advanced(run);
        let outcome = self.outcome(run);
        let status = settled_status(&outcome, run, &next);
        next.transition_to(status, self.now)?;
        let mut record = self.record.clone();
        record.outcome = status;
        let mut events = vec![];
        if !self.verdicts.is_empty() {
            events.push(
                RunEvent::CriteriaChecked {
                    iteration: self.n,
                    accepted: status == RunStatus::Completed,
                    verdicts: self.verdicts.clone(),
                }
                .into(),
            );
        }
        events.push(self.committed_event(&next, &record));
        events.extend(spawned);
        let active = self.settle(&outcome, run, &mut next, &mut record, &mut events);
        Ok(RunChange {
            run: next,
            events,
            iteration: Some(record),
            docs: self.docs.clone(),
            pad: Some(self.pad.clone()),
            active,
        })
    }

    fn check_fence(&self, run: &Run) -> Result<(), Rejection> {
        super::held(run, self.n, &self.owner)
    }

    /// The verdict's outcome, unless a cancel was requested while the iteration ran and the
    /// outcome would keep the run alive (a wait, or a next iteration): the run ends in this
    /// commit, and no further iteration is claimed only to be canceled.
    fn outcome(&self, run: &Run) -> Outcome {
        let goes_on = matches!(
            self.verdict.outcome.status(),
            RunStatus::WaitingOnUser | RunStatus::WaitingOnChildren | RunStatus::Running
        );
        if run.cancel_requested && goes_on {
            let reason =
                StoppingReason::new(StopType::Canceled, "canceled while its last iteration ran");
            return Outcome::Finish(reason);
        }
        self.verdict.outcome.clone()
    }

    /// The run one iteration further on (plan, streaks, metrics, children), and the events
    /// for the children this iteration spawns.
    fn advanced(&self, run: &Run) -> (Run, Vec<EventDraft>) {
        let mut next = run.clone();
        next.iteration = self.n;
        next.lease = None;
        // Grades held for a redelivery of this iteration are its record's now.
        next.grades.clear();
        next.plan = self.plan.clone();
        next.streaks = self.verdict.streaks.clone();
        next.hints = self.verdict.hints.clone();
        next.hints.extend(
            run.hints
                .iter()
                .filter(|h| !self.seen_hints.contains(h))
                .cloned(),
        );
        next.remaining_work = self.remaining_work.clone();
        next.last_iteration = Some(self.last_iteration.clone());
        // Decided calls were carried out (or refused) by this iteration; new ones wait.
        next.pending_calls = self.pending_calls.clone();
        let mut spawned = vec![];
        for child in &self.children {
            if !next.children.iter().any(|c| c.id == child.id) {
                next.children.push(child.clone());
                spawned.push(
                    RunEvent::ChildSpawned {
                        child_run_id: child.id.clone(),
                        objective: child.objective.clone(),
                        budgets: child.budgets.clone(),
                        detached: child.detached,
                    }
                    .into(),
                );
            }
        }
        next.metrics.iterations += 1;
        next.metrics.running_ms += self.running_ms;
        next.metrics.tool_calls += self.record.metrics.tool_calls;
        next.metrics.docs += self.record.created_docs.len() as u32;
        next.note_docs(self.docs.iter().map(Doc::meta));
        next.updated_at = self.now;
        if self.answers_consumed {
            next.pending_answers.clear();
        }
        let seen = self.messages_consumed.min(next.pending_messages.len());
        next.pending_messages.drain(..seen);
        (next, spawned)
    }

    /// The iteration's line in the log, with the status its verdict named (a pause or
    /// children that ended meanwhile show in the events that follow, not here).
    fn committed_event(&self, next: &Run, record: &IterationRecord) -> EventDraft {
        RunEvent::IterationCommitted {
            iteration: self.n,
            status: self.verdict.outcome.status(),
            summary: self.summary.clone(),
            progress: record.progress,
            created_docs: record.created_docs.clone(),
            updated_docs: record.updated_docs.clone(),
            tokens: next.metrics.tokens(),
            cost_usd: next.metrics.cost_usd,
        }
        .into()
    }

    /// What the outcome does to the run beyond its status: a requested pause, a wait (for
    /// children or the user, with a report), or the end (report, the user's slot freed).
    fn settle(
        &self, outcome: &Outcome, run: &Run, next: &mut Run, record: &mut IterationRecord,
        events: &mut Vec<EventDraft>,
    ) -> ActiveDelta {
        next.pause_requested = false;
        match outcome {
            Outcome::Continue if next.status == RunStatus::Paused => {
                // Asked to pause while this iteration ran: it is committed, the next waits.
                events.push(
                    RunEvent::RunPaused {
                        after_iteration: self.n,
                    }
                    .into(),
                );
                ActiveDelta::None
            }
            Outcome::Continue => ActiveDelta::None,
            // Its children ended while this iteration ran: nothing to wait for.
            Outcome::WaitChildren if next.status == RunStatus::Running => ActiveDelta::None,
            Outcome::WaitChildren => {
                // The parent sleeps; its children's outcomes wake it.
                let children = next
                    .children
                    .iter()
                    .filter(|c| c.is_attached_and_active())
                    .map(|c| c.id.clone())
                    .collect();
                events.push(RunEvent::WaitingOnChildren { children }.into());
                ActiveDelta::None
            }
            Outcome::Wait { questions } => {
                next.questions = questions.clone();
                let reason = StoppingReason::new(
                    StopType::WaitingOnUser,
                    format!("waiting for answers to {} question(s)", questions.len()),
                );
                self.stop(next, record, reason);
                events.push(
                    RunEvent::WaitingOnUser {
                        questions: questions.clone(),
                    }
                    .into(),
                );
                ActiveDelta::None
            }
            Outcome::Finish(reason) => {
                self.stop(next, record, reason.clone());
                if crate::record::EventKind::for_status(*next.status).is_some() {
                    events.push(
                        RunEvent::Outcome {
                            status: *next.status,
                            stopping_reason: reason.clone(),
                        }
                        .into(),
                    );
                }
                if next.status.is_ended() && !run.status.is_ended() {
                    ActiveDelta::Release
                } else {
                    ActiveDelta::None
                }
            }
        }
    }

    /// A stop (waiting or ended): the reason, a report, and an outcome to announce.
    fn stop(&self, next: &mut Run, record: &mut IterationRecord, reason: StoppingReason) {
        next.stopping_reason = Some(reason.clone());
        next.notified = false;
        let narrative = self.narrative.clone().unwrap_or_else(|| {
            Narrative::from_records(
                next,
                &self.workspace,
                std::slice::from_ref(&self.summary),
                "no final model call was made for this stop",
            )
        });
        let report = build_report(
            next,
            &self.workspace,
            &self.summary,
            &self.evidence,
            narrative,
            self.now,
        );
        next.report = Some(report.with_criteria(&self.verdicts));
        record.stopping_reason = Some(reason);
    }
}

/// The status the run lands in: the outcome's, unless the user asked for a pause while the
/// iteration ran (a requested cancel wins over it: the next iteration cancels at once), or
/// the children it would wait for ended meanwhile.
fn settled_status(outcome: &Outcome, run: &Run, next: &Run) -> RunStatus {
    match outcome {
        Outcome::Continue if run.pause_requested && !run.cancel_requested => RunStatus::Paused,
        Outcome::WaitChildren if next.active_children() == 0 => RunStatus::Running,
        outcome => outcome.status(),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::change::{claim, request_cancel, request_pause, resume};
    use crate::decide::Outcome;
    use crate::record::EventKind;
    use crate::run::{BudgetsInput, Streaks};
    use crate::testing::sample_run;

    pub(in crate::change) fn continue_plan(run: &Run, owner: &str) -> CommitPlan {
        CommitPlan {
            n: 1,
            owner: owner.into(),
            verdict: Verdict {
                outcome: Outcome::Continue,
                streaks: Streaks::default(),
                hints: vec![],
            },
            plan: vec![],
            remaining_work: vec![],
            last_iteration: LastIteration::default(),
            answers_consumed: false,
            messages_consumed: 0,
            running_ms: 0,
            record: IterationRecord {
                run_id: run.id.clone(),
                progress: false,
                ..crate::testing::sample_record(1)
            },
            docs: vec![],
            pad: crate::testing::sample_pad(1),
            summary: String::new(),
            workspace: vec![],
            evidence: vec![],
            narrative: None,
            pending_calls: vec![],
            children: vec![],
            seen_hints: vec![],
            verdicts: vec![],
            now: 0,
        }
    }

    #[test]
    fn a_commit_by_a_worker_that_lost_the_lease_is_rejected() {
        let mut run = sample_run();
        run.lease = crate::testing::lease("thief", 1, 10);
        let plan = continue_plan(&run, "me");
        assert_eq!(plan.apply(&run).unwrap_err(), Rejection::LeaseLost);
    }

    #[test]
    fn messages_posted_while_an_iteration_ran_wait_for_the_next_one() {
        // Arrange: the planner of iteration 1 saw one message; a second came in meanwhile.
        let run = claim(&sample_run(), 1, "me", 0, 1_000).unwrap().run;
        let seen = crate::change::post_message(&run, "first", 1).unwrap().run;
        let mut plan = continue_plan(&seen, "me");
        plan.messages_consumed = 1;
        let later = crate::change::post_message(&seen, "second", 2).unwrap().run;

        // Act
        let committed = plan.apply(&later).unwrap();

        // Assert
        let left: Vec<&str> = committed
            .run
            .pending_messages
            .iter()
            .map(|m| m.text.as_str())
            .collect();
        assert_eq!(left, ["second"]);
    }

    #[test]
    fn a_pause_during_an_iteration_lets_it_commit_then_holds_the_run() {
        // Arrange: iteration 1 is claimed, then the user pauses.
        let run = claim(&sample_run(), 1, "me", 0, 1_000).unwrap().run;
        let paused = request_pause(&run, 5).unwrap();
        assert_eq!(paused.run.status, RunStatus::Running);
        assert!(paused.run.pause_requested);

        // Act
        let committed = continue_plan(&paused.run, "me").apply(&paused.run).unwrap();

        // Assert
        assert_eq!(committed.run.iteration, 1);
        assert_eq!(committed.run.status, RunStatus::Paused);
        assert!(!committed.run.pause_requested && committed.run.notified);
        assert!(
            committed
                .events
                .iter()
                .any(|e| e.kind == EventKind::RunPaused)
        );
        assert!(matches!(
            claim(&committed.run, 2, "me", 10, 1_000),
            Err(Rejection::NotRunnable {
                status: RunStatus::Paused
            })
        ));
        let resumed = resume(&committed.run, &BudgetsInput::default(), 20)
            .unwrap()
            .run;
        assert_eq!(resumed.status, RunStatus::Queued);
        assert!(claim(&resumed, 2, "me", 30, 1_000).is_ok());
    }

    #[test]
    fn a_cancel_wins_over_a_later_pause() {
        // Arrange: a running iteration, then cancel, then pause.
        let run = claim(&sample_run(), 1, "me", 0, 1_000).unwrap().run;
        let canceled = request_cancel(&run, &[], 5).unwrap().run;

        // Act
        let paused = request_pause(&canceled, 6);
        let mut both = canceled.clone();
        both.pause_requested = true;
        let committed = continue_plan(&both, "me").apply(&both).unwrap();

        // Assert: the pause is refused, and even a pause already asked for does not hold a
        // run whose cancel is pending: this commit ends it canceled.
        assert!(matches!(paused, Err(Rejection::Conflict(_))));
        assert_eq!(committed.run.status, RunStatus::Canceled);
    }

    #[test]
    fn a_run_canceled_while_its_iteration_asked_a_question_ends_canceled() {
        // Arrange: an iteration that ends in a question or a wait for children, and a
        // cancel (its parent ended) that came while it ran.
        let run = claim(&sample_run(), 1, "me", 0, 1_000).unwrap().run;
        let canceled = request_cancel(&run, &[], 5).unwrap().run;
        let outcomes = [
            Outcome::Wait {
                questions: vec!["which one?".into()],
            },
            Outcome::WaitChildren,
            Outcome::Finish(StoppingReason::new(StopType::WaitingOnUser, "stuck")),
        ];

        for outcome in outcomes {
            let mut plan = continue_plan(&canceled, "me");
            plan.verdict.outcome = outcome.clone();

            // Act
            let committed = plan.apply(&canceled).unwrap();

            // Assert: no wait nobody would end: the run ends canceled with this commit, its
            // slot freed and its report written.
            assert_eq!(committed.run.status, RunStatus::Canceled, "{outcome:?}");
            assert_eq!(committed.active, ActiveDelta::Release);
            assert!(committed.run.questions.is_empty());
            assert!(committed.run.report.is_some());
        }
    }

    #[test]
    fn the_report_of_a_completing_commit_carries_the_verdicts_of_its_claim() {
        // Arrange
        let run = claim(&sample_run(), 1, "me", 0, 1_000).unwrap().run;
        let verdict = CriterionVerdict {
            id: "c1".into(),
            kind: crate::criteria::CheckKind::Contains,
            criterion: "`guide.md` contains \"oolong\"".into(),
            passed: true,
            reason: "found \"oolong\"".into(),
            looked_at: vec!["guide.md".into()],
        };
        let mut plan = continue_plan(&run, "me");
        plan.verdict.outcome = Outcome::Finish(StoppingReason::new(
            StopType::Completed,
            "evidence accepted",
        ));
        plan.verdicts = vec![verdict.clone()];

        // Act
        let committed = plan.apply(&run).unwrap();

        // Assert
        assert_eq!(committed.run.status, RunStatus::Completed);
        assert_eq!(committed.run.report.unwrap().criteria, vec![verdict]);
    }

    #[test]
    fn a_parent_whose_children_ended_while_it_worked_does_not_wait_for_them() {
        // Arrange: the parent's wait_for_children iteration; its only child ended meanwhile.
        let mut run = claim(&sample_run(), 1, "me", 0, 1_000).unwrap().run;
        run.children.push(ChildRun {
            id: "child".into(),
            objective: "o".into(),
            status: RunStatus::Completed,
            budgets: Default::default(),
            summary: Some("done".into()),
            tokens: 0,
            cost_usd: 0.0,
            detached: false,
        });
        let mut plan = continue_plan(&run, "me");
        plan.verdict.outcome = Outcome::WaitChildren;

        // Act
        let committed = plan.apply(&run).unwrap();

        // Assert
        assert_eq!(committed.run.status, RunStatus::Running);
        assert!(
            !committed
                .events
                .iter()
                .any(|e| e.kind == EventKind::RunWaiting)
        );
    }

    #[test]
    fn hints_added_while_an_iteration_ran_reach_the_next_prompt() {
        // Arrange: the prompt saw one hint; a child's end added another meanwhile.
        let mut run = claim(&sample_run(), 1, "me", 0, 1_000).unwrap().run;
        run.hints = vec!["old".into(), "Child run c ended completed: ok".into()];
        let mut plan = continue_plan(&run, "me");
        plan.seen_hints = vec!["old".into()];
        plan.verdict.hints = vec!["new".into()];

        // Act
        let committed = plan.apply(&run).unwrap();

        // Assert
        assert_eq!(
            committed.run.hints,
            vec!["new".to_string(), "Child run c ended completed: ok".into()]
        );
    }
}
