//! The in-process trigger `serve` runs: receive → step → settle, the way the SQS event source
//! mapping drives the worker Lambda, with the same trigger policy.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::join_all;
use longrun_engine::{Engine, EngineError};
use longrun_ports::{Delivery, QueueError, StepQueue};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::{error, warn};

use crate::trigger::{
    Handled, RETRYABLE_DELAY_MS, Settle, retry_later, step_body, step_body_handing_back,
};

#[derive(Clone, Debug)]
pub struct WorkerConfig {
    pub visibility_ms: u64,
    /// Messages taken per receive; each is a different run.
    pub batch: usize,
    /// Iterations worked on at once. An iteration mostly waits on a model, so this is sized
    /// for thousands: what bounds model traffic is the per-model limits, not this.
    pub max_inflight: usize,
    pub idle_sleep: Duration,
}

/// Sized for thousands of runs in flight: an iteration waiting on a model is a parked task of
/// a few tens of KB (BENCHMARKS.md, capacity), so 4,096 of them fit in well under 300 MB.
pub const DEFAULT_MAX_INFLIGHT: usize = 4_096;

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            visibility_ms: 30_000,
            batch: 64,
            max_inflight: DEFAULT_MAX_INFLIGHT,
            idle_sleep: Duration::from_millis(25),
        }
    }
}

/// The in-process trigger: receive → step → ack, the way the SQS event source mapping drives
/// the worker Lambda.
pub struct WorkerLoop {
    engine: Arc<Engine>,
    queue: Arc<dyn StepQueue>,
    config: WorkerConfig,
    owner: Mutex<String>,
}

