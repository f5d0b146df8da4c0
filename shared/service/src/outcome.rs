//! The one outcome delivery, shared by the notifier Lambda and `serve`: the owner's inbox entry
//! first (idempotent on its id), then one signed POST to each of their webhooks, every attempt
//! carrying the same delivery id. The inbox entry is what marks a run notified; a webhook
//! failure is returned to the caller, whose trigger decides about retrying (SNS redelivers to
//! the notifier; `serve` logs it after the sender's own backoff).

use std::sync::Arc;

use longrun_domain::{OutcomeMessage, notification_for};
use longrun_ports::{Inbox, UserCatalog};
use tracing::info;

use crate::webhooks::{WebhookError, WebhookSender};

pub struct OutcomeDelivery {
    inbox: Arc<dyn Inbox>,
    catalog: Arc<dyn UserCatalog>,
    webhooks: WebhookSender,
}

impl OutcomeDelivery {
    pub fn new(
        inbox: Arc<dyn Inbox>, catalog: Arc<dyn UserCatalog>, webhooks: WebhookSender,
    ) -> Self {
        OutcomeDelivery {
            inbox,
            catalog,
            webhooks,
        }
    }

    /// The inbox entry alone: durable when this returns.
    pub async fn record(&self, msg: &OutcomeMessage) -> Result<(), WebhookError> {
        let note = notification_for(msg);
        if self.inbox.put_notification(&note).await? {
            info!(run_id = %msg.run_id, status = %msg.status, link = %msg.link, "run outcome");
        }
        Ok(())
    }

    /// The webhooks alone, under the outcome's delivery id.
    pub async fn post(&self, msg: &OutcomeMessage) -> Result<(), WebhookError> {
        let delivery = msg.notification_id();
        self.webhooks.post_all(&*self.catalog, msg, &delivery).await
    }

    /// Both, in order.
    pub async fn deliver(&self, msg: &OutcomeMessage) -> Result<(), WebhookError> {
        self.record(msg).await?;
        self.post(msg).await
    }
}
