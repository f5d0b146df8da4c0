//! The fenced claim of an iteration: checked when the message arrives, written with the
//! attempt's first write (its first model call's spend, or its commit) — or on its own before
//! the first model call when the run as stored does not say `running` yet, so a run is never
//! shown `queued` while a model works on it.

use std::sync::atomic::{AtomicBool, Ordering};

use longrun_domain::run::{Run, RunPatch, RunStatus};
use longrun_domain::{Rejection, RunChange, change};
use longrun_ports::Durability;
use longrun_ports::StoreError;

use super::{Engine, EngineError, StepOutcome};

/// A message whose iteration this attempt may not work on: wait out another worker's live
/// lease, or drop it (committed already, out of order, run not runnable).
pub(super) fn turned_away(r: Rejection, now: i64) -> StepOutcome {
    match r {
        Rejection::LeaseHeld { expires_at } => StepOutcome::Retry {
            delay_ms: (expires_at - now).clamp(1_000, 60_000) as u64,
        },
        r => StepOutcome::Dropped(r.to_string()),
    }
}

/// This attempt's claim of iteration `n`, taken by its first write.
pub(super) struct Claim<'a> {
    pub n: u32,
    pub owner: &'a str,
    pub lease_ms: u64,
    /// The user's edit pending when the attempt began, which its prompts see.
    seen_patch: Option<RunPatch>,
    /// The run as stored already says `running` (an iteration after a committed one): the
    /// claim changes nothing anyone reads until the first write, so it rides on that write.
    shown_running: bool,
    taken: AtomicBool,
}

impl<'a> Claim<'a> {
    /// The claim of iteration `n` of `stored`, the run as read when the message arrived.
    pub fn new(n: u32, owner: &'a str, lease_ms: u64, stored: &Run) -> Self {
        Claim {
            n,
            owner,
            lease_ms,
            seen_patch: stored.pending_patch.clone(),
            shown_running: stored.status == RunStatus::Running,
            taken: AtomicBool::new(false),
        }
    }

    pub fn is_taken(&self) -> bool {
        self.taken.load(Ordering::SeqCst)
    }

    /// Whether the claim must be written before a model call: not written yet, and the run
    /// still shows the status it had before the claim (queued). A model call can take minutes;
    /// this costs one write per start or resume of a run, none per later iteration.
    pub fn to_show_before_a_call(&self) -> bool {
        !self.shown_running && !self.is_taken()
    }

    /// `then` on `run`, claimed first when `taken` (as read before the write) says no
    /// earlier write took the claim.
    pub fn and_then(
        &self, taken: bool, run: &Run, now: i64,
        then: impl FnOnce(&Run) -> Result<RunChange, Rejection>,
    ) -> Result<RunChange, Rejection> {
        if taken {
            then(run)
        } else {
            let seen = self.seen_patch.as_ref();
            change::claimed(run, self.n, self.owner, now, self.lease_ms, seen, then)
        }
    }

    /// `then` on `run` if this attempt still holds iteration `n` there (the lease it wrote
    /// is its own, the iteration not committed), as its commit will check: an attempt whose
    /// lease another took over learns it at its next write, not after more model calls.
    pub fn if_held(
        &self, run: &Run, then: impl FnOnce(&Run) -> Result<RunChange, Rejection>,
    ) -> Result<RunChange, Rejection> {
        change::held(run, self.n, self.owner)?;
        then(run)
    }

    /// Marks the claim written: later writes no longer carry it.
    pub fn took(&self) {
        self.taken.store(true, Ordering::SeqCst);
    }
}

impl Engine {
    /// Writes the claim alone. `durable` when something that must happen once follows (an
    /// agent's process); otherwise a crash may lose it harmlessly (the lease is taken again on
    /// redelivery), and it is deferred like the commit.
    pub(super) async fn take_claim(
        &self, run: &Run, claim: &Claim<'_>, durable: bool,
    ) -> Result<(), EngineError> {
        let now = self.now();
        let change =
            |r: &Run| claim.and_then(false, r, now, |c| Ok(RunChange::of(c.clone(), vec![])));
        let claimed = if durable {
            self.store()
                .update_run(&run.id, Durability::Now, &change)
                .await
        } else {
            self.store()
                .update_run(&run.id, Durability::Deferred, &change)
                .await
        };
        match claimed {
            Ok(_) => {
                claim.took();
                Ok(())
            }
            Err(StoreError::Rejected(r)) => Err(EngineError::Superseded(r)),
            Err(e) => Err(e.into()),
        }
    }
}
