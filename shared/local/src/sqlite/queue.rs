//! `SqliteStepQueue`: the FIFO step queue in the same database, fair across users.

use super::ready::{Head, ReadyIndex};
use super::*;
use longrun_ports::send_then_ack_and_next;

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

fn head_of(group: String, r: &rusqlite::Row<'_>) -> rusqlite::Result<Head> {
    Ok(Head {
        group,
        seq: r.get(0)?,
        visible_at: r.get(1)?,
        receive_count: r.get(2)?,
        key: r.get(3)?,
    })
}

/// The live message of `group` a receive may deliver next (by `queue_group`).
fn next_head(c: &Connection, group: &str) -> QueueResult<Option<Head>> {
    c.prepare_cached(
        "SELECT seq, visible_at, receive_count, COALESCE(fair_key, group_id) FROM queue
         WHERE group_id = ?1 AND dead = 0 ORDER BY seq LIMIT 1",
    )
    .and_then(|mut st| {
        st.query_row([group], |r| head_of(group.to_string(), r))
            .optional()
    })
    .map_err(q_err)
}

/// Rebuilds the index from the table: one scan, at start-up or after a rolled-back group.
fn rebuild(db: &SqliteDb, c: &Connection, idx: &mut ReadyIndex) -> QueueResult<()> {
    // A bare column next to MIN() comes from the row holding the minimum (SQLite's rule).
    let mut st = c
        .prepare_cached(
            "SELECT MIN(seq), visible_at, receive_count, COALESCE(fair_key, group_id), group_id
             FROM queue WHERE dead = 0 GROUP BY group_id",
        )
        .map_err(q_err)?;
    let heads = st
        .query_map([], |r| head_of(r.get(4)?, r))
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<Head>>>())
        .map_err(q_err)?;
    let mut st = c
        .prepare_cached("SELECT key, served FROM fair")
        .map_err(q_err)?;
    let served = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<(String, i64)>>>())
        .map_err(q_err)?;
    idx.reset(db.generation(), heads, served);
    let mut st = c
        .prepare_cached("SELECT rowid, dedup_id, expires_at FROM dedup_log ORDER BY rowid")
        .map_err(q_err)?;
    let mut rows = st.query([]).map_err(q_err)?;
    while let Some(r) = rows.next().map_err(q_err)? {
        let (rowid, id, expires_at): (i64, String, i64) = (
            r.get(0).map_err(q_err)?,
            r.get(1).map_err(q_err)?,
            r.get(2).map_err(q_err)?,
        );
        idx.dedup.insert(&id, rowid, expires_at);
    }
    Ok(())
}

/// Runs `f` on the index, rebuilt first if the rows may have moved without it (a rolled-back
/// group bumps the generation). Call it only with the connection held (inside `read` or a
/// write closure). If `f` fails, the index is dropped, so a half-applied change never stays.
fn indexed<T>(
    db: &SqliteDb, c: &Connection, f: impl FnOnce(&mut ReadyIndex) -> QueueResult<T>,
) -> QueueResult<T> {
    let mut idx = db.ready_index();
    if !idx.is_current(db.generation()) {
        rebuild(db, c, &mut idx)?;
    }
    let out = f(&mut idx);
    if out.is_err() {
        idx.invalidate();
    }
    out
}

impl SqliteStepQueue {
    pub fn new(db: SqliteDb, clock: Arc<dyn Clock>) -> Self {
        SqliteStepQueue {
            db,
            clock,
            max_receives: crate::MAX_RECEIVES,
        }
    }

    /// Whether the index vouches that delivery `(seq, count)` is current and no other run is
    /// due at `now`: then its run may be carried on without a receive.
    fn alone(&self, seq: i64, count: u32, now: i64) -> bool {
        let idx = self.db.ready_index();
        idx.is_current(self.db.generation()) && idx.in_flight(seq, count) && !idx.any_due(now)
    }

    /// Enqueues a raw body, as a broken producer might.
    pub async fn enqueue_raw(&self, group: &str, body: &str) -> QueueResult<()> {
        let db = self.db.clone();
        self.db
            .write(|c| {
                let seq: i64 = c
                    .query_row(
                        "INSERT INTO queue (group_id, body, visible_at) VALUES (?1, ?2, 0) RETURNING seq",
                        params![group, body],
                        |r| r.get(0),
                    )
                    .map_err(q_err)?;
                indexed(&db, c, |idx| {
                    if !idx.has_head(group) {
                        idx.insert(Head {
                            seq,
                            group: group.into(),
                            key: group.into(),
                            visible_at: 0,
                            receive_count: 0,
                        });
                    }
                    Ok(())
                })
            })
            .await
    }

