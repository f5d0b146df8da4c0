//! The webhook outbox in SQLite: a table of its own (added by its own migration step), written
//! in the same write as the inbox entry it belongs to.

use super::*;
use longrun_domain::WebhookDelivery;
use longrun_ports::WebhookOutbox;

/// Its own step, run after the base schema: databases from before the outbox gain the table.
const OUTBOX_SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS outbox (
    id TEXT NOT NULL,
    hook INTEGER NOT NULL,
    user_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    state TEXT NOT NULL,
    next_at INTEGER NOT NULL,
    leased INTEGER NOT NULL DEFAULT 0,
    body TEXT NOT NULL,
    PRIMARY KEY (id, hook)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS outbox_due ON outbox(next_at) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS outbox_by_run ON outbox(run_id);
"#;

pub(super) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(OUTBOX_SCHEMA)
}

fn put(c: &Connection, d: &WebhookDelivery, body: &str) -> StoreResult<()> {
    write_delivery(c, d, body, true)
}

/// The delivery's row: replacing one already there, or (an import) refusing to.
pub(super) fn write_delivery(
    c: &Connection, d: &WebhookDelivery, body: &str, replace: bool,
) -> StoreResult<()> {
    c.prepare_cached(if replace {
        "INSERT OR REPLACE INTO outbox (id, hook, user_id, run_id, state, next_at, leased, body)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, ?7)"
    } else {
        "INSERT INTO outbox (id, hook, user_id, run_id, state, next_at, leased, body)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, ?7)"
    })
    .and_then(|mut st| {
        st.execute(params![
            d.id,
            d.hook,
            d.user_id,
            d.run_id,
            d.state.as_str(),
            d.next_at,
            body
        ])
    })
    .map(|_| ())
    .map_err(unavailable)
}

impl SqliteRunStore {
    /// At start-up: deliveries the gone process had taken are due again at once, instead of
    /// when its leases would have run out. One process owns the database, so every lease found
    /// then is stale.
    pub async fn release_outbox_leases(&self, now: i64) -> StoreResult<usize> {
        self.db
            .write(|c| {
                c.execute(
                    "UPDATE outbox SET leased = 0, next_at = min(next_at, ?1) WHERE leased = 1",
                    [now],
                )
                .map_err(unavailable)
            })
            .await
    }
}

#[async_trait]
impl WebhookOutbox for SqliteRunStore {
    async fn put_outcome(
        &self, n: &Notification, deliveries: &[WebhookDelivery],
    ) -> StoreResult<bool> {
        let note = to_json(n)?;
        let bodies = deliveries
            .iter()
            .map(to_json)
            .collect::<StoreResult<Vec<_>>>()?;
        self.db
            .write(|c| {
                let inserted = c
                    .execute(
                        "INSERT OR IGNORE INTO notifications (id, user_id, at, body) VALUES (?1, ?2, ?3, ?4)",
                        params![n.id, n.user_id, n.at, note],
                    )
                    .map_err(unavailable)?;
                if inserted == 0 {
                    return Ok(false);
                }
                for (d, body) in deliveries.iter().zip(&bodies) {
                    put(c, d, body)?;
                }
                Ok(true)
            })
            .await
    }

    /// A lease is its `next_at`: a taker that never records its attempt (its task died) leaves
    /// the delivery due again once the lease ends.
    async fn take_due(
        &self, now: i64, lease_until: i64, limit: usize,
    ) -> StoreResult<Vec<WebhookDelivery>> {
        // Deferred: a lease a crash loses is harmless (start-up releases them all anyway).
        self.db
            .write_deferred(|c| {
                let due: Vec<WebhookDelivery> = query_json(
                    c,
                    "SELECT body FROM outbox
                     WHERE state = 'pending' AND next_at <= ?1
                     ORDER BY next_at LIMIT +?2",
                    &[&now, &(limit as i64)],
                )?;
                let mut st = c
                    .prepare_cached(
                        "UPDATE outbox SET leased = 1, next_at = ?3 WHERE id = ?1 AND hook = ?2",
                    )
                    .map_err(unavailable)?;
                for d in &due {
                    st.execute(params![d.id, d.hook, lease_until])
                        .map_err(unavailable)?;
                }
                Ok(due)
            })
            .await
    }

    async fn record_attempt(&self, d: &WebhookDelivery) -> StoreResult<()> {
        let body = to_json(d)?;
        self.db.write(|c| put(c, d, &body)).await
    }

    async fn deliveries(&self, user_id: &str, run_id: &str) -> StoreResult<Vec<WebhookDelivery>> {
        self.db
            .read(|c| {
                query_json(
                    c,
                    "SELECT body FROM outbox WHERE run_id = ?1 AND user_id = ?2
                     ORDER BY json_extract(body, '$.created_at'), id, hook",
                    &[&run_id, &user_id],
                )
            })
            .await
    }
}
