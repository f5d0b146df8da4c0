//! SQLite adapters: one database file holds the store and the queue.
//!
//! Durability: WAL journal with `synchronous=FULL` — every commit is fsynced before it returns,
//! so an acknowledged iteration survives power loss, not only a process crash. WAL lets
//! readers (the API) run while the worker writes.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use longrun_domain::change::ActiveDelta;
use longrun_domain::run::{Run, RunStatus};
use longrun_domain::{
    Doc, DocMeta, Event, IterationRecord, PadEntry, Rejection, RunChange, Schedule,
};
use longrun_engine::ports::{
    ChangeFn, Clock, DEDUP_WINDOW_MS, Delivery, DocHit, Enqueued, McpServer, Notification,
    QueueError, RunQuery, RunStore, StepMessage, StepQueue, StoreError, UserTool, Webhook,
    sequence_events,
};
use longrun_engine::tools::doc_hit;
use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::watch;

/// Databases made before fair share have a queue without the owner of each message.
fn add_fair_key(conn: &Connection) -> rusqlite::Result<()> {
    let has: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM pragma_table_info('queue') WHERE name = 'fair_key')",
        [],
        |r| r.get(0),
    )?;
    if !has {
        conn.execute_batch("ALTER TABLE queue ADD COLUMN fair_key TEXT")?;
    }
    Ok(())
}

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    user_id TEXT NOT NULL,
    status TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_user ON runs(user_id, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS runs_active ON runs(updated_at) WHERE status IN ('queued', 'running');
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS iterations (
    run_id TEXT NOT NULL, n INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (run_id, n)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS docs (
    run_id TEXT NOT NULL, path TEXT NOT NULL, title TEXT NOT NULL, content TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (run_id, path)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS pads (
    run_id TEXT NOT NULL, n INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (run_id, n)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS active (user_id TEXT PRIMARY KEY, count INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS webhooks (user_id TEXT PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS user_tools (
  user_id TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (user_id, name));
CREATE TABLE IF NOT EXISTS mcp_servers (
  user_id TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (user_id, name));
CREATE TABLE IF NOT EXISTS schedules (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, next_at INTEGER NOT NULL, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS schedules_due ON schedules (next_at);
CREATE TABLE IF NOT EXISTS notifications (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, at INTEGER NOT NULL, body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS notifications_by_user ON notifications(user_id, at DESC);
CREATE TABLE IF NOT EXISTS queue (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    group_id TEXT NOT NULL,
    body TEXT NOT NULL,
    visible_at INTEGER NOT NULL,
    receive_count INTEGER NOT NULL DEFAULT 0,
    dead INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS queue_group ON queue(group_id, dead, seq);
DROP INDEX IF EXISTS queue_receipt;
CREATE INDEX IF NOT EXISTS queue_visible ON queue(dead, visible_at);
CREATE TABLE IF NOT EXISTS fair (key TEXT PRIMARY KEY, served INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS dedup (dedup_id TEXT PRIMARY KEY, expires_at INTEGER NOT NULL)
    WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS dedup_expiry ON dedup(expires_at);
"#;

/// One SQLite connection shared by the store and the queue, with group commit.
///
/// Every write runs inside the currently open transaction; the first writer of a group spawns
/// the committer, which lets the writers that are ready join, then commits (one fsync) for all
/// of them. A write is not wrapped in a savepoint (journaling every page it touches cost a fifth
/// of the throughput): each write makes its checks before it changes anything, so a refusal
/// leaves nothing behind, and a failing statement is undone by SQLite on its own. A write that
/// fails after changing rows abandons its whole group, which is rolled back and reported failed
/// to every writer waiting on it, exactly as a failed COMMIT is. A writer returns only after its
/// group is durable, so an acknowledged write survives power loss, while 50 concurrent runs share
/// one fsync instead of paying one each. Reads on the connection may see a group's writes a
/// moment before its fsync completes; nothing is acknowledged to a caller before then.
#[derive(Clone)]
pub struct SqliteDb {
    inner: Arc<Inner>,
}

struct Inner {
    /// Bumped whenever written state is rolled back after the writer saw it succeed, so
    /// caches of rows (the run cache) know to start over.
    generation: std::sync::atomic::AtomicU64,
    writes: std::sync::atomic::AtomicU64,
    commit_us: std::sync::atomic::AtomicU64,
    conn: Arc<std::sync::Mutex<Conn>>,
    finished: watch::Sender<u64>,
    failed: std::sync::Mutex<HashSet<u64>>,
    /// The WAL to fsync after each group commit (FULL durability), outside the connection lock.
    wal_path: Option<std::path::PathBuf>,
    wal_file: std::sync::OnceLock<std::fs::File>,
    wal_syncs: std::sync::atomic::AtomicU64,
}

impl Inner {
    /// Marks a group failed: its waiting writers get an error, and caches of rows start over.
    fn abandon(&self, batch: u64) {
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(batch);
    }

    /// Makes every frame committed so far durable. Any fd of the file will do: fsync flushes
    /// the file, so one group's sync also covers the groups committed before it.
    fn sync_wal(&self) -> std::io::Result<()> {
        let Some(path) = &self.wal_path else {
            return Ok(());
        };
        let file = match self.wal_file.get() {
            Some(f) => f,
            None => match std::fs::File::open(path) {
                Ok(f) => self.wal_file.get_or_init(|| f),
                // No WAL yet: no frame to make durable.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(e),
            },
        };
        file.sync_data()?;
        self.wal_syncs
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
}

struct Conn {
    c: Connection,
    open: Option<u64>,
    next: u64,
}

/// The group transaction could not be started or committed; the write did not happen.
#[derive(Debug)]
pub struct GroupCommitFailed(pub String);

impl From<GroupCommitFailed> for StoreError {
    fn from(e: GroupCommitFailed) -> Self {
        StoreError::Unavailable(e.0)
    }
}

impl From<GroupCommitFailed> for QueueError {
    fn from(e: GroupCommitFailed) -> Self {
        QueueError::Unavailable(e.0)
    }
}

fn unavailable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

fn to_json<T: Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError::Corrupt(e.to_string()))
}

fn from_json<T: DeserializeOwned>(s: &str) -> Result<T, StoreError> {
    serde_json::from_str(s).map_err(|e| StoreError::Corrupt(e.to_string()))
}

// Every bound LIMIT is written `LIMIT +?n`: SQLite re-prepares a statement with a bare
// `LIMIT ?n` on each execution (it may plan by the value), which cost a tenth of the CPU of the
// worker loop; the unary plus makes it an expression the planner does not look into.

/// Runs a statement through the statement cache: transaction control runs several times per
/// iteration, and parsing it each time was a tenth of the CPU.
fn exec(c: &Connection, sql: &str) -> rusqlite::Result<()> {
    c.prepare_cached(sql)?.execute([]).map(|_| ())
}

impl SqliteDb {
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let conn = Connection::open(path).map_err(unavailable)?;
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        Self::init(conn, Some(wal.into()))
    }

    pub fn open_in_memory() -> Result<Self, StoreError> {
        Self::init(Connection::open_in_memory().map_err(unavailable)?, None)
    }

    fn init(conn: Connection, wal: Option<std::path::PathBuf>) -> Result<Self, StoreError> {
        // One process owns the database: a second `serve` on the same data dir fails at once
        // instead of racing this one (the run cache relies on being the only writer).
        conn.pragma_update(None, "locking_mode", "EXCLUSIVE")
            .map_err(unavailable)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(unavailable)?;
        // FULL (the default): a group is fsynced before any of its writes is acknowledged. The
        // committer does that fsync itself, after letting go of the connection, so the next
        // group is written while this one syncs; SQLite runs at NORMAL, which in WAL mode syncs
        // only around checkpoints (the WAL before, the database after, so a WAL reset never
        // loses a frame). An operator may trade power-loss durability for speed with
        // LONGRUN_SQLITE_SYNCHRONOUS=NORMAL (still crash-safe in WAL) or OFF.
        let sync = std::env::var("LONGRUN_SQLITE_SYNCHRONOUS")
            .unwrap_or_else(|_| "FULL".into())
            .to_ascii_uppercase();
        let wal_path = if sync == "FULL" { wal } else { None };
        let pragma = if wal_path.is_some() {
            "NORMAL"
        } else {
            sync.as_str()
        };
        conn.pragma_update(None, "synchronous", pragma)
            .map_err(unavailable)?;
        // A 16 MB WAL between checkpoints (not 4 MB): hot pages (run rows, queue) are copied
        // back once per checkpoint however often they were rewritten, and each checkpoint
        // holds the connection through two fsyncs.
        conn.pragma_update(None, "wal_autocheckpoint", 4000)
            .map_err(unavailable)?;
        // Room for a group's dirty pages: a group that outgrows the page cache spills pages
        // to the WAL mid-transaction and writes them again at commit.
        conn.pragma_update(None, "cache_size", -16_000)
            .map_err(unavailable)?;
        // Every statement we run fits in the cache (the default of 16 does not: it thrashed,
        // and re-parsing SQL was a quarter of the CPU).
        conn.set_prepared_statement_cache_capacity(128);
        // Savepoint journals stay in memory; on disk they cost a temp-file write per page.
        conn.pragma_update(None, "temp_store", "MEMORY")
            .map_err(unavailable)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(unavailable)?;
        conn.execute_batch(SCHEMA).map_err(unavailable)?;
        add_fair_key(&conn).map_err(unavailable)?;
        Ok(SqliteDb {
            inner: Arc::new(Inner {
                generation: std::sync::atomic::AtomicU64::new(0),
                writes: std::sync::atomic::AtomicU64::new(0),
                commit_us: std::sync::atomic::AtomicU64::new(0),
                conn: Arc::new(std::sync::Mutex::new(Conn {
                    c: conn,
                    open: None,
                    next: 1,
                })),
                finished: watch::channel(0).0,
                failed: std::sync::Mutex::default(),
                wal_path,
                wal_file: std::sync::OnceLock::new(),
                wal_syncs: std::sync::atomic::AtomicU64::new(0),
            }),
        })
    }

    /// A short synchronous critical section; an async mutex would hand the lock to a parked
    /// task and leave it idle until that task is scheduled.
    fn lock(&self) -> std::sync::MutexGuard<'_, Conn> {
        self.inner.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn generation(&self) -> u64 {
        self.inner
            .generation
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// (writes, groups committed) so far: how well group commit amortizes fsyncs.
    pub fn write_stats(&self) -> (u64, u64, u64) {
        (
            self.inner.writes.load(std::sync::atomic::Ordering::Relaxed),
            *self.inner.finished.borrow(),
            self.inner
                .commit_us
                .load(std::sync::atomic::Ordering::Relaxed)
                / 1000,
        )
    }

    /// How many times the WAL was fsynced by the committer (FULL durability on a file).
    pub fn wal_syncs(&self) -> u64 {
        self.inner
            .wal_syncs
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    pub async fn read<T>(&self, f: impl FnOnce(&Connection) -> T) -> T {
        let g = self.lock();
        f(&g.c)
    }

    /// Runs `f` in the current group and waits until the group is committed. If `f` fails, the
    /// error returns at once; if it had changed rows, its group is abandoned (see `SqliteDb`).
    pub async fn write<T, E: From<GroupCommitFailed>>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, E>,
    ) -> Result<T, E> {
        self.write_with(true, f).await
    }

    /// Like `write`, but returns once `f` is applied, before the group is durable. For writes a
    /// crash may lose harmlessly (a claim, a delivery, an ack): the queue redelivers and the
    /// lease is re-taken. Any later `write` makes it durable too, since groups commit in order.
    pub async fn write_deferred<T, E: From<GroupCommitFailed>>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, E>,
    ) -> Result<T, E> {
        self.write_with(false, f).await
    }

    pub async fn write_with<T, E: From<GroupCommitFailed>>(
        &self,
        durable: bool,
        f: impl FnOnce(&Connection) -> Result<T, E>,
    ) -> Result<T, E> {
        let fail = |e: rusqlite::Error| GroupCommitFailed(e.to_string());
        self.inner
            .writes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (batch, leader, out) = {
            let mut g = self.lock();
            let leader = g.open.is_none();
            if leader {
                exec(&g.c, "BEGIN IMMEDIATE").map_err(fail)?;
                g.open = Some(g.next);
                g.next += 1;
            }
            let batch = g.open.unwrap_or_default();
            let changes = g.c.total_changes();
            let out = f(&g.c);
            // A write that failed half-way, or an error on which SQLite rolled back the
            // transaction itself: the group cannot be committed.
            if out.is_err() && (g.c.total_changes() != changes || g.c.is_autocommit()) {
                let _ = exec(&g.c, "ROLLBACK");
                g.open = None;
                self.inner.abandon(batch);
            }
            (batch, leader, out)
        };
        if leader {
            // Spawned, so a caller that goes away (a dropped HTTP request) cannot strand the group.
            let inner = self.inner.clone();
            tokio::spawn(async move {
                tokio::task::yield_now().await;
                let _ = tokio::task::spawn_blocking(move || {
                    let mut g = inner.conn.lock().unwrap_or_else(|e| e.into_inner());
                    // Not open any more: a failed write abandoned the group (and told its writers).
                    if g.open == Some(batch) {
                        g.open = None;
                        let t = std::time::Instant::now();
                        let committed = exec(&g.c, "COMMIT");
                        inner.commit_us.fetch_add(
                            t.elapsed().as_micros() as u64,
                            std::sync::atomic::Ordering::Relaxed,
                        );
                        if committed.is_err() {
                            let _ = exec(&g.c, "ROLLBACK");
                            inner.abandon(batch);
                        }
                    }
                    drop(g);
                    // Also makes the groups committed before this one durable, so finishing
                    // this batch never acknowledges an earlier one before its fsync. The group
                    // stays committed if the fsync fails, but its writers are told it failed:
                    // they retry, and every write here is idempotent.
                    if inner.sync_wal().is_err() {
                        inner.abandon(batch);
                    }
                    inner.finished.send_modify(|f| *f = (*f).max(batch));
                })
                .await;
            });
        }
        let value = out?;
        if !durable {
            return Ok(value);
        }
        let mut rx = self.inner.finished.subscribe();
        if rx.wait_for(|f| *f >= batch).await.is_err() {
            return Err(GroupCommitFailed("the committer stopped".into()).into());
        }
        if self
            .inner
            .failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&batch)
        {
            return Err(GroupCommitFailed(format!(
                "group commit {batch} failed; the write was rolled back"
            ))
            .into());
        }
        Ok(value)
    }
}

pub struct SqliteRunStore {
    db: SqliteDb,
    /// Parsed runs, as last written through this store: this process is the database's only
    /// writer, so the cache is exact, and parsing the run row was a sixth of the CPU per write.
    /// Touched only under the connection lock; emptied when the database rolls back a group.
    runs: std::sync::Mutex<RunCache>,
}

#[derive(Default)]
struct RunCache {
    generation: u64,
    map: HashMap<String, Arc<Run>>,
}

const RUN_CACHE_MAX: usize = 4096;

impl SqliteRunStore {
    pub fn new(db: SqliteDb) -> Self {
        SqliteRunStore {
            db,
            runs: std::sync::Mutex::default(),
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

    fn cached(&self, run_id: &str) -> Option<Arc<Run>> {
        self.cache().map.get(run_id).cloned()
    }

    /// The current run; call with the connection lock held (inside a db closure).
    fn current(&self, conn: &Connection, run_id: &str) -> Result<Option<Arc<Run>>, StoreError> {
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

    fn remember(&self, run: Arc<Run>) {
        let mut c = self.cache();
        if c.map.len() >= RUN_CACHE_MAX && !c.map.contains_key(&run.id) {
            c.map.clear();
        }
        c.map.insert(run.id.clone(), run);
    }

    /// Computes the change from the cached run and serializes it before taking the
    /// connection, which is then held only for the inserts: the connection is the one thing
    /// concurrent runs queue for. If another write got in first (the cached run is no longer
    /// the one the change was computed from), it starts over; without a cached run it does
    /// everything under the lock.
    async fn apply(
        &self,
        durable: bool,
        run_id: &str,
        change: ChangeFn<'_>,
    ) -> Result<Run, StoreError> {
        for _ in 0..3 {
            let Some(base) = self.cached(run_id) else {
                break;
            };
            let prepared = Prepared::new(change(&base)?, base.event_seq)?;
            let next = Arc::new(prepared.run.clone());
            let written = self
                .db
                .write_with(durable, |conn| {
                    let unchanged = self
                        .cache()
                        .map
                        .get(run_id)
                        .is_some_and(|r| Arc::ptr_eq(r, &base));
                    if !unchanged {
                        return Ok::<_, StoreError>(None);
                    }
                    let run = prepared.write(conn)?;
                    self.remember(next);
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
                let run = Prepared::new(change(&run)?, run.event_seq)?.write(conn)?;
                self.remember(Arc::new(run.clone()));
                Ok(run)
            })
            .await
    }
}

fn load_run(conn: &Connection, run_id: &str) -> Result<Option<Run>, StoreError> {
    let body: Option<String> = conn
        .prepare_cached("SELECT body FROM runs WHERE id = ?1")
        .and_then(|mut st| st.query_row([run_id], |r| r.get(0)).optional())
        .map_err(unavailable)?;
    body.map(|b| from_json(&b)).transpose()
}

/// A change with its events numbered and every row serialized: what is left to do with the
/// connection held is the inserts.
struct Prepared {
    run: Run,
    body: String,
    events: Vec<(u64, String)>,
    iteration: Option<(u32, String)>,
    /// (path, title, content, meta)
    docs: Vec<(String, String, String, String)>,
    pad: Option<(u32, String)>,
    active: ActiveDelta,
}

impl Prepared {
    fn new(mut change: RunChange, base_seq: u64) -> Result<Self, StoreError> {
        let at = change.run.updated_at;
        let events = sequence_events(&mut change, base_seq, at);
        Ok(Prepared {
            body: to_json(&change.run)?,
            events: events
                .iter()
                .map(|e| Ok((e.seq, to_json(e)?)))
                .collect::<Result<_, StoreError>>()?,
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
                .collect::<Result<_, StoreError>>()?,
            pad: match &change.pad {
                Some(p) => Some((p.n, to_json(p)?)),
                None => None,
            },
            active: change.active,
            run: change.run,
        })
    }

    /// Checks come first and the first change is the one that may be refused (a second commit
    /// of an iteration), so a refusal changes nothing (see `SqliteDb`).
    fn write(self, conn: &Connection) -> Result<Run, StoreError> {
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
        if let Some((n, body)) = &self.iteration {
            // A plain INSERT: a second commit of the same iteration is a bug and must fail loudly.
            conn.prepare_cached("INSERT INTO iterations (run_id, n, body) VALUES (?1, ?2, ?3)")
                .and_then(|mut st| st.execute(params![run.id, n, body]))
                .map_err(|e| StoreError::Corrupt(format!("iteration {n}: {e}")))?;
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
        conn.prepare_cached(
            "INSERT INTO runs (id, user_id, status, created_at, updated_at, body)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT(id) DO UPDATE SET status = ?3, updated_at = ?5, body = ?6",
        )
        .and_then(|mut st| {
            st.execute(params![
                run.id,
                run.user_id,
                run.status.as_str(),
                run.created_at,
                run.updated_at,
                self.body
            ])
        })
        .map_err(unavailable)?;
        if !self.events.is_empty() {
            let mut st = conn
                .prepare_cached("INSERT INTO events (run_id, seq, body) VALUES (?1, ?2, ?3)")
                .map_err(unavailable)?;
            for (seq, body) in &self.events {
                st.execute(params![run.id, *seq as i64, body])
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
        if let Some((n, body)) = &self.pad {
            conn.prepare_cached(
                "INSERT OR REPLACE INTO pads (run_id, n, body) VALUES (?1, ?2, ?3)",
            )
            .and_then(|mut st| st.execute(params![run.id, n, body]))
            .map_err(unavailable)?;
        }
        Ok(run)
    }
}

fn query_json<T: DeserializeOwned>(
    conn: &Connection,
    sql: &str,
    params: &[&dyn rusqlite::ToSql],
) -> Result<Vec<T>, StoreError> {
    let mut st = conn.prepare_cached(sql).map_err(unavailable)?;
    let rows = st
        .query_map(params, |r| r.get::<_, String>(0))
        .map_err(unavailable)?;
    let mut out = vec![];
    for row in rows {
        out.push(from_json(&row.map_err(unavailable)?)?);
    }
    Ok(out)
}

#[async_trait]
impl RunStore for SqliteRunStore {
    async fn create_run(&self, change: RunChange) -> Result<Run, StoreError> {
        self.db
            .write(|conn| {
                if self.current(conn, &change.run.id)?.is_some() {
                    return Err(Rejection::Conflict(format!(
                        "run {} already exists",
                        change.run.id
                    ))
                    .into());
                }
                let run = Prepared::new(change, 0)?.write(conn)?;
                self.remember(Arc::new(run.clone()));
                Ok(run)
            })
            .await
    }

    async fn get_run(&self, run_id: &str) -> Result<Option<Run>, StoreError> {
        if let Some(run) = self.cached(run_id) {
            return Ok(Some(Run::clone(&run)));
        }
        Ok(self
            .db
            .read(|c| self.current(c, run_id))
            .await?
            .map(|r| Run::clone(&r)))
    }

    async fn list_runs(&self, user_id: &str, q: &RunQuery) -> Result<Vec<Run>, StoreError> {
        let (before_at, before_id) = q.before.clone().unwrap_or((i64::MAX, String::new()));
        let status = q.status.map(RunStatus::as_str).unwrap_or("");
        self.db
            .read(|c| {
                query_json(
                    c,
                    "SELECT body FROM runs WHERE user_id = ?1
                       AND (?2 = '' OR status = ?2)
                       AND (created_at < ?3 OR (created_at = ?3 AND ?4 != '' AND id < ?4))
                     ORDER BY created_at DESC, id DESC LIMIT +?5",
                    &[&user_id, &status, &before_at, &before_id, &(q.limit as i64)],
                )
            })
            .await
    }

    async fn update_run(&self, run_id: &str, change: ChangeFn<'_>) -> Result<Run, StoreError> {
        self.apply(true, run_id, change).await
    }

    async fn update_run_deferred(
        &self,
        run_id: &str,
        change: ChangeFn<'_>,
    ) -> Result<Run, StoreError> {
        self.apply(false, run_id, change).await
    }

    async fn events(
        &self,
        run_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        self.db
            .read(|c| {
                query_json(
                    c,
                    "SELECT body FROM events WHERE run_id = ?1 AND seq > ?2 ORDER BY seq LIMIT +?3",
                    &[&run_id, &(after as i64), &(limit as i64)],
                )
            })
            .await
    }

    async fn iterations(
        &self,
        run_id: &str,
        after: u32,
        limit: usize,
    ) -> Result<Vec<IterationRecord>, StoreError> {
        self.db
            .read(|c| {
                query_json(
                    c,
                    "SELECT body FROM iterations WHERE run_id = ?1 AND n > ?2 ORDER BY n LIMIT +?3",
                    &[&run_id, &after, &(limit as i64)],
                )
            })
            .await
    }

    async fn docs(
        &self,
        run_id: &str,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<DocMeta>, StoreError> {
        // substr() rather than LIKE: paths may contain % and _.
        self.db
            .read(|c| {
                query_json(
                    c,
                    "SELECT body FROM docs WHERE run_id = ?1 AND substr(path, 1, length(?2)) = ?2 ORDER BY path LIMIT +?3",
                    &[&run_id, &prefix, &(limit as i64)],
                )
            })
            .await
    }

    async fn doc(&self, run_id: &str, path: &str) -> Result<Option<Doc>, StoreError> {
        let row: Option<(String, String, String)> = self
            .db
            .read(|c| {
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
        let Some((title, content, meta)) = row else {
            return Ok(None);
        };
        let meta: DocMeta = from_json(&meta)?;
        Ok(Some(Doc {
            path: meta.path,
            title,
            content,
            tags: vec![],
            created_iteration: meta.created_iteration,
            updated_iteration: meta.updated_iteration,
            version: meta.version,
            updated_at: 0,
            sources: meta.sources,
        }))
    }

    async fn search_docs(
        &self,
        run_id: &str,
        query: &str,
        limit: usize,
    ) -> Result<Vec<DocHit>, StoreError> {
        let needle = query.to_lowercase();
        let rows: Vec<(String, String, String)> = self
            .db
            .read(|c| {
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

    async fn scratchpad(&self, run_id: &str, last: usize) -> Result<Vec<PadEntry>, StoreError> {
        let mut out: Vec<PadEntry> = self
            .db
            .read(|c| {
                query_json(
                    c,
                    "SELECT body FROM pads WHERE run_id = ?1 ORDER BY n DESC LIMIT +?2",
                    &[&run_id, &(last as i64)],
                )
            })
            .await?;
        out.reverse();
        Ok(out)
    }

    async fn active_runs(&self, user_id: &str) -> Result<u32, StoreError> {
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

    async fn put_notification(&self, n: &Notification) -> Result<bool, StoreError> {
        let body = to_json(n)?;
        self.db
            .write(|c| {
                c.execute(
                    "INSERT OR IGNORE INTO notifications (id, user_id, at, body) VALUES (?1, ?2, ?3, ?4)",
                    params![n.id, n.user_id, n.at, body],
                )
                .map(|inserted| inserted == 1)
                .map_err(unavailable)
            })
            .await
    }

    async fn notifications(
        &self,
        user_id: &str,
        limit: usize,
    ) -> Result<Vec<Notification>, StoreError> {
        self.db
            .read(|c| {
                query_json(
                    c,
                    "SELECT body FROM notifications WHERE user_id = ?1 ORDER BY at DESC, id DESC LIMIT +?2",
                    &[&user_id, &(limit as i64)],
                )
            })
            .await
    }

    async fn mark_notification_read(&self, n: &Notification) -> Result<(), StoreError> {
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

    async fn stale_runs(&self, updated_before: i64, limit: usize) -> Result<Vec<Run>, StoreError> {
        self.db
            .read(|c| {
                query_json(
                    c,
                    "SELECT body FROM runs WHERE updated_at < ?1
                       AND (status IN ('queued', 'running') OR json_extract(body, '$.notified') = 0)
                     ORDER BY updated_at, id LIMIT +?2",
                    &[&updated_before, &(limit as i64)],
                )
            })
            .await
    }

    async fn put_tool(&self, user_id: &str, tool: &UserTool) -> Result<(), StoreError> {
        let body = to_json(tool)?;
        let (user, name) = (user_id.to_string(), tool.name.clone());
        self.db
            .write(move |c| {
                c.execute(
                    "INSERT OR REPLACE INTO user_tools (user_id, name, body) VALUES (?1, ?2, ?3)",
                    params![user, name, body],
                )
                .map(|_| ())
                .map_err(unavailable)
            })
            .await
    }

    async fn tools(&self, user_id: &str) -> Result<Vec<UserTool>, StoreError> {
        self.db
            .read(|c| {
                query_json(
                    c,
                    "SELECT body FROM user_tools WHERE user_id = ?1 ORDER BY name",
                    &[&user_id],
                )
            })
            .await
    }

    async fn delete_tool(&self, user_id: &str, name: &str) -> Result<bool, StoreError> {
        let (user, name) = (user_id.to_string(), name.to_string());
        self.db
            .write(move |c| {
                c.execute(
                    "DELETE FROM user_tools WHERE user_id = ?1 AND name = ?2",
                    params![user, name],
                )
                .map(|n| n > 0)
                .map_err(unavailable)
            })
            .await
    }

    async fn put_mcp_server(&self, user_id: &str, server: &McpServer) -> Result<(), StoreError> {
        let body = to_json(server)?;
        let (user, name) = (user_id.to_string(), server.name.clone());
        self.db
            .write(move |c| {
                c.execute(
                    "INSERT OR REPLACE INTO mcp_servers (user_id, name, body) VALUES (?1, ?2, ?3)",
                    params![user, name, body],
                )
                .map(|_| ())
                .map_err(unavailable)
            })
            .await
    }

    async fn mcp_servers(&self, user_id: &str) -> Result<Vec<McpServer>, StoreError> {
        self.db
            .read(|c| {
                query_json(
                    c,
                    "SELECT body FROM mcp_servers WHERE user_id = ?1 ORDER BY name",
                    &[&user_id],
                )
            })
            .await
    }

    async fn delete_mcp_server(&self, user_id: &str, name: &str) -> Result<bool, StoreError> {
        let (user, name) = (user_id.to_string(), name.to_string());
        self.db
            .write(move |c| {
                c.execute(
                    "DELETE FROM mcp_servers WHERE user_id = ?1 AND name = ?2",
                    params![user, name],
                )
                .map(|n| n > 0)
                .map_err(unavailable)
            })
            .await
    }

    async fn put_webhooks(&self, user_id: &str, hooks: &[Webhook]) -> Result<(), StoreError> {
        let body = to_json(&hooks)?;
        self.db
            .write(|c| {
                c.execute(
                    "INSERT OR REPLACE INTO webhooks (user_id, body) VALUES (?1, ?2)",
                    params![user_id, body],
                )
                .map(|_| ())
                .map_err(unavailable)
            })
            .await
    }

    async fn webhooks(&self, user_id: &str) -> Result<Vec<Webhook>, StoreError> {
        let rows: Vec<Vec<Webhook>> = self
            .db
            .read(|c| {
                query_json(
                    c,
                    "SELECT body FROM webhooks WHERE user_id = ?1",
                    &[&user_id],
                )
            })
            .await?;
        Ok(rows.into_iter().next().unwrap_or_default())
    }

    async fn put_schedule(&self, schedule: &Schedule) -> Result<(), StoreError> {
        let body = to_json(schedule)?;
        self.db
            .write(|c| {
                c.execute(
                    "INSERT OR REPLACE INTO schedules (id, user_id, next_at, body) VALUES (?1, ?2, ?3, ?4)",
                    params![schedule.id, schedule.user_id, schedule.next_at, body],
                )
                .map(|_| ())
                .map_err(unavailable)
            })
            .await
    }

    async fn schedules(&self, user_id: &str) -> Result<Vec<Schedule>, StoreError> {
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

    async fn delete_schedule(&self, user_id: &str, id: &str) -> Result<bool, StoreError> {
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

    async fn due_schedules(&self, now: i64, limit: usize) -> Result<Vec<Schedule>, StoreError> {
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

    async fn advance_schedule(&self, next: &Schedule, from: i64) -> Result<bool, StoreError> {
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

/// FIFO step queue in the same database.
pub struct SqliteStepQueue {
    db: SqliteDb,
    clock: Arc<dyn Clock>,
    max_receives: u32,
}

/// A receipt names one delivery: the message's seq and its receive count, so it is found by
/// primary key and goes stale as soon as the message is delivered again.
fn parse_receipt(receipt: &str) -> Result<(i64, u32), QueueError> {
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
    pub async fn enqueue_raw(&self, group: &str, body: &str) -> Result<(), QueueError> {
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
        &self,
        msg: &StepMessage,
        dedup_id: &str,
        delay_ms: u64,
        durable: bool,
    ) -> Result<Enqueued, QueueError> {
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

    /// Runs that should be moving but have no live message (their send was lost in a crash),
    /// and runs whose outcome was never published. Read at start-up by `recover`.
    pub async fn stranded(&self) -> Result<Vec<Run>, QueueError> {
        self.db
            .read(|c| {
                query_json::<Run>(
                    c,
                    "SELECT body FROM runs
                     WHERE (status IN ('queued', 'running')
                            AND id NOT IN (SELECT group_id FROM queue WHERE dead = 0))
                        OR (status NOT IN ('queued', 'running') AND json_extract(body, '$.notified') = 0)",
                    &[],
                )
            })
            .await
            .map_err(q_err)
    }

    /// At start-up every message in flight belongs to a worker of a process that is gone (the
    /// database is opened exclusively): they become visible now instead of after their
    /// visibility timeout. Returns how many.
    pub async fn release_in_flight(&self) -> Result<usize, QueueError> {
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

    /// Runs a worker holds a lease on; at start-up, those of a process that is gone.
    pub async fn leased_runs(&self) -> Result<Vec<Run>, QueueError> {
        self.db
            .read(|c| {
                query_json::<Run>(
                    c,
                    "SELECT body FROM runs WHERE status = 'running' AND json_extract(body, '$.lease') IS NOT NULL",
                    &[],
                )
            })
            .await
            .map_err(q_err)
    }

    pub async fn dead_letters(&self) -> Result<Vec<String>, QueueError> {
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
        &self,
        msg: &StepMessage,
        dedup_id: &str,
        delay_ms: u64,
    ) -> Result<Enqueued, QueueError> {
        self.send(msg, dedup_id, delay_ms, true).await
    }

    async fn enqueue_deferred(
        &self,
        msg: &StepMessage,
        dedup_id: &str,
        delay_ms: u64,
    ) -> Result<Enqueued, QueueError> {
        self.send(msg, dedup_id, delay_ms, false).await
    }

    async fn receive(&self, max: usize, visibility_ms: u64) -> Result<Vec<Delivery>, QueueError> {
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

    async fn ack(&self, receipt: &str) -> Result<(), QueueError> {
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

    async fn extend(&self, receipt: &str, visibility_ms: u64) -> Result<(), QueueError> {
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    async fn insert(db: &SqliteDb, id: &str) {
        db.write(|c| {
            c.execute(
                "INSERT INTO webhooks (user_id, body) VALUES (?1, '[]')",
                [id],
            )
            .map_err(unavailable)
        })
        .await
        .unwrap();
    }

    #[tokio::test]
    async fn ready_runs_are_served_round_robin_by_user() {
        // Arrange: user a has three ready runs, queued before user b's one.
        let db = SqliteDb::open_in_memory().unwrap();
        let clock = Arc::new(longrun_engine::ports::ManualClock::new(1_000));
        let queue = SqliteStepQueue::new(db.clone(), clock);
        for (run, user) in [("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b")] {
            db.write(|c| {
                c.execute(
                    "INSERT INTO runs (id, user_id, status, created_at, updated_at, body)
                     VALUES (?1, ?2, 'queued', 0, 0, '{}')",
                    [run, user],
                )
                .map_err(unavailable)
            })
            .await
            .unwrap();
            let msg = StepMessage::new(run, 1, longrun_engine::ports::StepReason::Start);
            queue.enqueue(&msg, &msg.dedup_id(), 0).await.unwrap();
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
        let clock = Arc::new(longrun_engine::ports::ManualClock::new(1_000));
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
            let msg = StepMessage::new(run, 1, longrun_engine::ports::StepReason::Start);
            queue.enqueue(&msg, &msg.dedup_id(), 0).await.unwrap();
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

    #[tokio::test]
    async fn a_durable_write_returns_only_after_the_wal_is_fsynced_and_survives_reopening() {
        // Arrange
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        let db = SqliteDb::open(&path).unwrap();

        // Act
        insert(&db, "u1").await;
        insert(&db, "u2").await;

        // Assert
        assert!(db.wal_syncs() >= 1, "no fsync before acknowledging");
        drop(db);
        let again = SqliteDb::open(&path).unwrap();
        let n: i64 = again
            .read(|c| c.query_row("SELECT count(*) FROM webhooks", [], |r| r.get(0)))
            .await
            .unwrap();
        assert_eq!(n, 2);
    }

    fn put(c: &Connection, id: &str) -> Result<(), StoreError> {
        c.execute(
            "INSERT INTO webhooks (user_id, body) VALUES (?1, '[]')",
            [id],
        )
        .map(|_| ())
        .map_err(unavailable)
    }

    async fn ids(db: &SqliteDb) -> Vec<String> {
        db.read(|c| {
            let mut st = c.prepare("SELECT user_id FROM webhooks ORDER BY user_id")?;
            let rows = st.query_map([], |r| r.get(0))?;
            rows.collect::<Result<Vec<String>, _>>()
        })
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn a_refused_write_changes_nothing_and_the_rest_of_its_group_commits() {
        // Arrange: three writes in one group (the committer runs only once the test awaits).
        let db = SqliteDb::open_in_memory().unwrap();
        let generation = db.generation();

        // Act
        db.write_deferred(|c| put(c, "u1")).await.unwrap();
        let refused = db
            .write(|_| Err::<(), _>(StoreError::from(Rejection::NotFound)))
            .await;
        db.write(|c| put(c, "u3")).await.unwrap();

        // Assert
        assert!(matches!(
            refused,
            Err(StoreError::Rejected(Rejection::NotFound))
        ));
        assert_eq!(ids(&db).await, ["u1", "u3"]);
        assert_eq!(db.generation(), generation, "nothing was rolled back");
    }

    #[tokio::test]
    async fn a_write_that_fails_after_changing_rows_abandons_its_whole_group() {
        // Arrange
        let db = SqliteDb::open_in_memory().unwrap();
        let generation = db.generation();

        // Act: a write fails half-way in a group that two others joined before it.
        db.write_deferred(|c| put(c, "u1")).await.unwrap();
        let mut joined = std::pin::pin!(db.write(|c| put(c, "u2")));
        tokio::select! {
            biased;
            _ = &mut joined => panic!("the group cannot have committed yet"),
            _ = std::future::ready(()) => {}
        }
        let half = db
            .write(|c| {
                put(c, "u3")?;
                put(c, "u3")
            })
            .await;
        let joined = joined.await;
        let after = db.write(|c| put(c, "u4")).await;

        // Assert: the group is gone, its waiting writer is told, and the next group commits.
        assert!(half.is_err());
        assert!(matches!(&joined, Err(e) if e.is_retryable()), "{joined:?}");
        assert!(after.is_ok(), "{after:?}");
        assert_eq!(ids(&db).await, ["u4"]);
        assert!(db.generation() > generation, "caches must start over");
    }

    #[tokio::test]
    async fn an_in_memory_database_has_no_wal_to_fsync() {
        let db = SqliteDb::open_in_memory().unwrap();
        insert(&db, "u1").await;
        assert_eq!(db.wal_syncs(), 0);
    }
}
