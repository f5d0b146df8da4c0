//! Export, import and retention in SQLite. A run's deletion is one write through the group
//! committer (its check and its deletes together, one run at a time), so a retention pass
//! never holds the writer for long and never races a continue or a commit of that run.

use longrun_domain::retention::verdict;
use longrun_domain::{EXPORT_FORMAT, RunExport, WebhookDelivery};
use longrun_ports::{RunArchive, RunRetention};

use super::runs::doc_from_row;
use super::*;

/// Its own step, after the base schema: the ended runs by their last write, so a retention
/// pass reads only the runs it may delete, however many active ones the store holds.
///
/// The condition is a chain of `=`, not `status IN (...)`: SQLite evaluates a partial index's
/// condition at every write of a row, and an `IN` of more than two values builds a temporary
/// table each time (a fifth of what a run write cost). `EXPIRED_RUNS` repeats it word for
/// word, as SQLite uses a partial index only for a query that states its condition.
macro_rules! ended {
    () => {
        "(status = 'completed' OR status = 'stopped' OR status = 'canceled' OR status = 'failed')"
    };
}

const RETENTION_SCHEMA: &str = concat!(
    "CREATE INDEX IF NOT EXISTS runs_ended ON runs(updated_at, id) WHERE ",
    ended!(),
    ";"
);

/// Databases made before hold `runs_ended` with the `IN` condition; it is built again once.
pub(super) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    let old: Option<String> = conn
        .query_row(
            "SELECT sql FROM sqlite_schema WHERE type = 'index' AND name = 'runs_ended'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    if old.is_some_and(|sql| !sql.contains(ended!())) {
        conn.execute_batch("DROP INDEX runs_ended;")?;
    }
    conn.execute_batch(RETENTION_SCHEMA)
}

/// The runs `delete_run` would take, oldest write first. A run's last write is never before
/// its end, so `updated_at < cutoff` misses none that the age rule would keep.
const EXPIRED_RUNS: &str = concat!(
    "SELECT id FROM runs WHERE ",
    ended!(),
    " AND updated_at < ?1
       AND json_extract(body, '$.ended_at') < ?1 AND notified = 1
       AND NOT EXISTS (SELECT 1 FROM outbox WHERE run_id = runs.id AND state = 'pending')
       AND NOT EXISTS (SELECT 1 FROM runs p WHERE p.id = json_extract(runs.body, '$.parent_run_id')
                         AND p.status NOT IN ('completed', 'stopped', 'canceled', 'failed'))
     ORDER BY updated_at, id LIMIT +?2"
);

/// A run's notification ids start with `{run_id}#` (one per outcome): a range of the key.
const RUN_NOTIFICATIONS: &str = "SELECT body FROM notifications
     WHERE id > ?1 || '#' AND id < ?1 || '$' AND json_extract(body, '$.run_id') = ?1";

/// A run's log entries of one kind, in order (the log index's order is number order within a
/// kind).
const LOG_OF_KIND: &str =
    "SELECT body FROM log WHERE run_id = ?1 AND +kind = ?2 ORDER BY p, kind, n";

/// Every table keyed by a run, and how to delete its rows there (the run row goes last).
const DELETES: [&str; 6] = [
    "DELETE FROM log WHERE run_id = ?1",
    "DELETE FROM run_recent WHERE run_id = ?1",
    "DELETE FROM docs WHERE run_id = ?1",
    "DELETE FROM outbox WHERE run_id = ?1",
    "DELETE FROM notifications
       WHERE id > ?1 || '#' AND id < ?1 || '$' AND json_extract(body, '$.run_id') = ?1",
    "DELETE FROM runs WHERE id = ?1",
];

