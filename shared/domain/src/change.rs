//! Every write to a run, as a pure function of the run's current state.
//!
//! Stores apply a `RunChange` atomically: the new run row, its events (seqs assigned by the
//! store), the iteration, docs, scratchpad entry and the per-user active counter, all or nothing.
//! Because the change is recomputed from the freshest run on every attempt, an adapter that
//! loses an optimistic race simply re-reads and calls the same function again.

use serde_json::json;

use crate::decide::{BudgetExhausted, BudgetKind, Outcome, Verdict, check_budgets};
use crate::record::{Doc, DocMeta, EventDraft, EventKind, IterationRecord, PadEntry};
use crate::report::build_report;
use crate::run::{
    BudgetsInput, ChildRun, Decision, LastIteration, Lease, PendingCall, PermissionMode, PlanStep,
    Run, RunPatch, RunStatus, Spend, StopType, StoppingReason, Streaks, UserAnswer,
    apply_plan_updates,
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

pub fn create(run: Run, active_limit: u32) -> RunChange {
    let payload = json!({
        "objective": run.objective,
        "budgets": run.budgets,
        "model": run.model,
        "parent_run_id": run.parent_run_id,
    });
    RunChange {
        active: ActiveDelta::Acquire {
            limit: active_limit,
        },
        ..RunChange::of(run, vec![EventDraft::new(EventKind::RunCreated, payload)])
    }
}

/// Fenced claim of iteration `n` (DESIGN §5 step 2).
pub fn claim(
    run: &Run,
    n: u32,
    owner: &str,
    now: i64,
    lease_ms: u64,
) -> Result<RunChange, Rejection> {
    if run.iteration >= n {
        return Err(Rejection::AlreadyCommitted {
            iteration: run.iteration,
        });
    }
    if n != run.iteration + 1 {
        return Err(Rejection::OutOfOrder {
            expected: run.iteration + 1,
            got: n,
        });
    }
    if !run.status.is_claimable() {
        return Err(Rejection::NotRunnable { status: run.status });
    }
    if let Some(lease) = &run.lease
        && lease.expires_at > now
        && lease.owner != owner
    {
        return Err(Rejection::LeaseHeld {
            expires_at: lease.expires_at,
        });
    }
    let reclaimed = run.lease.is_some();
    let mut next = run.clone();
    next.status = RunStatus::Running;
    next.lease = Some(Lease {
        owner: owner.to_string(),
        iteration: n,
        expires_at: now + lease_ms as i64,
    });
    next.updated_at = now;
    let patched = next
        .pending_patch
        .take()
        .map(|p| apply_patch(&mut next, p, n));
    let mut payload = json!({"iteration": n, "reclaimed": reclaimed});
    if let Some(changed) = patched {
        payload["patched"] = changed;
    }
    let event = EventDraft::new(EventKind::IterationStarted, payload);
    Ok(RunChange::of(next, vec![event]))
}

/// `then` applied to the run as claimed for iteration `n`, the claim's events first: the
/// claim rides on an attempt's first write (its first model call's spend, or its commit when
/// it made none) instead of costing a write of its own. `seen_patch` is the pending edit the
/// attempt worked with: only that one is applied now; an edit that arrived after the attempt
/// began stays pending for the next iteration, whose prompt will see it.
pub fn claimed(
    run: &Run,
    n: u32,
    owner: &str,
    now: i64,
    lease_ms: u64,
    seen_patch: Option<&RunPatch>,
    then: impl FnOnce(&Run) -> Result<RunChange, Rejection>,
) -> Result<RunChange, Rejection> {
    let claim = if run.pending_patch.as_ref() == seen_patch {
        claim(run, n, owner, now, lease_ms)?
    } else {
        let mut seen = run.clone();
        seen.pending_patch = seen_patch.cloned();
        let mut claim = claim(&seen, n, owner, now, lease_ms)?;
        claim.run.pending_patch = run.pending_patch.clone();
        claim
    };
    let mut change = then(&claim.run)?;
    let mut events = claim.events;
    events.append(&mut change.events);
    change.events = events;
    Ok(change)
}

/// Gives back the claim of iteration `n` without committing it (e.g. a model retry would
/// outlive the worker), so the redelivered step is claimable at once, by any worker.
pub fn release(
    run: &Run,
    n: u32,
    owner: &str,
    reason: &str,
    now: i64,
) -> Result<RunChange, Rejection> {
    match &run.lease {
        Some(lease) if lease.owner == owner && lease.iteration == n && run.iteration + 1 == n => {
            let mut next = run.clone();
            next.lease = None;
            next.updated_at = now;
            let event = EventDraft::new(
                EventKind::IterationDeferred,
                json!({"iteration": n, "reason": reason}),
            );
            Ok(RunChange::of(next, vec![event]))
        }
        _ => Err(Rejection::Conflict(format!(
            "iteration {n} of run {} is not held by {owner}",
            run.id
        ))),
    }
}

/// Ends a lease whose holder is known to be gone (a process that restarted): the iteration
/// is claimable at once instead of when the lease would have run out. The lease keeps its
/// owner, so the gone attempt's commit stays fenced out.
pub fn expire_lease(run: &Run, now: i64) -> Result<RunChange, Rejection> {
    match &run.lease {
        Some(lease) if lease.expires_at > now => {
            let mut next = run.clone();
            if let Some(l) = next.lease.as_mut() {
                l.expires_at = now;
            }
            Ok(RunChange::of(next, vec![]))
        }
        _ => Err(Rejection::Conflict("no live lease".into())),
    }
}

/// Applies the user's edit to the run about to be worked on, and tells the planner.
fn apply_patch(run: &mut Run, patch: RunPatch, n: u32) -> serde_json::Value {
    let mut changed = json!({});
    if let Some(objective) = patch.objective {
        run.hints.push(format!(
            "The user changed the objective. The previous one was: {}",
            clip_chars(&run.objective, 500)
        ));
        changed["objective"] = json!(objective);
        run.objective = objective;
    }
    if !patch.plan.is_empty() {
        let updates: Vec<_> = patch
            .plan
            .iter()
            .map(|e| (e.id.clone(), e.title.clone(), e.status))
            .collect();
        apply_plan_updates(&mut run.plan, &updates, n);
        run.hints
            .push("The user edited the plan; follow the plan as it now stands.".into());
        changed["plan"] = json!(patch.plan);
    }
    changed
}

fn clip_chars(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

/// Calls remembered by key: more than an iteration's calls can have in flight at once.
const SPEND_KEYS: usize = 16;

/// `record_spend` for the call `key`, once: a retry of a write that landed adds nothing.
pub fn record_spend_once(run: &Run, n: u32, spend: &Spend, key: &str, now: i64) -> RunChange {
    if run.spend_keys.iter().any(|k| k == key) {
        return RunChange::of(run.clone(), vec![]);
    }
    let mut change = record_spend(run, n, spend, now);
    let keys = &mut change.run.spend_keys;
    keys.push(key.to_string());
    if keys.len() > SPEND_KEYS {
        keys.remove(0);
    }
    change
}

/// Adds one LLM call's real spend. Not fenced: money spent by a crashed or superseded attempt
/// was still spent, and budgets must see it.
pub fn record_spend(run: &Run, n: u32, spend: &Spend, now: i64) -> RunChange {
    let mut next = run.clone();
    next.metrics.add_spend(spend);
    next.updated_at = now;
    let mut events = vec![EventDraft::new(
        EventKind::IterationCostUpdate,
        json!({
            "iteration": n,
            "role": spend.role,
            "model": spend.model,
            "input_tokens": spend.input_tokens,
            "output_tokens": spend.output_tokens,
            "cached_tokens": spend.cached_tokens,
            "cost_usd": spend.cost_usd,
            "latency_ms": spend.latency_ms,
            "run_tokens": next.metrics.tokens(),
            "run_cost_usd": next.metrics.cost_usd,
        }),
    )];
    // Waits under a second are the normal jitter of a shared limit, not worth an event.
    if spend.queued_ms >= 1_000 {
        events.push(EventDraft::new(
            EventKind::WaitingForCapacity,
            json!({"iteration": n, "role": spend.role, "model": spend.model,
                   "waited_ms": spend.queued_ms}),
        ));
    }
    if spend.cost_usd.is_none() && !run.metrics.by_model.contains_key(&spend.model) {
        events.push(EventDraft::new(
            EventKind::Warning,
            json!({"message": format!("no price known for model {}; its cost is recorded as unknown", spend.model)}),
        ));
    }
    RunChange::of(next, events)
}

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
    pub running_ms: u64,
    pub record: IterationRecord,
    pub docs: Vec<Doc>,
    pub pad: PadEntry,
    pub summary: String,
    /// The whole workspace after this commit, for the report.
    pub workspace: Vec<DocMeta>,
    pub evidence: Vec<String>,
    /// Writes this iteration proposed under `per_write`, waiting for the user.
    pub pending_calls: Vec<PendingCall>,
    /// Child runs this iteration started.
    pub children: Vec<ChildRun>,
    /// The hints the iteration's prompt was given; hints added to the run while it worked (a
    /// child's end) are kept for the next prompt.
    pub seen_hints: Vec<String>,
    pub now: i64,
}

impl CommitPlan {
    /// Fenced on the lease: only the claimant of iteration `n` may commit it.
    pub fn apply(&self, run: &Run) -> Result<RunChange, Rejection> {
        self.check_fence(run)?;
        let status = self.verdict.outcome.status();
        let (mut next, spawned) = self.advanced(run, status);
        let mut record = self.record.clone();
        record.outcome = status;
        let mut events = vec![self.committed_event(&next, &record, status)];
        events.extend(spawned);
        let active = self.settle(run, &mut next, &mut record, &mut events);
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
        if cfg!(feature = "unfenced") {
            return Ok(());
        }
        if run.iteration >= self.n {
            return Err(Rejection::AlreadyCommitted {
                iteration: run.iteration,
            });
        }
        match &run.lease {
            Some(l) if l.owner == self.owner && l.iteration == self.n => Ok(()),
            _ => Err(Rejection::LeaseLost),
        }
    }

    /// The run one iteration further on (plan, streaks, metrics, children), and the events
    /// for the children this iteration started.
    fn advanced(&self, run: &Run, status: RunStatus) -> (Run, Vec<EventDraft>) {
        let mut next = run.clone();
        next.iteration = self.n;
        next.status = status;
        next.lease = None;
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
                spawned.push(EventDraft::new(
                    EventKind::ChildSpawned,
                    json!({"child_run_id": child.id, "objective": child.objective,
                           "budgets": child.budgets}),
                ));
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
        (next, spawned)
    }

    fn committed_event(
        &self,
        next: &Run,
        record: &IterationRecord,
        status: RunStatus,
    ) -> EventDraft {
        EventDraft::new(
            EventKind::IterationCommitted,
            json!({
                "iteration": self.n,
                "status": status,
                "summary": self.summary,
                "progress": record.progress,
                "created_docs": record.created_docs,
                "updated_docs": record.updated_docs,
                "tokens": next.metrics.tokens(),
                "cost_usd": next.metrics.cost_usd,
            }),
        )
    }

    /// What the outcome does to the run: a requested pause, a wait (for children or the
    /// user, with a report), or the end (report, notification due, the user's slot freed).
    fn settle(
        &self,
        run: &Run,
        next: &mut Run,
        record: &mut IterationRecord,
        events: &mut Vec<EventDraft>,
    ) -> ActiveDelta {
        next.pause_requested = false;
        match &self.verdict.outcome {
            // A requested cancel wins over a pause: the next iteration cancels at once.
            Outcome::Continue if run.pause_requested && !run.cancel_requested => {
                // Asked to pause while this iteration ran: it is committed, the next waits.
                next.status = RunStatus::Paused;
                record.outcome = RunStatus::Paused;
                // Nothing to announce: the user asked for it.
                next.notified = true;
                events.push(EventDraft::new(
                    EventKind::RunPaused,
                    json!({"after_iteration": self.n}),
                ));
                ActiveDelta::None
            }
            Outcome::Continue => ActiveDelta::None,
            Outcome::WaitChildren if next.active_children() == 0 => {
                // Its children ended while this iteration ran: nothing to wait for.
                next.status = RunStatus::Running;
                record.outcome = RunStatus::Running;
                ActiveDelta::None
            }
            Outcome::WaitChildren => {
                // The parent sleeps; its children's outcomes wake it. Nothing to announce.
                next.notified = true;
                events.push(EventDraft::new(
                    EventKind::RunWaiting,
                    json!({"children": next.children.iter()
                        .filter(|c| !c.status.is_ended()).map(|c| &c.id).collect::<Vec<_>>()}),
                ));
                ActiveDelta::None
            }
            Outcome::Wait { questions } => {
                next.questions = questions.clone();
                let reason = StoppingReason::new(
                    StopType::WaitingOnUser,
                    format!("waiting for answers to {} question(s)", questions.len()),
                );
                self.stop(next, record, reason);
                events.push(EventDraft::new(
                    EventKind::RunWaiting,
                    json!({"questions": questions}),
                ));
                ActiveDelta::None
            }
            Outcome::Finish(reason) => {
                next.ended_at = Some(self.now);
                self.stop(next, record, reason.clone());
                if let Some(kind) = EventKind::for_status(next.status) {
                    events.push(EventDraft::new(kind, json!({"stopping_reason": reason})));
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
        next.report = Some(build_report(
            next,
            &self.workspace,
            &self.summary,
            &self.evidence,
            self.now,
        ));
        record.stopping_reason = Some(reason);
    }
}

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
    let requested = EventDraft::new(EventKind::CancelRequested, json!({}));
    if run.status == RunStatus::Running {
        if run.cancel_requested {
            return Err(Rejection::Conflict("cancel already requested".into()));
        }
        next.cancel_requested = true;
        return Ok(RunChange::of(next, vec![requested]));
    }
    let reason = StoppingReason::new(StopType::Canceled, "canceled by the user");
    next.status = RunStatus::Canceled;
    next.cancel_requested = true;
    next.questions.clear();
    next.stopping_reason = Some(reason.clone());
    next.ended_at = Some(now);
    next.notified = false;
    let summary = format!("Canceled after {} iteration(s).", run.iteration);
    next.report = Some(build_report(&next, workspace, &summary, &[], now));
    Ok(RunChange {
        active: ActiveDelta::Release,
        ..RunChange::of(
            next,
            vec![
                requested,
                EventDraft::new(EventKind::RunCanceled, json!({"stopping_reason": reason})),
            ],
        )
    })
}

/// Pauses a queued run now; a running one after the iteration in flight is committed.
pub fn request_pause(run: &Run, now: i64) -> Result<RunChange, Rejection> {
    let mut next = run.clone();
    next.updated_at = now;
    match run.status {
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
                vec![EventDraft::new(EventKind::PauseRequested, json!({}))],
            ))
        }
        RunStatus::Queued => {
            next.status = RunStatus::Paused;
            next.notified = true;
            Ok(RunChange::of(
                next,
                vec![
                    EventDraft::new(EventKind::PauseRequested, json!({})),
                    EventDraft::new(
                        EventKind::RunPaused,
                        json!({"after_iteration": run.iteration}),
                    ),
                ],
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
        && (o.trim().is_empty() || o.len() > MAX_PATCH_OBJECTIVE_BYTES)
    {
        return Err(Rejection::Conflict(format!(
            "objective must be 1 to {MAX_PATCH_OBJECTIVE_BYTES} bytes"
        )));
    }
    let mut changed = json!({});
    if let Some(o) = &edit.objective {
        changed["objective"] = json!({"from": run.objective, "to": o});
    }
    if !edit.plan.is_empty() {
        changed["plan"] = json!(edit.plan);
    }
    let mut next = run.clone();
    next.pending_patch = Some(match next.pending_patch.take() {
        Some(earlier) => earlier.merge(edit),
        None => edit,
    });
    next.updated_at = now;
    Ok(RunChange::of(
        next,
        vec![EventDraft::new(
            EventKind::RunPatched,
            json!({"changed": changed, "applies_from_iteration": run.iteration + 1}),
        )],
    ))
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
    next.status = RunStatus::Queued;
    next.updated_at = now;
    Ok(RunChange::of(
        next,
        vec![EventDraft::new(
            EventKind::RunResumed,
            json!({"from_iteration": run.iteration}),
        )],
    ))
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
    run: &Run,
    answer: &str,
    approval: &Approval,
    workspace: &[DocMeta],
    now: i64,
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
    next.status = RunStatus::Queued;
    if !answer.trim().is_empty() {
        next.pending_answers.push(UserAnswer {
            text: answer.to_string(),
            at: now,
        });
    }
    if run.permission_mode == PermissionMode::ApprovePlan && approval.approve == Some(true) {
        next.plan_approved = true;
    }
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
    let questions = std::mem::take(&mut next.questions);
    next.stopping_reason = None;
    next.report = None;
    next.updated_at = now;
    let event = EventDraft::new(
        EventKind::UserResponded,
        json!({
            "questions": questions,
            "answer": answer,
            "approve": approval.approve,
            "decisions": next.pending_calls.iter()
                .map(|c| json!({"id": c.id, "name": c.name, "decision": c.decision}))
                .collect::<Vec<_>>(),
        }),
    );
    let running = run.metrics.running_ms;
    if let Some(spent) = check_budgets(
        &run.budgets,
        &run.budget_metrics(),
        run.iteration + 1,
        running,
    ) {
        return Ok(stop_out_of_budget(next, vec![event], spent, workspace, now));
    }
    Ok(RunChange::of(next, vec![event]))
}

/// Ends a run between iterations whose budget has nothing left for what it waited for; what
/// arrived (an answer, children's results) is kept for a `continue` with more budget.
fn stop_out_of_budget(
    mut next: Run,
    mut events: Vec<EventDraft>,
    spent: BudgetExhausted,
    workspace: &[DocMeta],
    now: i64,
) -> RunChange {
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
    next.status = RunStatus::Stopped;
    next.stopping_reason = Some(reason.clone());
    next.ended_at = Some(now);
    next.notified = false;
    let summary = format!(
        "Stopped after {} iteration(s): {}",
        next.iteration, reason.detail
    );
    next.report = Some(build_report(&next, workspace, &summary, &[], now));
    events.push(EventDraft::new(
        EventKind::RunStopped,
        json!({"stopping_reason": reason}),
    ));
    RunChange {
        active: ActiveDelta::Release,
        ..RunChange::of(next, events)
    }
}

/// Continue a stopped run with raised budgets (spend never resets), or resume a paused one.
pub fn continue_run(
    run: &Run,
    budgets: &BudgetsInput,
    active_limit: u32,
    now: i64,
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
    let mut next = run.clone();
    next.budgets = raised;
    next.status = RunStatus::Queued;
    next.streaks = Streaks::default();
    next.stopping_reason = None;
    next.report = None;
    next.ended_at = None;
    next.cancel_requested = false;
    next.updated_at = now;
    let event = EventDraft::new(
        EventKind::RunContinued,
        json!({"budgets": next.budgets, "from_iteration": run.iteration}),
    );
    Ok(RunChange {
        active: ActiveDelta::Acquire {
            limit: active_limit,
        },
        ..RunChange::of(next, vec![event])
    })
}

/// A child ended: the parent records its outcome and spend, tells its planner, and wakes when
/// it was waiting and no child is left active. Repeating it changes nothing.
pub fn child_finished(
    parent: &Run,
    child: &Run,
    workspace: &[DocMeta],
    now: i64,
) -> Result<RunChange, Rejection> {
    let Some(pos) = parent.children.iter().position(|c| c.id == child.id) else {
        return Err(Rejection::Conflict(format!(
            "{} is not a child of {}",
            child.id, parent.id
        )));
    };
    if parent.children[pos].status.is_ended() || !child.status.is_ended() {
        return Err(Rejection::Conflict("nothing new to record".into()));
    }
    let summary = child
        .report
        .as_ref()
        .map(|r| r.summary.clone())
        .unwrap_or_default();
    let mut next = parent.clone();
    let entry = &mut next.children[pos];
    entry.status = child.status;
    entry.summary = Some(summary.clone());
    entry.tokens = child.metrics.tokens() + child.metrics.children_tokens;
    entry.cost_usd = child.metrics.cost_usd + child.metrics.children_cost_usd;
    next.metrics.children_tokens += entry.tokens;
    next.metrics.children_cost_usd += entry.cost_usd;
    // Spend is now known: the reservation becomes the real figure.
    entry.budgets.max_tokens = entry.budgets.max_tokens.map(|_| entry.tokens);
    entry.budgets.max_cost_usd = entry.budgets.max_cost_usd.map(|_| entry.cost_usd);
    next.hints.push(format!(
        "Child run {} ({}) ended {}: {}",
        child.id,
        child.objective.chars().take(120).collect::<String>(),
        child.status,
        summary.chars().take(1_000).collect::<String>()
    ));
    let mut events = vec![EventDraft::new(
        EventKind::ChildFinished,
        json!({"child_run_id": child.id, "status": child.status, "summary": summary,
               "tokens": next.children[pos].tokens, "cost_usd": next.children[pos].cost_usd}),
    )];
    if next.status == RunStatus::WaitingOnChildren && next.active_children() == 0 {
        next.updated_at = now;
        let running = next.metrics.running_ms;
        let next_n = next.iteration + 1;
        if let Some(spent) = check_budgets(&next.budgets, &next.budget_metrics(), next_n, running) {
            // No iteration left to use what the children found: the parent ends with it.
            return Ok(stop_out_of_budget(next, events, spent, workspace, now));
        }
        next.status = RunStatus::Queued;
        events.push(EventDraft::new(
            EventKind::RunResumed,
            json!({"from_iteration": next.iteration, "reason": "children finished"}),
        ));
    }
    next.updated_at = now;
    Ok(RunChange::of(next, events))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::Outcome;
    use crate::testing::sample_run;

    #[test]
    fn a_claim_is_refused_while_another_owner_holds_a_live_lease() {
        let mut run = sample_run();
        run.lease = Some(Lease {
            owner: "w1".into(),
            iteration: 1,
            expires_at: 100,
        });
        assert_eq!(
            claim(&run, 1, "w2", 50, 30).unwrap_err(),
            Rejection::LeaseHeld { expires_at: 100 }
        );
        let change = claim(&run, 1, "w2", 100, 30).unwrap();
        assert_eq!(change.run.lease.unwrap().owner, "w2");
    }

    #[test]
    fn a_committed_iteration_cannot_be_claimed_again() {
        let mut run = sample_run();
        run.iteration = 3;
        assert_eq!(
            claim(&run, 3, "w", 0, 10).unwrap_err(),
            Rejection::AlreadyCommitted { iteration: 3 }
        );
        assert!(matches!(
            claim(&run, 5, "w", 0, 10).unwrap_err(),
            Rejection::OutOfOrder { .. }
        ));
    }

    #[test]
    fn cancel_of_a_waiting_run_ends_it_and_frees_the_slot() {
        let mut run = sample_run();
        run.status = RunStatus::WaitingOnUser;
        let change = request_cancel(&run, &[], 5).unwrap();
        assert_eq!(change.run.status, RunStatus::Canceled);
        assert_eq!(change.active, ActiveDelta::Release);
        assert!(change.run.report.is_some());
    }

    #[test]
    fn cancel_of_a_running_run_only_requests_it() {
        let change = request_cancel(&sample_run(), &[], 5).unwrap();
        assert_eq!(change.run.status, RunStatus::Running);
        assert!(change.run.cancel_requested);
        assert_eq!(change.active, ActiveDelta::None);
    }

    #[test]
    fn continue_needs_a_raised_budget() {
        let mut run = sample_run();
        run.status = RunStatus::Stopped;
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

    fn planner_spend() -> Spend {
        Spend {
            model: "m".into(),
            role: "planner".into(),
            input_tokens: 10,
            output_tokens: 5,
            cached_tokens: 0,
            cost_usd: Some(0.01),
            latency_ms: 1,
            queued_ms: 0,
        }
    }

    #[test]
    fn spend_is_recorded_even_without_the_lease() {
        let run = sample_run();
        let spend = planner_spend();
        let change = record_spend(&run, 1, &spend, 0);
        assert_eq!(change.run.metrics.tokens(), 15);
        assert_eq!(change.events[0].kind, EventKind::IterationCostUpdate);
    }

    #[test]
    fn a_spend_write_retried_after_it_landed_counts_once() {
        let run = sample_run();
        let spend = planner_spend();

        let landed = record_spend_once(&run, 1, &spend, "w1#run-1#1#1", 0).run;
        let retried = record_spend_once(&landed, 1, &spend, "w1#run-1#1#1", 0);
        let next_call = record_spend_once(&retried.run, 1, &spend, "w1#run-1#1#2", 0);

        assert_eq!(retried.run.metrics.tokens(), 15);
        assert!(retried.events.is_empty());
        assert_eq!(next_call.run.metrics.tokens(), 30);
    }

    #[test]
    fn an_answer_to_a_run_with_no_iteration_left_stops_it_and_keeps_the_answer() {
        let mut run = sample_run();
        run.status = RunStatus::WaitingOnUser;
        run.iteration = 2;
        run.budgets.max_iterations = 2;

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
        run.status = RunStatus::WaitingOnUser;
        run.iteration = 1;

        let change = respond(&run, "use the first", &Approval::default(), &[], 5).unwrap();

        assert_eq!(change.run.status, RunStatus::Queued);
        assert_eq!(change.active, ActiveDelta::None);
    }

    #[test]
    fn children_ending_for_a_parent_with_no_iteration_left_end_the_parent() {
        let mut parent = sample_run();
        parent.status = RunStatus::WaitingOnChildren;
        parent.iteration = 3;
        parent.budgets.max_iterations = 3;
        let mut child = sample_run();
        child.id = "run-1-c3-1".into();
        child.status = RunStatus::Completed;
        parent.children.push(ChildRun {
            id: child.id.clone(),
            objective: "part".into(),
            status: RunStatus::Running,
            budgets: crate::run::Budgets::default(),
            summary: None,
            tokens: 0,
            cost_usd: 0.0,
        });

        let change = child_finished(&parent, &child, &[], 9).unwrap();

        assert_eq!(change.run.status, RunStatus::Stopped);
        assert_eq!(change.run.iteration, 3);
        assert_eq!(change.active, ActiveDelta::Release);
    }

    #[test]
    fn a_run_that_moved_on_while_its_outcome_was_published_is_not_marked_notified() {
        let mut run = sample_run();
        run.iteration = 2;
        run.status = RunStatus::Canceled;

        let stale = mark_notified(&run, 2, RunStatus::WaitingOnUser);
        let current = mark_notified(&run, 2, RunStatus::Canceled);

        assert!(stale.is_none());
        assert!(current.is_some_and(|r| r.notified));
    }

    fn continue_plan(run: &Run, owner: &str) -> CommitPlan {
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
            running_ms: 0,
            record: IterationRecord {
                run_id: run.id.clone(),
                n: 1,
                outcome: RunStatus::Running,
                summary: String::new(),
                status_block: None,
                tool_results: vec![],
                executor_results: vec![],
                created_docs: vec![],
                updated_docs: vec![],
                metrics: Default::default(),
                error: None,
                progress: false,
                hints: vec![],
                stopping_reason: None,
                started_at: 0,
                committed_at: 0,
            },
            docs: vec![],
            pad: PadEntry {
                n: 1,
                at: 0,
                summary: String::new(),
                actions: vec![],
                results: vec![],
                artifacts: vec![],
                plan_changes: vec![],
                remaining_work: vec![],
                sources: vec![],
            },
            summary: String::new(),
            workspace: vec![],
            evidence: vec![],
            pending_calls: vec![],
            children: vec![],
            seen_hints: vec![],
            now: 0,
        }
    }

    #[test]
    fn a_commit_by_a_worker_that_lost_the_lease_is_rejected() {
        let mut run = sample_run();
        run.lease = Some(Lease {
            owner: "thief".into(),
            iteration: 1,
            expires_at: 10,
        });
        let plan = continue_plan(&run, "me");
        assert_eq!(plan.apply(&run).unwrap_err(), Rejection::LeaseLost);
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
    fn a_queued_run_pauses_at_once_and_an_ended_one_refuses() {
        let mut run = sample_run();
        run.status = RunStatus::Queued;
        assert_eq!(
            request_pause(&run, 1).unwrap().run.status,
            RunStatus::Paused
        );
        run.status = RunStatus::Completed;
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
        // run whose cancel is pending: the next iteration cancels it.
        assert!(matches!(paused, Err(Rejection::Conflict(_))));
        assert_eq!(committed.run.status, RunStatus::Running);
        assert!(committed.run.cancel_requested);
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
        run.status = RunStatus::Canceled;
        let edit = RunPatch {
            objective: Some("x".into()),
            plan: vec![],
        };
        assert!(patch(&run, edit, 0).is_err());
    }
}
