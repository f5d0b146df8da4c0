//! SQLite adapters: one database file holds the store and the queue. This module owns the
//! connection, the schema and group commit; `runs`, `catalog` and `queue` hold the adapters.
//!
//! Durability: WAL journal with `synchronous=FULL` — every commit is fsynced before it returns,
//! so an acknowledged iteration survives power loss, not only a process crash. WAL lets
//! readers (the API) run while the worker writes.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use longrun_domain::change::ActiveDelta;
use longrun_domain::doc_hit;
use longrun_domain::run::{Run, RunStatus};
use longrun_domain::{
    Doc, DocMeta, Event, IterationRecord, PadEntry, Rejection, RunChange, Schedule,
};
use longrun_domain::{DocHit, Notification, sequence_events};
use longrun_ports::{CatalogEntry, CatalogScope, QueueResult, StoreResult};
use longrun_ports::{
    ChangeFn, Clock, DEDUP_WINDOW_MS, Delivery, Enqueued, Inbox, QueueError, RunLog, RunQuery,
    ScheduleStore, StepMessage, StepQueue, StoreError, UserCatalog, Workspace,
};
use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::watch;

mod archive;
mod catalog;
mod checkpoint;
mod dedup;
mod idempotency;
mod outbox;
mod private;
mod queue;
mod ready;
mod runs;

pub use queue::SqliteStepQueue;
pub use runs::SqliteRunStore;

/// A run's log: its events, iteration records and scratchpad entries, appended by every
/// iteration and read one run and kind at a time, in one table.
///
/// Its index orders a run's entries as they were written, not by kind: `p` is the run's event
/// count after the write that appended the entry, so everything one write appends (an
/// iteration's events, its record and its scratchpad entry) lands on the one last leaf of the
/// run's stretch of the index. Keyed by (run, kind, number), each kind of a run had a stretch
/// of its own, and a commit wrote a leaf in each (with 50 runs at work, the index was 45 % of
/// the pages written to the WAL). A read of one kind after a number starts at `p > number`,
/// since an entry's `p` is never below its number: an event's number is its place in the
/// count, and each iteration's commit adds an event. Within a kind, `p` grows with the number,
/// so (p, kind, n) order is number order.
///
/// A rowid table, not `WITHOUT ROWID`: rows land in insertion order, so a group's entries fill
/// the same few pages at the table's end, and a row up to a page stays in its page (clustered
/// by run, each run's rows took pages of their own, and a row over about 1 KB spilled into
/// overflow pages). No key makes (run, kind, number) unique: the run row's iteration, checked
/// in the same write, fences a second commit of an iteration (`Prepared::write`).
const LOG: &str = "CREATE TABLE IF NOT EXISTS log (
    run_id TEXT NOT NULL, kind INTEGER NOT NULL, n INTEGER NOT NULL, body TEXT NOT NULL,
    p INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS log_by_run ON log(run_id, p, kind, n)";

/// The kinds of entry in `log`, and the tables each was kept in before.
pub(super) const EVENT: i64 = 0;
pub(super) const ITERATION: i64 = 1;
pub(super) const PAD: i64 = 2;
/// Appends an entry (`run_id`, kind, number, body, `p`).
pub(super) const INSERT_LOG: &str =
    "INSERT INTO log (run_id, kind, n, body, p) VALUES (?1, ?2, ?3, ?4, ?5)";
const LOG_KINDS: [(&str, i64, &str); 3] = [
    ("events", EVENT, "seq"),
    ("iterations", ITERATION, "n"),
    ("pads", PAD, "n"),
];

/// A run's documents: a rowid table for the same reason as the log, keyed by path, as a
/// document is rewritten in place.
const DOCS: &str = "run_id TEXT NOT NULL, path TEXT NOT NULL, title TEXT NOT NULL, \
    content TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (run_id, path)";

/// Creates the log and the docs table. A database made before keeps its rows: the three
/// tables the log's kinds were kept in (rowid or `WITHOUT ROWID`) move into the log, and a
/// `WITHOUT ROWID` docs table into the rowid form, each table in one transaction.
fn log_tables(conn: &Connection) -> rusqlite::Result<()> {
    let sql_of = |name: &str| -> rusqlite::Result<Option<String>> {
        conn.query_row(
            "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?1",
            [name],
            |r| r.get(0),
        )
        .optional()
    };
    // A log keyed by (run, kind, number) gets its entries' `p`: their own numbers, which keep
    // each kind in order and are never above the counts the run's next writes reach.
    if sql_of("log")?.is_some() && !has_column(conn, "log", "p")? {
        // Measured at about 40 s for 5 million entries; the store grows by the log's size
        // (its old pages are left free for later writes).
        tracing::warn!(
            "rebuilding the run log's index in write order, once; a large store takes a minute"
        );
        in_one_transaction(
            conn,
            &format!(
                "ALTER TABLE log RENAME TO log_by_kind;
                 {LOG};
                 INSERT INTO log (run_id, kind, n, body, p)
                   SELECT run_id, kind, n, body, n FROM log_by_kind ORDER BY rowid;
                 DROP TABLE log_by_kind;"
            ),
        )?;
    }
    conn.execute_batch(LOG)?;
    for (table, kind, number) in LOG_KINDS {
        if sql_of(table)?.is_some() {
            in_one_transaction(
                conn,
                &format!(
                    "INSERT INTO log (run_id, kind, n, body, p)
                       SELECT run_id, {kind}, {number}, body, {number} FROM {table};
                     DROP TABLE {table};"
                ),
            )?;
        }
    }
    match sql_of("docs")? {
        None => conn.execute_batch(&format!("CREATE TABLE docs ({DOCS});"))?,
        Some(sql) if sql.to_ascii_uppercase().contains("WITHOUT ROWID") => {
            in_one_transaction(
                conn,
                &format!(
                    "ALTER TABLE docs RENAME TO docs_clustered;
                     CREATE TABLE docs ({DOCS});
                     INSERT INTO docs (run_id, path, title, content, body)
                       SELECT run_id, path, title, content, body FROM docs_clustered;
                     DROP TABLE docs_clustered;"
                ),
            )?;
        }
        Some(_) => {}
    }
    Ok(())
}

/// A run's `recent_docs` (the planner's index of its newest docs), out of the run row: a row is
/// rewritten whole at every write of the run (twice an iteration), and at 25 entries the list
/// was two thirds of it and made every write overflow a 4 KB page. It changes only when an
/// iteration writes docs, so it is written then, and every read of a run reads it back
/// (`select_run!`). A run that never had docs has no row here.
const RECENT: &str = "CREATE TABLE run_recent (run_id TEXT PRIMARY KEY, body TEXT NOT NULL)";

/// Creates `run_recent`; a database made before gets the lists its run rows hold moved into
/// it, in one transaction.
fn recent_table(conn: &Connection) -> rusqlite::Result<()> {
    let exists: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'run_recent')",
        [],
        |r| r.get(0),
    )?;
    if exists {
        return Ok(());
    }
    let has_runs: bool = conn.query_row("SELECT EXISTS (SELECT 1 FROM runs)", [], |r| r.get(0))?;
    if has_runs {
        // Measured at about 5 s for 100,000 runs.
        tracing::warn!("moving each run's recent docs into a table of their own, once");
    }
    in_one_transaction(
        conn,
        &format!(
            "{RECENT};
             INSERT INTO run_recent (run_id, body)
               SELECT id, json_extract(body, '$.recent_docs') FROM runs
               WHERE json_type(body, '$.recent_docs') = 'array';
             UPDATE runs SET body = json_remove(body, '$.recent_docs')
               WHERE json_type(body, '$.recent_docs') IS NOT NULL;"
        ),
    )
}

