//! `SqliteRunStore`: runs, their log and workspace, and the inbox.

use super::cache::{PAD_TAIL, PadTail, RunCache};
use super::run_write::Prepared;
use super::*;

/// Clones share the database and the cache.
#[derive(Clone)]
pub struct SqliteRunStore {
    pub(super) db: SqliteDb,
    /// Parsed runs, as last written through this store: this process is the database's only
    /// writer, so the cache is exact, and parsing the run row was a sixth of the CPU per write.
    /// Its lock is taken alone or inside the connection's, never the other way round (reads of
    /// cached runs and scratchpads take it without the connection); emptied when the database
    /// rolls back a group.
    runs: Arc<std::sync::Mutex<RunCache>>,
}

// The reads of tables that grow with the store, named so a test can check that each one is a
// search of an index, never a scan or a sort (`EXPLAIN QUERY PLAN`), however many ended runs
// the store holds.

/// A run as read: its body and its `recent_docs`, kept in a row of their own (see `RECENT`).
macro_rules! select_run {
    () => {
        "SELECT body, (SELECT r.body FROM run_recent r WHERE r.run_id = runs.id) FROM runs"
    };
}

const GET_RUN: &str = concat!(select_run!(), " WHERE id = ?1");

// A statement per shape, each a range of one index: `?2 = '' OR status = ?2` made the planner
// walk all of a user's runs to find a few queued ones. The cursor is a row value, so a deep
// page starts at its place in the index instead of scanning down to it (an empty id sorts
// before every id, so it means "created strictly before").
// A context filter reads the bodies of the user's runs (walked newest first by the index);
// listing by context is rare enough not to earn a column and an index of its own.
const LIST_RUNS: &str = concat!(
    select_run!(),
    " WHERE user_id = ?1 AND ?2 = ''
       AND (created_at, id) < (?3, ?4)
       AND (?6 IS NULL OR json_extract(body, '$.context.type') = ?6)
       AND (?7 IS NULL OR json_extract(body, '$.context.entity_id') = ?7)
     ORDER BY created_at DESC, id DESC LIMIT +?5"
);
const LIST_RUNS_WITH_STATUS: &str = concat!(
    select_run!(),
    " WHERE user_id = ?1 AND status = ?2
       AND (created_at, id) < (?3, ?4)
       AND (?6 IS NULL OR json_extract(body, '$.context.type') = ?6)
       AND (?7 IS NULL OR json_extract(body, '$.context.entity_id') = ?7)
     ORDER BY created_at DESC, id DESC LIMIT +?5"
);

// A run's entries of one kind in its log (`?4`: `EVENT`, `ITERATION`), after a number: from
// `p > ?2` on, as no entry's `p` is below its number (see `LOG`). `+kind` keeps the kind a
// filter on the walk: as a term of the index search, SQLite sorts what it read.
const LOG_AFTER: &str = "SELECT body FROM log WHERE run_id = ?1 AND p > ?2 AND +kind = ?4
       AND n > ?2 ORDER BY p, kind, n LIMIT +?3";
// Walks the run's entries back from its newest: a scratchpad entry is one in a handful.
const LAST_PADS: &str = "SELECT body FROM log WHERE run_id = ?1 AND +kind = ?3
     ORDER BY p DESC, kind DESC, n DESC LIMIT +?2";
const NOTIFICATIONS: &str =
    "SELECT body FROM notifications WHERE user_id = ?1 ORDER BY at DESC, id DESC LIMIT +?2";
const NOTIFICATIONS_BEFORE: &str = "SELECT body FROM notifications WHERE user_id = ?1
       AND (at, id) < (?3, ?4) ORDER BY at DESC, id DESC LIMIT +?2";

