//! The inbox, schedules and user catalog on `DynamoDbRunStore`.

use super::*;

impl DynamoDbRunStore {
    /// An inbox entry's two puts: the marker by id, put only if absent (what makes a repeat
    /// add nothing), and the entry in time order.
    pub(super) fn notification_writes(
        &self, note: &Notification,
    ) -> StoreResult<Vec<TransactWriteItem>> {
        let pk = user_pk(&note.user_id);
        let expires = n(note.at / 1000 + NOTIFICATION_TTL_S);
        let marker = Put::builder()
            .table_name(&self.table)
            .item("PK", s(pk.clone()))
            .item("SK", s(format!("NOTIFID#{}", note.id)))
            .item("expires_at", expires.clone())
            .condition_expression("attribute_not_exists(PK)");
        let record = Put::builder()
            .table_name(&self.table)
            .item("PK", s(pk))
            .item("SK", s(format!("NOTIF#{}#{}", stamp(note.at), note.id)))
            .item("body", s(to_json(note)?))
            .item("expires_at", expires);
        Ok(vec![put_item(marker)?, put_item(record)?])
    }

    /// `writes` (the marker first) in one transaction: false when the marker was there.
    pub(super) async fn put_notification_with(
        &self, writes: Vec<TransactWriteItem>,
    ) -> StoreResult<bool> {
        let result = self
            .client
            .transact_write_items()
            .set_transact_items(Some(writes))
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(e) => {
                let duplicate = matches!(
                    e.as_service_error(),
                    Some(TransactWriteItemsError::TransactionCanceledException(tc))
                        if tc.cancellation_reasons().first()
                            .and_then(|r| r.code()) == Some("ConditionalCheckFailed")
                );
                if duplicate || error_code(&e) == Some("ConditionalCheckFailedException") {
                    Ok(false)
                } else {
                    Err(unavailable(describe(&e)))
                }
            }
        }
    }
}

#[async_trait]
impl Inbox for DynamoDbRunStore {
    async fn put_notification(&self, note: &Notification) -> StoreResult<bool> {
        let writes = self.notification_writes(note)?;
        self.put_notification_with(writes).await
    }

    async fn notifications_page(
        &self, user_id: &str, before: Option<&(i64, String)>, limit: usize,
    ) -> StoreResult<Vec<Notification>> {
        if limit == 0 {
            return Ok(vec![]);
        }
        let Some((at, id)) = before else {
            let items = self
                .with_prefix(user_pk(user_id), "NOTIF#".into(), "body", limit, true)
                .await?;
            return items.iter().map(|i| from_attr(i, "body")).collect();
        };
        // BETWEEN is inclusive and a key condition cannot pair `<` with begins_with: read one
        // more and drop the cursor's own entry. Nothing else of the user sorts between `NOTIF#`
        // and a `NOTIF#…` key (`NOTIFID#` markers sort after every one).
        let hi = format!("NOTIF#{}#{}", stamp(*at), id);
        let items = self
            .query_pages(
                |q| {
                    q.key_condition_expression("PK = :pk AND SK BETWEEN :lo AND :hi")
                        .expression_attribute_values(":pk", s(user_pk(user_id)))
                        .expression_attribute_values(":lo", s("NOTIF#"))
                        .expression_attribute_values(":hi", s(hi.clone()))
                        .projection_expression("body")
                        .consistent_read(true)
                        .scan_index_forward(false)
                        .limit((limit + 1).clamp(1, 1000) as i32)
                },
                limit + 1,
            )
            .await?;
        let mut out = items
            .iter()
            .map(|i| from_attr::<Notification>(i, "body"))
            .collect::<StoreResult<Vec<_>>>()?;
        out.retain(|n| (n.at, &n.id) < (*at, id));
        out.truncate(limit);
        Ok(out)
    }

    async fn mark_notification_read(&self, note: &Notification) -> StoreResult<()> {
        let read = Notification {
            read: true,
            ..note.clone()
        };
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("PK", s(user_pk(&note.user_id)))
            .key("SK", s(format!("NOTIF#{}#{}", stamp(note.at), note.id)))
            .update_expression("SET body = :b")
            .condition_expression("attribute_exists(PK)")
            .expression_attribute_values(":b", s(to_json(&read)?))
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) if error_code(&e) == Some("ConditionalCheckFailedException") => Ok(()),
            Err(e) => Err(unavailable(describe(&e))),
        }
    }
}

