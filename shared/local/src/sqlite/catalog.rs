//! Schedules and the user catalog on `SqliteRunStore`.

use super::*;

#[async_trait]
impl ScheduleStore for SqliteRunStore {
    async fn put_schedule(&self, schedule: &Schedule) -> StoreResult<()> {
        let body = to_json(schedule)?;
        let sql =
            "INSERT OR REPLACE INTO schedules (id, user_id, next_at, body) VALUES (?1, ?2, ?3, ?4)";
        let s = schedule;
        self.execute(sql, (&s.id, &s.user_id, s.next_at, body))
            .await?;
        Ok(())
    }

    async fn schedules(&self, user_id: &str) -> StoreResult<Vec<Schedule>> {
        self.db
            .read(|c| {
                query_json(
                    c,
                    "SELECT body FROM schedules WHERE user_id = ?1 ORDER BY id",
                    &[&user_id],
                )
            })
            .await
    }

    async fn delete_schedule(&self, user_id: &str, id: &str) -> StoreResult<bool> {
        self.db
            .write(|c| {
                c.execute(
                    "DELETE FROM schedules WHERE id = ?1 AND user_id = ?2",
                    params![id, user_id],
                )
                .map(|n| n == 1)
                .map_err(unavailable)
            })
            .await
    }

    async fn due_schedules(&self, now: i64, limit: usize) -> StoreResult<Vec<Schedule>> {
        self.db
            .read(|c| {
                query_json(
                    c,
                    "SELECT body FROM schedules WHERE next_at <= ?1 ORDER BY next_at, id LIMIT +?2",
                    &[&now, &(limit as i64)],
                )
            })
            .await
    }

    async fn advance_schedule(&self, next: &Schedule, from: i64) -> StoreResult<bool> {
        let body = to_json(next)?;
        self.db
            .write(|c| {
                c.execute(
                    "UPDATE schedules SET next_at = ?1, body = ?2 WHERE id = ?3 AND next_at = ?4",
                    params![next.next_at, body, next.id, from],
                )
                .map(|n| n == 1)
                .map_err(unavailable)
            })
            .await
    }
}

#[async_trait]
impl UserCatalog for SqliteRunStore {
    async fn put_entry(
        &self, scope: CatalogScope<'_>, key: &str, value: &Value,
    ) -> StoreResult<()> {
        let body = to_json(&self.db.sealer().seal_entry(scope, key, value)?)?;
        let CatalogScope { user_id, kind } = scope;
        let (user, key) = (user_id.to_string(), key.to_string());
        self.db
            .write(move |c| {
                c.execute(
                    "INSERT OR REPLACE INTO catalog (user_id, kind, key, body) VALUES (?1, ?2, ?3, ?4)",
                    params![user, kind.as_str(), key, body],
                )
                .map(|_| ())
                .map_err(unavailable)
            })
            .await
    }

    async fn entries(&self, scope: CatalogScope<'_>) -> StoreResult<Vec<CatalogEntry>> {
        let CatalogScope { user_id, kind } = scope;
        // Committed entries are all there is to see: every change to the catalog returns
        // only once it is durable. A reader connection, so an iteration's look at the user's
        // tools does not queue for the writer's.
        let sealer = self.db.sealer();
        self.db
            .read_committed(|c| {
                let mut stmt = c
                    .prepare_cached(
                        "SELECT key, body FROM catalog WHERE user_id = ?1 AND kind = ?2 ORDER BY key",
                    )
                    .map_err(unavailable)?;
                let rows = stmt
                    .query_map(params![user_id, kind.as_str()], |r| {
                        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
                    })
                    .map_err(unavailable)?;
                rows.map(|row| {
                    let (key, body) = row.map_err(unavailable)?;
                    let value = sealer.open_entry(scope, &key, from_json(&body)?)?;
                    Ok((key, value))
                })
                .collect()
            })
            .await
    }

    async fn delete_entry(&self, scope: CatalogScope<'_>, key: &str) -> StoreResult<bool> {
        let CatalogScope { user_id, kind } = scope;
        let (user, key) = (user_id.to_string(), key.to_string());
        self.db
            .write(move |c| {
                c.execute(
                    "DELETE FROM catalog WHERE user_id = ?1 AND kind = ?2 AND key = ?3",
                    params![user, kind.as_str(), key],
                )
                .map(|n| n > 0)
                .map_err(unavailable)
            })
            .await
    }

    async fn replace_entries(
        &self, scope: CatalogScope<'_>, entries: &[CatalogEntry],
    ) -> StoreResult<()> {
        let CatalogScope { user_id, kind } = scope;
        let rows = entries
            .iter()
            .map(|(k, v)| {
                Ok((
                    k.clone(),
                    to_json(&self.db.sealer().seal_entry(scope, k, v)?)?,
                ))
            })
            .collect::<StoreResult<Vec<_>>>()?;
        let user = user_id.to_string();
        self.db
            .write(move |c| {
                // Checks first, then changes: the delete and inserts cannot be refused.
                c.execute(
                    "DELETE FROM catalog WHERE user_id = ?1 AND kind = ?2",
                    params![user, kind.as_str()],
                )
                .map_err(unavailable)?;
                for (key, body) in &rows {
                    c.execute(
                        "INSERT INTO catalog (user_id, kind, key, body) VALUES (?1, ?2, ?3, ?4)",
                        params![user, kind.as_str(), key, body],
                    )
                    .map_err(unavailable)?;
                }
                Ok(())
            })
            .await
    }
}
