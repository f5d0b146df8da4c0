//! Idempotency keys in SQLite: a table of its own (added by its own migration step); a claim
//! reads and writes under the one connection, so of two concurrent claims one stores.

use super::*;
use longrun_ports::{IdempotencyKeys, IdempotencyRecord};

/// Its own step, run after the base schema: databases from before it gain the table.
const KEYS_SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS idempotency (
    user_id TEXT NOT NULL,
    key TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (user_id, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS idempotency_expiry ON idempotency(expires_at);
"#;

pub(super) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(KEYS_SCHEMA)
}

fn held(c: &Connection, user_id: &str, key: &str) -> StoreResult<Option<IdempotencyRecord>> {
    let rows: Vec<IdempotencyRecord> = query_json(
        c,
        "SELECT body FROM idempotency WHERE user_id = ?1 AND key = ?2",
        &[&user_id, &key],
    )?;
    Ok(rows.into_iter().next())
}

fn put(c: &Connection, rec: &IdempotencyRecord) -> StoreResult<()> {
    let body = to_json(rec)?;
    c.execute(
        "INSERT OR REPLACE INTO idempotency (user_id, key, expires_at, body) VALUES (?1, ?2, ?3, ?4)",
        params![rec.user_id, rec.key, rec.expires_at, body],
    )
    .map(|_| ())
    .map_err(unavailable)
}

#[async_trait]
impl IdempotencyKeys for SqliteRunStore {
    async fn claim_key(&self, rec: &IdempotencyRecord) -> StoreResult<IdempotencyRecord> {
        self.db
            .write(|c| {
                if let Some(live) = held(c, &rec.user_id, &rec.key)?
                    && live.expires_at > rec.created_at
                {
                    return Ok(live);
                }
                // Keys past their window go as new ones come, so the table stays one window deep.
                c.execute(
                    "DELETE FROM idempotency WHERE expires_at <= ?1",
                    [rec.created_at],
                )
                .map_err(unavailable)?;
                put(c, rec)?;
                Ok(rec.clone())
            })
            .await
    }

    async fn finish_key(
        &self, user_id: &str, key: &str, resource_id: &str, response: &Value,
    ) -> StoreResult<Value> {
        self.db
            .write(|c| match held(c, user_id, key)? {
                Some(rec) if rec.resource_id == resource_id => match rec.response {
                    Some(first) => Ok(first),
                    None => {
                        put(
                            c,
                            &IdempotencyRecord {
                                response: Some(response.clone()),
                                ..rec
                            },
                        )?;
                        Ok(response.clone())
                    }
                },
                _ => Ok(response.clone()),
            })
            .await
    }
}
