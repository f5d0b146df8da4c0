//! The notifier: each SNS outcome becomes one in-app notification and one delivery per webhook
//! of its owner, written together in the outbox (idempotent on the outcome's id), then each
//! delivery attempted once at once (`longrun_service::outbox`). Retries are the outbox's:
//! the sweeper attempts what is due every minute, for as long as the retry policy says.

use aws_lambda_events::event::sns::SnsEvent;
use longrun_domain::OutcomeMessage;
use longrun_ports::StoreError;
use longrun_service::{Outbox, OutboxConfig, Platform};
use tracing::warn;

pub use longrun_service::webhooks::{DELIVERY_HEADER, SIGNATURE_HEADER, payload, signature};

/// Recording the outcome failed: the record fails, so SNS (Lambda's async retries) brings it
/// again.
pub type NotifierError = StoreError;

pub struct NotifierHandler {
    outbox: Outbox,
}

impl NotifierHandler {
    pub fn new(platform: &Platform) -> Self {
        Self::with_config(platform, OutboxConfig::default())
    }

    /// With another retry policy or lease (tests).
    pub fn with_config(platform: &Platform, config: OutboxConfig) -> Self {
        NotifierHandler {
            outbox: platform.outbox(config),
        }
    }

    /// Fails only when an outcome could not be recorded: a webhook that fails is the outbox's
    /// to retry, not SNS's (whose few retries would end, and could not say which webhook).
    pub async fn handle(&self, event: SnsEvent) -> Result<(), NotifierError> {
        for record in event.records {
            match serde_json::from_str::<OutcomeMessage>(&record.sns.message) {
                Ok(msg) => self.deliver(&msg).await?,
                // It would never parse: retrying only delays the rest.
                Err(e) => {
                    warn!(message_id = %record.sns.message_id, error = %e, "skipping an unreadable outcome")
                }
            }
        }
        Ok(())
    }

    pub async fn deliver(&self, msg: &OutcomeMessage) -> Result<(), NotifierError> {
        self.outbox.deliver_now(msg).await.map(|_| ())
    }
}
