//! Outcome webhooks through a durable outbox (`serve`): the inbox entry and one delivery per
//! webhook are written together when an outcome is published, and a loop attempts what is due
//! with backoff until each is delivered or given up. A delivery interrupted by a crash or a
//! stop is attempted again after the restart, under the same delivery id: at least once, and
//! receivers drop repeats by the id.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use longrun_domain::{
    Attempt, DeliveryState, OutcomeMessage, RetryPolicy, Webhook, WebhookDelivery, notification_for,
};
use longrun_ports::{CatalogExt, Clock, StoreError, UserCatalog, WebhookOutbox};
use tokio::sync::{Notify, watch};
use tracing::{info, warn};

use crate::webhooks::{WebhookError, WebhookSender, payload, signature};

#[derive(Clone, Debug)]
pub struct OutboxConfig {
    pub retry: RetryPolicy,
    /// How long a taken delivery is kept from other takers: longer than one attempt can take
    /// (the sender's connect and request timeouts).
    pub lease_ms: i64,
    /// Deliveries attempted at once.
    pub batch: usize,
    /// How often the loop looks for deliveries whose wait is over.
    pub poll: Duration,
}

impl Default for OutboxConfig {
    fn default() -> Self {
        OutboxConfig {
            retry: RetryPolicy::default(),
            lease_ms: 30_000,
            batch: 32,
            poll: Duration::from_millis(500),
        }
    }
}

pub struct Outbox {
    store: Arc<dyn WebhookOutbox>,
    catalog: Arc<dyn UserCatalog>,
    sender: WebhookSender,
    clock: Arc<dyn Clock>,
    config: OutboxConfig,
    wake: Notify,
}

/// One delivery per webhook the owner has when the outcome is recorded, each body signed with
/// that webhook's secret.
pub fn deliveries_for(msg: &OutcomeMessage, hooks: &[Webhook], now: i64) -> Vec<WebhookDelivery> {
    let body = serde_json::to_string(&payload(msg)).unwrap_or_default();
    hooks
        .iter()
        .enumerate()
        .map(|(i, hook)| WebhookDelivery {
            id: msg.notification_id(),
            hook: i as u32,
            user_id: msg.user_id.clone(),
            run_id: msg.run_id.clone(),
            url: hook.url.clone(),
            signature: signature(&hook.secret, body.as_bytes()),
            body: body.clone(),
            state: DeliveryState::Pending,
            attempts: 0,
            next_at: now,
            created_at: now,
            last_error: None,
        })
        .collect()
}

impl Outbox {
    pub fn new(
        store: Arc<dyn WebhookOutbox>, catalog: Arc<dyn UserCatalog>, sender: WebhookSender,
        clock: Arc<dyn Clock>, config: OutboxConfig,
    ) -> Self {
        Outbox {
            store,
            catalog,
            sender,
            clock,
            config,
            wake: Notify::new(),
        }
    }

    /// The inbox entry and its deliveries, durable when this returns (so the run is marked
    /// notified only then); idempotent per outcome. Wakes the loop.
    pub async fn record(&self, msg: &OutcomeMessage) -> Result<bool, WebhookError> {
        let hooks = self.catalog.webhooks(&msg.user_id).await?;
        let deliveries = deliveries_for(msg, &hooks, self.clock.now_ms());
        let fresh = self
            .store
            .put_outcome(&notification_for(msg), &deliveries)
            .await?;
        if fresh {
            info!(run_id = %msg.run_id, status = %msg.status, link = %msg.link, "run outcome");
            if !deliveries.is_empty() {
                self.wake.notify_one();
            }
        }
        Ok(fresh)
    }

    /// One pass: takes the deliveries due now, attempts them at once, records each result.
    /// Returns how many it attempted.
    pub async fn deliver_due(&self) -> Result<usize, StoreError> {
        let now = self.clock.now_ms();
        let due = self
            .store
            .take_due(now, now + self.config.lease_ms, self.config.batch)
            .await?;
        let results = join_all(due.iter().map(|d| self.attempt(d))).await;
        for result in results {
            result?;
        }
        Ok(due.len())
    }

    async fn attempt(&self, d: &WebhookDelivery) -> Result<(), StoreError> {
        let attempt = self
            .sender
            .attempt(&d.url, &d.signature, &d.id, d.body.as_bytes())
            .await;
        let next = d.after(&attempt, self.clock.now_ms(), &self.config.retry);
        match (&attempt, next.state) {
            (Attempt::Delivered, _) => {}
            (_, DeliveryState::GivenUp) => {
                warn!(run_id = %d.run_id, delivery = %d.id, attempts = next.attempts,
                      error = next.last_error.as_deref().unwrap_or(""), "webhook delivery given up")
            }
            _ => {
                warn!(run_id = %d.run_id, delivery = %d.id, attempts = next.attempts,
                      error = next.last_error.as_deref().unwrap_or(""), "webhook attempt failed; will retry")
            }
        }
        self.store.record_attempt(&next).await
    }

    /// Delivers until `shutdown` turns true: right after an outcome is recorded, and every
    /// `poll` for retries whose wait is over. An attempt cut short by the stop stays leased;
    /// the next start releases it.
    pub async fn run(&self, mut shutdown: watch::Receiver<bool>) {
        loop {
            let attempted = tokio::select! {
                r = self.deliver_due() => r,
                _ = shutdown.changed() => return,
            };
            match attempted {
                // A full batch: more may be due at once.
                Ok(n) if n >= self.config.batch => continue,
                Ok(_) => {}
                Err(e) => warn!(error = %e, "webhook outbox unavailable; retrying"),
            }
            tokio::select! {
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(self.config.poll) => {}
                _ = shutdown.changed() => return,
            }
        }
    }
}
