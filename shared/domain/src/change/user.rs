//! What the user does to a run between (or during) iterations: cancel, pause, edit, answer,
//! resume and continue.

use super::{ActiveDelta, Rejection, RunChange, stop_out_of_budget};
use crate::decide::check_budgets;
use crate::events::{CallDecided, ObjectiveChange, PatchRequested, RunEvent, SupersededReport};
use crate::record::DocMeta;
use crate::run::{
    BudgetsInput, Decision, PermissionMode, Run, RunPatch, RunStatus, StopType, StoppingReason,
    UserAnswer,
};

/// Ends a run that is not inside an iteration (queued, waiting): canceled now.
/// A running run gets `cancel_requested`; its worker stops before its next LLM call.
pub fn request_cancel(run: &Run, workspace: &[DocMeta], now: i64) -> Result<RunChange, Rejection> {
    if run.status.is_ended() {
        return Err(Rejection::Conflict(format!(
            "run is already {}; only active runs can be canceled",
            run.status
        )));
    }
    let mut next = run.clone();
    next.updated_at = now;
    let requested = RunEvent::CancelRequested {}.into();
    if run.status == RunStatus::Running {
        if run.cancel_requested {
            return Err(Rejection::Conflict("cancel already requested".into()));
        }
        next.cancel_requested = true;
        return Ok(RunChange::of(next, vec![requested]));
    }
    let reason = StoppingReason::new(StopType::Canceled, "canceled by the user");
    next.transition_to(RunStatus::Canceled, now)?;
    next.cancel_requested = true;
    next.stopping_reason = Some(reason.clone());
    let summary = format!("Canceled after {} iteration(s).", run.iteration);
    super::report_from_records(
        &mut next,
        workspace,
        &summary,
        "the run was canceled between iterations, so no final model call was made",
        now,
    );
    let canceled = RunEvent::Outcome {
        status: RunStatus::Canceled,
        stopping_reason: reason,
    };
    Ok(RunChange {
        active: ActiveDelta::Release,
        ..RunChange::of(next, vec![requested, canceled.into()])
    })
}

/// Pauses a queued run now; a running one after the iteration in flight is committed.
pub fn request_pause(run: &Run, now: i64) -> Result<RunChange, Rejection> {
    let mut next = run.clone();
    next.updated_at = now;
    match *run.status {
        RunStatus::Running if run.pause_requested => {
            Err(Rejection::Conflict("pause already requested".into()))
        }
        RunStatus::Running if run.cancel_requested => Err(Rejection::Conflict(
            "a cancel is already requested; the run ends before its next model call".into(),
        )),
        RunStatus::Running => {
            next.pause_requested = true;
            Ok(RunChange::of(
                next,
                vec![RunEvent::PauseRequested {}.into()],
            ))
        }
        RunStatus::Queued => {
            next.transition_to(RunStatus::Paused, now)?;
            let paused = RunEvent::RunPaused {
                after_iteration: run.iteration,
            };
            Ok(RunChange::of(
                next,
                vec![RunEvent::PauseRequested {}.into(), paused.into()],
            ))
        }
        other => Err(Rejection::Conflict(format!(
            "run is {other}; only queued or running runs can be paused"
        ))),
    }
}

pub const MAX_PATCH_OBJECTIVE_BYTES: usize = 16 * 1024;

/// Records the user's edit; it takes effect when the next iteration is claimed (an iteration
/// in flight keeps the objective it started with).
pub fn patch(run: &Run, edit: RunPatch, now: i64) -> Result<RunChange, Rejection> {
    if run.status.is_final() {
        return Err(Rejection::Conflict(format!(
            "run is {}; it can no longer be edited",
            run.status
        )));
    }
    if edit.is_empty() {
        return Err(Rejection::Conflict(
            "nothing to change: give an objective or plan steps".into(),
        ));
    }
    if let Some(o) = &edit.objective
        && (crate::is_blank(o) || o.len() > MAX_PATCH_OBJECTIVE_BYTES)
    {
        return Err(Rejection::Conflict(format!(
            "objective must be 1 to {MAX_PATCH_OBJECTIVE_BYTES} bytes"
        )));
    }
    let changed = PatchRequested {
        objective: edit.objective.as_ref().map(|o| ObjectiveChange {
            from: run.objective.clone(),
            to: o.clone(),
        }),
        plan: edit.plan.clone(),
    };
    let mut next = run.clone();
    next.pending_patch = Some(match next.pending_patch.take() {
        Some(earlier) => earlier.merge(edit),
        None => edit,
    });
    next.updated_at = now;
    let event = RunEvent::RunPatched {
        changed,
        applies_from_iteration: run.iteration + 1,
    };
    Ok(RunChange::of(next, vec![event.into()]))
}

