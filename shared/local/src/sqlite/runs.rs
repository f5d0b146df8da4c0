//! `SqliteRunStore`: runs, their log and workspace, and the inbox.

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

#[derive(Default)]
struct RunCache {
    generation: u64,
    /// Each run with the tick it was last written or read at, and the group it was written in
    /// (it is committed once that group is).
    map: HashMap<String, Cached>,
    tick: u64,
}

/// Room for every run in flight (at most `max_inflight`, 4,096 by default) and those queued
/// behind them at 10,000 runs: a run that falls out is parsed again on its next write, under the
/// connection lock, and a read of it waits for that lock.
const RUN_CACHE_MAX: usize = 16_384;

struct Cached {
    run: Arc<Run>,
    used: u64,
    group: u64,
    /// Its newest scratchpad entries, once read (`None` until then, or after the run ends).
    pads: Option<PadTail>,
}

/// How many of a run's newest scratchpad entries the cache keeps: the planner's prompt reads
/// the last few every iteration, and reading them was a query and a parse per entry.
const PAD_TAIL: usize = 4;

/// A run's newest scratchpad entries, oldest first, as written through this store.
#[derive(Clone, Debug)]
struct PadTail {
    entries: std::collections::VecDeque<PadEntry>,
    /// The run has no entries but these (it has fewer than `PAD_TAIL`).
    whole: bool,
}

impl PadTail {
    /// The tail as read from the database with `limit` (newest first, as `LAST_PADS` reads).
    fn read(newest_first: &[PadEntry], limit: usize) -> PadTail {
        PadTail {
            entries: newest_first.iter().take(PAD_TAIL).rev().cloned().collect(),
            whole: newest_first.len() < limit && newest_first.len() <= PAD_TAIL,
        }
    }

    /// The last `n` entries, oldest first, if the tail holds them all.
    fn last(&self, n: usize) -> Option<Vec<PadEntry>> {
        if n > self.entries.len() && !self.whole {
            return None;
        }
        let skip = self.entries.len().saturating_sub(n);
        Some(self.entries.iter().skip(skip).cloned().collect())
    }

    /// `None` when `pad` is not the newest entry (then the tail cannot tell what is).
    fn push(mut self, pad: PadEntry) -> Option<PadTail> {
        if self.entries.back().is_some_and(|last| last.n >= pad.n) {
            return None;
        }
        self.entries.push_back(pad);
        if self.entries.len() > PAD_TAIL {
            self.entries.pop_front();
            self.whole = false;
        }
        Some(self)
    }
}

impl RunCache {
    fn get(&mut self, run_id: &str) -> Option<Arc<Run>> {
        self.tick += 1;
        let tick = self.tick;
        self.map.get_mut(run_id).map(|c| {
            c.used = tick;
            c.run.clone()
        })
    }

    /// The cached run if the group it was written in is committed (`committed` or older).
    fn get_committed(&mut self, run_id: &str, committed: u64) -> Option<Arc<Run>> {
        let group = self.map.get(run_id)?.group;
        (group <= committed).then(|| self.get(run_id)).flatten()
    }

    /// A run as read from the database: what the cache knew of its scratchpad goes.
    fn insert(&mut self, run: Arc<Run>, group: u64) {
        self.put(run, group, None);
    }

    /// A run as just written, with the scratchpad entry the write added: the tail known so
    /// far is kept, with the entry on it. An ended run's tail goes (no iteration reads it).
    fn wrote(&mut self, run: Arc<Run>, group: u64, pad: Option<PadEntry>) {
        if run.status.is_ended() && run.notified {
            // Done with: no iteration will write it again, and a read finds it on a reader
            // (the write is in the open group, which a writer's read sees). Kept, ended runs
            // filled the cache to its bound, the largest part of `serve`'s memory after a
            // day's runs (BENCHMARKS.md, "Soak").
            self.map.remove(&run.id);
            return;
        }
        let tail = self.map.get_mut(&run.id).and_then(|c| c.pads.take());
        let tail = match pad {
            Some(pad) => tail.and_then(|t| t.push(pad)),
            None => tail,
        };
        let tail = tail.filter(|_| !run.status.is_ended());
        self.put(run, group, tail);
    }

    fn put(&mut self, run: Arc<Run>, group: u64, pads: Option<PadTail>) {
        if self.map.len() >= RUN_CACHE_MAX && !self.map.contains_key(&run.id) {
            self.evict();
        }
        self.tick += 1;
        let used = self.tick;
        self.map.insert(
            run.id.clone(),
            Cached {
                run,
                used,
                group,
                pads,
            },
        );
    }

    fn pads(&self, run_id: &str, last: usize) -> Option<Vec<PadEntry>> {
        self.map.get(run_id)?.pads.as_ref()?.last(last)
    }

    /// Keeps a tail read from the database, unless the run was written (or dropped) since
    /// `seen` was its cached copy: then the read may be missing the write's entry.
    fn keep_pads(&mut self, run_id: &str, seen: &Arc<Run>, tail: PadTail) {
        if let Some(c) = self.map.get_mut(run_id)
            && Arc::ptr_eq(&c.run, seen)
            && !c.run.status.is_ended()
        {
            c.pads = Some(tail);
        }
    }

