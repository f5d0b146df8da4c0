//! The WAL checkpointer: copies committed pages from the WAL back into the database on its own
//! connection and thread, so the writer's connection is not held for the copy and its fsyncs
//! (with SQLite's automatic checkpoint, every 4,000th page of WAL stalled every writer and every
//! read waiting for the connection).
//!
//! SQLite starts the WAL over only when a write transaction begins with every frame copied
//! back. Under a steady stream of commits a background pass rarely ends before the next commit,
//! so once the WAL is long the checkpointer finishes a pass between two groups, holding the
//! writer's connection only for the frames written since its last pass. That keeps the WAL
//! near the 16 MB the automatic checkpoint kept it to.

use std::sync::{Weak, mpsc};
use std::time::Duration;

use rusqlite::Connection;

use std::sync::Arc;

use super::{Inner, SqliteDb, StoreResult, unavailable};

/// Pages of WAL (4 KB each) past which a pass is finished under the writer's lock.
pub(super) const RESTART_FRAMES: i64 = 4_000;
/// At most one pass per this long: each pass fsyncs the WAL and the database once, and a page
/// rewritten within it (a run's row, the queue's, an index's right edge) is copied back once.
const PAUSE: Duration = Duration::from_millis(1_000);
/// How often a finishing pass looks for the moment between two groups before giving up until
/// the next pass.
const FINISH_TRIES: u32 = 50;

pub(super) struct Checkpointer {
    conn: std::sync::Mutex<Connection>,
    wake: mpsc::SyncSender<()>,
}

impl Checkpointer {
    pub(super) fn open(path: &std::path::Path, wake: mpsc::SyncSender<()>) -> StoreResult<Self> {
        let c = Connection::open(path).map_err(unavailable)?;
        // NORMAL: a pass syncs the WAL before copying from it and the database before the WAL
        // may start over, so a restart never drops a frame the database does not hold yet.
        c.pragma_update(None, "synchronous", "NORMAL")
            .map_err(unavailable)?;
        c.busy_timeout(Duration::from_secs(5))
            .map_err(unavailable)?;
        Ok(Checkpointer {
            conn: std::sync::Mutex::new(c),
            wake,
        })
    }

    /// A group was committed: there may be frames to copy.
    pub(super) fn committed(&self) {
        let _ = self.wake.try_send(());
    }

    /// One passive checkpoint: (frames in the WAL, frames copied back so far).
    fn pass(&self) -> rusqlite::Result<(i64, i64)> {
        let c = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
            Ok((r.get(1)?, r.get(2)?))
        })
    }
}

/// Runs passes after commits until the database is closed (its `Inner` dropped).
pub(super) fn spawn(db: Weak<Inner>, woken: mpsc::Receiver<()>) {
    let started = std::thread::Builder::new()
        .name("sqlite-checkpoint".into())
        .spawn(move || {
            while woken.recv().is_ok() {
                let Some(inner) = db.upgrade() else {
                    break;
                };
                checkpoint(&inner);
                drop(inner);
                std::thread::sleep(PAUSE);
            }
        });
    if let Err(e) = started {
        tracing::error!(error = %e, "the checkpoint thread did not start; the WAL will grow");
    }
}

fn checkpoint(inner: &Arc<Inner>) {
    let Some(cp) = &inner.checkpointer else {
        return;
    };
    let frames = match cp.pass() {
        Ok((frames, _)) => frames,
        Err(e) => {
            tracing::warn!(error = %e, "WAL checkpoint failed");
            return;
        }
    };
    if frames < RESTART_FRAMES {
        return;
    }
    // Between two groups (no transaction open on the writer's connection), so the next group
    // begins with every frame copied back and SQLite starts the WAL over.
    // Let go of like any holder's, so writes handed over meanwhile are run, not stranded.
    let db = SqliteDb {
        inner: inner.clone(),
    };
    for _ in 0..FINISH_TRIES {
        let g = db.lock();
        if g.open.is_none() {
            if let Err(e) = cp.pass() {
                tracing::warn!(error = %e, "WAL checkpoint failed");
            }
            db.release(g);
            return;
        }
        db.release(g);
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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
        while rows < 2 * RESTART_FRAMES as usize {
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
}
