//! The retention pass over a full store: `bench_store`'s fill (ended runs created over the last
//! year, copies of real runs) with each copy's end set to its creation, then one pass of a
//! 180-day delete policy through the real store and writer (durable SQLite), timed, while a
//! reader times `get_run` beside it. Prints one JSON line; the rows in BENCHMARKS.md quote it.
//!
//! `cargo build -p longrun-tests --bin bench_store --bin bench_retention && target/debug/bench_retention 100000`
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use longrun_local::{SqliteDb, SqliteRunStore};
use longrun_ports::{RunLog, RunRetention, SystemClock};
use longrun_service::retention::{DAY_MS, Retention, RetentionPolicy};
use serde_json::json;

/// `bench_store --scenario …` beside this binary.
fn bench_store(args: &[&str]) {
    let exe = std::env::current_exe()
        .unwrap()
        .with_file_name("bench_store");
    let out = std::process::Command::new(&exe)
        .arg("--scenario")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e} (build it first)", exe.display()));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The fill copies a run's body with its template's end; a run ended when it was created
/// spreads the ends over the year too, and its notification gets the key a run's outcomes
/// have (`{run_id}#…`), so the pass finds them as it would a real run's.
fn age_the_copies(dir: &Path) -> (i64, i64) {
    let c = rusqlite::Connection::open(dir.join("longrun.sqlite3")).unwrap();
    c.execute_batch(
        "UPDATE runs SET notified = 1,
                body = json_set(body, '$.ended_at', created_at, '$.notified', json('true'))
           WHERE status NOT IN ('queued', 'running');
         UPDATE notifications SET id = substr(id, 3) || '#3#stopped' WHERE id LIKE 'n-%';",
    )
    .unwrap();
    let runs: i64 = c
        .query_row("SELECT count(*) FROM runs", [], |r| r.get(0))
        .unwrap();
    let bytes: i64 = c
        .query_row(
            "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
            [],
            |r| r.get(0),
        )
        .unwrap();
    (runs, bytes)
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .map_or(100_000, |n| n.parse().unwrap());
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().to_str().unwrap();
    bench_store(&["templates", d]);
    bench_store(&["fill", d, &runs.to_string()]);
    let (before, bytes) = age_the_copies(tmp.path());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let out = rt.block_on(async {
        let db = SqliteDb::open(&tmp.path().join("longrun.sqlite3")).unwrap();
        let store = Arc::new(SqliteRunStore::new(db));
        let policy = RetentionPolicy::days(180, None).unwrap();
        let pass = Retention::new(store.clone(), Arc::new(SystemClock), policy);
        let reader = store.clone();
        let probe = tokio::spawn(async move {
            let mut ms = vec![];
            for i in 0..2_000usize {
                // The newest copies (the policy keeps them), each once: the run cache is cold.
                let id = format!("run_{:032x}", runs - i);
                let t = Instant::now();
                let _ = reader.get_run(&id).await.unwrap();
                ms.push(t.elapsed().as_secs_f64() * 1000.0);
                tokio::time::sleep(std::time::Duration::from_millis(2)).await;
            }
            ms
        });
        let t = Instant::now();
        let report = pass.pass().await.unwrap();
        let secs = t.elapsed().as_secs_f64();
        let mut ms = probe.await.unwrap();
        ms.sort_by(f64::total_cmp);
        let cutoff = longrun_ports::Clock::now_ms(&SystemClock) - 180 * DAY_MS;
        let left = store.expired_runs(cutoff, 10).await.unwrap().len();
        json!({
            "runs_before": before, "db_bytes_before": bytes,
            "deleted": report.deleted.len(), "pass_s": secs,
            "runs_per_s": report.deleted.len() as f64 / secs,
            "get_run_p50_ms": ms[ms.len() / 2], "get_run_p99_ms": ms[ms.len() * 99 / 100],
            "expired_left": left, "kept": report.kept,
        })
    });
    println!("{out}");
}
