//! `SqliteDb`: opening the database (the one-process lock, the writer's connection and its
//! pragmas, the schema, the reader and checkpoint connections), and what its connections share.

use super::readers::{open_reader, readers};
use super::writer::{Conn, Job};
use super::*;

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
    pub(super) inner: Arc<Inner>,
}

pub(super) struct Inner {
    /// Bumped whenever written state is rolled back after the writer saw it succeed, so
    /// caches of rows (the run cache) know to start over.
    pub(super) generation: std::sync::atomic::AtomicU64,
    pub(super) writes: std::sync::atomic::AtomicU64,
    pub(super) commit_us: std::sync::atomic::AtomicU64,
    /// The newest group opened (it may not be committed yet).
    pub(super) opened: std::sync::atomic::AtomicU64,
    pub(super) conn: Arc<std::sync::Mutex<Conn>>,
    /// Shared with the committer, which lets go of the database before it wakes the writers:
    /// a caller that closes the database once its write returns really closes it.
    pub(super) finished: Arc<watch::Sender<u64>>,
    pub(super) failed: std::sync::Mutex<HashSet<u64>>,
    /// The WAL to fsync after each group commit (FULL durability), outside the connection lock.
    pub(super) wal_path: Option<std::path::PathBuf>,
    pub(super) wal_file: std::sync::OnceLock<std::fs::File>,
    pub(super) wal_syncs: std::sync::atomic::AtomicU64,
    /// Held by a committer from its COMMIT to the end of its fsync: one group on its way to the
    /// disk at a time. The next group stays open meanwhile, so the writes that arrive while
    /// the disk syncs join it, instead of a second COMMIT and fsync starting while the first
    /// is still syncing (fewer, larger groups; BENCHMARKS.md, "Seventeenth round").
    pub(super) syncing: std::sync::Mutex<()>,
    /// Writes handed over by tasks that found the connection taken, for its holder to run
    /// before it lets go (`write_owned`); `queued` counts them so a holder looks without locking.
    pub(super) jobs: std::sync::Mutex<Vec<Job>>,
    pub(super) queued: std::sync::atomic::AtomicUsize,
    /// The queue's index of group heads; changed only while holding `conn`, so it moves in step
    /// with the rows (and is rebuilt when the generation says they were rolled back).
    pub(super) ready: std::sync::Mutex<ready::ReadyIndex>,
    /// Connections for `read_committed` (none for an in-memory database).
    pub(super) readers: Vec<std::sync::Mutex<Connection>>,
    /// The background checkpointer's connection (none for an in-memory database).
    pub(super) checkpointer: Option<checkpoint::Checkpointer>,
    /// Seals catalog secrets before they are written and opens them as they are read.
    pub(super) sealer: longrun_ports::Sealer,
    /// Held for as long as the database is open: the one-process lock. Last, so it is let go
    /// of after every connection is closed.
    _lock: Option<std::fs::File>,
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
        schema::migrate(&conn).map_err(unavailable)?;
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

    /// The queue's index of group heads. Change it only inside a `read` or `write` closure (with
    /// the connection held); a look without the connection sees it as of the last write. Never
    /// take the connection while holding it.
    pub(super) fn ready_index(&self) -> std::sync::MutexGuard<'_, ready::ReadyIndex> {
        self.inner.ready.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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
}