// The OR term is `runs_unsettled`'s condition, written the same way, so these read only the
// runs that are active or not yet notified (a full store holds mostly ended, notified ones).
const STALE_RUNS: &str = concat!(
    select_run!(),
    " WHERE updated_at < ?1
       AND (status IN ('queued', 'running') OR notified = 0)
     ORDER BY updated_at, id LIMIT +?2"
);
const STRANDED: &str = concat!(
    select_run!(),
    " WHERE (status IN ('queued', 'running') OR notified = 0)
       AND (status NOT IN ('queued', 'running')
            OR NOT EXISTS (SELECT 1 FROM queue WHERE group_id = runs.id AND dead = 0))"
);
// The index `runs_waiting`'s terms, so only runs waiting on children are read.
const WAITS_DUE: &str = concat!(
    select_run!(),
    " WHERE status = 'waiting_on_children'
       AND json_extract(body, '$.children_wait_until') <= ?1
     ORDER BY json_extract(body, '$.children_wait_until'), id LIMIT +?2"
);
// The first term is `runs_unsettled`'s condition, so ended, notified runs are not read.
const LEASED: &str = concat!(
    select_run!(),
    " WHERE (status IN ('queued', 'running') OR notified = 0)
       AND status = 'running' AND json_extract(body, '$.lease') IS NOT NULL"
);

impl SqliteRunStore {
    /// One statement in the next group commit; how many rows it changed.
    pub(super) async fn execute(
        &self, sql: &str, params: impl rusqlite::Params + Send,
    ) -> StoreResult<usize> {
        self.db
            .write(|c| c.execute(sql, params).map_err(unavailable))
            .await
    }

    /// Runs that should be moving but have no live message (their send was lost in a crash),
    /// and runs whose outcome was never published. Read at start-up by `recover`.
    pub async fn stranded(&self) -> StoreResult<Vec<Run>> {
        self.db.read(|c| query_runs(c, STRANDED, &[])).await
    }

    /// Runs a worker holds a lease on; at start-up, those of a process that is gone.
    pub async fn leased_runs(&self) -> StoreResult<Vec<Run>> {
        self.db.read(|c| query_runs(c, LEASED, &[])).await
    }

