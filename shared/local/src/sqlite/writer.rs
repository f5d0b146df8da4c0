//! Group commit on the writer's connection (see `SqliteDb`): the writes, a write handed over
//! to the connection's holder, and the committer that commits and fsyncs each group.

use super::*;

/// How many groups back a failed group is still reported to its writers.
const FAILED_GROUPS_KEPT: u64 = 100_000;

/// The writer's connection, the group open on it (if any), and the number the next group gets.
pub(super) struct Conn {
    pub(super) c: Connection,
    pub(super) open: Option<u64>,
    pub(super) next: u64,
}

/// A write another task handed over: run by the connection's holder, in the group open then.
pub(super) type Job = Box<dyn FnOnce(&SqliteDb, &mut Conn) + Send>;

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

impl SqliteDb {
    /// A short synchronous critical section; an async mutex would hand the lock to a parked
    /// task and leave it idle until that task is scheduled.
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Conn> {
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
    pub(super) fn release<'a>(&'a self, mut g: std::sync::MutexGuard<'a, Conn>) {
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

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

    #[tokio::test]
    async fn an_in_memory_database_has_no_wal_to_fsync() {
        let db = SqliteDb::open_in_memory().unwrap();
        insert(&db, "u1").await;
        assert_eq!(db.wal_syncs(), 0);
    }
}
