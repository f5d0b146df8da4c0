//! SQLite adapters: one database file holds the store and the queue. `db` opens it, `schema`
//! creates and migrates its tables, `writer` is group commit on its one writer connection and
//! `readers` the connections for committed reads; `runs` (with `cache`, its run cache, and
//! `run_write`, a run change's write), `catalog` and `queue` hold the adapters.
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
use longrun_ports::{CatalogEntry, CatalogScope, Durability, QueueResult, StoreResult};
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
mod cache;
mod catalog;
mod checkpoint;
mod db;
mod dedup;
mod idempotency;
mod outbox;
mod private;
mod queue;
mod readers;
mod ready;
mod run_write;
mod runs;
mod schema;
mod writer;

pub use db::SqliteDb;
pub use queue::SqliteStepQueue;
pub use runs::SqliteRunStore;
pub use writer::GroupCommitFailed;

use db::Inner;
use schema::{EVENT, INSERT_LOG, ITERATION, PAD};

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

/// An `active` row for `id`, written and made durable: for the tests of the connections.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
async fn insert(db: &SqliteDb, id: &str) {
    db.write(|c| {
        c.execute("INSERT INTO active (user_id, count) VALUES (?1, 0)", [id])
            .map_err(unavailable)
    })
    .await
    .unwrap();
}

/// The row `insert` writes, on a connection already held (in a write, or a test's own group).
#[cfg(test)]
fn put(c: &Connection, id: &str) -> StoreResult<()> {
    c.execute("INSERT INTO active (user_id, count) VALUES (?1, 0)", [id])
        .map(|_| ())
        .map_err(unavailable)
}

/// The ids of the `active` rows, in order.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
async fn ids(db: &SqliteDb) -> Vec<String> {
    db.read(|c| {
        let mut st = c.prepare("SELECT user_id FROM active ORDER BY user_id")?;
        let rows = st.query_map([], |r| r.get(0))?;
        rows.collect::<Result<Vec<String>, _>>()
    })
    .await
    .unwrap()
}

/// A store on a file (so with reader connections) holding one new run, and the run's id.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
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
