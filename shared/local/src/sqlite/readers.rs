//! Reader connections: reads of committed state that do not wait for the writer's connection.

use super::*;

/// Reader connections: one for each thread that can read at once (the runtime's workers, whose
/// iterations read their runs' docs and scratchpad here, and the API's own thread), so a read
/// rarely waits for another.
pub(super) fn readers() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().min(7)) + 1
}

pub(super) fn open_reader(path: &Path) -> StoreResult<Connection> {
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

impl SqliteDb {
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
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

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
}