    /// Drops the ended runs and the least recently used half of the rest: the runs at work
    /// stay, so a full cache does not make every run in flight a miss at once.
    fn evict(&mut self) {
        self.map.retain(|_, c| !c.run.status.is_ended());
        if self.map.len() < RUN_CACHE_MAX * 3 / 4 {
            return;
        }
        let mut ticks: Vec<u64> = self.map.values().map(|c| c.used).collect();
        let mid = ticks.len() / 2;
        let (_, median, _) = ticks.select_nth_unstable(mid);
        let median = *median;
        self.map.retain(|_, c| c.used > median);
    }
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
struct Prepared {
    run: Run,
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
    fn new(mut change: RunChange, base: Option<&Run>) -> StoreResult<Self> {
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
    fn write(self, conn: &Connection) -> StoreResult<(Run, Option<PadEntry>)> {
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

    async fn update_run(&self, run_id: &str, change: ChangeFn<'_>) -> StoreResult<Run> {
        self.apply(true, run_id, change).await
    }

    async fn update_run_deferred(&self, run_id: &str, change: ChangeFn<'_>) -> StoreResult<Run> {
        self.apply(false, run_id, change).await
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

    fn run(id: &str, status: RunStatus) -> Arc<Run> {
        let mut run = longrun_domain::testing::sample_run();
        run.id = id.to_string();
        run.transition_to(RunStatus::Running, 0).unwrap();
        if status != RunStatus::Running {
            run.transition_to(status, 0).unwrap();
        }
        Arc::new(run)
    }

    #[test]
    fn a_full_run_cache_keeps_the_runs_at_work_and_lets_ended_and_idle_ones_go() {
        // Arrange: a full cache of running runs, a few of them ended, the first ones idle.
        let mut cache = RunCache::default();
        for i in 0..RUN_CACHE_MAX {
            let status = if i % 100 == 99 {
                RunStatus::Completed
            } else {
                RunStatus::Running
            };
            cache.insert(run(&format!("r{i}"), status), 1);
        }
        let busy = format!("r{}", 10);
        assert!(cache.get(&busy).is_some());

        // Act
        cache.insert(run("new", RunStatus::Running), 1);

        // Assert
        assert!(cache.get("new").is_some(), "the new run is kept");
        assert!(cache.get(&busy).is_some(), "a run just used is kept");
        assert!(cache.get("r99").is_none(), "ended runs go first");
        assert!(
            cache.get("r11").is_none(),
            "the least recently used go next"
        );
        let last = format!("r{}", RUN_CACHE_MAX - 2);
        assert!(cache.get(&last).is_some(), "recently written runs stay");
        assert!(cache.map.len() < RUN_CACHE_MAX, "room is made");
    }

    /// A store on a file (so with reader connections) holding one new run, and the run's id.
    async fn store_with_a_run() -> (tempfile::TempDir, SqliteRunStore, String) {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteRunStore::new(SqliteDb::open(&dir.path().join("db.sqlite")).unwrap());
        let run = longrun_domain::testing::sample_run();
        let id = run.id.clone();
        store
            .create_run(longrun_domain::change::create(run, 10))
            .await
            .unwrap();
        (dir, store, id)
    }

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
        store.update_run_deferred(&id, change).await.unwrap();
        let engine_sees = store.get_run(&id).await.unwrap().unwrap();
        let api_sees = store.get_committed_run(&id).await.unwrap().unwrap();
        store
            .update_run(&id, &|r: &Run| Ok(RunChange::of(r.clone(), vec![])))
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
        store.update_run(&id, &commit_one).await.unwrap();
        let before = store.get_run(&id).await.unwrap().unwrap();

        // Act: the same record again, past a change function that does not check.
        let again = store.update_run(&id, &commit_one).await;

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

    #[tokio::test]
    async fn a_runs_recent_docs_live_in_a_row_of_their_own_and_every_read_puts_them_back() {
        // Arrange: two docs noted, then a write that leaves them alone.
        let (_dir, store, id) = store_with_a_run().await;
        store
            .update_run(&id, &|r: &Run| {
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
            .update_run(run_id, &|r: &Run| {
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
        store.update_run_deferred(&id, change).await.unwrap();
        let before_commit = store.scratchpad(&id, 5).await.unwrap();
        store
            .update_run(&id, &|r: &Run| Ok(RunChange::of(r.clone(), vec![])))
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
        store.update_run_deferred(id, change).await.unwrap();
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
            .update_run(&id, &|r: &Run| Ok(RunChange::of(r.clone(), vec![])))
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

    #[test]
    fn a_kept_scratchpad_tail_answers_only_for_what_it_holds() {
        // Arrange: a run with two entries in all, and one with many (the newest four kept).
        let newest_first = |ns: &[u32]| -> Vec<PadEntry> {
            ns.iter()
                .map(|n| longrun_domain::testing::sample_pad(*n))
                .collect()
        };
        let numbers =
            |pads: Option<Vec<PadEntry>>| pads.map(|p| p.iter().map(|e| e.n).collect::<Vec<_>>());
        let short = PadTail::read(&newest_first(&[2, 1]), PAD_TAIL);
        let long = PadTail::read(&newest_first(&[9, 8, 7, 6]), PAD_TAIL);

        // Act
        let short_pushed = short.clone().push(longrun_domain::testing::sample_pad(3));
        let long_pushed = long.clone().push(longrun_domain::testing::sample_pad(10));
        let out_of_order = long.clone().push(longrun_domain::testing::sample_pad(8));

        // Assert
        assert_eq!(
            numbers(short.last(10)),
            Some(vec![1, 2]),
            "every entry the run has"
        );
        assert_eq!(numbers(long.last(3)), Some(vec![7, 8, 9]));
        assert_eq!(
            numbers(long.last(5)),
            None,
            "older entries are only in the database"
        );
        assert_eq!(
            numbers(short_pushed.and_then(|t| t.last(10))),
            Some(vec![1, 2, 3])
        );
        let long_pushed = long_pushed.unwrap();
        assert_eq!(numbers(long_pushed.last(4)), Some(vec![7, 8, 9, 10]));
        assert_eq!(numbers(long_pushed.last(5)), None);
        assert!(
            out_of_order.is_none(),
            "a tail that cannot tell the newest is dropped"
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