    pub fn new(db: SqliteDb) -> Self {
        SqliteRunStore {
            db,
            runs: Arc::default(),
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, RunCache> {
        let mut c = self.runs.lock().unwrap_or_else(|e| e.into_inner());
        let generation = self.db.generation();
        if c.generation != generation {
            c.map.clear();
            c.generation = generation;
        }
        c
    }

    /// Drops a run from the cache: it was deleted (or written behind the cache's back).
    pub(super) fn forget(&self, run_id: &str) {
        self.cache().map.remove(run_id);
    }

    fn cached(&self, run_id: &str) -> Option<Arc<Run>> {
        self.cache().get(run_id)
    }

    /// A read of a run's own rows (its docs and scratchpad): on a reader connection once the
    /// run's last write through this store is committed, so an iteration's reads do not queue
    /// for the writer's connection behind thousands of other runs' writes; on the writer's,
    /// which sees the open group, while that write is not committed yet or the run is not
    /// cached (every write to a run's rows goes through the cache or drops the run from it).
    async fn read_own<T>(&self, run_id: &str, f: impl FnOnce(&Connection) -> T) -> T {
        let committed = self.db.committed_group();
        let settled = self
            .cache()
            .map
            .get(run_id)
            .is_some_and(|c| c.group <= committed);
        if settled {
            self.db.read_committed(f).await
        } else {
            self.db.read(f).await
        }
    }

    /// The current run; call with the connection lock held (inside a db closure).
    pub(super) fn current(&self, conn: &Connection, run_id: &str) -> StoreResult<Option<Arc<Run>>> {
        if let Some(run) = self.cached(run_id) {
            return Ok(Some(run));
        }
        let Some(run) = load_run(conn, run_id)? else {
            return Ok(None);
        };
        let run = Arc::new(run);
        self.remember(run.clone());
        Ok(Some(run))
    }

    /// Call with the connection lock held: the run is as of the group open now.
    pub(super) fn remember(&self, run: Arc<Run>) {
        let group = self.db.open_group();
        self.cache().insert(run, group);
    }

    /// `remember` for a run this store just wrote, with the scratchpad entry it added.
    fn remember_write(&self, run: Arc<Run>, pad: Option<PadEntry>) {
        let group = self.db.open_group();
        self.cache().wrote(run, group, pad);
    }

    /// Computes the change from the cached run and serializes it before taking the
    /// connection, which is then held only for the inserts: the connection is the one thing
    /// concurrent runs queue for. If another write got in first (the cached run is no longer
    /// the one the change was computed from), it starts over; without a cached run it does
    /// everything under the lock.
    async fn apply(&self, durable: bool, run_id: &str, change: ChangeFn<'_>) -> StoreResult<Run> {
        for _ in 0..3 {
            let Some(base) = self.cached(run_id) else {
                break;
            };
            let prepared = Prepared::new(change(&base)?, Some(&base))?;
            let next = Arc::new(prepared.run.clone());
            let store = self.clone();
            let id = run_id.to_string();
            let written = self
                .db
                .write_owned(durable, move |conn| {
                    let unchanged = store
                        .cache()
                        .map
                        .get(&id)
                        .is_some_and(|c| Arc::ptr_eq(&c.run, &base));
                    if !unchanged {
                        return Ok::<_, StoreError>(None);
                    }
                    let (run, pad) = prepared.write(conn)?;
                    store.remember_write(next, pad);
                    Ok(Some(run))
                })
                .await?;
            if let Some(run) = written {
                return Ok(run);
            }
        }
        self.db
            .write_with(durable, |conn| {
                let run = self.current(conn, run_id)?.ok_or(Rejection::NotFound)?;
                let (run, pad) = Prepared::new(change(&run)?, Some(&run))?.write(conn)?;
                self.remember_write(Arc::new(run.clone()), pad);
                Ok(run)
            })
            .await
    }
}

fn load_run(conn: &Connection, run_id: &str) -> StoreResult<Option<Run>> {
    Ok(query_runs(conn, GET_RUN, &[&run_id])?.pop())
}

/// The runs a `select_run!` statement reads, each with its `recent_docs` put back.
fn query_runs(
    conn: &Connection, sql: &str, params: &[&dyn rusqlite::ToSql],
) -> StoreResult<Vec<Run>> {
    let mut st = conn.prepare_cached(sql).map_err(unavailable)?;
    let rows = st
        .query_map(params, |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
        })
        .map_err(unavailable)?;
    let mut out = vec![];
    for row in rows {
        let (body, recent) = row.map_err(unavailable)?;
        let mut run: Run = from_json(&body)?;
        if let Some(recent) = recent {
            run.recent_docs = Arc::new(from_json(&recent)?);
        }
        out.push(run);
    }
    Ok(out)
}

/// A document from its row: the title and content columns and the meta JSON.
pub(super) fn doc_from_row(title: String, content: String, meta: &str) -> StoreResult<Doc> {
    let meta: DocMeta = from_json(meta)?;
    Ok(Doc {
        path: meta.path,
        title,
        content,
        tags: meta.tags,
        created_iteration: meta.created_iteration,
        updated_iteration: meta.updated_iteration,
        version: meta.version,
        updated_at: meta.updated_at,
        sources: meta.sources,
    })
}

#[async_trait]
impl RunLog for SqliteRunStore {
    async fn create_run(&self, change: RunChange) -> StoreResult<Run> {
        self.db
            .write(|conn| {
                if self.current(conn, &change.run.id)?.is_some() {
                    return Err(Rejection::Conflict(format!(
                        "run {} already exists",
                        change.run.id
                    ))
                    .into());
                }
                let (run, pad) = Prepared::new(change, None)?.write(conn)?;
                self.remember_write(Arc::new(run.clone()), pad);
                Ok(run)
            })
            .await
    }

    async fn get_run(&self, run_id: &str) -> StoreResult<Option<Run>> {
        if let Some(run) = self.cached(run_id) {
            return Ok(Some(Run::clone(&run)));
        }
        Ok(self
            .db
            .read(|c| self.current(c, run_id))
            .await?
            .map(|r| Run::clone(&r)))
    }

    async fn get_committed_run(&self, run_id: &str) -> StoreResult<Option<Run>> {
        let committed = self.db.committed_group();
        if let Some(run) = self.cache().get_committed(run_id, committed) {
            return Ok(Some(Run::clone(&run)));
        }
        self.db.read_committed(|c| load_run(c, run_id)).await
    }