fn all_docs(c: &Connection, run_id: &str) -> StoreResult<Vec<Doc>> {
    let rows: Vec<(String, String, String)> = c
        .prepare_cached("SELECT title, content, body FROM docs WHERE run_id = ?1 ORDER BY path")
        .and_then(|mut st| {
            st.query_map([run_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect()
        })
        .map_err(unavailable)?;
    rows.into_iter()
        .map(|(title, content, meta)| doc_from_row(title, content, &meta))
        .collect()
}

fn export(c: &Connection, run: Run) -> StoreResult<RunExport> {
    let id = run.id.as_str();
    Ok(RunExport {
        format: EXPORT_FORMAT.into(),
        iterations: query_json(c, LOG_OF_KIND, &[&id, &ITERATION])?,
        events: query_json(c, LOG_OF_KIND, &[&id, &EVENT])?,
        docs: all_docs(c, id)?,
        scratchpad: query_json(c, LOG_OF_KIND, &[&id, &PAD])?,
        notifications: query_json(c, RUN_NOTIFICATIONS, &[&id])?,
        deliveries: query_json(c, "SELECT body FROM outbox WHERE run_id = ?1", &[&id])?,
        run,
    }
    .normalized())
}

fn insert_delivery(c: &Connection, d: &WebhookDelivery) -> StoreResult<()> {
    super::outbox::write_delivery(c, d, &to_json(d)?, false)
}

/// Every row of the document, the run's first. Called after the checks: a failing insert
/// abandons the group (see `SqliteDb`), so an import lands whole or not at all.
fn insert_all(c: &Connection, x: &RunExport) -> StoreResult<()> {
    let mut run = x.run.clone();
    let (body, recent) = super::run_write::split_body(&mut run, None)?;
    let id = run.id.as_str();
    let exec = |sql: &str, p: &[&dyn rusqlite::ToSql]| -> StoreResult<()> {
        c.prepare_cached(sql)
            .and_then(|mut st| st.execute(p))
            .map(|_| ())
            .map_err(unavailable)
    };
    exec(
        "INSERT INTO runs (id, user_id, status, created_at, updated_at, body, notified)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        &[
            &id,
            &run.user_id,
            &run.status.as_str(),
            &run.created_at,
            &run.updated_at,
            &body,
            &run.notified,
        ],
    )?;
    if let Some(recent) = &recent {
        super::run_write::write_recent(c, id, recent)?;
    }
    // An entry's `p` is its own number, as in a log from before `p`: each kind stays in order,
    // and the run's later writes land after every entry (see `LOG`).
    for e in &x.events {
        let seq = e.seq as i64;
        exec(INSERT_LOG, &[&id, &EVENT, &seq, &to_json(e)?, &seq])?;
    }
    for r in &x.iterations {
        exec(INSERT_LOG, &[&id, &ITERATION, &r.n, &to_json(r)?, &r.n])?;
    }
    for d in &x.docs {
        let sql =
            "INSERT INTO docs (run_id, path, title, content, body) VALUES (?1, ?2, ?3, ?4, ?5)";
        exec(
            sql,
            &[&id, &d.path, &d.title, &d.content, &to_json(&d.meta())?],
        )?;
    }
    for p in &x.scratchpad {
        exec(INSERT_LOG, &[&id, &PAD, &p.n, &to_json(p)?, &p.n])?;
    }
    for n in &x.notifications {
        let sql =
            "INSERT OR REPLACE INTO notifications (id, user_id, at, body) VALUES (?1, ?2, ?3, ?4)";
        exec(sql, &[&n.id, &n.user_id, &n.at, &to_json(n)?])?;
    }
    for d in &x.deliveries {
        insert_delivery(c, d)?;
    }
    Ok(())
}

#[async_trait]
impl RunArchive for SqliteRunStore {
    async fn export_run(&self, run_id: &str) -> StoreResult<Option<RunExport>> {
        self.db
            .read(|c| match self.current(c, run_id)? {
                Some(run) => export(c, Run::clone(&run)).map(Some),
                None => Ok(None),
            })
            .await
    }

    async fn import_run(&self, x: &RunExport) -> StoreResult<()> {
        x.check().map_err(Rejection::Conflict)?;
        self.db
            .write(|c| {
                if self.current(c, &x.run.id)?.is_some() {
                    let id = &x.run.id;
                    return Err(Rejection::Conflict(format!("run {id} already exists")).into());
                }
                insert_all(c, x)
            })
            .await
    }
}

#[async_trait]
impl RunRetention for SqliteRunStore {
    async fn expired_runs(&self, ended_before: i64, limit: usize) -> StoreResult<Vec<String>> {
        self.db
            .read(|c| {
                c.prepare_cached(EXPIRED_RUNS)
                    .and_then(|mut st| {
                        st.query_map(params![ended_before, limit as i64], |r| r.get(0))?
                            .collect()
                    })
                    .map_err(unavailable)
            })
            .await
    }

    async fn delete_run(&self, run_id: &str, ended_before: i64) -> StoreResult<bool> {
        self.db
            .write(|c| {
                let Some(run) = self.current(c, run_id)? else {
                    return Ok(false);
                };
                let parent = match run.parent_run_id.as_deref() {
                    Some(p) => self.current(c, p)?,
                    None => None,
                };
                let pending: bool = c
                    .prepare_cached(
                        "SELECT EXISTS (SELECT 1 FROM outbox WHERE run_id = ?1 AND state = 'pending')",
                    )
                    .and_then(|mut st| st.query_row([run_id], |r| r.get(0)))
                    .map_err(unavailable)?;
                if verdict(&run, ended_before, pending, parent.as_deref()).is_err() {
                    return Ok(false);
                }
                for sql in DELETES {
                    c.prepare_cached(sql)
                        .and_then(|mut st| st.execute([run_id]))
                        .map_err(unavailable)?;
                }
                self.forget(run_id);
                Ok(true)
            })
            .await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn deleting_a_run_deletes_its_recent_docs_row() {
        // Arrange: an old ended run with a doc in its index, and another run.
        let store = SqliteRunStore::new(SqliteDb::open_in_memory().unwrap());
        for id in ["old", "other"] {
            let mut run = longrun_domain::testing::sample_run();
            run.id = id.into();
            run.note_docs([longrun_domain::testing::sample_doc_meta("a.md")]);
            run.transition_to(longrun_domain::run::RunStatus::Running, 1)
                .unwrap();
            run.transition_to(longrun_domain::run::RunStatus::Completed, 1)
                .unwrap();
            run.notified = true;
            store
                .create_run(longrun_domain::change::create(run, 10))
                .await
                .unwrap();
        }

        // Act
        let deleted = store.delete_run("old", 1_000_000).await.unwrap();

        // Assert
        let left: Vec<String> = store
            .db
            .read(|c| {
                c.prepare("SELECT run_id FROM run_recent")
                    .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
            })
            .await
            .unwrap();
        assert!(deleted);
        assert_eq!(left, ["other"]);
    }

    #[tokio::test]
    async fn a_database_from_before_gets_the_ended_runs_index_its_scan_can_use() {
        // Arrange: the index as older builds made it, with `status IN (...)`.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.sqlite");
        drop(SqliteDb::open(&path).unwrap());
        Connection::open(&path)
            .unwrap()
            .execute_batch(
                "DROP INDEX runs_ended;
                 CREATE INDEX runs_ended ON runs(updated_at, id)
                     WHERE status IN ('completed', 'stopped', 'canceled', 'failed');",
            )
            .unwrap();

        // Act
        let db = SqliteDb::open(&path).unwrap();

        // Assert
        let (index, plan): (String, String) = db
            .read(|c| {
                let sql = "SELECT sql FROM sqlite_schema WHERE name = 'runs_ended'";
                let index = c.query_row(sql, [], |r| r.get(0)).unwrap();
                (index, query_plan(c, EXPIRED_RUNS))
            })
            .await;
        assert!(index.contains(ended!()), "{index}");
        assert!(plan.contains("USING INDEX runs_ended"), "{plan}");
    }

    #[tokio::test]
    async fn the_retention_scan_reads_only_ended_runs_by_an_index() {
        // Arrange
        let db = SqliteDb::open_in_memory().unwrap();

        // Act
        let plan = db.read(|c| query_plan(c, EXPIRED_RUNS)).await;

        // Assert: a walk of the partial index of ended runs, then searches by key.
        assert!(plan.contains("USING INDEX runs_ended"), "{plan}");
        let scans = plan
            .split("; ")
            .filter(|s| s.starts_with("SCAN") && !s.contains("runs_ended"))
            .count();
        assert_eq!(scans, 0, "{plan}");
    }
}
