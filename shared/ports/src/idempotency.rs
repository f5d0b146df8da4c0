//! Idempotency keys: what a create request sent under a key came to, so a client that retries
//! after a lost response gets the first answer instead of a second resource.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::store::StoreResult;

/// How long a key is kept: a retry within this window gets the first answer.
pub const IDEMPOTENCY_WINDOW_MS: i64 = 24 * 3600 * 1000;

/// One user's key and what it stands for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IdempotencyRecord {
    pub user_id: String,
    pub key: String,
    /// The request it was first sent with: the key reused with another request is refused.
    pub fingerprint: String,
    /// The id the create gives what it makes, chosen when the key is first claimed, so every
    /// retry (and a concurrent twin) creates the same thing.
    pub resource_id: String,
    pub created_at: i64,
    pub expires_at: i64,
    /// The first answer, once one was stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Value>,
}

/// Contract: `claim_key` is a conditional put — of concurrent claims of one `(user_id, key)`
/// exactly one stores its record and every caller gets that record back; a record whose
/// `expires_at` is at or before the claim's `created_at` counts as absent. `finish_key` stores
/// the first answer at most once (the first call wins) and returns the one stored.
#[async_trait]
pub trait IdempotencyKeys: Send + Sync {
    /// Stores `rec` unless the user holds a live record under the key; returns the record that
    /// holds the key afterwards (`rec` itself when it was stored).
    async fn claim_key(&self, rec: &IdempotencyRecord) -> StoreResult<IdempotencyRecord>;
    /// Stores `response` on the record `(user_id, key)` for `resource_id` unless it has one;
    /// returns the answer it holds afterwards (`response` when there is no such record).
    async fn finish_key(
        &self, user_id: &str, key: &str, resource_id: &str, response: &Value,
    ) -> StoreResult<Value>;
}
