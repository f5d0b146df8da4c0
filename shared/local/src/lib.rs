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
