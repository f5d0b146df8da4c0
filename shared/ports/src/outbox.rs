//! The webhook outbox: outcome deliveries recorded with the inbox entry, so a delivery a crash
//! or a restart interrupted is attempted again instead of lost; and the poster that attempts
//! one delivery.

use async_trait::async_trait;
use longrun_domain::{Attempt, Notification, WebhookDelivery};

use crate::store::StoreResult;

/// Contract: `put_outcome` writes the inbox entry and its deliveries atomically, and is
/// idempotent on the notification's id (a repeat adds nothing and returns false). `take_due`
/// hands each due delivery to one taker until `lease_until` (a second taker before then does
/// not get it); `record_attempt` stores what the attempt came to and ends the lease.
#[async_trait]
pub trait WebhookOutbox: Send + Sync {
    async fn put_outcome(
        &self, n: &Notification, deliveries: &[WebhookDelivery],
    ) -> StoreResult<bool>;
    /// Pending deliveries with `next_at <= now`, earliest first, leased to the caller.
    async fn take_due(
        &self, now: i64, lease_until: i64, limit: usize,
    ) -> StoreResult<Vec<WebhookDelivery>>;
    /// Replaces the delivery `(d.id, d.hook)` with `d`.
    async fn record_attempt(&self, d: &WebhookDelivery) -> StoreResult<()>;
    /// A run's deliveries (of `user_id`'s runs only), oldest first: the delivery log.
    async fn deliveries(&self, user_id: &str, run_id: &str) -> StoreResult<Vec<WebhookDelivery>>;
}

/// One attempt of one delivery: a signed POST of its body to its URL under its id. Never
/// fails as a call: what the receiver (or the way to it) did is the `Attempt` — delivered, a
/// failure worth retrying, or a refusal that will not change.
#[async_trait]
pub trait WebhookPoster: Send + Sync {
    async fn post(&self, d: &WebhookDelivery) -> Attempt;
}