/// Databases made before kept the dedup window in a table keyed by id; its live rows move to
/// the log once.
fn fold_dedup(conn: &Connection) -> rusqlite::Result<()> {
    let old: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'dedup')",
        [],
        |r| r.get(0),
    )?;
    if !old {
        return Ok(());
    }
    in_one_transaction(
        conn,
        "INSERT INTO dedup_log (dedup_id, expires_at)
           SELECT dedup_id, expires_at FROM dedup ORDER BY expires_at;
         DROP TABLE dedup;",
    )
}

/// A migration's statements, all or none.
fn in_one_transaction(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    let done = conn.execute_batch(&format!("BEGIN IMMEDIATE; {sql} COMMIT;"));
    if done.is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    done
}

fn has_column(conn: &Connection, table: &str, column: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2)",
        [table, column],
        |r| r.get(0),
    )
}

/// Databases made before fair share have a queue without the owner of each message.
fn add_fair_key(conn: &Connection) -> rusqlite::Result<()> {
    if !has_column(conn, "queue", "fair_key")? {
        conn.execute_batch("ALTER TABLE queue ADD COLUMN fair_key TEXT")?;
    }
    Ok(())
}

/// Indexes that keep a full store (a year of ended runs) as fast as an empty one, each checked
/// with `EXPLAIN QUERY PLAN` (see the tests): listing one status of a user's runs, the runs the
/// sweeper and start-up recovery look at (active or not yet notified; `stale_runs`, `stranded`,
/// the leased runs; one index for all of them, as each run write moves its entry),
/// the runs waiting on children by their wait's deadline (`waits_due`), and a user's latest notifications without sorting. A step of its own, after the schema.
fn index_for_a_full_store(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE INDEX IF NOT EXISTS runs_by_user_status ON runs(user_id, status, created_at DESC, id DESC);
         CREATE INDEX IF NOT EXISTS runs_unsettled ON runs(updated_at, id)
             WHERE status IN ('queued', 'running') OR notified = 0;
         CREATE INDEX IF NOT EXISTS runs_waiting
             ON runs(json_extract(body, '$.children_wait_until'), id)
             WHERE status = 'waiting_on_children';
         CREATE INDEX IF NOT EXISTS notifications_latest ON notifications(user_id, at DESC, id DESC);
         DROP INDEX IF EXISTS notifications_by_user;
         DROP INDEX IF EXISTS runs_active;",
    )
}

/// Databases made before kept a run's `notified` flag only in its body, and `runs_unsettled`
/// read it from there: a condition on the body is evaluated at every write of a run (the body
/// always changes), and moved the run's entry each time. The flag gets a column of its own,
/// filled from the bodies once, and the index is built again with it.
fn add_notified(conn: &Connection) -> rusqlite::Result<()> {
    if !has_column(conn, "runs", "notified")? {
        in_one_transaction(
            conn,
            "ALTER TABLE runs ADD COLUMN notified INTEGER NOT NULL DEFAULT 0;
             UPDATE runs SET notified = 1 WHERE json_extract(body, '$.notified') = 1;
             DROP INDEX IF EXISTS runs_unsettled;",
        )?;
    }
    Ok(())
}