    async fn list_runs(&self, user_id: &str, q: &RunQuery) -> StoreResult<Vec<Run>> {
        let (before_at, before_id) = q.before.clone().unwrap_or((i64::MAX, String::new()));
        let status = q.status.map(RunStatus::as_str).unwrap_or("");
        let context = q.context.as_ref();
        let sql = if status.is_empty() {
            LIST_RUNS
        } else {
            LIST_RUNS_WITH_STATUS
        };
        self.db
            .read_committed(|c| {
                query_runs(
                    c,
                    sql,
                    &[
                        &user_id,
                        &status,
                        &before_at,
                        &before_id,
                        &(q.limit as i64),
                        &context.and_then(|c| c.kind.as_deref()),
                        &context.and_then(|c| c.entity_id.as_deref()),
                    ],
                )
            })
            .await
    }

    async fn update_run(
        &self, run_id: &str, durability: Durability, change: ChangeFn<'_>,
    ) -> StoreResult<Run> {
        self.apply(durability == Durability::Now, run_id, change)
            .await
    }

    async fn events(&self, run_id: &str, after: u64, limit: usize) -> StoreResult<Vec<Event>> {
        self.db
            .read_committed(|c| {
                query_json(
                    c,
                    LOG_AFTER,
                    &[&run_id, &(after as i64), &(limit as i64), &EVENT],
                )
            })
            .await
    }

    async fn iterations(
        &self, run_id: &str, after: u32, limit: usize,
    ) -> StoreResult<Vec<IterationRecord>> {
        self.db
            .read_committed(|c| {
                query_json(
                    c,
                    LOG_AFTER,
                    &[&run_id, &after, &(limit as i64), &ITERATION],
                )
            })
            .await
    }

    async fn active_runs(&self, user_id: &str) -> StoreResult<u32> {
        self.db
            .read(|c| {
                c.query_row(
                    "SELECT count FROM active WHERE user_id = ?1",
                    [user_id],
                    |r| r.get(0),
                )
                .optional()
                .map(|c| c.unwrap_or(0))
            })
            .await
            .map_err(unavailable)
    }

    async fn stale_runs(&self, updated_before: i64, limit: usize) -> StoreResult<Vec<Run>> {
        let runs: Vec<Run> = self
            .db
            .read(|c| query_runs(c, STALE_RUNS, &[&updated_before, &(limit as i64)]))
            .await?;
        // The column may be up to a grain older than the run's last write.
        Ok(runs
            .into_iter()
            .filter(|r| r.updated_at < updated_before)
            .collect())
    }

    async fn waits_due(&self, now: i64, limit: usize) -> StoreResult<Vec<Run>> {
        self.db
            .read(|c| query_runs(c, WAITS_DUE, &[&now, &(limit as i64)]))
            .await
    }
}

#[async_trait]
impl Workspace for SqliteRunStore {
    async fn docs(&self, run_id: &str, prefix: &str, limit: usize) -> StoreResult<Vec<DocMeta>> {
        // substr() rather than LIKE: paths may contain % and _.
        self.read_own(run_id, |c| {
            query_json(
                c,
                "SELECT body FROM docs WHERE run_id = ?1 AND substr(path, 1, length(?2)) = ?2 ORDER BY path LIMIT +?3",
                &[&run_id, &prefix, &(limit as i64)],
            )
        })
        .await
    }

    async fn doc(&self, run_id: &str, path: &str) -> StoreResult<Option<Doc>> {
        let row: Option<(String, String, String)> = self
            .read_own(run_id, |c| {
                c.prepare_cached(
                    "SELECT title, content, body FROM docs WHERE run_id = ?1 AND path = ?2",
                )
                .and_then(|mut st| {
                    st.query_row([run_id, path], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                        .optional()
                })
            })
            .await
            .map_err(unavailable)?;
        row.map(|(title, content, meta)| doc_from_row(title, content, &meta))
            .transpose()
    }

    async fn search_docs(
        &self, run_id: &str, query: &str, limit: usize,
    ) -> StoreResult<Vec<DocHit>> {
        let needle = query.to_lowercase();
        let rows: Vec<(String, String, String)> = self
            .read_own(run_id, |c| {
                let mut st = c.prepare_cached(
                    "SELECT path, title, content FROM docs WHERE run_id = ?1
                       AND (instr(lower(content), ?2) > 0 OR instr(lower(title), ?2) > 0)
                     ORDER BY path LIMIT +?3",
                )?;
                let rows = st.query_map(params![run_id, needle, limit as i64], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })?;
                rows.collect::<Result<Vec<_>, _>>()
            })
            .await
            .map_err(unavailable)?;
        Ok(rows
            .into_iter()
            .filter_map(|(path, title, content)| doc_hit(&path, &title, &content, query))
            .collect())
    }