pub const MAX_MESSAGE_CHARS: usize = 4_000;
/// Messages waiting for the next planner: a bound, so a client in a loop cannot grow the run.
pub const MAX_PENDING_MESSAGES: usize = 20;

/// A message from the user to a run that has not ended: kept on the run until a planner has
/// seen it (the iteration in flight, if any, started without it, so the next one shows it).
pub fn post_message(run: &Run, text: &str, now: i64) -> Result<RunChange, Rejection> {
    if run.status.is_ended() {
        return Err(Rejection::Conflict(format!(
            "run is {}; messages reach runs that have not ended (continue it first)",
            run.status
        )));
    }
    if run.pending_messages.len() >= MAX_PENDING_MESSAGES {
        return Err(Rejection::Conflict(format!(
            "{MAX_PENDING_MESSAGES} messages already wait for the run's next iteration"
        )));
    }
    let mut next = run.clone();
    next.pending_messages.push(UserAnswer {
        text: text.to_string(),
        at: now,
    });
    next.updated_at = now;
    let event = RunEvent::MessagePosted {
        text: text.to_string(),
        for_iteration: run.iteration + 1,
    };
    Ok(RunChange::of(next, vec![event.into()]))
}

/// A paused run goes back to the queue, where it left off; budgets given are raised too.
pub fn resume(run: &Run, budgets: &BudgetsInput, now: i64) -> Result<RunChange, Rejection> {
    if run.status != RunStatus::Paused {
        return Err(Rejection::Conflict(format!(
            "run is {}; only paused runs can be resumed",
            run.status
        )));
    }
    let mut next = run.clone();
    next.budgets = budgets
        .resolve(&run.budgets)
        .map_err(|e| Rejection::Conflict(e.to_string()))?;
    child_keeps_its_carve(run, &next.budgets)?;
    next.transition_to(RunStatus::Queued, now)?;
    let event = RunEvent::RunResumed {
        from_iteration: run.iteration,
        reason: None,
    };
    Ok(RunChange::of(next, vec![event.into()]))
}

/// A child's budgets are carved from what its parent had left, and the parent counts the
/// carve as spent: raising them would let the lineage spend past the parent's budget.
fn child_keeps_its_carve(run: &Run, budgets: &crate::run::Budgets) -> Result<(), Rejection> {
    if run.parent_run_id.is_some() && *budgets != run.budgets {
        return Err(Rejection::Conflict(
            "a child run's budgets are carved from its parent's and cannot be raised; raise the parent's budgets instead".into(),
        ));
    }
    Ok(())
}

/// Characters, so at most 16 KiB of UTF-8.
pub const MAX_ANSWER_CHARS: usize = 4 * 1024;

/// The user's decisions on what waits for approval: the plan (`approve_plan`) and held
/// writes (`per_write`). `approve` applies to everything not decided one by one.
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Approval {
    #[serde(default)]
    pub approve: Option<bool>,
    #[serde(default)]
    pub decisions: Vec<CallDecision>,
}

#[derive(Clone, Debug, PartialEq, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallDecision {
    /// A pending call's id (`c{iteration}.{k}`).
    pub id: String,
    pub approve: bool,
    #[serde(default)]
    pub reason: Option<String>,
}

impl Approval {
    pub fn is_empty(&self) -> bool {
        self.approve.is_none() && self.decisions.is_empty()
    }
}