/// Databases made before the user catalog kept tools, MCP servers and webhooks in a table each;
/// their rows move into `catalog` once, each table's in one transaction.
fn fold_catalog(conn: &Connection) -> rusqlite::Result<()> {
    let old = |table: &str| -> rusqlite::Result<bool> {
        conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
            [table],
            |r| r.get(0),
        )
    };
    let moves = [
        (
            "user_tools",
            "INSERT OR IGNORE INTO catalog SELECT user_id, 'tool', name, body FROM user_tools;
             DROP TABLE user_tools;",
        ),
        (
            "mcp_servers",
            "INSERT OR IGNORE INTO catalog SELECT user_id, 'mcp', name, body FROM mcp_servers;
             DROP TABLE mcp_servers;",
        ),
        (
            "webhooks",
            "INSERT OR IGNORE INTO catalog
               SELECT w.user_id, 'webhook', printf('%04d', j.key), j.value FROM webhooks w, json_each(w.body) j;
             DROP TABLE webhooks;",
        ),
    ];
    for (table, sql) in moves {
        if old(table)? {
            in_one_transaction(conn, sql)?;
        }
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
    body TEXT NOT NULL,
    notified INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS runs_by_user ON runs(user_id, created_at DESC, id DESC);
CREATE TABLE IF NOT EXISTS active (user_id TEXT PRIMARY KEY, count INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS catalog (
    user_id TEXT NOT NULL, kind TEXT NOT NULL, key TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (user_id, kind, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS schedules (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, next_at INTEGER NOT NULL, body TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS schedules_due ON schedules (next_at);
CREATE TABLE IF NOT EXISTS notifications (
    id TEXT PRIMARY KEY, user_id TEXT NOT NULL, at INTEGER NOT NULL, body TEXT NOT NULL
);
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
-- Receives are served from the in-memory index of group heads; an index by visibility only
-- cost every send, receive and ack a write (the dead letters and the start-up scan are rare).
DROP INDEX IF EXISTS queue_visible;
CREATE TABLE IF NOT EXISTS fair (key TEXT PRIMARY KEY, served INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS dedup_log (dedup_id TEXT NOT NULL, expires_at INTEGER NOT NULL);
"#;

/// How many groups back a failed group is still reported to its writers.
const FAILED_GROUPS_KEPT: u64 = 100_000;

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
///
/// The loop's writes (`write_owned`) never block a runtime thread on the connection: a task
/// that finds it taken hands its write to the holder, which runs it (in order, in the open
/// group) before letting go, and the task waits as a task. With a blocking lock, both runtime
/// threads of a 2-core box spent most of their switches asleep on it, a core idle behind each
/// COMMIT; a task that parked and then took the lock itself left the connection idle until the
/// task was polled again, which at 10,000 runs is behind thousands of others.
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
    /// The newest group opened (it may not be committed yet).
    opened: std::sync::atomic::AtomicU64,
    conn: Arc<std::sync::Mutex<Conn>>,
    /// Shared with the committer, which lets go of the database before it wakes the writers:
    /// a caller that closes the database once its write returns really closes it.
    finished: Arc<watch::Sender<u64>>,
    failed: std::sync::Mutex<HashSet<u64>>,
    /// The WAL to fsync after each group commit (FULL durability), outside the connection lock.
    wal_path: Option<std::path::PathBuf>,
    wal_file: std::sync::OnceLock<std::fs::File>,
    wal_syncs: std::sync::atomic::AtomicU64,
    /// Held by a committer from its COMMIT to the end of its fsync: one group on its way to the
    /// disk at a time. The next group stays open meanwhile, so the writes that arrive while
    /// the disk syncs join it, instead of a second COMMIT and fsync starting while the first
    /// is still syncing (fewer, larger groups; BENCHMARKS.md, "Seventeenth round").
    syncing: std::sync::Mutex<()>,
    /// Writes handed over by tasks that found the connection taken, for its holder to run
    /// before it lets go (`write_owned`); `queued` counts them so a holder looks without locking.
    jobs: std::sync::Mutex<Vec<Job>>,
    queued: std::sync::atomic::AtomicUsize,
    /// The queue's index of group heads; changed only while holding `conn`, so it moves in step
    /// with the rows (and is rebuilt when the generation says they were rolled back).
    ready: std::sync::Mutex<ready::ReadyIndex>,
    /// Connections for `read_committed` (none for an in-memory database).
    readers: Vec<std::sync::Mutex<Connection>>,
    /// The background checkpointer's connection (none for an in-memory database).
    checkpointer: Option<checkpoint::Checkpointer>,
    /// Seals catalog secrets before they are written and opens them as they are read.
    sealer: longrun_ports::Sealer,
    /// Held for as long as the database is open: the one-process lock. Last, so it is let go
    /// of after every connection is closed.
    _lock: Option<std::fs::File>,
}

/// Reader connections: one for each thread that can read at once (the runtime's workers, whose
/// iterations read their runs' docs and scratchpad here, and the API's own thread), so a read
/// rarely waits for another.
fn readers() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().min(7)) + 1
}

fn open_reader(path: &Path) -> StoreResult<Connection> {
    let c = Connection::open(path).map_err(unavailable)?;
    c.pragma_update(None, "query_only", "ON")
        .map_err(unavailable)?;
    c.pragma_update(None, "cache_size", -8_000)
        .map_err(unavailable)?;
    c.set_prepared_statement_cache_capacity(32);
    c.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(unavailable)?;
    Ok(c)
}

impl Inner {
    /// Marks a group failed: its waiting writers get an error, and caches of rows start over.
    fn abandon(&self, batch: u64) {
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        failed.insert(batch);
        // Kept for every writer of the group to see (a writer looks as soon as its group is
        // finished), and forgotten long after.
        failed.retain(|b| b + FAILED_GROUPS_KEPT > batch);
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

/// A write another task handed over: run by the connection's holder, in the group open then.
type Job = Box<dyn FnOnce(&SqliteDb, &mut Conn) + Send>;

/// Where a write landed: its group, and what its closure returned.
type Applied<T, E> = (u64, Result<T, E>);

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

fn to_json<T: Serialize>(v: &T) -> StoreResult<String> {
    serde_json::to_string(v).map_err(|e| StoreError::Corrupt(e.to_string()))
}

fn from_json<T: DeserializeOwned>(s: &str) -> StoreResult<T> {
    serde_json::from_str(s).map_err(|e| StoreError::Corrupt(e.to_string()))
}

// Every bound LIMIT is written `LIMIT +?n`: SQLite re-prepares a statement with a bare
// `LIMIT ?n` on each execution (it may plan by the value), which cost a tenth of the CPU of the
// worker loop; the unary plus makes it an expression the planner does not look into.

fn query_json<T: DeserializeOwned>(
    conn: &Connection, sql: &str, params: &[&dyn rusqlite::ToSql],
) -> StoreResult<Vec<T>> {
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

/// Runs a statement through the statement cache: transaction control runs several times per
/// iteration, and parsing it each time was a tenth of the CPU.
fn exec(c: &Connection, sql: &str) -> rusqlite::Result<()> {
    c.prepare_cached(sql)?.execute([]).map(|_| ())
}

impl SqliteDb {
    pub fn open(path: &Path) -> StoreResult<Self> {
        // One process owns the database: a second `serve` on the same data dir fails at once
        // instead of racing this one (the run cache relies on being the only writer). A lock
        // file rather than SQLite's exclusive locking mode, which would keep this process's
        // own readers out too.
        let mut lock_path = path.as_os_str().to_owned();
        lock_path.push(".lock");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(unavailable)?;
        // Waits a little, as SQLite's busy timeout did: a process that is closing the database
        // (or this one's last committer, finishing) lets go of it within moments.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            match lock.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(StoreError::Unavailable(format!(
                        "{} is in use by another process (is another `longrun serve` running on it?)",
                        path.display()
                    )));
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(unavailable(e)),
            }
        }
        private::make_private(path)?;
        let sealer = private::load_or_create_key(path)?;
        let conn = Connection::open(path).map_err(unavailable)?;
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        let mut inner = Self::init(conn, Some(wal.into()), sealer)?;
        inner.readers = (0..readers())
            .map(|_| open_reader(path).map(std::sync::Mutex::new))
            .collect::<StoreResult<Vec<_>>>()?;
        // Checkpoints run on their own connection and thread, so copying the WAL back into the
        // database (and its two fsyncs) no longer holds the writer's connection.
        inner
            .conn
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .c
            .pragma_update(None, "wal_autocheckpoint", 0)
            .map_err(unavailable)?;
        let (wake, woken) = std::sync::mpsc::sync_channel(1);
        inner.checkpointer = Some(checkpoint::Checkpointer::open(path, wake)?);
        inner._lock = Some(lock);
        let inner = Arc::new(inner);
        checkpoint::spawn(Arc::downgrade(&inner), woken);
        Ok(SqliteDb { inner })
    }

    pub fn open_in_memory() -> StoreResult<Self> {
        // Nothing is at rest: a key of the moment seals what this database holds.
        let key = longrun_ports::Sealer::new_key().map_err(unavailable)?;
        let sealer = longrun_ports::Sealer::from_key(&key).map_err(unavailable)?;
        let inner = Self::init(
            Connection::open_in_memory().map_err(unavailable)?,
            None,
            sealer,
        )?;
        Ok(SqliteDb {
            inner: Arc::new(inner),
        })
    }

    fn init(
        conn: Connection, wal: Option<std::path::PathBuf>, sealer: longrun_ports::Sealer,
    ) -> StoreResult<Inner> {
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
        // Room for a group's dirty pages (a group that outgrows the page cache spills pages
        // to the WAL mid-transaction and writes them again at commit) and the rows of the
        // 4,096 runs at work, and no more: a commit whose page split swapped two page numbers
        // walks the whole cache. SQLite swaps them through the locking page (page 262,145 at
        // 4 KB pages), which leaves the cache's highest key far past the end of the database,
        // and the commit's truncate to the database's size then scans every cached page
        // (BENCHMARKS.md, "Seventh round").
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
        log_tables(&conn).map_err(unavailable)?;
        recent_table(&conn).map_err(unavailable)?;
        fold_dedup(&conn).map_err(unavailable)?;
        add_fair_key(&conn).map_err(unavailable)?;
        add_notified(&conn).map_err(unavailable)?;
        fold_catalog(&conn).map_err(unavailable)?;
        outbox::migrate(&conn).map_err(unavailable)?;
        idempotency::migrate(&conn).map_err(unavailable)?;
        archive::migrate(&conn).map_err(unavailable)?;
        index_for_a_full_store(&conn).map_err(unavailable)?;
        let sealed = private::seal_plain_entries(&conn, &sealer)?;
        if sealed > 0 {
            tracing::info!(sealed, "catalog secrets stored in plain text were sealed");
        }
        Ok(Inner {
            generation: std::sync::atomic::AtomicU64::new(0),
            writes: std::sync::atomic::AtomicU64::new(0),
            commit_us: std::sync::atomic::AtomicU64::new(0),
            opened: std::sync::atomic::AtomicU64::new(0),
            conn: Arc::new(std::sync::Mutex::new(Conn {
                c: conn,
                open: None,
                next: 1,
            })),
            finished: Arc::new(watch::channel(0).0),
            failed: std::sync::Mutex::default(),
            wal_path,
            wal_file: std::sync::OnceLock::new(),
            wal_syncs: std::sync::atomic::AtomicU64::new(0),
            syncing: std::sync::Mutex::default(),
            jobs: std::sync::Mutex::default(),
            queued: std::sync::atomic::AtomicUsize::new(0),
            ready: std::sync::Mutex::default(),
            readers: Vec::new(),
            checkpointer: None,
            sealer,
            _lock: None,
        })
    }

    /// What seals the catalog's secrets (`longrun_ports::seal`).
    pub(super) fn sealer(&self) -> &longrun_ports::Sealer {
        &self.inner.sealer
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

    /// The queue's index of group heads. Change it only inside a `read` or `write` closure (with
    /// the connection held); a look without the connection sees it as of the last write. Never
    /// take the connection while holding it.
    fn ready_index(&self) -> std::sync::MutexGuard<'_, ready::ReadyIndex> {
        self.inner.ready.lock().unwrap_or_else(|e| e.into_inner())
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
        let out = f(&g.c);
        drop(g);
        self.leave_jobs_to_others();
        out
    }

    /// The newest group opened: inside a write closure, the group the write is in.
    pub(super) fn open_group(&self) -> u64 {
        self.inner.opened.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The newest group committed and durable.
    pub(super) fn committed_group(&self) -> u64 {
        *self.inner.finished.borrow()
    }

    /// A read of committed state only, on a reader connection: it does not wait for the writer's
    /// connection (held through each group commit and checkpoint), and does not see the open
    /// group's writes. For the API's reads of what a caller was already told is written (every
    /// acknowledged write is committed); never for the engine, which must see its own writes.
    pub async fn read_committed<T>(&self, f: impl FnOnce(&Connection) -> T) -> T {
        let readers = &self.inner.readers;
        let Some(first) = readers.first() else {
            return self.read(f).await;
        };
        for r in readers {
            if let Ok(g) = r.try_lock() {
                return f(&g);
            }
        }
        let g = first.lock().unwrap_or_else(|e| e.into_inner());
        f(&g)
    }

    /// Runs `f` in the current group and waits until the group is committed. If `f` fails, the
    /// error returns at once; if it had changed rows, its group is abandoned (see `SqliteDb`).
    pub async fn write<T, E: From<GroupCommitFailed>>(
        &self, f: impl FnOnce(&Connection) -> Result<T, E>,
    ) -> Result<T, E> {
        self.write_with(true, f).await
    }

    /// Like `write`, but returns once `f` is applied, before the group is durable. For writes a
    /// crash may lose harmlessly (a claim, a delivery, an ack): the queue redelivers and the
    /// lease is re-taken. Any later `write` makes it durable too, since groups commit in order.
    pub async fn write_deferred<T, E: From<GroupCommitFailed>>(
        &self, f: impl FnOnce(&Connection) -> Result<T, E>,
    ) -> Result<T, E> {
        self.write_with(false, f).await
    }

    pub async fn write_with<T, E: From<GroupCommitFailed>>(
        &self, durable: bool, f: impl FnOnce(&Connection) -> Result<T, E>,
    ) -> Result<T, E> {
        let (batch, out) = self.apply_held(self.lock(), f);
        self.settle(durable, batch, out).await
    }

    /// `write_with` for the loop's own writes (the run's, the queue's). A task that finds the
    /// connection taken does not block its thread: it hands the write to the holder, which runs
    /// it before letting go, and waits for the result as a task. The connection never waits
    /// for a woken task, and a runtime thread never waits for the connection.
    pub async fn write_owned<T, E>(
        &self, durable: bool, f: impl FnOnce(&Connection) -> Result<T, E> + Send + 'static,
    ) -> Result<T, E>
    where
        T: Send + 'static,
        E: From<GroupCommitFailed> + Send + 'static,
    {
        let (batch, out) = match self.try_apply(f) {
            Ok(applied) => applied,
            Err(f) => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                self.hand_over(Box::new(move |db: &SqliteDb, g: &mut Conn| {
                    let _ = tx.send(db.apply(g, f));
                }));
                match rx.await {
                    Ok(applied) => applied,
                    Err(_) => return Err(GroupCommitFailed("the write was dropped".into()).into()),
                }
            }
        };
        self.settle(durable, batch, out).await
    }

    /// A deferred write whose failure only needs to be logged (an ack: a failed one is
    /// redelivered and healed). Applied now if the connection is free; else, if `vouch` says
    /// it will succeed, handed to the holder without waiting for it; else as `write_owned`.
    pub async fn write_behind<E>(
        &self, what: &'static str, vouch: impl FnOnce() -> bool,
        f: impl FnOnce(&Connection) -> Result<(), E> + Send + 'static,
    ) -> Result<(), E>
    where
        E: From<GroupCommitFailed> + std::fmt::Display + Send + 'static,
    {
        match self.try_apply(f) {
            Ok((_, out)) => out,
            Err(f) if vouch() => {
                self.hand_over(Box::new(move |db: &SqliteDb, g: &mut Conn| {
                    if let (_, Err(e)) = db.apply(g, f) {
                        tracing::warn!(error = %e, "{what} failed after it was handed over");
                    }
                }));
                Ok(())
            }
            Err(f) => self.write_owned(false, f).await,
        }
    }

    /// Applies `f` if the connection is free; else gives it back.
    fn try_apply<T, E, F>(&self, f: F) -> Result<Applied<T, E>, F>
    where
        E: From<GroupCommitFailed>,
        F: FnOnce(&Connection) -> Result<T, E>,
    {
        match self.try_lock() {
            Some(g) => Ok(self.apply_held(g, f)),
            None => Err(f),
        }
    }

    /// Applies `f` with the connection held, after the writes handed over before it (so one
    /// task's writes land in the order it made them), then lets go.
    fn apply_held<'a, T, E: From<GroupCommitFailed>>(
        &'a self, mut g: std::sync::MutexGuard<'a, Conn>,
        f: impl FnOnce(&Connection) -> Result<T, E>,
    ) -> Applied<T, E> {
        self.run_jobs(&mut g);
        let applied = self.apply(&mut g, f);
        self.release(g);
        applied
    }

    fn try_lock(&self) -> Option<std::sync::MutexGuard<'_, Conn>> {
        match self.inner.conn.try_lock() {
            Ok(g) => Some(g),
            Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    /// Lists a write for the connection's holder to run.
    fn hand_over(&self, job: Job) {
        {
            let mut jobs = self.inner.jobs.lock().unwrap_or_else(|e| e.into_inner());
            jobs.push(job);
            self.inner
                .queued
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        // The holder may have let go before the job was listed: then it is run here.
        if let Some(g) = self.try_lock() {
            self.release(g);
        }
    }

    /// Runs the writes handed over, then lets go of the connection; a job listed after the
    /// last look but before the unlock is taken after it (its task's own try failed on this
    /// hold), unless another holder has the connection by then and takes it.
    fn release<'a>(&'a self, mut g: std::sync::MutexGuard<'a, Conn>) {
        loop {
            self.run_jobs(&mut g);
            drop(g);
            if !self.jobs_left() {
                return;
            }
            match self.try_lock() {
                Some(next) => g = next,
                None => return,
            }
        }
    }

    /// After a read: writes handed over during it are run by a task of their own, not on the
    /// reader's time (an API request's), unless another holder takes them first.
    fn leave_jobs_to_others(&self) {
        if !self.jobs_left() {
            return;
        }
        let db = self.clone();
        let run = move || {
            if let Some(g) = db.try_lock() {
                db.release(g);
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(async move { run() });
            }
            Err(_) => run(),
        }
    }

    /// Whether writes were listed that no holder has run, looked at after letting go: the
    /// fence orders the unlock before the look, as a lister's listing is before its own try.
    fn jobs_left(&self) -> bool {
        use std::sync::atomic::{Ordering, fence};
        fence(Ordering::SeqCst);
        self.inner.queued.load(Ordering::SeqCst) > 0
    }

    /// Runs the writes handed over so far, in the order they were handed over.
    fn run_jobs(&self, g: &mut Conn) {
        use std::sync::atomic::Ordering;
        while self.inner.queued.load(Ordering::SeqCst) > 0 {
            let jobs =
                std::mem::take(&mut *self.inner.jobs.lock().unwrap_or_else(|e| e.into_inner()));
            self.inner.queued.fetch_sub(jobs.len(), Ordering::SeqCst);
            for job in jobs {
                job(self, g);
            }
        }
    }

    /// Runs `f` in the open group, opening one (and scheduling its commit) if none is. If `f`
    /// fails after changing rows, its group is abandoned.
    fn apply<T, E: From<GroupCommitFailed>>(
        &self, g: &mut Conn, f: impl FnOnce(&Connection) -> Result<T, E>,
    ) -> Applied<T, E> {
        self.inner
            .writes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let batch = match g.open {
            Some(batch) => batch,
            None => {
                if let Err(e) = exec(&g.c, "BEGIN IMMEDIATE") {
                    return (0, Err(GroupCommitFailed(e.to_string()).into()));
                }
                let batch = g.next;
                g.open = Some(batch);
                self.inner
                    .opened
                    .store(batch, std::sync::atomic::Ordering::SeqCst);
                g.next += 1;
                self.commit_later(batch);
                batch
            }
        };
        let changes = g.c.total_changes();
        let out = f(&g.c);
        // A write that failed half-way, or an error on which SQLite rolled back the
        // transaction itself: the group cannot be committed.
        if out.is_err() && (g.c.total_changes() != changes || g.c.is_autocommit()) {
            let _ = exec(&g.c, "ROLLBACK");
            g.open = None;
            self.inner.abandon(batch);
        }
        (batch, out)
    }

    /// Schedules the commit of the group just opened. Spawned, so a caller that goes away (a
    /// dropped HTTP request) cannot strand the group; it goes through the runtime's queue
    /// once before it takes the connection, so the writes of the tasks already runnable join
    /// the group. Off the runtime (the checkpoint thread ran handed-over writes) it commits from
    /// a thread of its own.
    fn commit_later(&self, batch: u64) {
        let inner = self.inner.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(async move {
                    tokio::task::yield_now().await;
                    let _ = tokio::task::spawn_blocking(move || commit(inner, batch)).await;
                });
            }
            Err(_) => {
                let spawned = std::thread::Builder::new()
                    .name("sqlite-commit".into())
                    .spawn(move || commit(inner, batch));
                if let Err(e) = spawned {
                    tracing::error!(error = %e, "no thread to commit a group on");
                }
            }
        }
    }

    /// Waits, for a durable write, until its group is committed and fsynced.
    async fn settle<T, E: From<GroupCommitFailed>>(
        &self, durable: bool, batch: u64, out: Result<T, E>,
    ) -> Result<T, E> {
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
            .contains(&batch)
        {
            return Err(GroupCommitFailed(format!(
                "group commit {batch} failed; the write was rolled back"
            ))
            .into());
        }
        Ok(value)
    }
}