    async fn scratchpad(&self, run_id: &str, last: usize) -> StoreResult<Vec<PadEntry>> {
        let seen = {
            let cache = self.cache();
            if let Some(entries) = cache.pads(run_id, last) {
                return Ok(entries);
            }
            cache.map.get(run_id).map(|c| c.run.clone())
        };
        // A few more rows than asked only when the run is cached, where they are kept.
        let limit = if seen.is_some() {
            last.max(PAD_TAIL)
        } else {
            last
        };
        let mut out: Vec<PadEntry> = self
            .read_own(run_id, |c| {
                query_json(c, LAST_PADS, &[&run_id, &(limit as i64), &PAD])
            })
            .await?;
        if let Some(seen) = seen {
            self.cache()
                .keep_pads(run_id, &seen, PadTail::read(&out, limit));
        }
        out.truncate(last);
        out.reverse();
        Ok(out)
    }
}

#[async_trait]
impl Inbox for SqliteRunStore {
    async fn put_notification(&self, n: &Notification) -> StoreResult<bool> {
        let body = to_json(n)?;
        let sql =
            "INSERT OR IGNORE INTO notifications (id, user_id, at, body) VALUES (?1, ?2, ?3, ?4)";
        let inserted = self.execute(sql, (&n.id, &n.user_id, n.at, body)).await?;
        Ok(inserted == 1)
    }

    async fn notifications_page(
        &self, user_id: &str, before: Option<&(i64, String)>, limit: usize,
    ) -> StoreResult<Vec<Notification>> {
        let limit = limit as i64;
        self.db
            .read_committed(|c| match before {
                None => query_json(c, NOTIFICATIONS, &[&user_id, &limit]),
                Some((at, id)) => query_json(c, NOTIFICATIONS_BEFORE, &[&user_id, &limit, at, id]),
            })
            .await
    }

    async fn mark_notification_read(&self, n: &Notification) -> StoreResult<()> {
        self.db
            .write(|c| {
                c.execute(
                    "UPDATE notifications SET body = json_set(body, '$.read', json('true'))
                     WHERE id = ?1 AND user_id = ?2",
                    params![n.id, n.user_id],
                )
                .map(|_| ())
                .map_err(unavailable)
            })
            .await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_committed_run_is_never_ahead_of_its_committed_iterations() {
        // Arrange: a run on a file (reader connections), then an iteration committed the way
        // the engine commits one: deferred, so its group is not committed when it returns.
        let (_dir, store, id) = store_with_a_run().await;
        let change: ChangeFn<'_> = &|r: &Run| {
            let mut next = r.clone();
            next.iteration += 1;
            Ok(RunChange::of(next, vec![]))
        };

        // Act
        store
            .update_run(&id, Durability::Deferred, change)
            .await
            .unwrap();
        let engine_sees = store.get_run(&id).await.unwrap().unwrap();
        let api_sees = store.get_committed_run(&id).await.unwrap().unwrap();
        store
            .update_run(&id, Durability::Now, &|r: &Run| {
                Ok(RunChange::of(r.clone(), vec![]))
            })
            .await
            .unwrap();
        let api_sees_later = store.get_committed_run(&id).await.unwrap().unwrap();

        // Assert
        assert_eq!(
            engine_sees.iteration, 1,
            "the engine sees its own write at once"
        );
        assert_eq!(
            api_sees.iteration, 0,
            "the API does not see a write not yet committed"
        );
        assert_eq!(api_sees_later.iteration, 1, "and sees it once it is");
    }

