//! Embedded mode's adapters: SQLite and in-memory stores and queues, and in-process notifiers.
//! The loop that drives the engine over them lives in `longrun-service` (`WorkerLoop`).

pub mod memory;
pub mod sqlite;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use longrun_domain::{OutcomeMessage, notification_for};
use longrun_ports::{Inbox, Notifier, NotifyError};
use tokio::sync::mpsc;
use tracing::info;

pub use memory::{InMemoryRunStore, InMemoryStepQueue};
pub use sqlite::{SqliteDb, SqliteRunStore, SqliteStepQueue};

/// After this many deliveries a message is dead-lettered (the SQS redrive policy's role): the
/// number both infrastructure templates give SQS, read from the same file at compile time.
pub const MAX_RECEIVES: u32 = json_u32(QUEUE_LIMITS, b"\"max_receives\"");

const QUEUE_LIMITS: &str = include_str!("../../../infra/terraform/queue.json");

/// The unsigned integer after `key` in a flat JSON object, at compile time (a missing key or
/// value fails the build, never a run).
const fn json_u32(json: &str, key: &[u8]) -> u32 {
    let b = json.as_bytes();
    let mut i = 0;
    while i + key.len() <= b.len() {
        let mut k = 0;
        while k < key.len() && b[i + k] == key[k] {
            k += 1;
        }
        if k == key.len() {
            i += k;
            while i < b.len() && (b[i] == b' ' || b[i] == b':' || b[i] == b'\n') {
                i += 1;
            }
            let mut n: u32 = 0;
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                n = n * 10 + (b[i] - b'0') as u32;
                i += 1;
            }
            assert!(
                i > start,
                "infra/terraform/queue.json: the key has no number"
            );
            return n;
        }
        i += 1;
    }
    panic!("infra/terraform/queue.json: the key is missing")
}

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
    store: Arc<dyn Inbox>,
}

impl InboxNotifier {
    pub fn new(store: Arc<dyn Inbox>) -> Self {
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_dead_letter_threshold_is_the_one_the_templates_read() {
        let limits: serde_json::Value = serde_json::from_str(super::QUEUE_LIMITS).unwrap();
        assert_eq!(limits["max_receives"], super::MAX_RECEIVES);
        const { assert!(super::MAX_RECEIVES >= 2, "one redelivery at least") };
    }
}
