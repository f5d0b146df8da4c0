//! Idempotency keys on `DynamoDbRunStore`: one item per key in the user's partition
//! (`USER#{user}`, `IDEM#{key}`); a conditional put is the fence between concurrent claims.

use super::*;
use longrun_ports::{IdempotencyKeys, IdempotencyRecord};

/// A record's item disappears (DynamoDB TTL) a day after its window: reads never rely on TTL,
/// which may lag, but on `expires_ms`.
const KEY_TTL_GRACE_S: i64 = 24 * 3600;

impl DynamoDbRunStore {
    async fn held_key(&self, user_id: &str, key: &str) -> StoreResult<Option<IdempotencyRecord>> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("PK", s(user_pk(user_id)))
            .key("SK", s(format!("IDEM#{key}")))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| unavailable(describe(&e)))?;
        out.item.map(|i| from_attr(&i, "body")).transpose()
    }
}

#[async_trait]
impl IdempotencyKeys for DynamoDbRunStore {
    async fn claim_key(&self, rec: &IdempotencyRecord) -> StoreResult<IdempotencyRecord> {
        // A lost put reads the winner; the winner's record may expire in between (then try
        // again), never more than a few times.
        for _ in 0..3 {
            let result = self
                .client
                .put_item()
                .table_name(&self.table)
                .item("PK", s(user_pk(&rec.user_id)))
                .item("SK", s(format!("IDEM#{}", rec.key)))
                .item("body", s(to_json(rec)?))
                .item("resource_id", s(rec.resource_id.clone()))
                .item("expires_ms", n(rec.expires_at))
                .item("expires_at", n(rec.expires_at / 1000 + KEY_TTL_GRACE_S))
                .condition_expression("attribute_not_exists(PK) OR expires_ms <= :now")
                .expression_attribute_values(":now", n(rec.created_at))
                .send()
                .await;
            match result {
                Ok(_) => return Ok(rec.clone()),
                Err(e) if error_code(&e) == Some("ConditionalCheckFailedException") => {
                    if let Some(live) = self.held_key(&rec.user_id, &rec.key).await?
                        && live.expires_at > rec.created_at
                    {
                        return Ok(live);
                    }
                }
                Err(e) => return Err(unavailable(describe(&e))),
            }
        }
        Err(StoreError::Conflict(format!(
            "idempotency key {} kept changing hands",
            rec.key
        )))
    }

    async fn finish_key(
        &self, user_id: &str, key: &str, resource_id: &str, response: &Value,
    ) -> StoreResult<Value> {
        let Some(rec) = self.held_key(user_id, key).await? else {
            return Ok(response.clone());
        };
        if rec.resource_id != resource_id {
            return Ok(response.clone());
        }
        if let Some(first) = rec.response {
            return Ok(first);
        }
        let answered = IdempotencyRecord {
            response: Some(response.clone()),
            ..rec
        };
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("PK", s(user_pk(user_id)))
            .key("SK", s(format!("IDEM#{key}")))
            .update_expression("SET body = :b, answered = :t")
            .condition_expression("resource_id = :r AND attribute_not_exists(answered)")
            .expression_attribute_values(":b", s(to_json(&answered)?))
            .expression_attribute_values(":t", Av::Bool(true))
            .expression_attribute_values(":r", s(resource_id))
            .send()
            .await;
        match result {
            Ok(_) => Ok(response.clone()),
            Err(e) if error_code(&e) == Some("ConditionalCheckFailedException") => {
                // Another request answered first: its answer is the one.
                Ok(self
                    .held_key(user_id, key)
                    .await?
                    .filter(|r| r.resource_id == resource_id)
                    .and_then(|r| r.response)
                    .unwrap_or_else(|| response.clone()))
            }
            Err(e) => Err(unavailable(describe(&e))),
        }
    }
}