/// Once the group before it is durable, commits group `batch`, lets go of the connection
/// (running writes handed over meanwhile, in the next group), then fsyncs the WAL and tells
/// the group's writers.
fn commit(inner: Arc<Inner>, batch: u64) {
    let db = SqliteDb { inner };
    let turn = db.inner.syncing.lock().unwrap_or_else(|e| e.into_inner());
    let mut g = db.lock();
    // Not open any more: a failed write abandoned the group (and told its writers).
    if g.open == Some(batch) {
        g.open = None;
        let t = std::time::Instant::now();
        let committed = exec(&g.c, "COMMIT");
        db.inner.commit_us.fetch_add(
            t.elapsed().as_micros() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
        if committed.is_err() {
            let _ = exec(&g.c, "ROLLBACK");
            db.inner.abandon(batch);
        }
    }
    db.release(g);
    // Also makes the groups committed before this one durable, so finishing this batch never
    // acknowledges an earlier one before its fsync. The group stays committed if the fsync
    // fails, but its writers are told it failed: they retry, and every write here is
    // idempotent.
    if db.inner.sync_wal().is_err() {
        db.inner.abandon(batch);
    }
    drop(turn);
    if let Some(c) = &db.inner.checkpointer {
        c.committed();
    }
    let finished = db.inner.finished.clone();
    // Lets go of the database before waking the writers: a caller that closes it once its
    // write returns really closes it.
    drop(db);
    finished.send_modify(|f| *f = (*f).max(batch));
}

/// The steps of `sql`'s query plan, joined by "; ", for the tests that check a read searches an
/// index. Parameters are left unbound: the plan must hold for any value.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
fn query_plan(c: &Connection, sql: &str) -> String {
    let mut st = c.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let unbound = vec![rusqlite::types::Null; st.parameter_count()];
    let steps: Vec<String> = st
        .query_map(rusqlite::params_from_iter(unbound), |r| r.get(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    steps.join("; ")
}

/// A bare queued run row, for the queue's tests.
#[cfg(test)]
async fn insert_queued_run(db: &SqliteDb, run: &str, user: &str) {
    let (run, user) = (run.to_string(), user.to_string());
    let written = db
        .write(move |c| {
            c.execute(
                "INSERT INTO runs (id, user_id, status, created_at, updated_at, body)
                 VALUES (?1, ?2, 'queued', 0, 0, '{}')",
                [run, user],
            )
            .map_err(unavailable)
        })
        .await;
    assert!(written.is_ok(), "a test run row is written");
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use longrun_ports::CatalogKind;

    async fn insert(db: &SqliteDb, id: &str) {
        db.write(|c| {
            c.execute("INSERT INTO active (user_id, count) VALUES (?1, 0)", [id])
                .map_err(unavailable)
        })
        .await
        .unwrap();
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
            .read(|c| c.query_row("SELECT count(*) FROM active", [], |r| r.get(0)))
            .await
            .unwrap();
        assert_eq!(n, 2);
    }

    #[tokio::test]
    async fn a_second_open_of_a_database_in_use_fails_with_a_clear_error() {
        // Arrange
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        let first = SqliteDb::open(&path).unwrap();

        // Act
        let second = SqliteDb::open(&path);

        // Assert
        let Err(StoreError::Unavailable(msg)) = second else {
            panic!("a second open of a database in use succeeded");
        };
        assert!(msg.contains("in use by another process"), "{msg}");
        drop(first);
        assert!(SqliteDb::open(&path).is_ok(), "closed, it opens again");
    }

    #[tokio::test]
    async fn a_loop_write_that_finds_the_connection_taken_waits_as_a_task_and_the_holder_runs_it() {
        // Arrange: the connection held, as by another task's write or a COMMIT.
        let dir = tempfile::tempdir().unwrap();
        let db = SqliteDb::open(&dir.path().join("db.sqlite")).unwrap();
        let held = db.lock();

        // Act: on this one-thread runtime, a write that blocked its thread would never return.
        let mut write = Box::pin(db.write_owned(true, |c| put(c, "handed")));
        let waited_as_a_task = futures_util::FutureExt::now_or_never(&mut write).is_none();
        db.release(held);
        write.await.unwrap();

        // Assert
        assert!(
            waited_as_a_task,
            "the write blocked instead of handing itself over"
        );
        assert_eq!(ids(&db).await, vec!["handed".to_string()]);
    }

    /// Runs `hold` on a thread of its own, off the runtime, until what it holds is let go of:
    /// `hold` calls `wait` once it holds it, and the closure returned lets it go on.
    fn hold_on_a_thread(
        db: &SqliteDb, hold: impl FnOnce(&SqliteDb, &dyn Fn()) + Send + 'static,
    ) -> impl FnOnce() {
        let (held, is_held) = std::sync::mpsc::channel();
        let (go, gone_on) = std::sync::mpsc::channel::<()>();
        let db = db.clone();
        let thread = std::thread::spawn(move || {
            hold(&db, &|| {
                held.send(()).unwrap();
                gone_on.recv().unwrap();
            });
        });
        is_held.recv().unwrap();
        move || {
            go.send(()).unwrap();
            thread.join().unwrap();
        }
    }

    #[tokio::test]
    async fn a_write_handed_to_a_holder_off_the_runtime_is_run_and_committed() {
        // Arrange: a thread outside the runtime (as the checkpointer's) holds the connection.
        let dir = tempfile::tempdir().unwrap();
        let db = SqliteDb::open(&dir.path().join("db.sqlite")).unwrap();
        let let_go = hold_on_a_thread(&db, |db, wait| {
            let g = db.lock();
            wait();
            db.release(g);
        });

        // Act
        let mut write = Box::pin(db.write_owned(true, |c| put(c, "off")));
        let handed_over = futures_util::FutureExt::now_or_never(&mut write).is_none();
        let_go();
        write.await.unwrap();

        // Assert: durable, so its group was committed, from a thread of its own.
        assert!(handed_over);
        drop(db);
        let again = SqliteDb::open(&dir.path().join("db.sqlite")).unwrap();
        assert_eq!(ids(&again).await, vec!["off".to_string()]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_group_commits_once_the_one_before_it_is_durable_and_the_writes_meanwhile_join_it() {
        // Arrange: a group on its way to the disk, its fsync not done.
        let dir = tempfile::tempdir().unwrap();
        let db = SqliteDb::open(&dir.path().join("db.sqlite")).unwrap();
        let synced = hold_on_a_thread(&db, |db, wait| {
            let _turn = db.inner.syncing.lock().unwrap();
            wait();
        });

        // Act: a durable write, time for its group's committer to come for its turn, then
        // another write.
        let write = |id: &'static str| {
            let db = db.clone();
            tokio::spawn(async move { db.write(|c| put(c, id)).await })
        };
        let applied = |n: u64| {
            let db = db.clone();
            async move {
                while db.write_stats().0 < n {
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                }
            }
        };
        let first = write("first");
        applied(1).await;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let second = write("second");
        applied(2).await;
        let acknowledged_early = first.is_finished() || second.is_finished();
        synced();
        first.await.unwrap().unwrap();
        second.await.unwrap().unwrap();

        // Assert
        assert!(
            !acknowledged_early,
            "a write was acknowledged while the group before it was not durable"
        );
        assert_eq!(
            db.write_stats().1,
            1,
            "the write made while the disk synced did not join the open group"
        );
        assert_eq!(
            ids(&db).await,
            vec!["first".to_string(), "second".to_string()]
        );
    }

    #[tokio::test]
    async fn a_committed_read_sees_acknowledged_writes_and_does_not_wait_for_the_writer() {
        // Arrange: one acknowledged write, then the writer's connection held (as through a
        // long commit) with a write of its own not yet committed.
        let dir = tempfile::tempdir().unwrap();
        let db = SqliteDb::open(&dir.path().join("db.sqlite")).unwrap();
        insert(&db, "acked").await;
        let held = db.lock();
        exec(&held.c, "BEGIN IMMEDIATE").unwrap();
        put(&held.c, "open").unwrap();

        // Act: this read would deadlock on this thread if it needed the writer's connection.
        let read = db.read_committed(|c| {
            let mut st = c.prepare("SELECT user_id FROM active ORDER BY user_id")?;
            let rows = st.query_map([], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<Vec<String>>>()
        });
        let seen = futures_util::FutureExt::now_or_never(read)
            .expect("a committed read does not wait")
            .unwrap();

        // Assert
        assert_eq!(seen, vec!["acked".to_string()]);
        exec(&held.c, "ROLLBACK").unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_wal_starts_over_under_a_steady_stream_of_commits_and_loses_nothing() {
        // Arrange: about twice the WAL the checkpointer lets grow, written one group at a time.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        let db = SqliteDb::open(&path).unwrap();
        let page = "x".repeat(3_000);
        let insert = |i: usize| {
            let (id, body) = (format!("u{i:06}"), page.clone());
            db.write(move |c| {
                c.execute(
                    "INSERT INTO notifications (id, user_id, at, body) VALUES (?1, 'u', 0, ?2)",
                    [id, body],
                )
                .map_err(unavailable)
            })
        };
        // The WAL's header: its salt changes each time the WAL starts over.
        let wal = dir.path().join("db.sqlite-wal");
        let salt = || std::fs::read(&wal).unwrap()[16..24].to_vec();
        insert(0).await.unwrap();
        let first = salt();
        let mut rows = 1;
        while rows < 2 * checkpoint::RESTART_FRAMES as usize {
            insert(rows).await.unwrap();
            rows += 1;
        }

        // Act: a trickle of commits, with room between them for the checkpointer to finish,
        // until the WAL starts over (or a minute, far past its one-second passes).
        let started = std::time::Instant::now();
        while salt() == first && started.elapsed() < std::time::Duration::from_secs(60) {
            insert(rows).await.unwrap();
            rows += 1;
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }

        // Assert: the WAL started over, and every row is there after reopening.
        assert_ne!(salt(), first, "the WAL never started over");
        drop(db);
        let again = SqliteDb::open(&path).unwrap();
        let n: i64 = again
            .read(|c| c.query_row("SELECT count(*) FROM notifications", [], |r| r.get(0)))
            .await
            .unwrap();
        assert_eq!(n, rows as i64);
    }

    fn put(c: &Connection, id: &str) -> StoreResult<()> {
        c.execute("INSERT INTO active (user_id, count) VALUES (?1, 0)", [id])
            .map(|_| ())
            .map_err(unavailable)
    }

    async fn ids(db: &SqliteDb) -> Vec<String> {
        db.read(|c| {
            let mut st = c.prepare("SELECT user_id FROM active ORDER BY user_id")?;
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
    async fn a_write_that_fails_after_changing_rows_abandons_its_whole_group_and_tells_every_writer()
     {
        // Arrange
        let db = SqliteDb::open_in_memory().unwrap();
        let generation = db.generation();

        // Act: a write fails half-way in a group that three others joined before it, two of
        // them waiting for it to be durable.
        db.write_deferred(|c| put(c, "u1")).await.unwrap();
        let mut joined = std::pin::pin!(db.write(|c| put(c, "u2")));
        let mut also = std::pin::pin!(db.write(|c| put(c, "u5")));
        tokio::select! {
            biased;
            _ = &mut joined => panic!("the group cannot have committed yet"),
            _ = &mut also => panic!("the group cannot have committed yet"),
            _ = std::future::ready(()) => {}
        }
        let half = db
            .write(|c| {
                put(c, "u3")?;
                put(c, "u3")
            })
            .await;
        let (joined, also) = (joined.await, also.await);
        let after = db.write(|c| put(c, "u4")).await;

        // Assert: the group is gone, each of its waiting writers is told, and the next group
        // commits.
        assert!(half.is_err());
        assert!(matches!(&joined, Err(e) if e.is_retryable()), "{joined:?}");
        assert!(matches!(&also, Err(e) if e.is_retryable()), "{also:?}");
        assert!(after.is_ok(), "{after:?}");
        assert_eq!(ids(&db).await, ["u4"]);
        assert!(db.generation() > generation, "caches must start over");
    }

    /// The SQL that made the table or index `name`, if there is one.
    async fn schema_of(db: &SqliteDb, name: &str) -> Option<String> {
        db.read(|c| {
            c.query_row(
                "SELECT sql FROM sqlite_schema WHERE name = ?1",
                [name],
                |r| r.get(0),
            )
            .optional()
        })
        .await
        .unwrap()
    }

    /// A database file made by an earlier layout: `make` writes its tables and rows.
    fn old_database(
        make: impl FnOnce(&Connection) -> rusqlite::Result<()>,
    ) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        make(&Connection::open(&path).unwrap()).unwrap();
        (dir, path)
    }

    #[tokio::test]
    async fn a_database_from_before_the_catalog_keeps_its_tools_servers_and_webhooks() {
        // Arrange: the three tables of the old layout, one row each.
        let (_dir, path) = old_database(|c| {
            c.execute_batch(
                r#"CREATE TABLE webhooks (user_id TEXT PRIMARY KEY, body TEXT NOT NULL);
                CREATE TABLE user_tools (user_id TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (user_id, name));
                CREATE TABLE mcp_servers (user_id TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (user_id, name));
                INSERT INTO webhooks VALUES ('u1', '[{"url":"https://a.example/h","secret":"0123456789abcdef"},{"url":"https://b.example/h","secret":"0123456789abcdef"}]');
                INSERT INTO user_tools VALUES ('u1', 'lookup', '{"name":"lookup"}');
                INSERT INTO mcp_servers VALUES ('u1', 'docs', '{"name":"docs"}');"#,
            )
        });

        // Act
        let db = SqliteDb::open(&path).unwrap();
        let store = SqliteRunStore::new(db);

        // Assert
        let entries = |kind| {
            let scope = CatalogScope {
                user_id: "u1",
                kind,
            };
            store.entries(scope)
        };
        let hooks = entries(CatalogKind::Webhook).await.unwrap();
        let urls: Vec<&str> = hooks
            .iter()
            .map(|(_, v)| v["url"].as_str().unwrap())
            .collect();
        assert_eq!(urls, ["https://a.example/h", "https://b.example/h"]);
        assert_eq!(entries(CatalogKind::Tool).await.unwrap()[0].0, "lookup");
        assert_eq!(entries(CatalogKind::McpServer).await.unwrap()[0].0, "docs");
    }

    #[tokio::test]
    async fn a_database_from_before_the_notified_column_keeps_which_runs_are_unsettled() {
        // Arrange: the runs table and its index as made before, with three ended runs, one of
        // them not yet notified, and one running.
        let (_dir, path) = old_database(|c| {
            c.execute_batch(
                "CREATE TABLE runs (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, status TEXT NOT NULL,
                     created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, body TEXT NOT NULL);
                 CREATE INDEX runs_unsettled ON runs(updated_at, id)
                     WHERE status IN ('queued', 'running') OR json_extract(body, '$.notified') = 0;",
            )?;
            let runs = [
                ("done-1", RunStatus::Completed, true),
                ("done-2", RunStatus::Completed, true),
                ("unpublished", RunStatus::Stopped, false),
                ("at-work", RunStatus::Running, false),
            ];
            for (id, status, notified) in runs {
                let mut run = longrun_domain::testing::sample_run();
                run.id = id.into();
                if status != RunStatus::Running {
                    run.transition_to(status, 5).unwrap();
                }
                run.notified = notified;
                c.execute(
                    "INSERT INTO runs VALUES (?1, ?2, ?3, 0, 5, ?4)",
                    params![id, run.user_id, status.as_str(), to_json(&run).unwrap()],
                )?;
            }
            Ok(())
        });

        // Act
        let store = SqliteRunStore::new(SqliteDb::open(&path).unwrap());
        let mut stale: Vec<String> = store
            .stale_runs(1_000, 10)
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.id)
            .collect();
        stale.sort();

        // Assert
        assert_eq!(stale, ["at-work", "unpublished"]);
        let index = schema_of(&store.db, "runs_unsettled").await.unwrap();
        assert!(
            index.contains("notified = 0") && !index.contains("json_extract"),
            "{index}"
        );
    }

    #[tokio::test]
    async fn a_database_from_before_run_recent_moves_each_runs_recent_docs_out_of_its_row() {
        // Arrange: a run row as written before, its docs index in its body.
        let mut run = longrun_domain::testing::sample_run();
        run.note_docs([longrun_domain::testing::sample_doc_meta("notes/1.md")]);
        let before = run.clone();
        let (_dir, path) = old_database(|c| {
            c.execute_batch(
                "CREATE TABLE runs (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, status TEXT NOT NULL,
                     created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, body TEXT NOT NULL,
                     notified INTEGER NOT NULL DEFAULT 0);",
            )?;
            c.execute(
                "INSERT INTO runs VALUES (?1, ?2, 'queued', 0, 5, ?3, 0)",
                params![run.id, run.user_id, to_json(&run).unwrap()],
            )?;
            Ok(())
        });

        // Act: opened, then written by a change that leaves the docs alone, then reopened.
        let store = SqliteRunStore::new(SqliteDb::open(&path).unwrap());
        let read = store.get_run(&run.id).await.unwrap().unwrap();
        store
            .update_run(&run.id, &|r: &Run| {
                let mut next = r.clone();
                next.updated_at = 9;
                Ok(RunChange::of(next, vec![]))
            })
            .await
            .unwrap();
        drop(store);
        let store = SqliteRunStore::new(SqliteDb::open(&path).unwrap());
        let reopened = store.get_run(&run.id).await.unwrap().unwrap();
        let in_body: Option<String> = store
            .db
            .read(|c| {
                c.query_row(
                    "SELECT json_type(body, '$.recent_docs') FROM runs",
                    [],
                    |r| r.get(0),
                )
            })
            .await
            .unwrap();

        // Assert
        assert_eq!(read, before);
        assert_eq!(reopened.recent_docs, before.recent_docs);
        assert_eq!(reopened.updated_at, 9);
        assert_eq!(in_body, None);
    }

    #[tokio::test]
    async fn a_database_with_a_table_per_log_keeps_every_row_and_key_in_the_one_log() {
        // Arrange: the four log tables as they were made before, clustered (the oldest form)
        // or rowid tables, one or two rows each.
        let (_dir, path) = old_database(|c| {
            c.execute_batch(
                "CREATE TABLE events (run_id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (run_id, seq)) WITHOUT ROWID;
                 CREATE TABLE iterations (run_id TEXT NOT NULL, n INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (run_id, n));
                 CREATE TABLE docs (run_id TEXT NOT NULL, path TEXT NOT NULL, title TEXT NOT NULL, content TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (run_id, path)) WITHOUT ROWID;
                 CREATE TABLE pads (run_id TEXT NOT NULL, n INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (run_id, n));
                 INSERT INTO events VALUES ('r1', 1, 'e1'), ('r1', 2, 'e2');
                 INSERT INTO iterations VALUES ('r1', 1, 'i1');
                 INSERT INTO docs VALUES ('r1', 'a.md', 'A', 'alpha', '{}');
                 INSERT INTO pads VALUES ('r1', 1, 'p1');",
            )
        });

        // Act
        let db = SqliteDb::open(&path).unwrap();

        // Assert
        let rows: Vec<(i64, i64, String)> = db
            .read(|c| {
                let sql = "SELECT kind, n, body FROM log WHERE run_id = 'r1' ORDER BY kind, n";
                let mut st = c.prepare(sql)?;
                let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
                rows.collect::<rusqlite::Result<_>>()
            })
            .await
            .unwrap();
        let expected = [
            (EVENT, 1, "e1"),
            (EVENT, 2, "e2"),
            (ITERATION, 1, "i1"),
            (PAD, 1, "p1"),
        ]
        .map(|(kind, n, body)| (kind, n, body.to_string()));
        assert_eq!(rows, expected);
        let (old_tables, clustered_docs, content): (i64, i64, String) = db
            .read(|c| {
                c.query_row(
                    "SELECT (SELECT count(*) FROM sqlite_schema
                              WHERE name IN ('events', 'iterations', 'pads')),
                            (SELECT count(*) FROM sqlite_schema
                              WHERE name = 'docs' AND sql LIKE '%WITHOUT ROWID%'),
                            (SELECT content FROM docs WHERE path = 'a.md')",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
            })
            .await
            .unwrap();
        assert_eq!((old_tables, clustered_docs), (0, 0));
        assert_eq!(content, "alpha");
    }

    #[tokio::test]
    async fn a_log_keyed_by_kind_keeps_every_entry_and_reads_each_kind_in_order_from_its_index() {
        // Arrange: the log as it was keyed before, a run's kinds interleaved as written.
        let (_dir, path) = old_database(|c| {
            c.execute_batch(
                "CREATE TABLE log (run_id TEXT NOT NULL, kind INTEGER NOT NULL, n INTEGER NOT NULL,
                                   body TEXT NOT NULL, PRIMARY KEY (run_id, kind, n));
                 INSERT INTO log VALUES ('r1', 0, 1, 'e1'), ('r1', 0, 2, 'e2'), ('r1', 1, 1, 'i1'),
                   ('r1', 2, 1, 'p1'), ('r1', 0, 3, 'e3'), ('r1', 1, 2, 'i2'), ('r1', 2, 2, 'p2'),
                   ('r2', 0, 1, 'other');",
            )
        });

        // Act
        let db = SqliteDb::open(&path).unwrap();
        let read = |sql: &'static str, args: Vec<i64>| {
            let db = db.clone();
            async move {
                db.read(move |c| {
                    let mut st = c.prepare(sql)?;
                    let params = rusqlite::params_from_iter(args);
                    let rows = st.query_map(params, |r| r.get::<_, String>(0))?;
                    rows.collect::<rusqlite::Result<Vec<_>>>()
                })
                .await
                .unwrap()
            }
        };
        let events_after_1 = read(
            "SELECT body FROM log WHERE run_id = 'r1' AND p > ?1 AND +kind = 0 AND n > ?1
             ORDER BY p, kind, n",
            vec![1],
        )
        .await;
        let plan = db
            .read(|c| {
                query_plan(
                    c,
                    "SELECT body FROM log WHERE run_id = ?1 AND p > ?2 AND +kind = ?3 AND n > ?2
                     ORDER BY p, kind, n",
                )
            })
            .await;

        // Assert: every entry kept, each kind in number order, and read through the new index.
        assert_eq!(events_after_1, ["e2", "e3"]);
        let all = read("SELECT body FROM log ORDER BY run_id, p, kind, n", vec![]).await;
        assert_eq!(all, ["e1", "i1", "p1", "e2", "i2", "p2", "e3", "other"]);
        assert!(plan.contains("USING INDEX log_by_run"), "{plan}");
    }

    #[tokio::test]
    async fn a_database_with_the_keyed_dedup_table_keeps_its_window() {
        // Arrange: one id live in the old table, one expired.
        let msg = StepMessage::new("r1", 1, longrun_ports::StepReason::Start);
        let gone = StepMessage::new("r1", 2, longrun_ports::StepReason::Start);
        let (_dir, path) = old_database(|c| {
            c.execute_batch(
                "CREATE TABLE dedup (dedup_id TEXT PRIMARY KEY, expires_at INTEGER NOT NULL) WITHOUT ROWID;
                 CREATE INDEX dedup_expiry ON dedup(expires_at);",
            )?;
            c.execute(
                "INSERT INTO dedup VALUES (?1, 500000), (?2, 10)",
                [msg.dedup_id(), gone.dedup_id()],
            )
            .map(|_| ())
        });

        // Act
        let db = SqliteDb::open(&path).unwrap();
        let clock = Arc::new(longrun_ports::ManualClock::new(1_000));
        let queue = SqliteStepQueue::new(db.clone(), clock);
        let again = queue.enqueue(&msg, &msg.dedup_id(), 0).await.unwrap();
        let after = queue.enqueue(&gone, &gone.dedup_id(), 0).await.unwrap();

        // Assert
        assert_eq!(again, Enqueued::Duplicate);
        assert_eq!(after, Enqueued::Sent);
        assert_eq!(schema_of(&db, "dedup").await, None);
    }

    #[tokio::test]
    async fn an_in_memory_database_has_no_wal_to_fsync() {
        let db = SqliteDb::open_in_memory().unwrap();
        insert(&db, "u1").await;
        assert_eq!(db.wal_syncs(), 0);
    }
}
