//! A run change's write: `Prepared`, the change with every row serialized before the
//! connection is taken, and the statements that write it.

use super::*;

/// A run's body without `recent_docs`, and the list's JSON when it is to be written: it
/// differs from `base`'s, or the run is new and has some. The list changes only when an
/// iteration writes docs, and at 3.8 KB for 25 entries it made every write of the run row
/// overflow a page.
pub(super) fn split_body(
    run: &mut Run, base: Option<&Run>,
) -> StoreResult<(String, Option<String>)> {
    let moved = match base {
        Some(b) => {
            !Arc::ptr_eq(&b.recent_docs, &run.recent_docs) && b.recent_docs != run.recent_docs
        }
        None => !run.recent_docs.is_empty(),
    };
    let recent = std::mem::take(&mut run.recent_docs);
    let body = to_json(&*run);
    run.recent_docs = recent;
    let recent = match moved {
        true => Some(to_json(&*run.recent_docs)?),
        false => None,
    };
    Ok((body?, recent))
}

/// Sets a run's `recent_docs` row.
pub(super) fn write_recent(conn: &Connection, run_id: &str, recent: &str) -> StoreResult<()> {
    conn.prepare_cached(
        "INSERT INTO run_recent (run_id, body) VALUES (?1, ?2)
         ON CONFLICT (run_id) DO UPDATE SET body = ?2",
    )
    .and_then(|mut st| st.execute(params![run_id, recent]))
    .map(|_| ())
    .map_err(unavailable)
}

/// A change with its events numbered and every row serialized: what is left to do with the
/// connection held is the inserts.
pub(super) struct Prepared {
    pub(super) run: Run,
    /// The iteration last committed as of the run this change was made from.
    committed: u32,
    body: String,
    events: Vec<(u64, String)>,
    iteration: Option<(u32, String)>,
    /// (path, title, content, meta)
    docs: Vec<(String, String, String, String)>,
    /// The entry and its JSON.
    pad: Option<(PadEntry, String)>,
    /// `recent_docs`' JSON when the change moved it.
    recent: Option<String>,
    active: ActiveDelta,
    columns: Columns,
}

/// Which of the run row's columns a write sets besides the body. SQLite rewrites an index
/// entry whose column is set even to the value it had, so a column is set only when it
/// changes: `status` (its entry in `runs_by_user_status`; a run keeps its status through most
/// writes, `running` from claim to commit), and `updated_at` and `notified` (the run's entry in
/// `runs_unsettled` and `runs_ended`).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Columns {
    /// A new run, or its status changes: every column.
    All,
    /// `updated_at` (see `UPDATED_AT_GRAIN_MS`) and `notified`.
    Times,
    BodyOnly,
}

/// The `updated_at` column moves in steps of this grain, not at every write of a run (a run
/// at work is written several times a second): it is the time of the first write in the
/// grain the run's last write falls in, so it is at most a grain older than the body's
/// `updated_at`, and never newer. The readers by age (`stale_runs`, the retention scan) use
/// it to narrow the rows down and decide on the body's own times.
const UPDATED_AT_GRAIN_MS: i64 = 1_000;

impl Columns {
    fn of(base: Option<&Run>, run: &Run) -> Columns {
        let Some(base) = base else {
            return Columns::All;
        };
        let grain = |t: i64| t.div_euclid(UPDATED_AT_GRAIN_MS);
        if base.status != run.status {
            Columns::All
        } else if base.notified != run.notified
            || grain(base.updated_at) != grain(run.updated_at)
            // A clock that stepped back: the column must never be newer than the body.
            || run.updated_at < base.updated_at
        {
            Columns::Times
        } else {
            Columns::BodyOnly
        }
    }
}