/// The user's answer (and approvals) move a waiting run back to the queue — or, when its
/// budget has no iteration left for them, end it `stopped` with the answer kept for a
/// `continue` with more budget (no empty iteration is run to find that out).
pub fn respond(
    run: &Run, answer: &str, approval: &Approval, workspace: &[DocMeta], now: i64,
) -> Result<RunChange, Rejection> {
    if run.status != RunStatus::WaitingOnUser {
        return Err(Rejection::Conflict(format!(
            "run is {}; answers are accepted only while waiting_on_user",
            run.status
        )));
    }
    if answer.trim().is_empty() && approval.is_empty() {
        return Err(Rejection::Conflict(
            "give an answer, or approve / reject what waits".into(),
        ));
    }
    if let Some(d) = approval
        .decisions
        .iter()
        .find(|d| !run.pending_calls.iter().any(|c| c.id == d.id))
    {
        return Err(Rejection::Conflict(format!(
            "no pending call `{}` on this run",
            d.id
        )));
    }
    let mut next = run.clone();
    if !answer.trim().is_empty() {
        next.pending_answers.push(UserAnswer {
            text: answer.to_string(),
            at: now,
        });
    }
    if run.permission_mode == PermissionMode::ApprovePlan
        && approval.approve == Some(true)
        && !run.plan_approved
    {
        next.plan_approved = true;
        // The planner's next prompt must say so: nothing proposed with the plan has run.
        next.hints.push(format!(
            "The user approved your plan. Nothing of it has run yet, not even the tool calls \
             you proposed with it: carry it out now, making those calls in this iteration. \
             What was approved: {}",
            crate::clip(&run.questions.join("\n"), 2_000)
        ));
    }
    decide_held_calls(&mut next, answer, approval);
    let event = RunEvent::UserResponded {
        questions: run.questions.clone(),
        answer: answer.to_string(),
        approve: approval.approve,
        decisions: next
            .pending_calls
            .iter()
            .map(|c| CallDecided {
                id: c.id.clone(),
                name: c.name.clone(),
                decision: c.decision.clone(),
            })
            .collect(),
    };
    let running = run.metrics.running_ms;
    if let Some(spent) = check_budgets(
        &run.budgets,
        &run.budget_metrics(),
        run.iteration + 1,
        running,
    ) {
        return stop_out_of_budget(next, vec![event.into()], spent, workspace, now);
    }
    next.transition_to(RunStatus::Queued, now)?;
    Ok(RunChange::of(next, vec![event.into()]))
}

/// Every held call not yet decided gets the user's decision: its own, else the blanket one,
/// else rejected (with the answer as the reason).
fn decide_held_calls(next: &mut Run, answer: &str, approval: &Approval) {
    let fallback = if answer.trim().is_empty() {
        "not approved by the user".to_string()
    } else {
        answer.trim().to_string()
    };
    for call in next
        .pending_calls
        .iter_mut()
        .filter(|c| c.decision.is_none())
    {
        let one = approval.decisions.iter().find(|d| d.id == call.id);
        let approved = one.map(|d| d.approve).or(approval.approve).unwrap_or(false);
        call.decision = Some(if approved {
            Decision::Approved
        } else {
            Decision::Rejected {
                reason: one
                    .and_then(|d| d.reason.clone())
                    .unwrap_or_else(|| fallback.clone()),
            }
        });
    }
}

