//! The schema, and the migrations that bring a database made by an earlier layout up to it:
//! each runs when the database is opened and does its work once.

use super::*;

/// Creates the schema, or brings the database up to it. Indexes come last, a step of their own
/// (`index_for_a_full_store`).
pub(super) fn migrate(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(SCHEMA)?;
    log_tables(conn)?;
    recent_table(conn)?;
    fold_dedup(conn)?;
    add_fair_key(conn)?;
    add_notified(conn)?;
    fold_catalog(conn)?;
    outbox::migrate(conn)?;
    idempotency::migrate(conn)?;
    archive::migrate(conn)?;
    index_for_a_full_store(conn)
}

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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use longrun_ports::CatalogKind;

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
            .update_run(&run.id, Durability::Now, &|r: &Run| {
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
        let again = queue
            .enqueue(&msg, &msg.dedup_id(), 0, Durability::Now)
            .await
            .unwrap();
        let after = queue
            .enqueue(&gone, &gone.dedup_id(), 0, Durability::Now)
            .await
            .unwrap();

        // Assert
        assert_eq!(again, Enqueued::Duplicate);
        assert_eq!(after, Enqueued::Sent);
        assert_eq!(schema_of(&db, "dedup").await, None);
    }
}
