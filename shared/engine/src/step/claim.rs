//! The fenced claim of an iteration: checked when the message arrives, written with the
//! attempt's first write (its first model call's spend, or its commit).

use std::sync::atomic::{AtomicBool, Ordering};

use longrun_domain::run::{Run, RunPatch};
use longrun_domain::{Rejection, RunChange, change};

use super::StepOutcome;

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
    taken: AtomicBool,
}

impl<'a> Claim<'a> {
    pub fn new(n: u32, owner: &'a str, lease_ms: u64, seen_patch: Option<RunPatch>) -> Self {
        Claim {
            n,
            owner,
            lease_ms,
            seen_patch,
            taken: AtomicBool::new(false),
        }
    }

    pub fn is_taken(&self) -> bool {
        self.taken.load(Ordering::SeqCst)
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

    /// Marks the claim written: later writes no longer carry it.
    pub fn took(&self) {
        self.taken.store(true, Ordering::SeqCst);
    }
}