    #[tokio::test]
    async fn a_runs_recent_docs_live_in_a_row_of_their_own_and_every_read_puts_them_back() {
        // Arrange: two docs noted, then a write that leaves them alone.
        let (_dir, store, id) = store_with_a_run().await;
        store
            .update_run(&id, Durability::Now, &|r: &Run| {
                let mut next = r.clone();
                next.note_docs([
                    longrun_domain::testing::sample_doc_meta("a.md"),
                    longrun_domain::testing::sample_doc_meta("b.md"),
                ]);
                Ok(RunChange::of(next, vec![]))
            })
            .await
            .unwrap();
        write_at(&store, &id, 20_000).await;
        let written = store.get_run(&id).await.unwrap().unwrap();

        // Act: a store with nothing cached reads the database.
        let cold = SqliteRunStore::new(store.db.clone());
        let got = cold.get_run(&id).await.unwrap().unwrap();
        let listed = cold
            .list_runs(
                &written.user_id,
                &RunQuery {
                    limit: 10,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let stale = cold.stale_runs(30_000, 10).await.unwrap();
        let (in_body, rows): (Option<String>, i64) = store
            .db
            .read(|c| {
                c.query_row(
                    "SELECT json_type(body, '$.recent_docs'), (SELECT count(*) FROM run_recent) FROM runs",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
            })
            .await
            .unwrap();

        // Assert
        let paths = |r: &Run| {
            r.recent_docs
                .iter()
                .map(|d| d.path.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(paths(&written), ["b.md", "a.md"]);
        assert_eq!(got, written);
        assert_eq!(listed, std::slice::from_ref(&written));
        assert_eq!(stale, [written]);
        assert_eq!(in_body, None, "the run row leaves the list out");
        assert_eq!(rows, 1);
    }

    /// Writes `run_id` as last written at `at`.
    async fn write_at(store: &SqliteRunStore, run_id: &str, at: i64) {
        store
            .update_run(run_id, Durability::Now, &|r: &Run| {
                let mut next = r.clone();
                next.updated_at = at;
                Ok(RunChange::of(next, vec![]))
            })
            .await
            .unwrap();
    }

    async fn stale(store: &SqliteRunStore, before: i64) -> Vec<String> {
        let runs = store.stale_runs(before, 10).await.unwrap();
        runs.into_iter().map(|r| r.id).collect()
    }

    #[tokio::test]
    async fn a_run_is_stale_by_its_last_write_even_within_a_second_of_the_one_before() {
        // Arrange: a run written at 10.5 s, then 0.1 s later (the same second).
        let (_dir, store, id) = store_with_a_run().await;
        write_at(&store, &id, 10_500).await;
        write_at(&store, &id, 10_600).await;

        // Act
        let before_last_write = stale(&store, 10_550).await;
        let after_last_write = stale(&store, 10_700).await;
        // A clock that stepped back: the run's last write is now at 10.2 s.
        write_at(&store, &id, 10_200).await;
        let after_the_step_back = stale(&store, 10_300).await;

        // Assert
        assert!(before_last_write.is_empty(), "written at 10.6 s");
        assert_eq!(after_last_write, std::slice::from_ref(&id));
        assert_eq!(after_the_step_back, [id]);
    }

    #[tokio::test]
    async fn a_runs_scratchpad_is_read_back_at_once_and_once_committed_without_the_writer() {
        // Arrange: a run on a file (reader connections), and an iteration's scratchpad entry
        // written deferred, so its group is not committed when the write returns.
        let (_dir, store, id) = store_with_a_run().await;
        let entry = longrun_domain::testing::sample_pad(1);
        let change: ChangeFn<'_> = &|r: &Run| {
            let mut change = RunChange::of(r.clone(), vec![]);
            change.pad = Some(entry.clone());
            Ok(change)
        };

        // Act
        store
            .update_run(&id, Durability::Deferred, change)
            .await
            .unwrap();
        let before_commit = store.scratchpad(&id, 5).await.unwrap();
        store
            .update_run(&id, Durability::Now, &|r: &Run| {
                Ok(RunChange::of(r.clone(), vec![]))
            })
            .await
            .unwrap();
        let held = store.db.lock();
        let read = futures_util::FutureExt::now_or_never(store.scratchpad(&id, 5));
        drop(held);

        // Assert
        assert_eq!(
            before_commit,
            vec![entry.clone()],
            "its own write, read at once"
        );
        let after_commit = read.expect("a committed run's read does not wait for the writer");
        assert_eq!(after_commit.unwrap(), vec![entry]);
    }

    /// Commits iteration `n`'s scratchpad entry the way the engine does (deferred).
    async fn commit_pad(store: &SqliteRunStore, id: &str, n: u32) {
        let entry = longrun_domain::testing::sample_pad(n);
        let change: ChangeFn<'_> = &|r: &Run| {
            let mut change = RunChange::of(r.clone(), vec![]);
            change.pad = Some(entry.clone());
            Ok(change)
        };
        store
            .update_run(id, Durability::Deferred, change)
            .await
            .unwrap();
    }

    async fn pad_numbers(store: &SqliteRunStore, id: &str, last: usize) -> Vec<u32> {
        let pads = store.scratchpad(id, last).await.unwrap();
        pads.iter().map(|p| p.n).collect()
    }

    #[tokio::test]
    async fn a_runs_newest_scratchpad_entries_stay_right_as_it_commits_and_when_a_group_rolls_back()
    {
        // Arrange: a run with six entries, the newest read once (which keeps them in memory).
        let (_dir, store, id) = store_with_a_run().await;
        for n in 1..=6 {
            commit_pad(&store, &id, n).await;
        }
        let first = pad_numbers(&store, &id, 3).await;

        // Act: one more commit, made durable; then an entry whose group a failed write abandons.
        commit_pad(&store, &id, 7).await;
        let after_a_commit = pad_numbers(&store, &id, 3).await;
        let longer = pad_numbers(&store, &id, 10).await;
        store
            .update_run(&id, Durability::Now, &|r: &Run| {
                Ok(RunChange::of(r.clone(), vec![]))
            })
            .await
            .unwrap();
        commit_pad(&store, &id, 8).await;
        let failed = store
            .db
            .write(|c| {
                c.execute("DELETE FROM active", []).map_err(unavailable)?;
                Err::<(), _>(StoreError::Unavailable("fails half-way".into()))
            })
            .await;
        let after_the_rollback = pad_numbers(&store, &id, 3).await;

        // Assert
        assert_eq!(first, [4, 5, 6]);
        assert_eq!(after_a_commit, [5, 6, 7]);
        assert_eq!(
            longer,
            [1, 2, 3, 4, 5, 6, 7],
            "more than the few kept: all of them"
        );
        assert!(failed.is_err());
        assert_eq!(
            after_the_rollback,
            [5, 6, 7],
            "entry 8 was rolled back with its group"
        );
    }

    #[tokio::test]
    async fn no_read_of_a_growing_table_scans_or_sorts_it() {
        // Arrange: the schema as opened, without statistics (plans must not hinge on ANALYZE).
        let db = SqliteDb::open_in_memory().unwrap();
        let statements = [
            GET_RUN,
            LIST_RUNS,
            LIST_RUNS_WITH_STATUS,
            LOG_AFTER,
            LAST_PADS,
            NOTIFICATIONS,
            STALE_RUNS,
            STRANDED,
            LEASED,
            WAITS_DUE,
        ];

        // Act
        let plans: Vec<(String, String)> = db
            .read(|c| {
                statements
                    .iter()
                    .map(|sql| (sql.to_string(), query_plan(c, sql)))
                    .collect()
            })
            .await;

        // Assert: every step is a search of an index, or a walk of a partial index of the runs
        // in progress (`runs_unsettled`), which is as small as the work under way.
        for (sql, plan) in plans {
            let scans_a_table = plan.split("; ").any(|step| {
                step.starts_with("SCAN") && !step.ends_with("USING INDEX runs_unsettled")
            });
            assert!(
                !scans_a_table && !plan.contains("TEMP B-TREE"),
                "{sql}\n=> {plan}"
            );
        }
    }
}