/// Continue a stopped run with raised budgets (spend never resets), or resume a paused one.
pub fn continue_run(
    run: &Run, budgets: &BudgetsInput, active_limit: u32, now: i64,
) -> Result<RunChange, Rejection> {
    if run.status == RunStatus::Paused {
        return resume(run, budgets, now);
    }
    if run.status != RunStatus::Stopped {
        return Err(Rejection::Conflict(format!(
            "run is {}; only stopped runs can be continued",
            run.status
        )));
    }
    let raised = budgets
        .resolve(&run.budgets)
        .map_err(|e| Rejection::Conflict(e.to_string()))?;
    if let Some(b) = check_budgets(
        &raised,
        &run.metrics,
        run.iteration + 1,
        run.metrics.running_ms,
    ) {
        return Err(Rejection::Conflict(format!(
            "the run would stop again at once: raise {}",
            b.detail
        )));
    }
    child_keeps_its_carve(run, &raised)?;
    let mut next = run.clone();
    next.budgets = raised;
    next.transition_to(RunStatus::Queued, now)?;
    // A fresh start for the breakers: the raised budget is the user's call to go on.
    next.streaks = run.streaks.started_over();
    let event = RunEvent::RunContinued {
        budgets: next.budgets.clone(),
        from_iteration: run.iteration,
    };
    Ok(RunChange {
        active: ActiveDelta::Acquire {
            limit: active_limit,
        },
        ..RunChange::of(next, vec![event.into()])
    })
}

/// Characters, so at most 16 KiB of UTF-8.
pub const MAX_FOLLOW_UP_CHARS: usize = 4 * 1024;