impl Prepared {
    /// `change` of `base` (`None`: a run being created).
    pub(super) fn new(mut change: RunChange, base: Option<&Run>) -> StoreResult<Self> {
        let at = change.run.updated_at;
        let events = sequence_events(&mut change, base.map_or(0, |b| b.event_seq), at);
        let (body, recent) = split_body(&mut change.run, base)?;
        Ok(Prepared {
            committed: base.map_or(0, |b| b.iteration),
            columns: Columns::of(base, &change.run),
            body,
            recent,
            events: events
                .iter()
                .map(|e| Ok((e.seq, to_json(e)?)))
                .collect::<StoreResult<_>>()?,
            iteration: match &change.iteration {
                Some(rec) => Some((rec.n, to_json(rec)?)),
                None => None,
            },
            docs: std::mem::take(&mut change.docs)
                .into_iter()
                .map(|d| {
                    let meta = to_json(&d.meta())?;
                    Ok((d.path, d.title, d.content, meta))
                })
                .collect::<StoreResult<_>>()?,
            pad: match change.pad.take() {
                Some(p) => {
                    let body = to_json(&p)?;
                    Some((p, body))
                }
                None => None,
            },
            active: change.active,
            run: change.run,
        })
    }

    /// Returns the run as written and the scratchpad entry the write added. Checks come first
    /// and the first change is the one that may be refused (a second commit of an iteration),
    /// so a refusal changes nothing (see `SqliteDb`).
    pub(super) fn write(self, conn: &Connection) -> StoreResult<(Run, Option<PadEntry>)> {
        let run = self.run;
        let user = &run.user_id;
        if let ActiveDelta::Acquire { limit } = self.active {
            let count: u32 = conn
                .prepare_cached("SELECT count FROM active WHERE user_id = ?1")
                .and_then(|mut st| st.query_row([user], |r| r.get(0)).optional())
                .map_err(unavailable)?
                .unwrap_or(0);
            if count >= limit {
                return Err(Rejection::LimitExceeded { limit }.into());
            }
        }
        // Where this write's entries go in the run's stretch of the log (see `LOG`).
        let p = run.event_seq as i64;
        if let Some((n, body)) = &self.iteration {
            // The change was checked against the run as written: a second commit of the same
            // iteration is a bug and must fail loudly.
            if *n <= self.committed {
                return Err(StoreError::Corrupt(format!(
                    "iteration {n} of run {} is already committed",
                    run.id
                )));
            }
            conn.prepare_cached(INSERT_LOG)
                .and_then(|mut st| st.execute(params![run.id, ITERATION, n, body, p]))
                .map_err(unavailable)?;
        }
        match self.active {
            ActiveDelta::None => {}
            ActiveDelta::Acquire { .. } => {
                conn.prepare_cached(
                    "INSERT INTO active (user_id, count) VALUES (?1, 1)
                     ON CONFLICT(user_id) DO UPDATE SET count = count + 1",
                )
                .and_then(|mut st| st.execute([user]))
                .map_err(unavailable)?;
            }
            ActiveDelta::Release => {
                conn.prepare_cached(
                    "UPDATE active SET count = MAX(count - 1, 0) WHERE user_id = ?1",
                )
                .and_then(|mut st| st.execute([user]))
                .map_err(unavailable)?;
            }
        }
        let status = run.status.as_str();
        let (id, body, updated, notified) = (&run.id, &self.body, run.updated_at, run.notified);
        let written = match self.columns {
            Columns::All => conn
                .prepare_cached(
                    "INSERT INTO runs (id, user_id, status, created_at, updated_at, body, notified)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                     ON CONFLICT(id) DO UPDATE SET status = ?3, updated_at = ?5, body = ?6,
                        notified = ?7",
                )
                .and_then(|mut st| {
                    let created = run.created_at;
                    st.execute(params![id, user, status, created, updated, body, notified])
                }),
            Columns::Times => conn
                .prepare_cached(
                    "UPDATE runs SET updated_at = ?2, notified = ?3, body = ?4 WHERE id = ?1",
                )
                .and_then(|mut st| st.execute(params![id, updated, notified, body])),
            Columns::BodyOnly => conn
                .prepare_cached("UPDATE runs SET body = ?2 WHERE id = ?1")
                .and_then(|mut st| st.execute(params![id, body])),
        }
        .map_err(unavailable)?;
        if written == 0 {
            return Err(StoreError::Corrupt(format!("run {} is gone", run.id)));
        }
        if !self.events.is_empty() {
            let mut st = conn.prepare_cached(INSERT_LOG).map_err(unavailable)?;
            for (seq, body) in &self.events {
                st.execute(params![run.id, EVENT, *seq as i64, body, p])
                    .map_err(unavailable)?;
            }
        }
        if !self.docs.is_empty() {
            let mut st = conn
                .prepare_cached(
                    "INSERT OR REPLACE INTO docs (run_id, path, title, content, body) VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(unavailable)?;
            for (path, title, content, meta) in &self.docs {
                st.execute(params![run.id, path, title, content, meta])
                    .map_err(unavailable)?;
            }
        }
        if let Some(recent) = &self.recent {
            write_recent(conn, &run.id, recent)?;
        }
        if let Some((pad, body)) = &self.pad {
            conn.prepare_cached(INSERT_LOG)
                .and_then(|mut st| st.execute(params![run.id, PAD, pad.n, body, p]))
                .map_err(unavailable)?;
        }
        Ok((run, self.pad.map(|(pad, _)| pad)))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_second_record_of_a_committed_iteration_is_refused_as_corrupt_and_writes_nothing() {
        // Arrange: iteration 1 committed with its record and an event.
        let (_dir, store, id) = store_with_a_run().await;
        let commit_one = |r: &Run| {
            let mut next = r.clone();
            next.iteration = 1;
            let draft = longrun_domain::EventDraft::new(
                longrun_domain::EventKind::IterationCommitted,
                serde_json::json!({}),
            );
            Ok(RunChange {
                iteration: Some(longrun_domain::testing::sample_record(1)),
                ..RunChange::of(next, vec![draft])
            })
        };
        store
            .update_run(&id, Durability::Now, &commit_one)
            .await
            .unwrap();
        let before = store.get_run(&id).await.unwrap().unwrap();

        // Act: the same record again, past a change function that does not check.
        let again = store.update_run(&id, Durability::Now, &commit_one).await;

        // Assert
        assert!(matches!(again, Err(StoreError::Corrupt(_))), "{again:?}");
        let after = store.get_run(&id).await.unwrap().unwrap();
        assert_eq!(after.event_seq, before.event_seq);
        let events = store.events(&id, 0, 100).await.unwrap();
        assert_eq!(events.len() as u64, before.event_seq);
        assert_eq!(store.iterations(&id, 0, 10).await.unwrap().len(), 1);
    }

    #[test]
    fn a_run_write_carries_its_recent_docs_only_when_they_change_and_never_in_the_body() {
        // Arrange: a run with a doc in its index, and copies of it as the writes make them.
        let mut base = longrun_domain::testing::sample_run();
        base.note_docs([longrun_domain::testing::sample_doc_meta("a.md")]);
        let mut same = base.clone();
        same.updated_at += 1;
        let mut wrote = base.clone();
        wrote.note_docs([longrun_domain::testing::sample_doc_meta("b.md")]);
        let mut reread = base.clone();
        reread.recent_docs = Arc::new(base.recent_docs.to_vec());
        let mut new_run = longrun_domain::testing::sample_run();

        // Act
        let (same_body, same_recent) = split_body(&mut same, Some(&base)).unwrap();
        let (_, wrote_recent) = split_body(&mut wrote, Some(&base)).unwrap();
        let (_, reread_recent) = split_body(&mut reread, Some(&base)).unwrap();
        let (_, new_recent) = split_body(&mut new_run, None).unwrap();
        let (_, created_recent) = split_body(&mut base.clone(), None).unwrap();

        // Assert
        assert_eq!(same_recent, None);
        assert!(!same_body.contains("recent_docs"), "{same_body}");
        assert_eq!(
            same.recent_docs, base.recent_docs,
            "the run itself keeps its list"
        );
        let written: Vec<DocMeta> = serde_json::from_str(&wrote_recent.unwrap()).unwrap();
        assert_eq!(written, *wrote.recent_docs);
        assert_eq!(
            reread_recent, None,
            "an equal list read back is not written again"
        );
        assert_eq!(new_recent, None, "a new run without docs has no row");
        assert!(created_recent.is_some());
    }
}