#[async_trait]
impl ScheduleStore for DynamoDbRunStore {
    async fn put_schedule(&self, schedule: &Schedule) -> StoreResult<()> {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(schedule_item(schedule)?))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| unavailable(describe(&e)))
    }

    async fn schedules(&self, user_id: &str) -> StoreResult<Vec<Schedule>> {
        let items = self
            .with_prefix(user_pk(user_id), "SCHED#".into(), "body", usize::MAX, false)
            .await?;
        items.iter().map(|i| from_attr(i, "body")).collect()
    }

    async fn delete_schedule(&self, user_id: &str, id: &str) -> StoreResult<bool> {
        let out = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key("PK", s(user_pk(user_id)))
            .key("SK", s(format!("SCHED#{id}")))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllOld)
            .send()
            .await
            .map_err(|e| unavailable(describe(&e)))?;
        Ok(out.attributes.is_some_and(|a| !a.is_empty()))
    }

    async fn due_schedules(&self, now: i64, limit: usize) -> StoreResult<Vec<Schedule>> {
        // `#` sorts before every digit-free suffix, so `{now}#~` bounds all ids due at `now`.
        let upto = format!("{}#~", stamp(now));
        let items = self
            .sweep_index_upto(SCHEDULE_PARTITION, "<=", upto, limit.clamp(1, 1000), limit)
            .await?;
        items.iter().map(|i| from_attr(i, "body")).collect()
    }

    async fn advance_schedule(&self, next: &Schedule, from: i64) -> StoreResult<bool> {
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(schedule_item(next)?))
            .condition_expression("next_at = :from")
            .expression_attribute_values(":from", n(from))
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(e) if error_code(&e) == Some("ConditionalCheckFailedException") => Ok(false),
            Err(e) => Err(unavailable(describe(&e))),
        }
    }
}

/// The sort key prefix of a catalog entry; tools and MCP servers keep the keys they had before
/// the catalog was one collection.
fn catalog_prefix(kind: CatalogKind) -> &'static str {
    match kind {
        CatalogKind::Tool => "TOOL#",
        CatalogKind::McpServer => "MCP#",
        CatalogKind::Webhook => "HOOK#",
    }
}

#[async_trait]
impl UserCatalog for DynamoDbRunStore {
    async fn put_entry(
        &self, scope: CatalogScope<'_>, key: &str, value: &Value,
    ) -> StoreResult<()> {
        let sealed = self.sealer.seal_entry(scope, key, value)?;
        let CatalogScope { user_id, kind } = scope;
        self.client
            .put_item()
            .table_name(&self.table)
            .item("PK", s(user_pk(user_id)))
            .item("SK", s(format!("{}{key}", catalog_prefix(kind))))
            .item("body", s(to_json(&sealed)?))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| unavailable(describe(&e)))
    }

    async fn entries(&self, scope: CatalogScope<'_>) -> StoreResult<Vec<CatalogEntry>> {
        let CatalogScope { user_id, kind } = scope;
        let prefix = catalog_prefix(kind);
        let items = self
            .with_prefix(
                user_pk(user_id),
                prefix.into(),
                "SK, body",
                usize::MAX,
                false,
            )
            .await?;
        items
            .iter()
            .map(|i| {
                let key = attr(i, "SK")?.trim_start_matches(prefix).to_string();
                let value = self.sealer.open_entry(scope, &key, from_attr(i, "body")?)?;
                Ok((key, value))
            })
            .collect()
    }

    async fn delete_entry(&self, scope: CatalogScope<'_>, key: &str) -> StoreResult<bool> {
        let CatalogScope { user_id, kind } = scope;
        let out = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key("PK", s(user_pk(user_id)))
            .key("SK", s(format!("{}{key}", catalog_prefix(kind))))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllOld)
            .send()
            .await
            .map_err(|e| unavailable(describe(&e)))?;
        Ok(out.attributes.is_some_and(|a| !a.is_empty()))
    }

    async fn replace_entries(
        &self, scope: CatalogScope<'_>, entries: &[CatalogEntry],
    ) -> StoreResult<()> {
        let CatalogScope { user_id, kind } = scope;
        let prefix = catalog_prefix(kind);
        let old = self.entries(scope).await?;
        let mut writes = vec![];
        for (key, _) in old
            .iter()
            .filter(|(k, _)| !entries.iter().any(|(n, _)| n == k))
        {
            let delete = aws_sdk_dynamodb::types::Delete::builder()
                .table_name(&self.table)
                .key("PK", s(user_pk(user_id)))
                .key("SK", s(format!("{prefix}{key}")))
                .build()
                .map_err(|e| unavailable(e.to_string()))?;
            writes.push(TransactWriteItem::builder().delete(delete).build());
        }
        for (key, value) in entries {
            let put = Put::builder()
                .table_name(&self.table)
                .item("PK", s(user_pk(user_id)))
                .item("SK", s(format!("{prefix}{key}")))
                .item(
                    "body",
                    s(to_json(&self.sealer.seal_entry(scope, key, value)?)?),
                )
                .build()
                .map_err(|e| unavailable(e.to_string()))?;
            writes.push(TransactWriteItem::builder().put(put).build());
        }
        if writes.is_empty() {
            return Ok(());
        }
        if writes.len() > MAX_TRANSACTION_ITEMS {
            return Err(StoreError::Corrupt(format!(
                "a catalog replacement of {} writes exceeds one transaction",
                writes.len()
            )));
        }
        self.client
            .transact_write_items()
            .set_transact_items(Some(writes))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| unavailable(describe(&e)))
    }
}

fn schedule_item(sc: &Schedule) -> StoreResult<HashMap<String, Av>> {
    Ok(HashMap::from([
        ("PK".to_string(), s(user_pk(&sc.user_id))),
        ("SK".to_string(), s(format!("SCHED#{}", sc.id))),
        ("body".to_string(), s(to_json(sc)?)),
        ("next_at".to_string(), n(sc.next_at)),
        ("GSI2PK".to_string(), s(SCHEDULE_PARTITION)),
        (
            "GSI2SK".to_string(),
            s(format!("{}#{}", stamp(sc.next_at), sc.id)),
        ),
    ]))
}
