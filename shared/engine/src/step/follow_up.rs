//! What follows a commit, for the worker and the API alike: the children it listed started,
//! the next step, the outcome notification, attached children canceled with their parent, a child's end
//! reported to its parent, and the sweeper's nudges. Never does an iteration's work.

use std::sync::Arc;

use longrun_domain::change;
use longrun_domain::run::{Run, RunStatus};
use longrun_domain::{Rejection, RunChange};
use tracing::info;

use super::EngineError;
use longrun_domain::OutcomeMessage;
use longrun_ports::Durability;
use longrun_ports::{Clock, Notifier, StepMessage, StepQueue, StepReason, Store, StoreError};

/// What one sweep did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SweepReport {
    /// Runs whose next step was sent again.
    pub requeued: Vec<String>,
    /// Runs whose outcome was published again.
    pub republished: Vec<String>,
    /// Stale-looking runs left alone because a worker still holds a live lease.
    pub leased: usize,
    /// Runs started by due schedules.
    pub started: Vec<String>,
    /// Runs whose wait for their children timed out, sent on without them.
    pub woken: Vec<String>,
    /// Webhook deliveries attempted (the sweeper Lambda's pass over the outbox).
    pub webhook_attempts: usize,
}

/// The step that follows a run's last commit, if it goes on: the one place it is built, for
/// the worker (sent, or handed back with the ack), the API's writes and recovery.
pub fn next_step(run: &Run) -> Option<StepMessage> {
    let reason = match *run.status {
        RunStatus::Running => StepReason::Continue,
        RunStatus::Queued => StepReason::Resume,
        _ => return None,
    };
    Some(StepMessage::new(&run.id, run.iteration + 1, reason))
}

/// Sends what follows a commit: the next step, or the outcome notification. Shared by the
/// worker and the API (respond, continue, cancel).
#[derive(Clone)]
pub struct FollowUp {
    pub store: Arc<dyn Store>,
    pub queue: Arc<dyn StepQueue>,
    pub notifier: Arc<dyn Notifier>,
    pub clock: Arc<dyn Clock>,
    pub app_base_url: String,
}

impl FollowUp {
    pub fn link(&self, run_id: &str) -> String {
        format!("{}/runs/{run_id}", self.app_base_url.trim_end_matches('/'))
    }

    /// The next step after a change made outside an iteration (a create, an answer, a
    /// continue, a child's end). Its dedup id carries the run's event count: a step for the
    /// same iteration sent earlier may still be in the queue's dedup window (one that arrived
    /// while the run was paused and was dropped), and this one must not be taken for it; the
    /// same change sent again has the same count, so a repeat is still dropped.
    pub async fn enqueue_next(&self, run: &Run, reason: StepReason) -> Result<(), EngineError> {
        let msg = StepMessage::new(&run.id, run.iteration + 1, reason);
        let dedup = format!("{}@{}", msg.dedup_id(), run.event_seq);
        self.queue.enqueue(&msg, &dedup, 0, Durability::Now).await?;
        Ok(())
    }

