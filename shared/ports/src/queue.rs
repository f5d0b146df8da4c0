//! The `StepQueue` port and its message: one message is one iteration of one run.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::durability::Durability;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepReason {
    Start,
    Continue,
    Respond,
    Resume,
    Sweep,
    ChildDone,
}

/// One queue message = one iteration (ARCHITECTURE.md, "The iteration").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepMessage {
    pub v: u32,
    pub run_id: String,
    pub iteration: u32,
    pub reason: StepReason,
}

impl StepMessage {
    pub fn new(run_id: &str, iteration: u32, reason: StepReason) -> Self {
        StepMessage {
            v: 1,
            run_id: run_id.to_string(),
            iteration,
            reason,
        }
    }

    /// FIFO dedup id. Re-sends that must get through the dedup window add a suffix; the claim,
    /// not the dedup id, is what prevents a double commit.
    pub fn dedup_id(&self) -> String {
        format!("{}#{}", self.run_id, self.iteration)
    }

    pub fn parse(body: &str) -> Result<StepMessage, String> {
        let msg: StepMessage = serde_json::from_str(body).map_err(|e| e.to_string())?;
        if msg.v != 1 {
            return Err(format!("unsupported message version {}", msg.v));
        }
        Ok(msg)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub message_id: String,
    pub receipt: String,
    pub body: String,
    /// 1 on first delivery.
    pub receive_count: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enqueued {
    Sent,
    /// Same dedup id seen within the dedup window: dropped.
    Duplicate,
}

#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("queue unavailable: {0}")]
    Unavailable(String),
    #[error("unknown or expired receipt")]
    StaleReceipt,
    #[error("queue operation not supported here: {0}")]
    Unsupported(&'static str),
}

pub type QueueResult<T> = Result<T, QueueError>;

impl QueueError {
    pub fn is_retryable(&self) -> bool {
        matches!(self, QueueError::Unavailable(_))
    }
}

pub const DEDUP_WINDOW_MS: i64 = 5 * 60 * 1000;

/// FIFO step queue grouped by run: at most one message per run is in flight, messages of a run
/// arrive in order, a dedup id seen in the last 5 minutes is dropped, and an unacknowledged
/// message becomes visible again after its visibility timeout.
#[async_trait]
pub trait StepQueue: Send + Sync {
    /// `Durability::Deferred` is for a send a crash may lose harmlessly because the message
    /// that caused it is not yet acknowledged (it is redelivered and sends again).
    async fn enqueue(
        &self, msg: &StepMessage, dedup_id: &str, delay_ms: u64, durability: Durability,
    ) -> QueueResult<Enqueued>;
    async fn receive(&self, max: usize, visibility_ms: u64) -> QueueResult<Vec<Delivery>>;
    async fn ack(&self, receipt: &str) -> QueueResult<()>;
    /// Acknowledges a delivery and, when its run's next message is due and no other run waits
    /// for a turn, delivers that message to the caller in the same operation, so a worker
    /// carries on with the run without a receive. Fair share is untouched: a receive would
    /// have had nothing else to deliver. `None`: acknowledged only; the next message goes out
    /// by receive.
    ///
    /// With `send`, the run's next step is sent first (undelayed, under its own dedup id,
    /// `Durability::Deferred`: the delivery it follows is not yet acknowledged), in one
    /// operation with the ack where the adapter can (SQLite: one write). Nothing is
    /// acknowledged when the send fails; a receipt gone stale (the message delivered again
    /// since) keeps the send and carries nothing on. Defaults to the send, then `ack`.
    async fn ack_and_next(
        &self, receipt: &str, send: Option<&StepMessage>, visibility_ms: u64,
    ) -> QueueResult<Option<Delivery>> {
        if let Some(msg) = send {
            return send_then_ack_and_next(self, msg, receipt, visibility_ms).await;
        }
        self.ack(receipt).await.map(|()| None)
    }
    /// Sets the message's remaining invisibility (0 releases it now).
    async fn extend(&self, receipt: &str, visibility_ms: u64) -> QueueResult<()>;
}

/// `ack_and_next` with a send as two calls: the send, then `ack_and_next` without one. The
/// default, and the way an adapter goes when it cannot make them one write.
pub async fn send_then_ack_and_next<Q: StepQueue + ?Sized>(
    queue: &Q, msg: &StepMessage, receipt: &str, visibility_ms: u64,
) -> QueueResult<Option<Delivery>> {
    queue
        .enqueue(msg, &msg.dedup_id(), 0, Durability::Deferred)
        .await?;
    match queue.ack_and_next(receipt, None, visibility_ms).await {
        Err(QueueError::StaleReceipt) => Ok(None),
        carried => carried,
    }
}
