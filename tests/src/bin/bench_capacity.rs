//! `make bench` (second part): many runs in flight at real model latency on one box — throughput
//! against the ideal N/L, peak RSS, API latency under load, fair share between users, and a
//! per-model rate limit seen from the provider's side. Writes the "Capacity" section of
//! BENCHMARKS.md. Each scenario runs in its own child process so its peak RSS is its own.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    clippy::expect_used
)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::post;
use futures_util::future::join_all;
use longrun_domain::run::BudgetsInput;
use longrun_http::{AppConfig, Platform, Tokens, create_run};
use longrun_llm::{LlmSettings, ModelLimits, ModelRouter, Secret, Structured};
use longrun_ports::LlmClient;
use longrun_ports::{NoFaults, SystemClock};
use longrun_service::WorkerConfig;
use longrun_tests::{MODEL, bench_scenario, peak_rss_mb, replace_section, run_request, scripted};
use longrun_wiring::{Embedded, Running};
use serde_json::{Value, json};

const SECTION: &str = "## Capacity: many runs at model latency";
const TOKEN: &str = "bench-token";
const LIMITED: &str = "openai:canned";

fn planner(latency_ms: u64) -> String {
    format!(
        r#"{{"planner": [{{"content": {{"status": {{"exit_signal": false, "needs_user_input": false,
          "progress_summary": "wrote notes/{{{{iteration}}}}.md", "remaining_work": ["more"]}},
          "tool_calls": [{{"name": "doc_write", "args": {{"path": "notes/{{{{iteration}}}}.md", "content": "a note"}}}}]}},
          "usage": {{"input_tokens": 1000, "output_tokens": 200}}, "latency_ms": {latency_ms}}}]}}"#
    )
}

fn platform(
    dir: &std::path::Path, llm: Arc<dyn LlmClient>, models: Vec<String>, max_inflight: usize,
) -> Running {
    let mut tokens = Tokens::default();
    tokens.insert(TOKEN, "a");
    let mut config = AppConfig::new(tokens, models).unwrap();
    config.active_limit = 1_000_000;
    longrun_wiring::embedded(
        Some(dir),
        config,
        Embedded {
            agents: None,
            llm: Some(llm),
            clock: Arc::new(SystemClock),
            faults: Arc::new(NoFaults),
            engine: Default::default(),
            worker: WorkerConfig {
                max_inflight,
                idle_sleep: Duration::from_millis(5),
                ..Default::default()
            },
            outbox: Default::default(),
            adapters: Default::default(),
        },
    )
    .unwrap()
}

/// Creates `runs` runs of `user` at once (in chunks, so the creates share group commits).
async fn create(p: &Platform, user: &str, runs: usize, iterations: i64) -> Vec<String> {
    let mut ids = Vec::with_capacity(runs);
    for chunk in (0..runs).collect::<Vec<_>>().chunks(500) {
        let made = join_all(chunk.iter().map(|_| {
            let req = run_request(
                "benchmark",
                BudgetsInput {
                    max_iterations: Some(iterations),
                    ..Default::default()
                },
            );
            create_run(p, user, req)
        }))
        .await;
        ids.extend(made.into_iter().map(|r| r.unwrap().id));
    }
    ids
}