    async fn send(
        &self, msg: &StepMessage, dedup_id: &str, delay_ms: u64, durable: bool,
    ) -> QueueResult<Enqueued> {
        let now = self.clock.now_ms();
        let body = serde_json::to_string(msg).map_err(q_err)?;
        let db = self.db.clone();
        let run_id = msg.run_id.clone();
        let dedup_id = dedup_id.to_string();
        self.db
            .write_owned(durable, move |tx| {
                send_in(&db, tx, &run_id, &body, &dedup_id, now, delay_ms)
            })
            .await
    }

    /// At start-up every message in flight belongs to a worker of a process that is gone (the
    /// database is opened exclusively): they become visible now instead of after their
    /// visibility timeout. Returns how many.
    pub async fn release_in_flight(&self) -> QueueResult<usize> {
        let now = self.clock.now_ms();
        let db = self.db.clone();
        self.db
            .write(|c| {
                let n = c.execute(
                    "UPDATE queue SET visible_at = ?1 WHERE dead = 0 AND receive_count > 0 AND visible_at > ?1",
                    [now],
                )
                .map_err(q_err)?;
                // Start-up: the index is built here, from the table, before the worker starts.
                let mut idx = db.ready_index();
                rebuild(&db, c, &mut idx)?;
                Ok(n)
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
        &self, msg: &StepMessage, dedup_id: &str, delay_ms: u64, durability: Durability,
    ) -> QueueResult<Enqueued> {
        self.send(msg, dedup_id, delay_ms, durability == Durability::Now)
            .await
    }

    async fn receive(&self, max: usize, visibility_ms: u64) -> QueueResult<Vec<Delivery>> {
        let now = self.clock.now_ms();
        let max_receives = self.max_receives;
        let db = self.db.clone();
        // Look before writing: an empty poll must not cost a transaction.
        let any = self
            .db
            .read(|c| indexed(&db, c, |idx| Ok(idx.any_due(now))))
            .await?;
        if !any {
            return Ok(vec![]);
        }
        // Deferred: a delivery lost in a crash is simply delivered again. The index picks, so
        // the connection is held for O(batch) statements, not a ranking of every ready run.
        self.db
            .write_owned(false, move |tx| {
                indexed(&db, tx, |idx| {
                    dead_letter_due(tx, idx, now, max_receives)?;
                    let heads = idx.take(max, now, now + visibility_ms as i64);
                    deliver(tx, &heads, now)
                })
            })
            .await
    }

    async fn ack(&self, receipt: &str) -> QueueResult<()> {
        let (seq, count) = parse_receipt(receipt)?;
        let db = self.db.clone();
        // Handed over without waiting only for a receipt the index says is current, so a
        // stale one is still reported.
        let vouch = || {
            let idx = self.db.ready_index();
            idx.is_current(self.db.generation()) && idx.in_flight(seq, count)
        };
        self.db
            .write_behind("ack", vouch, move |c| {
                let n = c
                    .prepare_cached("DELETE FROM queue WHERE seq = ?1 AND receive_count = ?2")
                    .and_then(|mut st| st.execute(params![seq, count]))
                    .map_err(q_err)?;
                if n == 0 {
                    return Err(QueueError::StaleReceipt);
                }
                indexed(&db, c, |idx| {
                    // The run's next message, if any, is its head now.
                    if let Some(gone) = idx.remove(seq)
                        && let Some(head) = next_head(c, &gone.group)?
                    {
                        idx.insert(head);
                    }
                    Ok(())
                })
            })
            .await
    }

    async fn ack_and_next(
        &self, receipt: &str, send: Option<&StepMessage>, visibility_ms: u64,
    ) -> QueueResult<Option<Delivery>> {
        let (seq, count) = parse_receipt(receipt)?;
        let now = self.clock.now_ms();
        // Another run due, or a receipt the index cannot vouch for: a plain ack (after the
        // send), and the next message waits for a receive's fair turn.
        if !self.alone(seq, count, now) {
            return match send {
                Some(msg) => send_then_ack_and_next(self, msg, receipt, visibility_ms).await,
                None => self.ack(receipt).await.map(|()| None),
            };
        }
        let body = send.map(serde_json::to_string).transpose().map_err(q_err)?;
        let sent = send
            .zip(body)
            .map(|(m, b)| (m.run_id.clone(), b, m.dedup_id()));
        let max_receives = self.max_receives;
        let db = self.db.clone();
        self.db
            .write_owned(false, move |c| {
                let Some((run_id, body, dedup_id)) = &sent else {
                    return ack_next_in(&db, c, (seq, count), now, visibility_ms, max_receives);
                };
                send_in(&db, c, run_id, body, dedup_id, now, 0)?;
                // A receipt gone stale (delivered again since) keeps the send: that delivery
                // finds the iteration committed. Failing here would roll the group back.
                match ack_next_in(&db, c, (seq, count), now, visibility_ms, max_receives) {
                    Err(QueueError::StaleReceipt) => Ok(None),
                    carried => carried,
                }
            })
            .await
    }

    async fn extend(&self, receipt: &str, visibility_ms: u64) -> QueueResult<()> {
        let (seq, count) = parse_receipt(receipt)?;
        let now = self.clock.now_ms();
        let at = now + visibility_ms as i64;
        let db = self.db.clone();
        self.db
            .write_owned(false, move |c| {
                let n = c
                    .prepare_cached(
                        "UPDATE queue SET visible_at = ?1 WHERE seq = ?2 AND receive_count = ?3",
                    )
                    .and_then(|mut st| st.execute(params![at, seq, count]))
                    .map_err(q_err)?;
                if n == 0 {
                    return Err(QueueError::StaleReceipt);
                }
                indexed(&db, c, |idx| {
                    idx.set_visible_at(seq, at);
                    Ok(())
                })
            })
            .await
    }
}

/// The send, inside a write: the dedup window, the row, the index.
fn send_in(
    db: &SqliteDb, tx: &Connection, run_id: &str, body: &str, dedup_id: &str, now: i64,
    delay_ms: u64,
) -> QueueResult<Enqueued> {
    let candidate = indexed(db, tx, |idx| Ok(idx.dedup.candidate(dedup_id, now)))?;
    if let Some(rowid) = candidate {
        let same: bool = tx
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM dedup_log WHERE rowid = ?1 AND dedup_id = ?2)",
            )
            .and_then(|mut st| st.query_row(params![rowid, dedup_id], |r| r.get(0)))
            .map_err(q_err)?;
        if same {
            return Ok(Enqueued::Duplicate);
        }
    }
    let expires_at = now + DEDUP_WINDOW_MS;
    let rowid: i64 = tx
        .prepare_cached(
            "INSERT INTO dedup_log (dedup_id, expires_at) VALUES (?1, ?2) RETURNING rowid",
        )
        .and_then(|mut st| st.query_row(params![dedup_id, expires_at], |r| r.get(0)))
        .map_err(q_err)?;
    // The run's owner is the message's fair-share key (receive serves users in
    // turn); a message of a run not stored here is its own key.
    let (seq, key): (i64, String) = tx
        .prepare_cached(
            "INSERT INTO queue (group_id, body, visible_at, fair_key)
                 VALUES (?1, ?2, ?3, (SELECT user_id FROM runs WHERE id = ?1))
                 RETURNING seq, COALESCE(fair_key, group_id)",
        )
        .and_then(|mut st| {
            st.query_row(params![run_id, body, now + delay_ms as i64], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
        })
        .map_err(q_err)?;
    let visible_at = now + delay_ms as i64;
    let expired = indexed(db, tx, |idx| {
        // Behind a live message the new one is not a head: FIFO within the run.
        if !idx.has_head(run_id) {
            idx.insert(Head {
                seq,
                group: run_id.to_string(),
                key,
                visible_at,
                receive_count: 0,
            });
        }
        idx.dedup.insert(dedup_id, rowid, expires_at);
        Ok(idx.dedup.expire(now))
    })?;
    // Expired dedup ids are trimmed on the way, so the log stays as small as the window.
    if let Some(last) = expired {
        tx.prepare_cached("DELETE FROM dedup_log WHERE rowid <= ?1")
            .and_then(|mut st| st.execute([last]))
            .map_err(q_err)?;
    }
    Ok(Enqueued::Sent)
}

/// The ack of `(seq, receive count)`, inside a write, and the run's next message delivered when
/// it is the only one due.
fn ack_next_in(
    db: &SqliteDb, c: &Connection, (seq, count): (i64, u32), now: i64, visibility_ms: u64,
    max_receives: u32,
) -> QueueResult<Option<Delivery>> {
    let n = c
        .prepare_cached("DELETE FROM queue WHERE seq = ?1 AND receive_count = ?2")
        .and_then(|mut st| st.execute(params![seq, count]))
        .map_err(q_err)?;
    if n == 0 {
        return Err(QueueError::StaleReceipt);
    }
    indexed(db, c, |idx| {
        let Some(gone) = idx.remove(seq) else {
            return Ok(None);
        };
        let Some(head) = next_head(c, &gone.group)? else {
            return Ok(None);
        };
        // Judged again under the connection: a run that came due since the look
        // gets its turn from a receive.
        let others = idx.any_due(now);
        idx.insert(head);
        if others {
            return Ok(None);
        }
        // Nothing else is due, so the one head a receive could take is this run's.
        dead_letter_due(c, idx, now, max_receives)?;
        let heads = idx.take(1, now, now + visibility_ms as i64);
        Ok(deliver(c, &heads, now)?.pop())
    })
}

/// Dead-letters the heads that come due after their last allowed receive, first, so the
/// message behind a dead head is delivered in this same receive.
fn dead_letter_due(
    tx: &Connection, idx: &mut ReadyIndex, now: i64, max_receives: u32,
) -> QueueResult<()> {
    loop {
        let dead = idx.promote(now, max_receives);
        if dead.is_empty() {
            return Ok(());
        }
        for head in dead {
            tx.prepare_cached("UPDATE queue SET dead = 1 WHERE seq = ?1")
                .and_then(|mut st| st.execute([head.seq]))
                .map_err(q_err)?;
            if let Some(next) = next_head(tx, &head.group)? {
                idx.insert(next);
            }
        }
    }
}

/// Writes the deliveries the index picked: each message in flight and received once more, and
/// each user's turn (when it was last served, so turns rotate across receives).
fn deliver(tx: &Connection, heads: &[Head], now: i64) -> QueueResult<Vec<Delivery>> {
    let mut out = Vec::with_capacity(heads.len());
    let mut served: Vec<&str> = Vec::with_capacity(heads.len());
    for head in heads {
        if !served.contains(&head.key.as_str()) {
            served.push(&head.key);
            tx.prepare_cached(
                "INSERT INTO fair (key, served) VALUES (?1, ?2)
                 ON CONFLICT (key) DO UPDATE SET served = excluded.served",
            )
            .and_then(|mut st| st.execute(params![head.key, now]))
            .map_err(q_err)?;
        }
        let body: String = tx
            .prepare_cached(
                "UPDATE queue SET visible_at = ?1, receive_count = ?2 WHERE seq = ?3 RETURNING body",
            )
            .and_then(|mut st| {
                st.query_row(params![head.visible_at, head.receive_count, head.seq], |r| {
                    r.get(0)
                })
            })
            .map_err(q_err)?;
        out.push(Delivery {
            message_id: head.seq.to_string(),
            receipt: format!("{}-{}", head.seq, head.receive_count),
            body,
            receive_count: head.receive_count,
        });
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use longrun_ports::{ManualClock, StepReason};

    /// The ranking over the whole queue that the index replaced, kept as the reference: the
    /// seqs a receive at `now` delivers, in order, and those it dead-letters first.
    fn reference(c: &Connection, now: i64, max: usize, max_receives: u32) -> (Vec<i64>, Vec<i64>) {
        let seqs = |sql: &str| -> Vec<i64> {
            let mut st = c.prepare(sql).unwrap();
            st.query_map(params![now, max as i64, max_receives], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        let picked = seqs(
            "SELECT h.seq FROM (
                 SELECT q.seq, COALESCE(q.fair_key, q.group_id) AS fkey,
                        ROW_NUMBER() OVER (PARTITION BY COALESCE(q.fair_key, q.group_id) ORDER BY q.seq) AS turn
                 FROM queue q
                 WHERE q.dead = 0 AND q.visible_at <= ?1 AND q.receive_count < ?3
                   AND q.seq = (SELECT MIN(seq) FROM queue h WHERE h.group_id = q.group_id AND h.dead = 0
                                AND NOT (h.visible_at <= ?1 AND h.receive_count >= ?3))) h
             LEFT JOIN fair f ON f.key = h.fkey
             ORDER BY h.turn, COALESCE(f.served, 0), h.seq LIMIT ?2",
        );
        let dead = seqs(
            "SELECT seq FROM queue WHERE dead = 0 AND visible_at <= ?1 AND receive_count >= ?3
             AND ?2 = ?2 ORDER BY seq",
        );
        (picked, dead)
    }

    /// A small deterministic generator (xorshift), so a failure names its seed.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    const RUNS: [(&str, Option<&str>); 9] = [
        ("a1", Some("a")),
        ("a2", Some("a")),
        ("a3", Some("a")),
        ("a4", Some("a")),
        ("b1", Some("b")),
        ("b2", Some("b")),
        ("c1", Some("c")),
        ("x1", None),
        ("x2", None),
    ];

    struct World {
        dir: tempfile::TempDir,
        clock: Arc<ManualClock>,
        db: SqliteDb,
        queue: SqliteStepQueue,
        receipts: Vec<String>,
        next_iteration: u32,
    }

    impl World {
        fn open(dir: tempfile::TempDir, clock: Arc<ManualClock>) -> World {
            let db = SqliteDb::open(&dir.path().join("q.sqlite3")).unwrap();
            let queue = SqliteStepQueue {
                db: db.clone(),
                clock: clock.clone(),
                max_receives: 3,
            };
            World {
                dir,
                clock,
                db,
                queue,
                receipts: vec![],
                next_iteration: 1,
            }
        }

        async fn new() -> World {
            let w = World::open(
                tempfile::tempdir().unwrap(),
                Arc::new(ManualClock::new(1_000)),
            );
            for (run, user) in RUNS {
                if let Some(user) = user {
                    w.db.write(|c| {
                        c.execute(
                            "INSERT INTO runs (id, user_id, status, created_at, updated_at, body)
                             VALUES (?1, ?2, 'queued', 0, 0, '{}')",
                            [run, user],
                        )
                        .map_err(unavailable)
                    })
                    .await
                    .unwrap();
                }
            }
            w
        }

        /// Run a1's first step, sent and received (in flight for `visibility_ms`).
        async fn one_in_flight(&self, visibility_ms: u64) -> Delivery {
            let m = StepMessage::new("a1", 1, StepReason::Start);
            self.queue
                .enqueue(&m, &m.dedup_id(), 0, Durability::Now)
                .await
                .unwrap();
            let mut got = self.queue.receive(1, visibility_ms).await.unwrap();
            assert_eq!(got.len(), 1);
            got.remove(0)
        }

        /// Run a1's second step, sent behind its first, due after `delay_ms`.
        async fn second_sent(&self, delay_ms: u64) -> StepMessage {
            let next = StepMessage::new("a1", 2, StepReason::Continue);
            self.queue
                .enqueue(&next, &next.dedup_id(), delay_ms, Durability::Deferred)
                .await
                .unwrap();
            next
        }

        /// The steps a receive hands out now (up to ten, in flight for a minute).
        async fn receive_steps(&self) -> Vec<StepMessage> {
            let got = self.queue.receive(10, 60_000).await.unwrap();
            got.iter()
                .map(|d| StepMessage::parse(&d.body).unwrap())
                .collect()
        }

        /// The process stops and a new one opens the same file: the index is rebuilt from
        /// the table (with or without start-up's release of what was in flight).
        async fn restart(self, release: bool) -> World {
            self.db.write(|_| Ok::<_, StoreError>(())).await.unwrap();
            let (dir, clock, next) = (self.dir, self.clock, self.next_iteration);
            drop(self.queue);
            drop(self.db);
            let mut w = World::open(dir, clock);
            w.next_iteration = next;
            if release {
                w.queue.release_in_flight().await.unwrap();
            }
            w
        }

        async fn receive_and_compare(&mut self, max: usize, visibility: u64, seed: u64) {
            let now = self.clock.now_ms();
            let (want, dead) = self
                .db
                .read(|c| reference(c, now, max, self.queue.max_receives))
                .await;
            let got = self.queue.receive(max, visibility).await.unwrap();
            let seqs: Vec<i64> = got.iter().map(|d| d.message_id.parse().unwrap()).collect();
            assert_eq!(seqs, want, "seed {seed}: delivered in another order");
            let dead_now: Vec<i64> = self
                .db
                .read(|c| {
                    let mut st = c.prepare("SELECT seq FROM queue WHERE dead = 1").unwrap();
                    st.query_map([], |r| r.get(0))
                        .unwrap()
                        .collect::<Result<Vec<i64>, _>>()
                        .unwrap()
                })
                .await;
            assert!(
                dead.iter().all(|s| dead_now.contains(s)),
                "seed {seed}: not dead-lettered"
            );
            self.receipts.extend(got.into_iter().map(|d| d.receipt));
        }

        /// A worker carrying its run on: it is handed that run's next message only when the
        /// reference ranking, right after the ack, would have delivered that one and nothing else.
        async fn ack_and_compare(&mut self, receipt: &str, with_send: bool, seed: u64) {
            let now = self.clock.now_ms();
            let group = |c: &Connection| -> Option<String> {
                let seq: i64 = receipt.split_once('-')?.0.parse().ok()?;
                c.query_row("SELECT group_id FROM queue WHERE seq = ?1", [seq], |r| {
                    r.get(0)
                })
                .ok()
            };
            let acked = self.db.read(group).await;
            let carried = match &acked {
                // The worker's way: the run's next step sent with the ack, in one write.
                Some(run) if with_send => {
                    self.next_iteration += 1;
                    let msg = StepMessage::new(run, self.next_iteration, StepReason::Continue);
                    let sent = self.queue.ack_and_next(receipt, Some(&msg), 1_000).await;
                    assert!(sent.is_ok(), "seed {seed}: {sent:?}");
                    sent
                }
                _ => self.queue.ack_and_next(receipt, None, 1_000).await,
            };
            let Ok(next) = carried else {
                return;
            };
            let Some(next) = next else {
                return;
            };
            let (still_due, _) = self
                .db
                .read(|c| reference(c, now, 100, self.queue.max_receives))
                .await;
            let run = StepMessage::parse(&next.body).unwrap().run_id;
            assert_eq!(Some(run), acked, "seed {seed}: carried on with another run");
            assert!(
                still_due.is_empty(),
                "seed {seed}: carried on while {still_due:?} waited"
            );
            self.receipts.push(next.receipt);
        }

        /// One random operation of a worker, a producer, time, or a failure.
        async fn step(mut self, rng: &mut Rng, seed: u64) -> World {
            match rng.below(20) {
                0..=5 => {
                    let (run, _) = RUNS[rng.below(RUNS.len() as u64) as usize];
                    // Now and then the same iteration again: the dedup window drops it.
                    if rng.below(4) > 0 {
                        self.next_iteration += 1;
                    }
                    let msg = StepMessage::new(run, self.next_iteration, StepReason::Continue);
                    let delay = [0, 0, 0, 500, 2_000][rng.below(5) as usize];
                    self.queue
                        .enqueue(&msg, &msg.dedup_id(), delay, Durability::Deferred)
                        .await
                        .unwrap();
                }
                6..=9 => {
                    let max = 1 + rng.below(6) as usize;
                    let visibility = [300, 1_000, 5_000][rng.below(3) as usize];
                    self.receive_and_compare(max, visibility, seed).await;
                }
                10..=11 if !self.receipts.is_empty() => {
                    let i = rng.below(self.receipts.len() as u64) as usize;
                    let _ = self.queue.ack(&self.receipts.swap_remove(i)).await;
                }
                12 if !self.receipts.is_empty() => {
                    let i = rng.below(self.receipts.len() as u64) as usize;
                    let receipt = self.receipts.swap_remove(i);
                    let with_send = rng.below(2) == 0;
                    self.ack_and_compare(&receipt, with_send, seed).await;
                }
                13 if !self.receipts.is_empty() => {
                    let i = rng.below(self.receipts.len() as u64) as usize;
                    let ms = [0, 1_500][rng.below(2) as usize];
                    let _ = self.queue.extend(&self.receipts[i], ms).await;
                }
                14..=16 => self.clock.advance(rng.below(1_500) as i64),
                17 => {
                    // A write fails half-way in the group the queue's last writes joined: the
                    // group is rolled back under the index, which must notice.
                    let _ = self
                        .db
                        .write(|c| {
                            c.execute("INSERT INTO active (user_id, count) VALUES ('f', 0)", [])
                                .map_err(unavailable)?;
                            c.execute("INSERT INTO active (user_id, count) VALUES ('f', 0)", [])
                                .map_err(unavailable)
                        })
                        .await;
                }
                18 if rng.below(8) == 0 => return self.restart(rng.below(2) == 0).await,
                _ => {}
            }
            self
        }
    }

    #[tokio::test]
    async fn the_index_delivers_exactly_what_ranking_the_whole_queue_did() {
        for seed in 1..=40u64 {
            // Arrange
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let mut world = World::new().await;

            // Act / Assert: every receive is compared with the reference ranking.
            for _ in 0..400 {
                world = world.step(&mut rng, seed).await;
            }
        }
    }

    #[tokio::test]
    async fn after_a_restart_in_flight_delayed_and_deduplicated_messages_keep_their_state() {
        // Arrange: r1's head in flight (r1's second message behind it), r2 delayed, r3 ready.
        let w = World::new().await;
        let send = |run: &str, n: u32| StepMessage::new(run, n, StepReason::Continue);
        for (m, delay) in [(send("a1", 1), 0), (send("a1", 2), 0), (send("b1", 1), 0)] {
            w.queue
                .enqueue(&m, &m.dedup_id(), delay, Durability::Now)
                .await
                .unwrap();
        }
        let first = w.queue.receive(1, 10_000).await.unwrap();
        let delayed = send("c1", 1);
        w.queue
            .enqueue(&delayed, &delayed.dedup_id(), 5_000, Durability::Now)
            .await
            .unwrap();

        // Act: the process goes away without releasing anything.
        let mut w = w.restart(false).await;

        // Assert
        let bodies = |ds: Vec<Delivery>| -> Vec<StepMessage> {
            ds.iter()
                .map(|d| StepMessage::parse(&d.body).unwrap())
                .collect()
        };
        let dup = send("a1", 2);
        assert_eq!(
            w.queue
                .enqueue(&dup, &dup.dedup_id(), 0, Durability::Now)
                .await
                .unwrap(),
            Enqueued::Duplicate
        );
        assert_eq!(
            bodies(w.queue.receive(10, 10_000).await.unwrap()),
            [send("b1", 1)],
            "a1 is blocked by its head in flight, c1 is delayed"
        );
        w.clock.advance(5_000);
        assert_eq!(
            bodies(w.queue.receive(10, 10_000).await.unwrap()),
            [delayed]
        );
        w.queue.ack(&first[0].receipt).await.unwrap();
        assert_eq!(
            bodies(w.queue.receive(10, 10_000).await.unwrap()),
            [send("a1", 2)]
        );
        w.receipts.clear();
    }

    /// Rows left in the queue, read on a reader (the writer's connection may be held).
    async fn queued(db: &SqliteDb) -> i64 {
        db.write(|_| Ok::<_, StoreError>(())).await.unwrap();
        db.read_committed(|c| c.query_row("SELECT count(*) FROM queue", [], |r| r.get(0)))
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn an_ack_made_while_the_connection_is_held_returns_at_once_and_lands_as_it_is_let_go() {
        // Arrange
        let w = World::new().await;
        let d = w.one_in_flight(60_000).await;
        let held = w.db.lock();

        // Act: on this one-thread runtime an ack that waited would not return here.
        let acked = futures_util::FutureExt::now_or_never(w.queue.ack(&d.receipt));
        w.db.release(held);

        // Assert
        assert!(matches!(acked, Some(Ok(()))), "{acked:?}");
        assert_eq!(queued(&w.db).await, 0, "the holder applied the ack");
    }

    #[tokio::test]
    async fn a_stale_receipt_is_reported_even_while_the_connection_is_held() {
        // Arrange: the message was received again, so the first receipt is stale.
        let w = World::new().await;
        let first = w.one_in_flight(1_000).await;
        w.clock.advance(2_000);
        let second = w.queue.receive(1, 1_000).await.unwrap().pop().unwrap();
        let held = w.db.lock();

        // Act
        let mut ack = Box::pin(w.queue.ack(&first.receipt));
        let waited = futures_util::FutureExt::now_or_never(&mut ack).is_none();
        w.db.release(held);
        let stale = ack.await;

        // Assert
        assert!(
            waited,
            "a receipt the index does not vouch for waits for its answer"
        );
        assert!(matches!(stale, Err(QueueError::StaleReceipt)), "{stale:?}");
        assert_eq!(second.receive_count, 2);
        assert_eq!(queued(&w.db).await, 1);
    }

    #[tokio::test]
    async fn a_run_alone_is_handed_its_next_message_with_the_ack() {
        // Arrange
        let w = World::new().await;
        let d = w.one_in_flight(60_000).await;
        let next = w.second_sent(0).await;

        // Act
        let carried = w
            .queue
            .ack_and_next(&d.receipt, None, 60_000)
            .await
            .unwrap();

        // Assert
        let carried = carried.expect("nothing else waits, so a1 carries on");
        assert_eq!(StepMessage::parse(&carried.body).unwrap(), next);
        assert_eq!(carried.receive_count, 1);
        assert!(w.receive_steps().await.is_empty());
        w.queue.ack(&carried.receipt).await.unwrap();
        assert_eq!(queued(&w.db).await, 0);
    }

    #[tokio::test]
    async fn a_step_sent_with_a_stale_receipt_is_kept_and_nothing_is_carried_on() {
        // Arrange: a1's first step was delivered again, so the first receipt is stale.
        let w = World::new().await;
        let first = w.one_in_flight(1_000).await;
        w.clock.advance(2_000);
        let again = w.queue.receive(1, 60_000).await.unwrap().pop().unwrap();
        let next = StepMessage::new("a1", 2, StepReason::Continue);

        // Act
        let carried = w
            .queue
            .ack_and_next(&first.receipt, Some(&next), 60_000)
            .await
            .unwrap();

        // Assert: the redelivered step stays in flight, the sent one waits behind it.
        assert!(carried.is_none());
        assert_eq!(queued(&w.db).await, 2);
        w.queue.ack(&again.receipt).await.unwrap();
        assert_eq!(w.receive_steps().await[0], next);
    }

    #[tokio::test]
    async fn a_next_message_not_yet_due_is_left_to_a_receive() {
        // Arrange
        let w = World::new().await;
        let d = w.one_in_flight(60_000).await;
        let later = w.second_sent(5_000).await;

        // Act
        let carried = w
            .queue
            .ack_and_next(&d.receipt, None, 60_000)
            .await
            .unwrap();

        // Assert
        assert!(carried.is_none());
        assert!(w.receive_steps().await.is_empty());
        w.clock.advance(5_000);
        assert_eq!(w.receive_steps().await[0], later);
    }

    #[tokio::test]
    async fn a_stale_receipt_carries_nothing_on_and_is_reported() {
        // Arrange: received again, so the first receipt is stale.
        let w = World::new().await;
        let first = w.one_in_flight(1_000).await;
        w.clock.advance(2_000);
        let again = w.queue.receive(1, 1_000).await.unwrap();

        // Act
        let stale = w.queue.ack_and_next(&first.receipt, None, 1_000).await;

        // Assert
        assert!(matches!(stale, Err(QueueError::StaleReceipt)), "{stale:?}");
        assert_eq!(again.len(), 1);
        assert_eq!(queued(&w.db).await, 1);
    }

    #[tokio::test]
    async fn at_start_up_what_was_in_flight_is_delivered_again_at_once() {
        // Arrange
        let w = World::new().await;
        let first = w.one_in_flight(60_000).await;

        // Act
        let w = w.restart(true).await;
        let again = w.queue.receive(1, 60_000).await.unwrap();

        // Assert
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].message_id, first.message_id);
        assert_eq!(again[0].receive_count, 2);
    }

    #[tokio::test]
    async fn ready_runs_are_served_round_robin_by_user() {
        // Arrange: user a has three ready runs, queued before user b's one.
        let db = SqliteDb::open_in_memory().unwrap();
        let clock = Arc::new(longrun_ports::ManualClock::new(1_000));
        let queue = SqliteStepQueue::new(db.clone(), clock);
        for (run, user) in [("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b")] {
            insert_queued_run(&db, run, user).await;
            let msg = StepMessage::new(run, 1, longrun_ports::StepReason::Start);
            queue
                .enqueue(&msg, &msg.dedup_id(), 0, Durability::Now)
                .await
                .unwrap();
        }

        // Act
        let got = queue.receive(2, 30_000).await.unwrap();
        let rest = queue.receive(10, 30_000).await.unwrap();

        // Assert: b's run is served in the first turn, not after all of a's.
        let runs = |ds: &[Delivery]| -> Vec<String> {
            ds.iter()
                .map(|d| StepMessage::parse(&d.body).unwrap().run_id)
                .collect()
        };
        assert_eq!(runs(&got), vec!["a1", "b1"]);
        assert_eq!(runs(&rest), vec!["a2", "a3"]);
    }

    #[tokio::test]
    async fn a_user_with_one_ready_run_is_served_before_one_served_just_now() {
        // Arrange: a has many ready runs and was just served; b's one run is older news.
        let db = SqliteDb::open_in_memory().unwrap();
        let clock = Arc::new(longrun_ports::ManualClock::new(1_000));
        let queue = SqliteStepQueue::new(db.clone(), clock.clone());
        let runs: Vec<(String, &str)> = (0..5)
            .map(|i| (format!("a{i}"), "a"))
            .chain([("b1".to_string(), "b")])
            .collect();
        for (run, user) in &runs {
            db.write(|c| {
                c.execute(
                    "INSERT INTO runs (id, user_id, status, created_at, updated_at, body)
                     VALUES (?1, ?2, 'queued', 0, 0, '{}')",
                    [run.as_str(), user],
                )
                .map_err(unavailable)
            })
            .await
            .unwrap();
            let msg = StepMessage::new(run, 1, longrun_ports::StepReason::Start);
            queue
                .enqueue(&msg, &msg.dedup_id(), 0, Durability::Now)
                .await
                .unwrap();
        }

        // Act: one slot at a time, as a busy worker frees them.
        let mut order = vec![];
        for _ in 0..3 {
            clock.advance(1);
            let d = queue.receive(1, 30_000).await.unwrap().pop().unwrap();
            order.push(StepMessage::parse(&d.body).unwrap().run_id);
        }

        // Assert: a, then b (served longest ago), then a again.
        assert_eq!(order, vec!["a0", "b1", "a1"]);
    }
}
