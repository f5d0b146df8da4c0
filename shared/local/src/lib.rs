//! Embedded mode: SQLite and in-memory adapters, the in-process notifier, and the worker loop
//! that stands in for the SQS → Lambda trigger.

pub mod memory;
pub mod sqlite;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures_util::future::join_all;
use longrun_engine::ports::{
    Delivery, Notifier, NotifyError, OutcomeMessage, RunStore, StepMessage, StepQueue,
    notification_for,
};
use longrun_engine::{Engine, EngineError, StepOutcome};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;
use tracing::{error, info, warn};

pub use memory::{InMemoryRunStore, InMemoryStepQueue};
pub use sqlite::{SqliteDb, SqliteRunStore, SqliteStepQueue};

/// After this many deliveries a message is dead-lettered (the SQS redrive policy's role).
pub const MAX_RECEIVES: u32 = 10;

/// Publishes outcomes to an in-process consumer (the SNS → notifier Lambda's role).
pub struct ChannelNotifier {
    tx: mpsc::UnboundedSender<OutcomeMessage>,
}

impl ChannelNotifier {
    pub fn new() -> (Self, mpsc::UnboundedReceiver<OutcomeMessage>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (ChannelNotifier { tx }, rx)
    }
}

#[async_trait]
impl Notifier for ChannelNotifier {
    async fn publish(&self, msg: &OutcomeMessage) -> Result<(), NotifyError> {
        self.tx
            .send(msg.clone())
            .map_err(|_| NotifyError("notification consumer has stopped".into()))
    }
}

/// The embedded stand-in for SNS → notifier: the outcome is written to its owner's inbox
/// (idempotent per outcome) before `publish` returns, so a run is marked notified only once
/// its notification is durable; a crash in between publishes it again, harmlessly.
pub struct InboxNotifier {
    store: Arc<dyn RunStore>,
}

impl InboxNotifier {
    pub fn new(store: Arc<dyn RunStore>) -> Self {
        InboxNotifier { store }
    }
}

#[async_trait]
impl Notifier for InboxNotifier {
    async fn publish(&self, msg: &OutcomeMessage) -> Result<(), NotifyError> {
        let n = notification_for(msg);
        match self.store.put_notification(&n).await {
            Ok(true) => {
                info!(run_id = %msg.run_id, status = %msg.status, link = %msg.link, "run outcome");
                Ok(())
            }
            Ok(false) => Ok(()),
            Err(e) => Err(NotifyError(format!("recording the notification: {e}"))),
        }
    }
}

/// Records every published outcome; for tests and embedded runs that want to look.
#[derive(Default)]
pub struct RecordingNotifier {
    pub published: Mutex<Vec<OutcomeMessage>>,
}

#[async_trait]
impl Notifier for RecordingNotifier {
    async fn publish(&self, msg: &OutcomeMessage) -> Result<(), NotifyError> {
        self.published
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(msg.clone());
        Ok(())
    }
}

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
        handle_delivery(
            &self.engine,
            &*self.queue,
            d,
            owner,
            self.config.visibility_ms,
        )
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
            // time (or after `idle_sleep`), not with one receive per finished step — a receive
            // looks at every ready run to pick fairly.
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
                            inflight.spawn(async move { me.handle(&d, &owner).await });
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

/// One delivery: step → ack, or back to the queue after a delay. Returns true when the step
/// crashed (fault injection): the message is left in flight.
pub async fn handle_delivery(
    engine: &Engine,
    queue: &dyn StepQueue,
    d: &Delivery,
    owner: &str,
    visibility_ms: u64,
) -> bool {
    let msg = match StepMessage::parse(&d.body) {
        Ok(m) => m,
        Err(e) => {
            // It would never succeed: acknowledge it so it cannot block its group.
            warn!(message_id = %d.message_id, error = %e, metric = "unparseable_step_message", "dropping unparseable message");
            let _ = queue.ack(&d.receipt).await;
            return false;
        }
    };
    match engine.step(&msg, owner).await {
        Ok(StepOutcome::Done) | Ok(StepOutcome::Dropped(_)) => {
            if let Err(e) = queue.ack(&d.receipt).await {
                warn!(run_id = %msg.run_id, error = %e, "ack failed; the message will be redelivered and healed");
            }
            false
        }
        Ok(StepOutcome::Retry { delay_ms }) => {
            let _ = queue.extend(&d.receipt, delay_ms).await;
            false
        }
        Err(EngineError::Crashed(point)) => {
            warn!(run_id = %msg.run_id, ?point, "worker crashed (fault injection)");
            true
        }
        Err(e) => {
            let delay = if e.is_retryable() {
                1_000
            } else {
                visibility_ms
            };
            error!(run_id = %msg.run_id, iteration = msg.iteration, error = %e, "step failed; will retry");
            let _ = queue.extend(&d.receipt, delay.min(visibility_ms)).await;
            false
        }
    }
}