async fn wait_until_idle(p: &Platform, users: &[&str]) {
    loop {
        let mut active = 0;
        for u in users {
            active += p.store.active_runs(u).await.unwrap();
        }
        if active == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// `runs` runs of `iterations` at `latency_ms` a planner call: throughput, RSS, and the API's
/// latency for `GET /v1/runs/{id}` measured while the load runs.
async fn capacity(runs: usize, iterations: i64, latency_ms: u64) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let mut running = platform(
        dir.path(),
        scripted(&planner(latency_ms)),
        vec![MODEL.into()],
        longrun_service::DEFAULT_MAX_INFLIGHT,
    );
    let p = running.platform.clone();
    let rss_before = peak_rss_mb();
    let ids = create(&p, "a", runs, iterations).await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let router = longrun_http::router(p.clone());
    // As `serve` does: the API on a runtime of its own thread, apart from the runs' tasks.
    let api = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    api.spawn(async move {
        let listener = tokio::net::TcpListener::from_std(listener).unwrap();
        axum::serve(listener, router).await.unwrap()
    });
    let (stop, rx) = tokio::sync::watch::channel(false);
    let t0 = Instant::now();
    let handles = running.spawn(rx);
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // The probe is a client of its own, as a caller in another process is: on the loaded
    // runtime its own wake-ups would wait behind the runs' tasks and be counted as the API's.
    let probe = {
        let done = done.clone();
        let ids = ids.clone();
        let client = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        std::thread::spawn(move || {
            client.block_on(async move {
                let http = reqwest::Client::new();
                // Every other probe lists the user's newest runs (a page of 20) instead.
                let (mut lat, mut list) = (vec![], vec![]);
                let mut i = 0usize;
                while !done.load(std::sync::atomic::Ordering::SeqCst) {
                    let id = &ids[(i * 7919) % ids.len()];
                    i += 1;
                    let url = if i.is_multiple_of(2) {
                        format!("{base}/v1/runs?limit=20")
                    } else {
                        format!("{base}/v1/runs/{id}")
                    };
                    let t = Instant::now();
                    let r = http.get(url).bearer_auth(TOKEN).send().await.unwrap();
                    assert!(r.status().is_success());
                    let _ = r.bytes().await;
                    let ms = t.elapsed().as_secs_f64() * 1e3;
                    if i.is_multiple_of(2) {
                        list.push(ms)
                    } else {
                        lat.push(ms)
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                (lat, list)
            })
        })
    };
    wait_until_idle(&p, &["a"]).await;
    let secs = t0.elapsed().as_secs_f64();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let (mut lat, mut list) = probe.join().unwrap();
    api.shutdown_background();
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    list.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let _ = stop.send(true);
    for h in handles {
        let _ = h.await;
    }
    let total = runs as f64 * iterations as f64;
    // One iteration per run can be in flight at a time, and no more than max_inflight.
    let inflight = runs.min(longrun_service::DEFAULT_MAX_INFLIGHT) as f64;
    let ideal = inflight / (latency_ms as f64 / 1e3);
    let peak = peak_rss_mb();
    json!({"runs": runs, "iterations": iterations, "latency_ms": latency_ms, "secs": secs,
           "iterations_per_sec": total / secs, "ideal": ideal, "peak_rss_mb": peak,
           "kb_per_inflight": (peak - rss_before).max(0.0) * 1024.0 / inflight,
           "get_p50_ms": percentile(&lat, 0.5), "get_p99_ms": percentile(&lat, 0.99),
           "gets": lat.len(), "list_p50_ms": percentile(&list, 0.5),
           "list_p99_ms": percentile(&list, 0.99), "lists": list.len()})
}

/// User b's one run, alone or while user a has `others` ready runs, with `max_inflight` slots.
async fn fairness(others: usize, max_inflight: usize) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let mut running = platform(
        dir.path(),
        scripted(&planner(2_000)),
        vec![MODEL.into()],
        max_inflight,
    );
    let p = running.platform.clone();
    create(&p, "a", others, 5).await;
    let b = create(&p, "b", 1, 5).await.remove(0);
    let (stop, rx) = tokio::sync::watch::channel(false);
    let t0 = Instant::now();
    let handles = running.spawn(rx);
    loop {
        let run = p.store.get_run(&b).await.unwrap().unwrap();
        if run.status.is_ended() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let secs = t0.elapsed().as_secs_f64();
    let _ = stop.send(true);
    drop(handles);
    json!({"others": others, "max_inflight": max_inflight, "b_secs": secs})
}

/// An OpenAI-compatible stand-in that answers at once and records when each request came.
async fn canned_provider(hits: Arc<Mutex<Vec<Instant>>>) -> String {
    let answer = json!({"status": {"exit_signal": false, "needs_user_input": false,
        "progress_summary": "noted", "remaining_work": ["more"]},
        "tool_calls": [{"name": "doc_write", "args": {"path": "n.md", "content": "n"}}]});
    let body = json!({"id": "c", "object": "chat.completion", "model": "canned",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": answer.to_string()},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 800, "completion_tokens": 100, "total_tokens": 900}});
    let app = Router::new().route(
        "/v1/chat/completions",
        post(move || {
            let hits = hits.clone();
            let body = body.clone();
            async move {
                hits.lock().unwrap().push(Instant::now());
                axum::Json(body)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}

/// `runs` runs against one model limited to `rpm`, for `secs`: what the provider saw.
async fn model_limit(runs: usize, rpm: u32, secs: u64) -> Value {
    let hits = Arc::new(Mutex::new(vec![]));
    let base = canned_provider(hits.clone()).await;
    let mut settings = LlmSettings {
        openai_base_url: base,
        openai_api_key: Some(Secret::new("sk-bench")),
        openai_structured: Structured::JsonObject,
        ..LlmSettings::default()
    };
    settings.limits = ModelLimits::parse([format!("{LIMITED}=rpm:{rpm}").as_str()]).unwrap();
    let llm = Arc::new(ModelRouter::build(&[LIMITED.to_string()], &settings).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let mut running = platform(
        dir.path(),
        llm,
        vec![LIMITED.into()],
        longrun_service::DEFAULT_MAX_INFLIGHT,
    );
    let p = running.platform.clone();
    create(&p, "a", runs, 10_000).await;
    let (stop, rx) = tokio::sync::watch::channel(false);
    let t0 = Instant::now();
    let handles = running.spawn(rx);
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let _ = stop.send(true);
    drop(handles);
    let times: Vec<f64> = hits
        .lock()
        .unwrap()
        .iter()
        .map(|t| t.duration_since(t0).as_secs_f64())
        .collect();
    // The busiest 60 s window the provider saw.
    let busiest = times
        .iter()
        .map(|start| {
            times
                .iter()
                .filter(|t| **t >= *start && **t < start + 60.0)
                .count()
        })
        .max()
        .unwrap_or(0);
    let first_minute = times.iter().filter(|t| **t < 60.0).count();
    json!({"runs": runs, "rpm": rpm, "secs": secs, "requests": times.len(),
           "busiest_minute": busiest, "first_minute": first_minute})
}

fn child(args: &[&str]) -> Value {
    bench_scenario(args, &[])
}

fn capacity_row(v: &Value) -> String {
    format!(
        "| {} runs × {} iterations, {:.0} s a call | {:.1} s | {:.0} | {:.0} ({:.0} %) | {:.1} MB | {:.1} / {:.1} ms ({} GETs) | {:.1} / {:.1} ms ({} lists) |\n",
        v["runs"],
        v["iterations"],
        v["latency_ms"].as_f64().unwrap() / 1e3,
        v["secs"].as_f64().unwrap(),
        v["iterations_per_sec"].as_f64().unwrap(),
        v["ideal"].as_f64().unwrap(),
        100.0 * v["iterations_per_sec"].as_f64().unwrap() / v["ideal"].as_f64().unwrap(),
        v["peak_rss_mb"].as_f64().unwrap(),
        v["get_p50_ms"].as_f64().unwrap(),
        v["get_p99_ms"].as_f64().unwrap(),
        v["gets"],
        v["list_p50_ms"].as_f64().unwrap_or(0.0),
        v["list_p99_ms"].as_f64().unwrap_or(0.0),
        v["lists"],
    )
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
        let n = |i: usize| args[i].parse::<usize>().unwrap();
        let v = rt.block_on(async {
            match args[2].as_str() {
                "capacity" => capacity(n(3), n(4) as i64, n(5) as u64).await,
                "fairness" => fairness(n(3), n(4)).await,
                "limit" => model_limit(n(3), n(4) as u32, n(5) as u64).await,
                other => panic!("unknown scenario {other}"),
            }
        });
        println!("{v}");
        return;
    }
    let out = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| "BENCHMARKS.md".into());
    let two_k = child(&["capacity", "2000", "5", "2000"]);
    let ten_k = child(&["capacity", "10000", "3", "2000"]);
    let many = child(&["capacity", "25000", "3", "2000"]);
    let alone = child(&["fairness", "0", "256"]);
    let shared = child(&["fairness", "5000", "256"]);
    let limit = child(&["limit", "500", "600", "75"]);
    let section = format!(
        "{SECTION}\n\n\
         Reproduce with `make bench` (its second part: `cargo run --release -p longrun-tests --bin bench_capacity -- BENCHMARKS.md`).\n\
         `longrun serve`'s engine on durable SQLite (FULL), default `--max-inflight` (4,096), a\n\
         scripted planner that answers after a fixed latency (one call, one doc write an iteration);\n\
         all runs are created first, then the worker starts. The ideal is one iteration per run in\n\
         flight: N / L iterations/s (at most 4,096 in flight). `GET /v1/runs/{{id}}` is timed over\n\
         loopback HTTP every 10 ms while the load runs. Shared 2-core VM: treat single numbers as ±50 %.\n\n\
         | scenario | wall time | iterations/s | ideal | peak RSS | GET run p50 / p99 | GET /v1/runs p50 / p99 |\n|---|---|---|---|---|---|---|\n\
         {}{}{}\n\
         A receive picks from an in-memory index of each run's head (ready ones per user, users by\n\
         when they were last served), so it costs O(batch) however many runs are ready; before, it\n\
         ranked every ready run inside the single writer (see \"Ready-run selection\" below).\n\
         One iteration in flight costs about {:.0} KB (the 10,000-run row: peak RSS over the\n\
         baseline, per in-flight iteration), so the default 4,096 in flight cost about {:.0} MB.\n\
         With every call taking exactly 2 s, the 10,000-run row's 30,000 iterations come in 7.3\n\
         waves of 4,096 calls and the last is a third full: about 91 % of the ideal is the most it\n\
         can show.\n\
         Targets (issue): ≥ 90 % of the ideal 1,000 it/s with 2,000 runs; with 10,000 runs ≥ 80 %\n\
         of the ideal, `GET` p99 ≤ 50 ms, peak RSS ≤ 500 MB; the 25,000-run row as it is.\n\n\
         **Fair share.** User b's one run of 5 iterations (2 s a call) with 256 iterations in flight\n\
         at most: alone {:.1} s; while user a has 5,000 ready runs {:.1} s ({:.2} ×; target ≤ 1.5 ×).\n\n\
         **A model limit, seen by the provider.** 500 runs against one OpenAI-compatible model\n\
         limited to `rpm:600`, for {} s, answered at once by a canned server that records each\n\
         request: {} requests; the busiest 60 s window held {} (limit 600); the first minute\n\
         {} ({:.0} % of the limit). A call counts against the minute from when it ended, so\n\
         requests queued on the way to the provider cannot push a window over.\n",
        capacity_row(&two_k),
        capacity_row(&ten_k),
        capacity_row(&many),
        ten_k["kb_per_inflight"].as_f64().unwrap(),
        ten_k["kb_per_inflight"].as_f64().unwrap() * 4_096.0 / 1_024.0,
        alone["b_secs"].as_f64().unwrap(),
        shared["b_secs"].as_f64().unwrap(),
        shared["b_secs"].as_f64().unwrap() / alone["b_secs"].as_f64().unwrap(),
        limit["secs"],
        limit["requests"],
        limit["busiest_minute"],
        limit["first_minute"],
        100.0 * limit["first_minute"].as_f64().unwrap() / 600.0,
    );
    replace_section(&out, SECTION, &section);
    println!("{section}");
}