    /// Publishes the run's outcome once, then records that it was sent. A crash in between
    /// publishes again later; notification ids make that harmless downstream.
    pub async fn publish_outcome(&self, run: &Run) -> Result<(), EngineError> {
        if run.notified {
            return Ok(());
        }
        let summary = run
            .report
            .as_ref()
            .map(|r| r.headline.clone())
            .unwrap_or_default();
        let now = self.clock.now_ms();
        let (title, message) = longrun_domain::headline(run);
        let msg = OutcomeMessage {
            run_id: run.id.clone(),
            user_id: run.user_id.clone(),
            iteration: run.iteration,
            status: *run.status,
            stopping_reason: run.stopping_reason.clone(),
            summary,
            link: self.link(&run.id),
            iterations: run.metrics.iterations,
            tokens: run.metrics.tokens(),
            cost_usd: run.metrics.cost_usd,
            at: now,
            duration_ms: (run.ended_at.unwrap_or(now) - run.created_at).max(0) as u64,
            questions: run.questions.clone(),
            title,
            message,
        };
        self.notifier.publish(&msg).await?;
        let marked = self
            .store
            .update_run(&run.id, Durability::Now, &|r| {
                change::mark_notified(r, msg.iteration, msg.status)
                    .map(|next| RunChange::of(next, vec![]))
                    .ok_or(Rejection::Conflict("already notified, or moved on".into()))
            })
            .await;
        match marked {
            Ok(_) | Err(StoreError::Rejected(_)) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Nudges runs not written for `stale_ms`: a claimable run with no live lease gets its
    /// next step again (a dedup id with a sweep suffix gets past the dedup window; the claim
    /// makes a duplicate harmless), and an outcome never marked published is published.
    pub async fn sweep(&self, stale_ms: i64, limit: usize) -> Result<SweepReport, EngineError> {
        let now = self.clock.now_ms();
        let runs = self.store.stale_runs(now - stale_ms, limit).await?;
        let mut report = self
            .recover(runs, &format!("sweep-{}", now / 60_000))
            .await?;
        report.woken = self.wake_waits(limit).await?;
        Ok(report)
    }

    /// Sends on the runs whose wait for their children timed out (`child_wait_timeout_s`):
    /// each goes on without the children still running (or ends, with no iteration left).
    /// Repeatable: a run woken already, or by its children meanwhile, is left alone.
    pub async fn wake_waits(&self, limit: usize) -> Result<Vec<String>, EngineError> {
        let now = self.clock.now_ms();
        let mut woken = vec![];
        for run in self.store.waits_due(now, limit).await? {
            let docs = self.store.docs(&run.id, "", 10_000).await?;
            match self
                .store
                .update_run(&run.id, Durability::Now, &|r| {
                    change::child_wait_timed_out(r, &docs, now)
                })
                .await
            {
                Ok(run) => {
                    info!(run_id = %run.id, "the wait for children timed out; the run goes on");
                    self.send(&run).await?;
                    woken.push(run.id);
                }
                Err(StoreError::Rejected(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(woken)
    }

    /// The one recovery path, for runs that may owe something: a claimable run without a live
    /// lease gets its next step again (dedup id tagged with `tag`, so it passes the FIFO
    /// window; the claim makes a duplicate harmless), an unpublished outcome is followed up
    /// again. The sweeper finds such runs by staleness, `serve` by what its queue lacks.
    pub async fn recover(&self, runs: Vec<Run>, tag: &str) -> Result<SweepReport, EngineError> {
        let now = self.clock.now_ms();
        let mut report = SweepReport::default();
        for run in runs {
            if run.status.is_claimable() {
                if run.lease_is_live(now) {
                    report.leased += 1;
                    continue;
                }
                let msg = StepMessage::new(&run.id, run.iteration + 1, StepReason::Sweep);
                let dedup = format!("{}#{tag}", msg.dedup_id());
                self.queue.enqueue(&msg, &dedup, 0, Durability::Now).await?;
                info!(run_id = %run.id, iteration = run.iteration + 1, "re-sent a stalled step");
                report.requeued.push(run.id);
            } else if !run.notified {
                self.send(&run).await?;
                info!(run_id = %run.id, status = %run.status, "re-published an outcome");
                report.republished.push(run.id);
            }
        }
        Ok(report)
    }

    /// `send` from inside a worker step, whose message is still unacknowledged: a send
    /// lost in a crash is re-sent when the message is redelivered.
    pub async fn send_deferred(&self, run: &Run) -> Result<(), EngineError> {
        if run.status == RunStatus::Running
            && let Some(msg) = next_step(run)
        {
            self.queue
                .enqueue(&msg, &msg.dedup_id(), 0, Durability::Deferred)
                .await?;
            return Ok(());
        }
        self.send(run).await
    }

    /// What must follow a committed iteration: the next message, or the outcome.
    pub async fn send(&self, run: &Run) -> Result<(), EngineError> {
        if let Some(msg) = next_step(run) {
            self.queue
                .enqueue(&msg, &msg.dedup_id(), 0, Durability::Now)
                .await?;
            return Ok(());
        }
        match *run.status {
            // The user holds it; `continue` sends the next step.
            RunStatus::Paused => Ok(()),
            _ => {
                if run.status.is_ended() {
                    self.cancel_children(run).await?;
                    self.settle_in_parent(run).await?;
                }
                self.publish_outcome(run).await
            }
        }
    }

    /// An ended run takes its attached active children with it: queued or waiting ones end
    /// now, a running one before its next model call. Detached children run on.
    async fn cancel_children(&self, run: &Run) -> Result<(), EngineError> {
        for child in run.children.iter().filter(|c| c.is_attached_and_active()) {
            let docs = self.store.docs(&child.id, "", 10_000).await?;
            let now = self.clock.now_ms();
            match self
                .store
                .update_run(&child.id, Durability::Now, &|r| {
                    change::request_cancel(r, &docs, now)
                })
                .await
            {
                Ok(c) if c.status.is_ended() => Box::pin(self.send(&c)).await?,
                Ok(_) | Err(StoreError::Rejected(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// An ended child reports to its parent, which wakes if it waited for its last child.
    async fn settle_in_parent(&self, child: &Run) -> Result<(), EngineError> {
        let Some(parent_id) = &child.parent_run_id else {
            return Ok(());
        };
        let docs = self.store.docs(parent_id, "", 10_000).await?;
        let now = self.clock.now_ms();
        match self
            .store
            .update_run(parent_id, Durability::Now, &|p| {
                change::child_finished(p, child, &docs, now)
            })
            .await
        {
            Ok(parent) if parent.status == RunStatus::Queued => {
                self.enqueue_next(&parent, StepReason::ChildDone).await
            }
            // Out of budget for what its children found: its outcome goes out now.
            Ok(parent) if parent.status.is_ended() => Box::pin(self.send(&parent)).await,
            Ok(_) | Err(StoreError::Rejected(_)) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Creates and starts the children iteration `n` of `parent` spawned, once its commit
    /// landed. Repeatable: a child that exists is left alone (a redelivered iteration, or a
    /// crash between the commit and this, starts only what is missing).
    pub async fn start_children(&self, parent: &Run, n: u32) -> Result<(), EngineError> {
        for child in change::children_to_start(parent, n) {
            let now = self.clock.now_ms();
            let created = match self
                .store
                .create_run(change::spawn_child(parent, &child, now))
                .await
            {
                Ok(run) => run,
                Err(StoreError::Rejected(_)) => match self.store.get_run(&child.id).await? {
                    Some(run) if run.parent_run_id.as_deref() == Some(&parent.id) => run,
                    _ => {
                        return Err(EngineError::Store(StoreError::Rejected(
                            Rejection::Conflict(format!(
                                "run {} exists and is not a child of {}",
                                child.id, parent.id
                            )),
                        )));
                    }
                },
                Err(e) => return Err(e.into()),
            };
            if created.iteration == 0 && created.status == RunStatus::Queued {
                self.enqueue_next(&created, StepReason::Start).await?;
            }
        }
        Ok(())
    }
}