/// A follow-up question to an ended run (`completed`, `stopped` or `failed`; a `canceled` run
/// is final): the run is queued again with the question for its planner, on the budgets it
/// has left, raised by `budgets` when given (spend never resets; a run with nothing left is
/// refused with what to raise, as `continue` is). The report it ended with is superseded by
/// the one its next end writes; the event keeps what it said.
pub fn follow_up(
    run: &Run, question: &str, budgets: &BudgetsInput, active_limit: u32, now: i64,
) -> Result<RunChange, Rejection> {
    if !run.status.is_ended() || run.status.is_final() {
        return Err(Rejection::Conflict(format!(
            "run is {}; follow-up questions go to runs that ended completed, stopped or failed",
            run.status
        )));
    }
    if run.agent.is_some() {
        return Err(Rejection::Conflict(
            "agent runs take no follow-up question: start a new run that names this one".into(),
        ));
    }
    if run.parent_run_id.is_some() {
        return Err(Rejection::Conflict(
            "a child run answers to the run that spawned it: ask that run the follow-up".into(),
        ));
    }
    let question = question.trim();
    if question.is_empty() {
        return Err(Rejection::Conflict("give a follow-up question".into()));
    }
    let raised = budgets
        .resolve(&run.budgets)
        .map_err(|e| Rejection::Conflict(e.to_string()))?;
    if let Some(b) = check_budgets(
        &raised,
        &run.budget_metrics(),
        run.iteration + 1,
        run.metrics.running_ms,
    ) {
        return Err(Rejection::Conflict(format!(
            "no budget is left for the follow-up: raise {} in the request's budgets",
            b.detail
        )));
    }
    child_keeps_its_carve(run, &raised)?;
    let superseded = SupersededReport {
        status: *run.status,
        stopping_reason: run.stopping_reason.clone(),
        summary: run.report.as_ref().map(|r| r.headline.clone()),
        ended_at: run.ended_at,
    };
    let mut next = run.clone();
    next.budgets = raised;
    next.transition_to(RunStatus::Queued, now)?;
    next.follow_up_question = Some(question.to_string());
    // A new question: the breakers start over, as after `continue`.
    next.streaks = run.streaks.started_over();
    let event = RunEvent::FollowUpAsked {
        question: question.to_string(),
        from_iteration: run.iteration,
        budgets: next.budgets.clone(),
        superseded,
    };
    Ok(RunChange {
        active: ActiveDelta::Acquire {
            limit: active_limit,
        },
        ..RunChange::of(next, vec![event.into()])
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::change::{claim, claimed};
    use crate::record::EventKind;
    use crate::testing::sample_run;

    #[test]
    fn cancel_of_a_waiting_run_ends_it_and_frees_the_slot() {
        let mut run = sample_run();
        run = run.with_status_for_tests(RunStatus::WaitingOnUser);
        let change = request_cancel(&run, &[], 5).unwrap();
        assert_eq!(change.run.status, RunStatus::Canceled);
        assert_eq!(change.active, ActiveDelta::Release);
        assert!(change.run.report.is_some());
    }

    #[test]
    fn a_message_waits_on_the_run_and_is_logged_for_the_next_iteration() {
        let run = sample_run().with_status_for_tests(RunStatus::Paused);

        let change = post_message(&run, "use metric units", 7).unwrap();

        assert_eq!(
            change.run.status,
            RunStatus::Paused,
            "a message moves nothing"
        );
        assert_eq!(change.run.pending_messages[0].text, "use metric units");
        assert_eq!(change.events[0].kind, EventKind::MessagePosted);
        assert_eq!(change.events[0].payload["for_iteration"], run.iteration + 1);
    }

    #[test]
    fn a_message_to_an_ended_run_or_past_the_pending_bound_is_refused() {
        let ended = sample_run().with_status_for_tests(RunStatus::Completed);
        let mut full = sample_run();
        for i in 0..MAX_PENDING_MESSAGES {
            full = post_message(&full, &format!("m{i}"), 1).unwrap().run;
        }

        let to_ended = post_message(&ended, "hello", 1);
        let one_more = post_message(&full, "one more", 1);

        assert!(matches!(to_ended, Err(Rejection::Conflict(m)) if m.contains("continue it")));
        assert!(matches!(one_more, Err(Rejection::Conflict(_))));
    }

    #[test]
    fn cancel_of_a_running_run_only_requests_it() {
        let change = request_cancel(&sample_run(), &[], 5).unwrap();
        assert_eq!(change.run.status, RunStatus::Running);
        assert!(change.run.cancel_requested);
        assert_eq!(change.active, ActiveDelta::None);
    }

    #[test]
    fn a_paused_child_resumes_within_its_carve_but_cannot_raise_it() {
        // Arrange: a child run its parent carved 2,000 tokens for, paused by the user.
        let mut child = sample_run().with_status_for_tests(RunStatus::Paused);
        child.parent_run_id = Some("run-parent".into());
        child.budgets.max_tokens = Some(2_000);
        let raised = BudgetsInput {
            max_tokens: Some(5_000),
            ..Default::default()
        };

        // Act
        let refused = resume(&child, &raised, 5).unwrap_err();
        let resumed = resume(&child, &BudgetsInput::default(), 5).unwrap();

        // Assert
        assert!(
            refused.to_string().contains("carved from its parent"),
            "{refused}"
        );
        assert_eq!(resumed.run.status, RunStatus::Queued);
        assert_eq!(resumed.run.budgets.max_tokens, Some(2_000));
    }

    #[test]
    fn continue_needs_a_raised_budget() {
        let mut run = sample_run();
        run = run.with_status_for_tests(RunStatus::Stopped);
        run.iteration = 25;
        let err = continue_run(&run, &BudgetsInput::default(), 3, 0).unwrap_err();
        assert!(err.to_string().contains("max_iterations"), "{err}");
        let raised = BudgetsInput {
            max_iterations: Some(30),
            ..Default::default()
        };
        let change = continue_run(&run, &raised, 3, 0).unwrap();
        assert_eq!(change.run.status, RunStatus::Queued);
        assert_eq!(change.active, ActiveDelta::Acquire { limit: 3 });
    }

    fn completed_run() -> Run {
        let mut run = sample_run();
        run.transition_to(RunStatus::Completed, 5).unwrap();
        run.iteration = 4;
        run.stopping_reason = Some(StoppingReason::new(StopType::Completed, "guide written"));
        run.report = Some(crate::report::build_report(
            &run,
            &[],
            "The guide is written.",
            &[],
            Default::default(),
            5,
        ));
        run
    }

    #[test]
    fn a_follow_up_queues_a_completed_run_with_the_question_and_records_the_superseded_report() {
        // Arrange
        let run = completed_run();

        // Act
        let change = follow_up(
            &run,
            "  Which tea is cheapest?  ",
            &BudgetsInput::default(),
            3,
            9,
        )
        .unwrap();

        // Assert
        let next = &change.run;
        assert_eq!(next.status, RunStatus::Queued);
        assert_eq!(
            next.follow_up_question.as_deref(),
            Some("Which tea is cheapest?")
        );
        assert!(next.report.is_none() && next.stopping_reason.is_none() && next.ended_at.is_none());
        assert_eq!(change.active, ActiveDelta::Acquire { limit: 3 });
        let payload = &change.events[0].payload;
        assert_eq!(change.events[0].kind, EventKind::FollowUpAsked);
        assert_eq!(payload["question"], "Which tea is cheapest?");
        assert_eq!(payload["from_iteration"], 4);
        assert_eq!(payload["superseded"]["status"], "completed");
        assert_eq!(
            payload["superseded"]["stopping_reason"]["detail"],
            "guide written"
        );
        assert_eq!(payload["superseded"]["ended_at"], 5);
        assert!(payload["superseded"]["summary"].as_str().is_some());
    }

    #[test]
    fn a_follow_up_is_refused_for_active_canceled_and_child_runs_and_a_blank_question() {
        // Arrange
        let running = sample_run();
        let canceled = sample_run().with_status_for_tests(RunStatus::Canceled);
        let failed = sample_run().with_status_for_tests(RunStatus::Failed);
        let none = BudgetsInput::default();

        // Act
        let on_running = follow_up(&running, "why?", &none, 3, 1);
        let on_canceled = follow_up(&canceled, "why?", &none, 3, 1);
        let blank = follow_up(&completed_run(), " \n ", &none, 3, 1);
        let on_failed = follow_up(&failed, "why?", &none, 3, 1);
        let mut child = completed_run();
        child.parent_run_id = Some("run-0".into());
        let on_child = follow_up(&child, "why?", &none, 3, 1);

        // Assert
        assert!(matches!(on_running, Err(Rejection::Conflict(m)) if m.contains("run is running")));
        assert!(
            matches!(on_canceled, Err(Rejection::Conflict(m)) if m.contains("run is canceled"))
        );
        assert!(matches!(blank, Err(Rejection::Conflict(m)) if m.contains("question")));
        assert_eq!(on_failed.unwrap().run.status, RunStatus::Queued);
        assert!(matches!(on_child, Err(Rejection::Conflict(m)) if m.contains("child run")));
    }

    #[test]
    fn a_follow_up_to_a_run_with_no_iteration_left_needs_a_raised_budget() {
        // Arrange
        let mut run = completed_run();
        run.iteration = 25;
        let raised = BudgetsInput {
            max_iterations: Some(27),
            ..Default::default()
        };

        // Act
        let refused = follow_up(&run, "and the prices?", &BudgetsInput::default(), 3, 9);
        let accepted = follow_up(&run, "and the prices?", &raised, 3, 9).unwrap();

        // Assert
        assert!(matches!(refused, Err(Rejection::Conflict(m)) if m.contains("max_iterations")));
        assert_eq!(accepted.run.budgets.max_iterations, 27);
    }

    #[test]
    fn an_answer_to_a_run_with_no_iteration_left_stops_it_and_keeps_the_answer() {
        let run = crate::testing::out_of_iterations(RunStatus::WaitingOnUser, 2);

        let change = respond(&run, "use the first", &Approval::default(), &[], 5).unwrap();

        assert_eq!(change.run.status, RunStatus::Stopped);
        assert_eq!(
            change.run.stopping_reason.as_ref().map(|r| r.kind),
            Some(StopType::MaxIterations)
        );
        assert_eq!(change.run.pending_answers.len(), 1);
        assert_eq!(change.active, ActiveDelta::Release);
        assert!(change.run.report.is_some() && !change.run.notified);
    }

    #[test]
    fn an_answer_to_a_run_with_budget_left_queues_it() {
        let mut run = sample_run();
        run = run.with_status_for_tests(RunStatus::WaitingOnUser);
        run.iteration = 1;

        let change = respond(&run, "use the first", &Approval::default(), &[], 5).unwrap();

        assert_eq!(change.run.status, RunStatus::Queued);
        assert_eq!(change.active, ActiveDelta::None);
    }

    #[test]
    fn approving_a_plan_tells_the_planner_to_make_the_calls_it_proposed() {
        // Arrange: an approve_plan run waiting on its plan.
        let mut run = sample_run();
        run = run.with_status_for_tests(RunStatus::WaitingOnUser);
        run.iteration = 1;
        run.permission_mode = PermissionMode::ApprovePlan;
        run.questions = vec!["Approve this plan?\nThe work would start with: doc_write".into()];
        let approve = Approval {
            approve: Some(true),
            decisions: vec![],
        };

        // Act
        let approved = respond(&run, "", &approve, &[], 5).unwrap().run;
        let answered = respond(&run, "shorter, please", &Approval::default(), &[], 5)
            .unwrap()
            .run;

        // Assert
        assert!(approved.plan_approved);
        let hint = approved
            .hints
            .iter()
            .find(|h| h.contains("approved your plan"))
            .expect("a hint for the next prompt");
        assert!(hint.contains("Nothing of it has run yet"), "{hint}");
        assert!(hint.contains("doc_write"), "{hint}");
        assert!(!answered.plan_approved);
        assert!(
            answered
                .hints
                .iter()
                .all(|h| !h.contains("approved your plan"))
        );
    }

    #[test]
    fn a_queued_run_pauses_at_once_and_an_ended_one_refuses() {
        let mut run = sample_run();
        run = run.with_status_for_tests(RunStatus::Queued);
        assert_eq!(
            request_pause(&run, 1).unwrap().run.status,
            RunStatus::Paused
        );
        run = run.with_status_for_tests(RunStatus::Completed);
        assert!(request_pause(&run, 1).is_err());
    }

    #[test]
    fn a_patch_waits_for_the_next_claim_and_then_tells_the_planner() {
        // Arrange
        let run = sample_run();
        let edit = RunPatch {
            objective: Some("write a shorter report".into()),
            plan: vec![crate::run::PlanStepEdit {
                id: "s9".into(),
                title: "cut to one page".into(),
                status: crate::run::StepStatus::Pending,
            }],
        };

        // Act
        let patched = patch(&run, edit, 3).unwrap();
        let claimed = claim(&patched.run, 1, "me", 4, 1_000).unwrap();

        // Assert
        assert_eq!(
            patched.run.objective, "write a report",
            "not before the next iteration"
        );
        assert_eq!(patched.events[0].kind, EventKind::RunPatched);
        assert_eq!(
            patched.events[0].payload["changed"]["objective"],
            json!({"from": "write a report", "to": "write a shorter report"})
        );
        assert_eq!(claimed.run.objective, "write a shorter report");
        assert!(claimed.run.pending_patch.is_none());
        assert!(claimed.run.plan.iter().any(|p| p.id == "s9"));
        assert!(
            claimed
                .run
                .hints
                .iter()
                .any(|h| h.contains("changed the objective"))
        );
        assert_eq!(
            claimed.events[0].payload["patched"]["objective"],
            "write a shorter report"
        );
    }

    #[test]
    fn an_edit_made_after_an_iteration_began_waits_for_the_next_one() {
        // Arrange: the attempt began with no edit pending; the user edits before its first write.
        let run = sample_run();
        let edited = patch(
            &run,
            RunPatch {
                objective: Some("a new goal".into()),
                plan: vec![],
            },
            3,
        )
        .unwrap()
        .run;

        // Act: the first write carries the claim.
        let written = claimed(&edited, 1, "me", 4, 1_000, None, |c| {
            Ok(RunChange::of(c.clone(), vec![]))
        })
        .unwrap();

        // Assert: not applied behind the prompt's back; the next claim applies it.
        assert_eq!(written.run.objective, run.objective);
        assert!(written.run.pending_patch.is_some());
    }

    #[test]
    fn an_empty_patch_or_one_on_a_final_run_is_refused() {
        let mut run = sample_run();
        assert!(patch(&run, RunPatch::default(), 0).is_err());
        run = run.with_status_for_tests(RunStatus::Canceled);
        let edit = RunPatch {
            objective: Some("x".into()),
            plan: vec![],
        };
        assert!(patch(&run, edit, 0).is_err());
    }
}
