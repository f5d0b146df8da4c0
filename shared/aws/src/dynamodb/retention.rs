//! Retention on DynamoDB: the table's TTL (on `expires_at`, which inbox entries and
//! idempotency keys already use) deletes the items of a run that ended, was notified and is
//! older than the policy. The run item carries the time in every write while that holds (it
//! is put whole, so a `continue` drops it); its other items (iterations, event batches, docs)
//! are stamped once when it starts to hold, and unstamped *before* the write that ends it, so
//! a crash in between can only keep items longer, never delete a live run's.

use super::*;

/// Whether a policy may have stamped the run's items: it ended and its outcome was published.
pub(super) fn may_expire(run: &Run) -> bool {
    run.status.is_ended() && run.notified
}

impl DynamoDbRunStore {
    /// Items of runs ended `days` ago (and notified) expire; `None` keeps every run.
    pub fn with_retention_days(mut self, days: Option<u32>) -> Self {
        self.retention_s = days.map(|d| i64::from(d) * 24 * 3600);
        self
    }

    /// When the run's items may go (epoch seconds), if the policy names it once it is that old.
    pub(super) fn expiry(&self, run: &Run) -> Option<i64> {
        let keep = self.retention_s?;
        match run.ended_at {
            Some(at) if may_expire(run) => Some(at / 1000 + keep),
            _ => None,
        }
    }

    /// Sets (or, with `None`, removes) `expires_at` on every item of the run but its run item.
    pub(super) async fn stamp_expiry(&self, run_id: &str, at: Option<i64>) -> StoreResult<()> {
        for prefix in ["ITER#", "DOC#"] {
            let keys = self
                .with_prefix(run_pk(run_id), prefix.into(), "PK, SK", usize::MAX, false)
                .await?;
            for key in keys {
                let mut u = self
                    .client
                    .update_item()
                    .table_name(&self.table)
                    .set_key(Some(key))
                    .condition_expression("attribute_exists(PK)");
                u = match at {
                    Some(t) => u
                        .update_expression("SET expires_at = :t")
                        .expression_attribute_values(":t", n(t)),
                    None => u.update_expression("REMOVE expires_at"),
                };
                match u.send().await {
                    Ok(_) => {}
                    // Gone meanwhile (expired, or deleted): nothing to stamp.
                    Err(e) if error_code(&e) == Some("ConditionalCheckFailedException") => {}
                    Err(e) => return Err(unavailable(describe(&e))),
                }
            }
        }
        Ok(())
    }
}
