//! `SqliteStepQueue`: the FIFO step queue in the same database, fair across users.

use super::*;

/// FIFO step queue in the same database.
pub struct SqliteStepQueue {
    db: SqliteDb,
    clock: Arc<dyn Clock>,
    max_receives: u32,
}

/// A receipt names one delivery: the message's seq and its receive count, so it is found by
/// primary key and goes stale as soon as the message is delivered again.
fn parse_receipt(receipt: &str) -> QueueResult<(i64, u32)> {
    receipt
        .split_once('-')
        .and_then(|(seq, count)| Some((seq.parse().ok()?, count.parse().ok()?)))
        .ok_or(QueueError::StaleReceipt)
}

fn q_err(e: impl std::fmt::Display) -> QueueError {
    QueueError::Unavailable(e.to_string())
}

impl SqliteStepQueue {
    pub fn new(db: SqliteDb, clock: Arc<dyn Clock>) -> Self {
        SqliteStepQueue {
            db,
            clock,
            max_receives: crate::MAX_RECEIVES,
        }
    }

    /// Enqueues a raw body, as a broken producer might.
    pub async fn enqueue_raw(&self, group: &str, body: &str) -> QueueResult<()> {
        self.db
            .write(|c| {
                c.execute(
                    "INSERT INTO queue (group_id, body, visible_at) VALUES (?1, ?2, 0)",
                    params![group, body],
                )
                .map(|_| ())
                .map_err(q_err)
            })
            .await
    }

    async fn send(
        &self, msg: &StepMessage, dedup_id: &str, delay_ms: u64, durable: bool,
    ) -> QueueResult<Enqueued> {
        let now = self.clock.now_ms();
        let body = serde_json::to_string(msg).map_err(q_err)?;
        self.db
            .write_with(durable, |tx| {
                let live: Option<i64> = tx
                    .prepare_cached(
                        "SELECT expires_at FROM dedup WHERE dedup_id = ?1 AND expires_at > ?2",
                    )
                    .and_then(|mut st| {
                        st.query_row(params![dedup_id, now], |r| r.get(0))
                            .optional()
                    })
                    .map_err(q_err)?;
                if live.is_some() {
                    return Ok(Enqueued::Duplicate);
                }
                tx.prepare_cached(
                    "INSERT OR REPLACE INTO dedup (dedup_id, expires_at) VALUES (?1, ?2)",
                )
                .and_then(|mut st| st.execute(params![dedup_id, now + DEDUP_WINDOW_MS]))
                .map_err(q_err)?;
                // The run's owner is the message's fair-share key (receive serves users in
                // turn); a message of a run not stored here is its own key.
                tx.prepare_cached(
                    "INSERT INTO queue (group_id, body, visible_at, fair_key)
                     VALUES (?1, ?2, ?3, (SELECT user_id FROM runs WHERE id = ?1))",
                )
                .and_then(|mut st| st.execute(params![msg.run_id, body, now + delay_ms as i64]))
                .map_err(q_err)?;
                // Expired dedup ids are pruned on the way, so the table stays as small as the window.
                tx.prepare_cached("DELETE FROM dedup WHERE expires_at <= ?1")
                    .and_then(|mut st| st.execute([now]))
                    .map_err(q_err)?;
                Ok(Enqueued::Sent)
            })
            .await
    }

    /// At start-up every message in flight belongs to a worker of a process that is gone (the
    /// database is opened exclusively): they become visible now instead of after their
    /// visibility timeout. Returns how many.
    pub async fn release_in_flight(&self) -> QueueResult<usize> {
        let now = self.clock.now_ms();
        self.db
            .write(|c| {
                c.execute(
                    "UPDATE queue SET visible_at = ?1 WHERE dead = 0 AND receive_count > 0 AND visible_at > ?1",
                    [now],
                )
                .map_err(q_err)
            })
            .await
    }

    pub async fn dead_letters(&self) -> QueueResult<Vec<String>> {
        self.db
            .read(|c| {
                let mut st = c.prepare("SELECT body FROM queue WHERE dead = 1 ORDER BY seq")?;
                let rows = st.query_map([], |r| r.get(0))?;
                rows.collect::<Result<Vec<String>, _>>()
            })
            .await
            .map_err(q_err)
    }
}

#[async_trait]
impl StepQueue for SqliteStepQueue {
    async fn enqueue(
        &self, msg: &StepMessage, dedup_id: &str, delay_ms: u64,
    ) -> QueueResult<Enqueued> {
        self.send(msg, dedup_id, delay_ms, true).await
    }

    async fn enqueue_deferred(
        &self, msg: &StepMessage, dedup_id: &str, delay_ms: u64,
    ) -> QueueResult<Enqueued> {
        self.send(msg, dedup_id, delay_ms, false).await
    }

