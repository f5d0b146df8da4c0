//! Outcome webhooks through a durable outbox, on every platform: the inbox entry and one
//! delivery per webhook are written together when an outcome is published, and what is due is
//! attempted with backoff until each is delivered or given up — by `serve`'s loop, or on AWS by
//! the notifier Lambda (at once) and the sweeper (every minute after). A delivery interrupted
//! by a crash or a stop is attempted again, under the same delivery id: at least once, and
//! receivers drop repeats by the id.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use longrun_domain::{
    Attempt, Backoff, DeliveryState, OutcomeMessage, Webhook, WebhookDelivery, delivery_id,
    notification_for,
};
use longrun_ports::{CatalogExt, Clock, StoreError, UserCatalog, WebhookOutbox, WebhookPoster};
use tokio::sync::{Notify, watch};
use tracing::{info, warn};

use crate::platform::Platform;
use crate::webhooks::{payload, signature};

#[derive(Clone, Debug)]
pub struct OutboxConfig {
    pub retry: Backoff,
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
            retry: Backoff::WEBHOOK,
            lease_ms: 30_000,
            batch: 32,
            poll: Duration::from_millis(500),
        }
    }
}

pub struct Outbox {
    store: Arc<dyn WebhookOutbox>,
    catalog: Arc<dyn UserCatalog>,
    poster: Arc<dyn WebhookPoster>,
    clock: Arc<dyn Clock>,
    config: OutboxConfig,
    wake: Notify,
}

/// One delivery per webhook the owner has when the outcome is recorded, each under its own
/// delivery id (in the body too) and its body signed with that webhook's secret.
pub fn deliveries_for(msg: &OutcomeMessage, hooks: &[Webhook], now: i64) -> Vec<WebhookDelivery> {
    let outcome = msg.notification_id();
    hooks
        .iter()
        .zip(0u32..)
        .map(|(hook, i)| {
            let body = serde_json::to_string(&payload(msg, i)).unwrap_or_default();
            WebhookDelivery {
                id: delivery_id(&outcome, i),
                hook: i,
                user_id: msg.user_id.clone(),
                run_id: msg.run_id.clone(),
                url: hook.url.clone(),
                signature: signature(&hook.secret, body.as_bytes()),
                body,
                state: DeliveryState::Pending,
                attempts: 0,
                next_at: now,
                created_at: now,
                last_error: None,
                history: vec![],
            }
        })
        .collect()
}

impl Platform {
    /// The outbox over this platform's store, posting through its webhook poster: what the
    /// notifier Lambda and the sweeper deliver with.
    pub fn outbox(&self, config: OutboxConfig) -> Outbox {
        Outbox::new(
            self.store.clone(),
            self.store.clone(),
            self.webhooks.clone(),
            self.clock.clone(),
            config,
        )
    }
}

impl Outbox {
    pub fn new(
        store: Arc<dyn WebhookOutbox>, catalog: Arc<dyn UserCatalog>,
        poster: Arc<dyn WebhookPoster>, clock: Arc<dyn Clock>, config: OutboxConfig,
    ) -> Self {
        Outbox {
            store,
            catalog,
            poster,
            clock,
            config,
            wake: Notify::new(),
        }
    }

    /// The inbox entry and its deliveries, durable when this returns (so the run is marked
    /// notified only then); idempotent per outcome. Wakes the loop.
    pub async fn record(&self, msg: &OutcomeMessage) -> Result<bool, StoreError> {
        let (fresh, deliveries) = self.put(msg, 0).await?;
        if fresh && !deliveries.is_empty() {
            self.wake.notify_one();
        }
        Ok(fresh)
    }

    /// The notifier Lambda's way: the outcome recorded with its deliveries already taken by
    /// this caller (leased, so no sweep takes them meanwhile), then each attempted once at once
    /// and its result recorded; the retries are the sweeper's. Only the outcome's own write is
    /// an error: a result that cannot be recorded leaves its delivery to be taken again when
    /// the lease ends. A repeat of the outcome attempts nothing: its deliveries are recorded
    /// already, and due to whoever takes them. Returns how many it attempted.
    pub async fn deliver_now(&self, msg: &OutcomeMessage) -> Result<usize, StoreError> {
        let (fresh, deliveries) = self.put(msg, self.config.lease_ms).await?;
        if !fresh {
            return Ok(0);
        }
        let results = join_all(deliveries.iter().map(|d| self.attempt(d))).await;
        for e in results.into_iter().filter_map(Result::err) {
            warn!(run_id = %msg.run_id, error = %e, "webhook attempt not recorded; retried after its lease");
        }
        Ok(deliveries.len())
    }

    /// Writes the outcome with one delivery per webhook of its owner, first due `lease_ms`
    /// from now (0: at once).
    async fn put(
        &self, msg: &OutcomeMessage, lease_ms: i64,
    ) -> Result<(bool, Vec<WebhookDelivery>), StoreError> {
        let hooks = self.catalog.webhooks(&msg.user_id).await?;
        let now = self.clock.now_ms();
        let mut deliveries = deliveries_for(msg, &hooks, now);
        for d in &mut deliveries {
            d.next_at = now.saturating_add(lease_ms);
        }
        let fresh = self
            .store
            .put_outcome(&notification_for(msg), &deliveries)
            .await?;
        if fresh {
            info!(run_id = %msg.run_id, status = %msg.status, link = %msg.link, "run outcome");
        }
        Ok((fresh, deliveries))
    }

    /// One pass: takes the deliveries due now, attempts them at once, records each result.
    /// Returns how many it attempted.
    pub async fn deliver_due(&self) -> Result<usize, StoreError> {
        let now = self.clock.now_ms();
        let lease_until = now + self.config.lease_ms;
        let due = self
            .store
            .take_due(now, lease_until, self.config.batch)
            .await?;
        let results = join_all(due.iter().map(|d| self.attempt_within(d, lease_until))).await;
        for result in results {
            result?;
        }
        Ok(due.len())
    }

    /// Attempts `d` only while at least half its lease is left, so the attempt (bounded by
    /// the sender's timeouts) ends before another taker may take it. A delivery whose attempt
    /// could not begin in time (this process stalled) is left for the next taker once the
    /// lease runs out.
    async fn attempt_within(
        &self, d: &WebhookDelivery, lease_until: i64,
    ) -> Result<(), StoreError> {
        if self.clock.now_ms() > lease_until - self.config.lease_ms / 2 {
            warn!(run_id = %d.run_id, delivery = %d.id, "webhook attempt left for the next taker: its lease is half gone");
            return Ok(());
        }
        self.attempt(d).await
    }

    async fn attempt(&self, d: &WebhookDelivery) -> Result<(), StoreError> {
        // A receiver's answer may quote what it was sent or hold: scrubbed before it is kept.
        let attempt = match self.poster.post(d).await {
            Attempt::Refused(e) => Attempt::Refused(longrun_ports::redact::scrubbed(e)),
            Attempt::Failed(e) => Attempt::Failed(longrun_ports::redact::scrubbed(e)),
            delivered => delivered,
        };
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

    /// Passes while each takes a full batch, at most `passes`: what one sweep delivers.
    /// Returns how many it attempted.
    pub async fn deliver_due_passes(&self, passes: usize) -> Result<usize, StoreError> {
        let mut attempted = 0;
        for _ in 0..passes {
            let n = self.deliver_due().await?;
            attempted += n;
            if n < self.config.batch {
                break;
            }
        }
        Ok(attempted)
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