fn new_owner() -> String {
    format!("worker-{}", uuid::Uuid::new_v4().simple())
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PollStats {
    pub received: usize,
    pub crashed: usize,
}

impl WorkerLoop {
    pub fn new(engine: Arc<Engine>, queue: Arc<dyn StepQueue>, config: WorkerConfig) -> Self {
        WorkerLoop {
            engine,
            queue,
            config,
            owner: Mutex::new(new_owner()),
        }
    }

    fn owner(&self) -> String {
        self.owner.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// A crashed worker comes back as a new process with a new identity.
    fn restart(&self) {
        *self.owner.lock().unwrap_or_else(|e| e.into_inner()) = new_owner();
    }

    pub async fn poll_once(&self) -> Result<PollStats, EngineError> {
        let deliveries = self
            .queue
            .receive(self.config.batch, self.config.visibility_ms)
            .await?;
        let received = deliveries.len();
        let owner = self.owner();
        let results = join_all(deliveries.iter().map(|d| self.handle(d, &owner))).await;
        let crashed = results.iter().filter(|c| **c).count();
        if crashed > 0 {
            self.restart();
        }
        Ok(PollStats { received, crashed })
    }

    async fn handle(&self, d: &Delivery, owner: &str) -> bool {
        handle_delivery(&self.engine, &*self.queue, d, owner).await
    }

    /// A delivery, then its run's next steps while the queue hands them back, until shutdown.
    async fn carry(&self, first: Delivery, owner: &str, shutdown: &watch::Receiver<bool>) -> bool {
        let visibility = self.config.visibility_ms;
        carry_delivery(&self.engine, &*self.queue, first, owner, visibility, || {
            !*shutdown.borrow()
        })
        .await
    }

    /// Keeps up to `max_inflight` steps in flight until `shutdown` turns true, taking new
    /// messages as soon as slots free (a step never waits for an unrelated slower one), then
    /// drains.
    pub async fn run(self: Arc<Self>, mut shutdown: watch::Receiver<bool>) {
        let mut inflight: JoinSet<bool> = JoinSet::new();
        let mut last_receive = std::time::Instant::now();
        loop {
            if *shutdown.borrow() {
                while inflight.join_next().await.is_some() {}
                return;
            }
            let free = self
                .config
                .max_inflight
                .saturating_sub(inflight.len())
                .min(self.config.batch);
            // Near the in-flight bound, slots free one by one: they are filled a batch at a
            // time (or after `idle_sleep`), not with one receive per finished step — each
            // receive is a write on the one connection the API reads through.
            let due = free == self.config.batch
                || inflight.is_empty()
                || last_receive.elapsed() >= self.config.idle_sleep;
            let mut received = 0;
            if free > 0 && due {
                last_receive = std::time::Instant::now();
                match self.queue.receive(free, self.config.visibility_ms).await {
                    Ok(deliveries) => {
                        received = deliveries.len();
                        let owner = self.owner();
                        for d in deliveries {
                            let me = self.clone();
                            let owner = owner.clone();
                            let shutdown = shutdown.clone();
                            inflight.spawn(async move { me.carry(d, &owner, &shutdown).await });
                        }
                    }
                    Err(e) => error!(error = %e, "receive failed"),
                }
            }
            if received > 0 && received == free {
                continue;
            }
            tokio::select! {
                Some(done) = inflight.join_next(), if !inflight.is_empty() => {
                    if matches!(done, Ok(true)) {
                        self.restart();
                    }
                }
                _ = tokio::time::sleep(self.config.idle_sleep) => {}
                _ = shutdown.changed() => {}
            }
        }
    }
}

/// One delivery, settled by the trigger policy. Returns true when the step crashed (fault
/// injection): the message is left in flight.
pub async fn handle_delivery(
    engine: &Engine, queue: &dyn StepQueue, d: &Delivery, owner: &str,
) -> bool {
    let handled = step_body(engine, &d.body, &d.message_id, owner, None).await;
    settle_delivery(queue, d, &handled, None).await;
    handled.crashed
}

/// One delivery, then its run's next steps for as long as the queue hands them straight back
/// with the ack (no other run waiting) and `go_on` holds: a run at work keeps its worker
/// without a receive. Returns true when a step crashed; its message is left in flight.
pub async fn carry_delivery(
    engine: &Engine, queue: &dyn StepQueue, first: Delivery, owner: &str, visibility_ms: u64,
    go_on: impl Fn() -> bool,
) -> bool {
    let mut d = first;
    loop {
        // Decided before the step: a step that may carry on hands its next step back, to be
        // sent with the ack in one write.
        let carry_on = go_on().then_some(visibility_ms);
        let handled = step_body_handing_back(
            engine,
            &d.body,
            &d.message_id,
            owner,
            None,
            carry_on.is_some(),
        )
        .await;
        match settle_delivery(queue, &d, &handled, carry_on).await {
            Some(next) => d = next,
            None => return handled.crashed,
        }
    }
}

/// Settles a handled delivery. With `carry_on` (a visibility timeout), an acknowledged one
/// may come back with its run's next message, delivered to the caller.
async fn settle_delivery(
    queue: &dyn StepQueue, d: &Delivery, handled: &Handled, carry_on: Option<u64>,
) -> Option<Delivery> {
    let run_id = handled
        .msg
        .as_ref()
        .map(|m| m.run_id.as_str())
        .unwrap_or("?");
    let failed = |e: QueueError| {
        warn!(run_id, error = %e, "ack failed; the message will be redelivered and healed");
    };
    match (handled.settle, carry_on) {
        (Settle::Ack, Some(visibility)) => {
            let next = handled.next.as_ref();
            match queue.ack_and_next(&d.receipt, next, visibility).await {
                Ok(carried) => return carried,
                Err(e) if next.is_some() => {
                    // Unacknowledged: it comes back soon, finds its iteration committed and
                    // sends the next step again.
                    warn!(run_id, error = %e, "the next step was not sent with the ack");
                    let _ = queue.extend(&d.receipt, RETRYABLE_DELAY_MS).await;
                }
                Err(e) => failed(e),
            }
        }
        (Settle::Ack, None) => {
            if let Err(e) = queue.ack(&d.receipt).await {
                failed(e);
            }
        }
        (Settle::RetryAfter(ms), _) => retry_later(queue, &d.receipt, ms, &d.message_id).await,
        (Settle::Leave, _) => {}
    }
    None
}
