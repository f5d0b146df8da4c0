//! `make bench-store`: the API against an empty store and against one holding a year of ended
//! runs (100,000 by default) — creating a run, `GET /v1/runs/{id}`, listing and paging, the
//! events of one run — plus start-up recovery and the bytes stored per iteration. Writes the
//! "Store size" section of BENCHMARKS.md.
//!
//! The fill is a tool of its own (`--scenario fill <dir> <runs>`): it runs a few real runs
//! through the engine, then copies their rows (run, iterations, events, docs, scratchpad,
//! notification) under new ids and creation times spread over a year, in SQL.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use longrun_domain::run::BudgetsInput;
use longrun_http::{AppConfig, Platform, Tokens, create_run};
use longrun_ports::{NoFaults, SystemClock};
use longrun_service::WorkerConfig;
use longrun_tests::{MODEL, bench_scenario, replace_section, run_request, scripted};
use longrun_wiring::{Embedded, Running};
use serde_json::{Value, json};

const SECTION: &str = "## Store size: an empty store and a year of runs";
const TOKEN: &str = "bench-token";
/// Enough that a page of 50 is full on the empty store too.
const TEMPLATES: usize = 60;
const ITERATIONS: i64 = 3;
const DAY_MS: i64 = 86_400_000;

const PLANNER: &str = r#"{"planner": [{"content": {"status": {"exit_signal": false, "needs_user_input": false,
  "progress_summary": "wrote notes/{{iteration}}.md", "remaining_work": ["more"]},
  "tool_calls": [{"name": "doc_write", "args": {"path": "notes/{{iteration}}.md", "content": "a note of a few words"}}]},
  "usage": {"input_tokens": 1000, "output_tokens": 200}}]}"#;

fn open(dir: &Path) -> Running {
    let mut tokens = Tokens::default();
    tokens.insert(TOKEN, "a");
    let mut config = AppConfig::new(tokens, vec![MODEL.into()]).unwrap();
    config.active_limit = 1_000_000;
    longrun_wiring::embedded(
        Some(dir),
        config,
        Embedded {
            agents: None,
            llm: Some(scripted(PLANNER)),
            clock: Arc::new(SystemClock),
            faults: Arc::new(NoFaults),
            engine: Default::default(),
            worker: WorkerConfig::default(),
            outbox: Default::default(),
            adapters: Default::default(),
        },
    )
    .unwrap()
}

async fn create(p: &Platform) -> String {
    let req = run_request(
        "benchmark",
        BudgetsInput {
            max_iterations: Some(ITERATIONS),
            ..Default::default()
        },
    );
    create_run(p, "a", req).await.unwrap().id
}

/// A few real runs, driven to their end by the engine: the rows the fill copies.
async fn templates(dir: &Path) {
    let mut running = open(dir);
    let p = running.platform.clone();
    for _ in 0..TEMPLATES {
        create(&p).await;
    }
    let (stop, rx) = tokio::sync::watch::channel(false);
    let handles = running.spawn(rx);
    while p.store.active_runs("a").await.unwrap() > 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = stop.send(true);
    for h in handles {
        let _ = h.await;
    }
}

