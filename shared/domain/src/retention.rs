//! Retention: which ended runs an operator's policy lets a store delete, and the one JSON
//! document a run is exported as (and imported from). Pure: the stores and the retention pass
//! act on what these decide.

use serde::{Deserialize, Serialize};

use crate::outbox::{DeliveryState, WebhookDelivery};
use crate::outcome::Notification;
use crate::record::{Doc, Event, IterationRecord, PadEntry};
use crate::run::Run;

/// Names an exported run's layout; an import refuses any other.
pub const EXPORT_FORMAT: &str = "longrun.run.v1";

/// Why a run stays although the policy names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// Not ended: queued, running, waiting or paused.
    Active,
    /// Ended less than the policy's age ago (or has no end time).
    Young,
    /// Its outcome is not yet published: the sweeper still owes it.
    Unnotified,
    /// A webhook delivery of its outcome is still being attempted.
    PendingDelivery,
    /// Its parent has not ended: the parent may still read it.
    ParentActive,
}

/// Whether `run` may be deleted by a policy that keeps runs ended at or after `ended_before`.
/// `pending_delivery`: a webhook delivery of the run is still pending; `parent`: its parent
/// run, when it has one that still exists.
pub fn verdict(
    run: &Run, ended_before: i64, pending_delivery: bool, parent: Option<&Run>,
) -> Result<(), Keep> {
    if !run.status.is_ended() {
        return Err(Keep::Active);
    }
    if run.ended_at.is_none_or(|at| at >= ended_before) {
        return Err(Keep::Young);
    }
    if !run.notified {
        return Err(Keep::Unnotified);
    }
    if pending_delivery {
        return Err(Keep::PendingDelivery);
    }
    if parent.is_some_and(|p| !p.status.is_ended()) {
        return Err(Keep::ParentActive);
    }
    Ok(())
}

/// Whether any of `deliveries` is still being attempted.
pub fn any_pending(deliveries: &[WebhookDelivery]) -> bool {
    deliveries.iter().any(|d| d.state == DeliveryState::Pending)
}

/// A run and everything stored under it, as one JSON document: what `longrun export` writes,
/// the retention policy's export mode files before deleting, and `longrun import` restores
/// with the same ids. Lists are in their store order (events by seq, iterations by n, docs
/// by path, scratchpad by n, notifications by id, deliveries by (id, hook)).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunExport {
    /// Always [`EXPORT_FORMAT`].
    pub format: String,
    pub run: Run,
    pub iterations: Vec<IterationRecord>,
    pub events: Vec<Event>,
    pub docs: Vec<Doc>,
    pub scratchpad: Vec<PadEntry>,
    /// The run's inbox entries (its owner's notifications of its outcomes).
    pub notifications: Vec<Notification>,
    /// The run's webhook deliveries (embedded mode's outbox), delivered or not.
    pub deliveries: Vec<WebhookDelivery>,
}

impl RunExport {
    /// Puts every list in its canonical order, so two exports of one run compare equal
    /// whatever order a store read them in.
    pub fn normalized(mut self) -> RunExport {
        self.iterations.sort_by_key(|r| r.n);
        self.events.sort_by_key(|e| e.seq);
        self.docs.sort_by(|a, b| a.path.cmp(&b.path));
        self.scratchpad.sort_by_key(|p| p.n);
        self.notifications.sort_by(|a, b| a.id.cmp(&b.id));
        self.deliveries
            .sort_by(|a, b| (&a.id, a.hook).cmp(&(&b.id, b.hook)));
        self
    }

    /// Why a document cannot be imported as it stands: another format, a run that has not
    /// ended, or parts that name another run or user than its run.
    pub fn check(&self) -> Result<(), String> {
        if self.format != EXPORT_FORMAT {
            return Err(format!(
                "format must be {EXPORT_FORMAT}, got {:?}",
                self.format
            ));
        }
        let (id, user) = (&self.run.id, &self.run.user_id);
        // An active run would need a slot in its owner's active count and a step in the queue.
        if !self.run.status.is_ended() {
            return Err(format!(
                "run {id} is {}; only ended runs can be imported (export it once it has ended)",
                self.run.status
            ));
        }
        let foreign = self.events.iter().any(|e| &e.run_id != id)
            || self
                .notifications
                .iter()
                .any(|n| &n.run_id != id || &n.user_id != user)
            || self
                .deliveries
                .iter()
                .any(|d| &d.run_id != id || &d.user_id != user);
        if foreign {
            return Err(format!(
                "parts of the document belong to another run than {id}"
            ));
        }
        if self.events.len() as u64 != self.run.event_seq {
            return Err(format!(
                "run {id} has event_seq {} but the document holds {} events",
                self.run.event_seq,
                self.events.len()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::RunStatus;
    use crate::testing::sample_run;

    fn ended(status: RunStatus, at: i64) -> Run {
        let mut run = sample_run();
        run.transition_to(RunStatus::Running, 1).unwrap_or(());
        run.transition_to(status, at).unwrap_or(());
        run.notified = true;
        run
    }

    #[test]
    fn an_ended_notified_run_older_than_the_policy_may_go() {
        let run = ended(RunStatus::Completed, 100);

        assert_eq!(verdict(&run, 101, false, None), Ok(()));
    }

    #[test]
    fn a_run_that_is_active_young_unnotified_or_owed_a_delivery_stays() {
        let active = sample_run();
        let young = ended(RunStatus::Failed, 100);
        let mut unnotified = ended(RunStatus::Stopped, 100);
        unnotified.notified = false;
        let done = ended(RunStatus::Completed, 100);

        assert_eq!(verdict(&active, i64::MAX, false, None), Err(Keep::Active));
        assert_eq!(verdict(&young, 100, false, None), Err(Keep::Young));
        assert_eq!(
            verdict(&unnotified, 101, false, None),
            Err(Keep::Unnotified)
        );
        assert_eq!(verdict(&done, 101, true, None), Err(Keep::PendingDelivery));
    }

    #[test]
    fn a_child_stays_while_its_parent_has_not_ended() {
        let child = ended(RunStatus::Completed, 100);
        let parent = sample_run();
        let parent_done = ended(RunStatus::Canceled, 50);

        assert_eq!(
            verdict(&child, 101, false, Some(&parent)),
            Err(Keep::ParentActive)
        );
        assert_eq!(verdict(&child, 101, false, Some(&parent_done)), Ok(()));
    }

    #[test]
    fn a_document_of_another_format_missing_events_or_an_active_run_is_refused() {
        let run = ended(RunStatus::Completed, 100);
        let mut doc = RunExport {
            format: "other".into(),
            run,
            iterations: vec![],
            events: vec![],
            docs: vec![],
            scratchpad: vec![],
            notifications: vec![],
            deliveries: vec![],
        };
        let wrong_format = doc.check();
        doc.format = EXPORT_FORMAT.into();
        doc.run.event_seq = 2;
        let missing = doc.check();
        doc.run.event_seq = 0;

        let ended = doc.check();
        doc.run = sample_run();
        let active = doc.check();

        assert!(wrong_format.unwrap_err().contains(EXPORT_FORMAT));
        assert!(missing.unwrap_err().contains("event_seq 2"));
        assert_eq!(ended, Ok(()));
        assert!(active.unwrap_err().contains("only ended runs"));
    }
}
