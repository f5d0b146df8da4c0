//! An iteration's fenced claim, its release, and the user's edit the claim applies.

use super::{Rejection, RunChange};
use crate::events::{PatchApplied, RunEvent};
use crate::run::{Lease, Run, RunPatch, RunStatus, apply_plan_updates};

/// Fenced claim of iteration `n` (ARCHITECTURE.md, "The iteration", step 2).
pub fn claim(
    run: &Run, n: u32, owner: &str, now: i64, lease_ms: u64,
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
        return Err(Rejection::NotRunnable {
            status: *run.status,
        });
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
    next.transition_to(RunStatus::Running, now)?;
    next.lease = Some(Lease {
        owner: owner.to_string(),
        iteration: n,
        expires_at: now + lease_ms as i64,
    });
    let patched = next
        .pending_patch
        .take()
        .map(|p| apply_patch(&mut next, p, n));
    let event = RunEvent::IterationStarted {
        iteration: n,
        reclaimed,
        patched,
    };
    Ok(RunChange::of(next, vec![event.into()]))
}

/// `then` applied to the run as claimed for iteration `n`, the claim's events first: the
/// claim rides on an attempt's first write (its first model call's spend, or its commit when
/// it made none) instead of costing a write of its own. `seen_patch` is the pending edit the
/// attempt worked with: only that one is applied now; an edit that arrived after the attempt
/// began stays pending for the next iteration, whose prompt will see it.
pub fn claimed(
    run: &Run, n: u32, owner: &str, now: i64, lease_ms: u64, seen_patch: Option<&RunPatch>,
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

/// Whether `owner` still holds iteration `n` of `run`: not committed, and the lease its claim
/// wrote is its own. The fence on an attempt's commit, and on its writes after its claim, so an
/// attempt another took over learns it at its next write. (The `unfenced` build, which the
/// simulator must catch, removes it.)
pub fn held(run: &Run, n: u32, owner: &str) -> Result<(), Rejection> {
    if cfg!(feature = "unfenced") {
        return Ok(());
    }
    if run.iteration >= n {
        return Err(Rejection::AlreadyCommitted {
            iteration: run.iteration,
        });
    }
    match &run.lease {
        Some(l) if l.owner == owner && l.iteration == n => Ok(()),
        _ => Err(Rejection::LeaseLost),
    }
}

/// Gives back the claim of iteration `n` without committing it (e.g. a model retry would
/// outlive the worker), so the redelivered step is claimable at once, by any worker.
pub fn release(
    run: &Run, n: u32, owner: &str, reason: &str, now: i64,
) -> Result<RunChange, Rejection> {
    match &run.lease {
        Some(lease) if lease.owner == owner && lease.iteration == n && run.iteration + 1 == n => {
            let mut next = run.clone();
            next.lease = None;
            next.updated_at = now;
            let event = RunEvent::IterationDeferred {
                iteration: n,
                reason: reason.to_string(),
            };
            Ok(RunChange::of(next, vec![event.into()]))
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
fn apply_patch(run: &mut Run, patch: RunPatch, n: u32) -> PatchApplied {
    let mut applied = PatchApplied::default();
    if let Some(objective) = patch.objective {
        run.hints.push(format!(
            "The user changed the objective. The previous one was: {}",
            clip_chars(&run.objective, 500)
        ));
        applied.objective = Some(objective.clone());
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
        applied.plan = patch.plan;
    }
    applied
}

fn clip_chars(s: &str, max: usize) -> String {
    s.chars().take(max).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::sample_run;

    #[test]
    fn a_claim_is_refused_while_another_owner_holds_a_live_lease() {
        let mut run = sample_run();
        run.lease = crate::testing::lease("w1", 1, 100);
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
    fn a_waiting_run_cannot_be_claimed() {
        let run = sample_run().with_status_for_tests(RunStatus::WaitingOnUser);
        assert_eq!(
            claim(&run, 1, "w", 0, 10).unwrap_err(),
            Rejection::NotRunnable {
                status: RunStatus::WaitingOnUser
            }
        );
    }
}
