//! The notifier: each SNS outcome becomes one in-app notification (idempotent on its id) and
//! one signed POST to each of the owner's webhooks (`longrun_service::webhooks`).

use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::event::sns::SnsEvent;
use longrun_domain::OutcomeMessage;
use longrun_ports::Store;
use longrun_service::OutcomeDelivery;
use longrun_service::config::FetchConfig;
use longrun_service::webhooks::{WebhookError, WebhookSender};
use tracing::warn;

pub use longrun_service::webhooks::{DELIVERY_HEADER, SIGNATURE_HEADER, payload, signature};

pub type NotifierError = WebhookError;

pub struct NotifierHandler {
    delivery: OutcomeDelivery,
}

impl NotifierHandler {
    /// `backoff`: the waits between webhook attempts (its length + 1 attempts in all).
    pub fn new(
        store: Arc<dyn Store>, fetch: &FetchConfig, backoff: Vec<Duration>,
    ) -> Result<Self, reqwest::Error> {
        let webhooks = WebhookSender::new(fetch, backoff)?;
        Ok(NotifierHandler {
            delivery: OutcomeDelivery::new(store.clone(), store, webhooks),
        })
    }

    /// A failed delivery fails the invocation, so SNS delivers the outcome again; the inbox id
    /// and the delivery id make the repeat land once.
    pub async fn handle(&self, event: SnsEvent) -> Result<(), NotifierError> {
        for record in event.records {
            match serde_json::from_str::<OutcomeMessage>(&record.sns.message) {
                Ok(msg) => self.delivery.deliver(&msg).await?,
                // It would never parse: retrying only delays the rest.
                Err(e) => {
                    warn!(message_id = %record.sns.message_id, error = %e, "skipping an unreadable outcome")
                }
            }
        }
        Ok(())
    }

    pub async fn deliver(&self, msg: &OutcomeMessage) -> Result<(), NotifierError> {
        self.delivery.deliver(msg).await
    }
}