fn db_bytes(c: &rusqlite::Connection) -> i64 {
    c.query_row(
        "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

/// Copies the ended template runs until the store holds `runs` more, created over the last
/// year. Returns the bytes the copies added per iteration they hold.
fn fill(dir: &Path, runs: usize) -> Value {
    let mut c = rusqlite::Connection::open(dir.join("longrun.sqlite3")).unwrap();
    let templates: Vec<String> = {
        let mut st = c
            .prepare("SELECT id FROM runs WHERE status NOT IN ('queued', 'running') ORDER BY id")
            .unwrap();
        st.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let iterations_before: i64 = c
        .query_row("SELECT count(*) FROM log WHERE kind = 1", [], |r| r.get(0))
        .unwrap();
    let bytes_before = db_bytes(&c);
    let now = longrun_ports::Clock::now_ms(&SystemClock);
    // Each template's notification under a key the copies can find by primary key (a search
    // of the bodies for the run id, per copy, made the fill quadratic).
    c.execute(
        "INSERT OR IGNORE INTO notifications (id, user_id, at, body)
         SELECT 't-' || r.id, n.user_id, n.at, n.body FROM runs r, notifications n
         WHERE r.status NOT IN ('queued', 'running') AND instr(n.body, r.id) > 0",
        [],
    )
    .unwrap();
    let tx = c.transaction().unwrap();
    let statements = [
        "INSERT INTO runs (id, user_id, status, created_at, updated_at, notified, body)
         SELECT ?1, user_id, status, ?3, ?3, notified,
                json_replace(body, '$.id', ?1, '$.created_at', ?3, '$.updated_at', ?3)
         FROM runs WHERE id = ?2",
        "INSERT INTO log (run_id, kind, n, body, p)
         SELECT ?1, kind, n, body, p FROM log WHERE run_id = ?2 AND ?3 = ?3",
        "INSERT INTO docs (run_id, path, title, content, body)
         SELECT ?1, path, title, content, body FROM docs WHERE run_id = ?2 AND ?3 = ?3",
        "INSERT INTO run_recent (run_id, body)
         SELECT ?1, body FROM run_recent WHERE run_id = ?2 AND ?3 = ?3",
        // By primary key: the templates' notifications are `t-<run>` copies made below.
        "INSERT INTO notifications (id, user_id, at, body)
         SELECT 'n-' || ?1, user_id, ?3, replace(body, ?2, ?1) FROM notifications
         WHERE id = 't-' || ?2",
    ];
    for i in 0..runs {
        let id = format!("run_{:032x}", i + 1);
        let template = &templates[i % templates.len()];
        let created = now - 365 * DAY_MS + (i as i64 * 365 * DAY_MS) / runs as i64;
        for sql in statements {
            tx.prepare_cached(sql)
                .unwrap()
                .execute(rusqlite::params![id, template, created])
                .unwrap();
        }
    }
    tx.commit().unwrap();
    let iterations: i64 = c
        .query_row("SELECT count(*) FROM log WHERE kind = 1", [], |r| r.get(0))
        .unwrap();
    let bytes = db_bytes(&c);
    json!({"runs": runs, "iterations": iterations - iterations_before, "bytes": bytes,
           "bytes_per_iteration": (bytes - bytes_before) as f64 / (iterations - iterations_before) as f64})
}

fn percentiles(mut ms: Vec<f64>) -> Value {
    ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let at = |p: f64| ms[((ms.len() - 1) as f64 * p).round() as usize];
    json!({"p50": at(0.5), "p99": at(0.99), "n": ms.len()})
}

async fn timed_gets(http: &reqwest::Client, urls: &[String]) -> Value {
    let mut ms = Vec::with_capacity(urls.len());
    for url in urls {
        let t = Instant::now();
        let r = http.get(url).bearer_auth(TOKEN).send().await.unwrap();
        assert!(r.status().is_success(), "{url}: {}", r.status());
        let _ = r.bytes().await.unwrap();
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    percentiles(ms)
}

/// The API's latencies on the store in `dir`, reopened cold (as after a restart).
async fn probe(dir: &Path) -> Value {
    let t = Instant::now();
    let running = open(dir);
    let recovered = running.recover().await.unwrap();
    let start_ms = t.elapsed().as_secs_f64() * 1e3;
    let p = running.platform.clone();
    // Creates first, so both stores hold queued runs to list by status.
    let mut ms = vec![];
    for _ in 0..100 {
        let t = Instant::now();
        create(&p).await;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let mut total = 0;
    let ended: Vec<(i64, String)> = {
        let mut all = vec![];
        let mut before = None;
        // Sampled by paging the whole list, as a client would.
        loop {
            let page = p
                .store
                .list_runs(
                    "a",
                    &longrun_ports::RunQuery {
                        context: None,
                        status: None,
                        before: before.clone(),
                        limit: 1000,
                    },
                )
                .await
                .unwrap();
            total += page.len();
            all.extend(
                page.iter()
                    .filter(|r| r.status.is_ended())
                    .map(|r| (r.created_at, r.id.clone())),
            );
            match page.last() {
                Some(r) if page.len() == 1000 => before = Some((r.created_at, r.id.clone())),
                _ => break,
            }
        }
        all
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let router = longrun_http::router(p.clone());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let http = reqwest::Client::new();
    let pick = |i: usize| &ended[(i * 7919) % ended.len()];
    let urls = |f: &dyn Fn(usize) -> String| (0..300).map(f).collect::<Vec<_>>();
    let get = timed_gets(&http, &urls(&|i| format!("{base}/v1/runs/{}", pick(i).1))).await;
    let events = timed_gets(
        &http,
        &urls(&|i| format!("{base}/v1/runs/{}/events", pick(i).1)),
    )
    .await;
    let list = timed_gets(&http, &urls(&|_| format!("{base}/v1/runs?limit=50"))).await;
    let page = timed_gets(
        &http,
        &urls(&|i| {
            let (at, id) = pick(i);
            format!("{base}/v1/runs?limit=50&cursor={at}_{id}")
        }),
    )
    .await;
    let queued = timed_gets(
        &http,
        &urls(&|_| format!("{base}/v1/runs?limit=50&status=queued")),
    )
    .await;
    json!({"runs": total, "start_ms": start_ms, "recovered": recovered, "get": get,
           "events": events, "list": list, "page": page, "queued": queued,
           "create": percentiles(ms)})
}

fn row(name: &str, key: &str, empty: &Value, full: &Value) -> String {
    let cell = |v: &Value| {
        format!(
            "{:.2} / {:.2} ms",
            v[key]["p50"].as_f64().unwrap(),
            v[key]["p99"].as_f64().unwrap()
        )
    };
    format!("| {name} | {} | {} |\n", cell(empty), cell(full))
}

// The allocator `longrun serve` runs with.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    if args.get(1).map(String::as_str) == Some("--scenario") {
        let dir = Path::new(&args[3]);
        let v = match args[2].as_str() {
            "templates" => {
                rt.block_on(templates(dir));
                json!({})
            }
            "fill" => fill(dir, args[4].parse().unwrap()),
            "probe" => rt.block_on(probe(dir)),
            other => panic!("unknown scenario {other}"),
        };
        println!("{v}");
        return;
    }
    let out = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| "BENCHMARKS.md".into());
    let runs: usize = args.get(2).map_or(100_000, |n| n.parse().unwrap());
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().to_str().unwrap();
    bench_scenario(&["templates", d], &[]);
    let empty = bench_scenario(&["probe", d], &[]);
    let t = Instant::now();
    let filled = bench_scenario(&["fill", d, &runs.to_string()], &[]);
    let fill_secs = t.elapsed().as_secs_f64();
    let full = bench_scenario(&["probe", d], &[]);
    let section = format!(
        "{SECTION}\n\n\
         Reproduce with `make bench-store` (= `cargo run --release -p longrun-tests --bin bench_store -- BENCHMARKS.md {runs}`).\n\
         The same API on durable SQLite (FULL), first with {TEMPLATES} ended runs of {ITERATIONS} iterations (one\n\
         planner call and one doc write each), then after the fill tool (`bench_store --scenario fill\n\
         <dir> <runs>`, {fill_secs:.0} s) copied those runs' rows {runs} times under new ids created over the\n\
         last year, all one user's (the worst case for listing). Each store is reopened cold (the run\n\
         cache empty) before it is probed; 300 sequential requests over loopback HTTP per row (100\n\
         creates, through the service), at random ended runs and cursors. Shared 2-core VM: ±50 %.\n\n\
         | operation (p50 / p99) | {} runs | {} runs |\n|---|---|---|\n{}{}{}{}{}{}\n\
         Open and start-up recovery (the stranded-run query): {:.0} ms empty, {:.0} ms full.\n\
         Bytes stored per iteration (the run row, its iterations, events, doc, scratchpad entry and\n\
         notification, with their indexes, over the iterations they hold): {:.0} bytes; the full\n\
         database is {:.0} MB for {} iterations.\n",
        empty["runs"],
        full["runs"],
        row(
            "create a run (the service, durable)",
            "create",
            &empty,
            &full
        ),
        row("`GET /v1/runs/{id}`", "get", &empty, &full),
        row("`GET /v1/runs/{id}/events`", "events", &empty, &full),
        row("`GET /v1/runs` (first page of 50)", "list", &empty, &full),
        row(
            "`GET /v1/runs?cursor=…` (a page anywhere)",
            "page",
            &empty,
            &full
        ),
        row("`GET /v1/runs?status=queued`", "queued", &empty, &full),
        empty["start_ms"].as_f64().unwrap(),
        full["start_ms"].as_f64().unwrap(),
        filled["bytes_per_iteration"].as_f64().unwrap(),
        filled["bytes"].as_f64().unwrap() / 1e6,
        filled["iterations"],
    );
    replace_section(&out, SECTION, &section);
    println!("{section}");
}