    async fn receive(&self, max: usize, visibility_ms: u64) -> QueueResult<Vec<Delivery>> {
        let now = self.clock.now_ms();
        let max_receives = self.max_receives;
        // Look before writing: an empty poll must not cost a transaction.
        let any: bool = self
            .db
            .read(|c| {
                c.prepare_cached(
                    "SELECT EXISTS (SELECT 1 FROM queue WHERE dead = 0 AND visible_at <= ?1)",
                )
                .and_then(|mut st| st.query_row([now], |r| r.get(0)))
            })
            .await
            .map_err(q_err)?;
        if !any {
            return Ok(vec![]);
        }
        // Deferred: a delivery lost in a crash is simply delivered again.
        self.db
            .write_deferred(|tx| {
                // Dead-letter first, so the message behind a dead head is delivered in this receive.
                tx.prepare_cached("UPDATE queue SET dead = 1 WHERE dead = 0 AND visible_at <= ?1 AND receive_count >= ?2")
                    .and_then(|mut st| st.execute(params![now, max_receives]))
                    .map_err(q_err)?;
                let heads: Vec<(i64, String, u32, String)> = {
                    // The head of each group, if visible: an in-flight head blocks its group (FIFO).
                    // Fair share: users take turns (each user's oldest ready run, then each
                    // one's second, …; at a turn, the user served longest ago first), so one
                    // user's thousand ready runs cannot starve another's one.
                    let mut st = tx
                        .prepare_cached(
                            "SELECT h.seq, h.body, h.receive_count, h.fkey FROM (
                                 SELECT q.seq, q.body, q.receive_count, COALESCE(q.fair_key, q.group_id) AS fkey,
                                        ROW_NUMBER() OVER (PARTITION BY COALESCE(q.fair_key, q.group_id) ORDER BY q.seq) AS turn
                                 FROM queue q
                                 WHERE q.dead = 0 AND q.visible_at <= ?1
                                   AND q.seq = (SELECT MIN(seq) FROM queue h WHERE h.group_id = q.group_id AND h.dead = 0)) h
                             LEFT JOIN fair f ON f.key = h.fkey
                             ORDER BY h.turn, COALESCE(f.served, 0), h.seq LIMIT +?2",
                        )
                        .map_err(q_err)?;
                    let rows = st
                        .query_map(params![now, max as i64], |r| {
                            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                        })
                        .map_err(q_err)?;
                    rows.collect::<Result<_, _>>().map_err(q_err)?
                };
                let mut out = vec![];
                for (seq, body, count, key) in heads {
                    // When a user was last served: at equal turns, the one served longest ago
                    // goes first, so turns rotate across receives, not only within one.
                    tx.prepare_cached(
                        "INSERT INTO fair (key, served) VALUES (?1, ?2)
                         ON CONFLICT (key) DO UPDATE SET served = excluded.served",
                    )
                    .and_then(|mut st| st.execute(params![key, now]))
                    .map_err(q_err)?;
                    let receipt = format!("{seq}-{}", count + 1);
                    tx.prepare_cached(
                        "UPDATE queue SET visible_at = ?1, receive_count = receive_count + 1 WHERE seq = ?2",
                    )
                    .and_then(|mut st| st.execute(params![now + visibility_ms as i64, seq]))
                    .map_err(q_err)?;
                    out.push(Delivery {
                        message_id: seq.to_string(),
                        receipt,
                        body,
                        receive_count: count + 1,
                    });
                }
                Ok(out)
            })
            .await
    }

    async fn ack(&self, receipt: &str) -> QueueResult<()> {
        let (seq, count) = parse_receipt(receipt)?;
        self.db
            .write_deferred(|c| {
                let n = c
                    .prepare_cached("DELETE FROM queue WHERE seq = ?1 AND receive_count = ?2")
                    .and_then(|mut st| st.execute(params![seq, count]))
                    .map_err(q_err)?;
                if n == 0 {
                    return Err(QueueError::StaleReceipt);
                }
                Ok(())
            })
            .await
    }

    async fn extend(&self, receipt: &str, visibility_ms: u64) -> QueueResult<()> {
        let (seq, count) = parse_receipt(receipt)?;
        let now = self.clock.now_ms();
        self.db
            .write_deferred(|c| {
                let n = c
                    .prepare_cached(
                        "UPDATE queue SET visible_at = ?1 WHERE seq = ?2 AND receive_count = ?3",
                    )
                    .and_then(|mut st| st.execute(params![now + visibility_ms as i64, seq, count]))
                    .map_err(q_err)?;
                if n == 0 {
                    return Err(QueueError::StaleReceipt);
                }
                Ok(())
            })
            .await
    }
}
