//! The webhook outbox on `DynamoDbRunStore`: one item per delivery in its owner's partition
//! (`USER#{user}`, `OUT#{run}#{created}#{id}#{hook}`, so a run's delivery log is one query),
//! written in the inbox entry's transaction; pending ones also sit in the sparse sweep index
//! (`GSI2`, partition `OUTBOX`, by when they are due), which is how a sweep finds them. A lease
//! is the item's `next_at`, moved forward by a conditional update only while it is still due.

use super::*;
use aws_sdk_dynamodb::types::ReturnValue;
use longrun_domain::{DeliveryState, WebhookDelivery};
use longrun_ports::WebhookOutbox;

/// The sweep index's partition of pending deliveries.
const OUTBOX_PARTITION: &str = "OUTBOX";

fn delivery_sk(d: &WebhookDelivery) -> String {
    format!(
        "OUT#{}#{}#{}#{:04}",
        d.run_id,
        stamp(d.created_at),
        d.id,
        d.hook
    )
}

/// Where a pending delivery due at `next_at` sorts in the sweep index.
fn due_sk(d: &WebhookDelivery, next_at: i64) -> String {
    format!("{}#{}#{:04}", stamp(next_at), d.id, d.hook)
}

/// The whole item; only a pending delivery is in the sweep index.
fn delivery_item(d: &WebhookDelivery) -> StoreResult<HashMap<String, Av>> {
    let mut item = HashMap::from([
        ("PK".to_string(), s(user_pk(&d.user_id))),
        ("SK".to_string(), s(delivery_sk(d))),
        ("body".to_string(), s(to_json(d)?)),
        ("state".to_string(), s(d.state.as_str())),
        ("next_at".to_string(), n(d.next_at)),
        // Kept as long as the inbox entry it belongs to.
        (
            "expires_at".to_string(),
            n(d.created_at / 1000 + NOTIFICATION_TTL_S),
        ),
    ]);
    if d.state == DeliveryState::Pending {
        item.insert("GSI2PK".into(), s(OUTBOX_PARTITION));
        item.insert("GSI2SK".into(), s(due_sk(d, d.next_at)));
    }
    Ok(item)
}

impl DynamoDbRunStore {
    /// Leases one delivery the index says is due, if it still is: None when another taker
    /// (or an attempt recorded since the index was read) got there first.
    async fn lease(
        &self, candidate: &WebhookDelivery, pk: Av, sk: Av, now: i64, lease_until: i64,
    ) -> StoreResult<Option<WebhookDelivery>> {
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("PK", pk)
            .key("SK", sk)
            .update_expression("SET next_at = :until, GSI2SK = :due")
            .condition_expression("#state = :pending AND next_at <= :now")
            .expression_attribute_names("#state", "state")
            .expression_attribute_values(":until", n(lease_until))
            .expression_attribute_values(":due", s(due_sk(candidate, lease_until)))
            .expression_attribute_values(":pending", s(DeliveryState::Pending.as_str()))
            .expression_attribute_values(":now", n(now))
            .return_values(ReturnValue::AllOld)
            .send()
            .await;
        match result {
            Ok(out) => out
                .attributes
                .map(|old| from_attr(&old, "body"))
                .transpose(),
            Err(e) if error_code(&e) == Some("ConditionalCheckFailedException") => Ok(None),
            Err(e) => Err(unavailable(describe(&e))),
        }
    }
}

#[async_trait]
impl WebhookOutbox for DynamoDbRunStore {
    /// One transaction: the inbox entry's marker (the idempotency fence), the entry, and the
    /// deliveries (at most a user's five webhooks, well inside a transaction's 100 items).
    async fn put_outcome(
        &self, note: &Notification, deliveries: &[WebhookDelivery],
    ) -> StoreResult<bool> {
        let mut writes = self.notification_writes(note)?;
        for d in deliveries {
            let put = Put::builder()
                .table_name(&self.table)
                .set_item(Some(delivery_item(d)?));
            writes.push(put_item(put)?);
        }
        self.put_notification_with(writes).await
    }

    async fn take_due(
        &self, now: i64, lease_until: i64, limit: usize,
    ) -> StoreResult<Vec<WebhookDelivery>> {
        if limit == 0 {
            return Ok(vec![]);
        }
        // `#` sorts before every digit, so `{now}#~` bounds every delivery due at `now`.
        let upto = format!("{}#~", stamp(now));
        let page = limit.clamp(1, 1000);
        let candidates = self
            .sweep_index_upto(OUTBOX_PARTITION, "<=", upto, page, limit)
            .await?;
        let mut taken = vec![];
        for item in candidates {
            // The index is eventually consistent: the conditional lease is the fence.
            let candidate: WebhookDelivery = from_attr(&item, "body")?;
            let (Some(pk), Some(sk)) = (item.get("PK").cloned(), item.get("SK").cloned()) else {
                continue;
            };
            if let Some(d) = self.lease(&candidate, pk, sk, now, lease_until).await? {
                taken.push(d);
            }
        }
        Ok(taken)
    }

    async fn record_attempt(&self, d: &WebhookDelivery) -> StoreResult<()> {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(delivery_item(d)?))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| unavailable(describe(&e)))
    }

    async fn deliveries(&self, user_id: &str, run_id: &str) -> StoreResult<Vec<WebhookDelivery>> {
        let items = self
            .with_prefix(
                user_pk(user_id),
                format!("OUT#{run_id}#"),
                "body",
                usize::MAX,
                false,
            )
            .await?;
        let mut out = items
            .iter()
            .map(|i| from_attr::<WebhookDelivery>(i, "body"))
            .collect::<StoreResult<Vec<_>>>()?;
        // A run id that extends another with `#…` would share the prefix.
        out.retain(|d| d.run_id == run_id);
        Ok(out)
    }
}
