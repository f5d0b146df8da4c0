//! The black-box soak of `longrun serve` (`make soak`): thousands of scripted runs while the
//! process is killed with SIGKILL and stopped with SIGTERM again and again, webhook receivers
//! that fail, then every run read back through the API and checked: ended as its script says
//! (no later), each iteration committed once, a gapless log, spend equal to the spend the log
//! records, one notification, every webhook delivered. Then `serve`'s RSS across 20,000 runs
//! that end, sampled as they end.
//!
//! `soak BIN [RUNS] [KILLS] [TERMS] [RSS_RUNS]` (defaults 3000 110 35 20000).
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::print_stderr)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

const TOKEN: &str = "lr_soak_token_0123456789abcdef";
/// The iterations a soak run's script takes: two that write, one that claims with evidence.
const SCRIPTED: u64 = 3;

fn step(n: u64, last: bool) -> Value {
    let path = if last {
        "final.md".to_string()
    } else {
        format!("notes/{n}.md")
    };
    json!({"content": {
        "status": {"exit_signal": last, "needs_user_input": false,
                   "progress_summary": format!("wrote {path}"),
                   "remaining_work": if last { json!([]) } else { json!(["more"]) },
                   "completion_evidence": if last { json!(["final.md"]) } else { json!([]) }},
        "tool_calls": [{"name": "doc_write", "args": {"path": path, "content": format!("note {n}")}}]},
        "usage": {"input_tokens": 100, "output_tokens": 20}})
}

fn script(iterations: u64) -> String {
    let planner: Vec<Value> = (1..=iterations).map(|n| step(n, n == iterations)).collect();
    json!({ "planner": planner }).to_string()
}

struct Serve {
    child: Child,
    addr: String,
}

fn start(bin: &Path, data: &Path, script: &Path) -> Serve {
    let mut child = Command::new(bin)
        .args(["serve", "--port", "0", "--active-limit", "100000"])
        .arg("--model")
        .arg(format!("script:{}", script.display()))
        .arg("--data-dir")
        .arg(data)
        .env("LONGRUN_TOKENS", format!("{TOKEN}:alice"))
        .env("LONGRUN_FETCH_TRUSTED_PRIVATE", "localhost")
        .env("RUST_LOG", "error")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            l.split_once("listening on http://")
                .and_then(|(_, r)| r.split_whitespace().next().map(str::to_string))
        })
        .expect("serve never said it was listening");
    std::thread::spawn(move || lines.map_while(Result::ok).for_each(drop));
    Serve { child, addr }
}

impl Serve {
    fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn terminate(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.child.try_wait().unwrap().is_none() {
            if Instant::now() > deadline {
                eprintln!("serve ignored SIGTERM for 30 s; killed");
                return self.kill9();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn rss_mb(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    }
}

/// What the webhook receivers answered 2xx: (hook, run id).
type Delivered = Arc<Mutex<BTreeSet<(String, String)>>>;

/// Two receivers on loopback: `/a` fails one POST in ten, `/b` one in four.
async fn receivers() -> (u16, Delivered) {
    let delivered: Delivered = Arc::default();
    let count = Arc::new(AtomicU64::new(0));
    let route = |hook: &'static str, fail_every: u64| {
        let (delivered, count) = (delivered.clone(), count.clone());
        axum::routing::post(move |_h: HeaderMap, body: String| {
            let (delivered, count) = (delivered.clone(), count.clone());
            async move {
                if count.fetch_add(1, Ordering::Relaxed) % fail_every == 0 {
                    return StatusCode::SERVICE_UNAVAILABLE;
                }
                let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                let run = v["run_id"].as_str().unwrap_or_default().to_string();
                delivered.lock().unwrap().insert((hook.to_string(), run));
                StatusCode::NO_CONTENT
            }
        })
    };
    let app = axum::Router::new()
        .route("/a", route("a", 10))
        .route("/b", route("b", 4));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (port, delivered)
}

async fn get(client: &reqwest::Client, addr: &str, path: &str) -> Option<Value> {
    let res = client
        .get(format!("http://{addr}{path}"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .ok()?;
    if !res.status().is_success() {
        return None;
    }
    res.json().await.ok()
}

/// Creates run `i` until an answer comes (the server may be down or restarting): the
/// idempotency key makes every retry the same run.
async fn create(client: &reqwest::Client, addr: &Arc<Mutex<String>>, i: usize) -> String {
    loop {
        let a = addr.lock().unwrap().clone();
        let res = client
            .post(format!("http://{a}/v1/runs"))
            .bearer_auth(TOKEN)
            .header("Idempotency-Key", format!("soak-{i}"))
            .json(&json!({"objective": format!("Soak run {i}")}))
            .send()
            .await;
        if let Ok(res) = res
            && res.status().is_success()
            && let Ok(v) = res.json::<Value>().await
            && let Some(id) = v["id"].as_str()
        {
            return id.to_string();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn all_runs(client: &reqwest::Client, addr: &str) -> Vec<Value> {
    let mut out = vec![];
    let mut cursor = String::new();
    loop {
        let page = get(client, addr, &format!("/v1/runs?limit=200{cursor}")).await;
        let Some(page) = page else { return out };
        out.extend(page["runs"].as_array().cloned().unwrap_or_default());
        match page["next_cursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => return out,
        }
    }
}

const ENDED: [&str; 4] = ["completed", "failed", "stopped", "canceled"];

#[derive(Default, Debug)]
struct Tally {
    runs: usize,
    not_completed: usize,
    later_than_scripted: usize,
    iterations_lost_or_doubled: usize,
    seq_gaps: usize,
    spend_mismatches: usize,
    notifications_not_one: usize,
    /// Deliveries a receiver answered 2xx.
    webhooks_delivered: usize,
    /// Still being retried when counted (not lost: their next attempt is due).
    webhooks_pending: usize,
    /// Out of attempts, recorded as given up with the reason.
    webhooks_given_up: usize,
    /// Recorded delivered but never received, or not recorded at all: lost.
    webhooks_lost: usize,
}

async fn check(client: &reqwest::Client, addr: &str, ids: &[String], hooks: &Delivered) -> Tally {
    let mut t = Tally::default();
    let mut notes: BTreeMap<String, usize> = BTreeMap::new();
    let mut cursor = String::new();
    loop {
        let page = get(
            client,
            addr,
            &format!("/v1/notifications?limit=200{cursor}"),
        )
        .await
        .unwrap();
        for n in page["notifications"].as_array().unwrap() {
            *notes
                .entry(n["run_id"].as_str().unwrap().to_string())
                .or_default() += 1;
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => break,
        }
    }
    let delivered = hooks.lock().unwrap().clone();
    for id in ids {
        t.runs += 1;
        let run = get(client, addr, &format!("/v1/runs/{id}")).await.unwrap();
        if run["status"] != "completed" {
            t.not_completed += 1;
        }
        if run["iteration"].as_u64().unwrap_or(0) > SCRIPTED {
            t.later_than_scripted += 1;
        }
        let iters = get(client, addr, &format!("/v1/runs/{id}/iterations?limit=200"))
            .await
            .unwrap();
        let ns: Vec<u64> = iters["iterations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["n"].as_u64().unwrap())
            .collect();
        if ns != (1..=run["iteration"].as_u64().unwrap()).collect::<Vec<_>>() {
            t.iterations_lost_or_doubled += 1;
        }
        let mut events = vec![];
        let mut after = 0;
        loop {
            let page = get(
                client,
                addr,
                &format!("/v1/runs/{id}/events?after={after}&limit=1000"),
            )
            .await
            .unwrap();
            let batch = page["events"].as_array().cloned().unwrap_or_default();
            if batch.is_empty() {
                break;
            }
            after = batch.last().unwrap()["seq"].as_u64().unwrap();
            events.extend(batch);
        }
        let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
        if seqs != (1..=seqs.len() as u64).collect::<Vec<_>>() {
            t.seq_gaps += 1;
        }
        let logged: u64 = events
            .iter()
            .filter(|e| e["type"] == "iteration_cost_update")
            .map(|e| {
                e["payload"]["input_tokens"].as_u64().unwrap_or(0)
                    + e["payload"]["output_tokens"].as_u64().unwrap_or(0)
            })
            .sum();
        let m = &run["metrics"];
        let booked =
            m["input_tokens"].as_u64().unwrap_or(0) + m["output_tokens"].as_u64().unwrap_or(0);
        if booked != logged || booked < SCRIPTED * 120 {
            t.spend_mismatches += 1;
        }
        if notes.get(id).copied().unwrap_or(0) != 1 {
            t.notifications_not_one += 1;
        }
        let mut missing = vec![];
        for hook in ["a", "b"] {
            if delivered.contains(&(hook.to_string(), id.clone())) {
                t.webhooks_delivered += 1;
            } else {
                missing.push(hook);
            }
        }
        if !missing.is_empty() {
            let records = get(client, addr, &format!("/v1/runs/{id}/deliveries"))
                .await
                .unwrap_or(Value::Null);
            let records = records["deliveries"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for hook in missing {
                let state = records
                    .iter()
                    .find(|d| {
                        d["url"]
                            .as_str()
                            .is_some_and(|u| u.ends_with(&format!("/{hook}")))
                    })
                    .and_then(|d| d["state"].as_str().map(str::to_string));
                match state.as_deref() {
                    Some("pending") => t.webhooks_pending += 1,
                    Some("given_up") => t.webhooks_given_up += 1,
                    _ => t.webhooks_lost += 1,
                }
            }
        }
    }
    t
}

async fn wait_ended(client: &reqwest::Client, addr: &str, want: usize, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        let runs = all_runs(client, addr).await;
        let ended = runs
            .iter()
            .filter(|r| ENDED.contains(&r["status"].as_str().unwrap_or("")))
            .count();
        if ended >= want {
            return true;
        }
        if Instant::now() > deadline {
            eprintln!("{ended} of {want} runs ended");
            return false;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn crash_soak(bin: &Path, runs: usize, kills: usize, terms: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let script_path = tmp.path().join("soak.json");
    std::fs::write(&script_path, script(SCRIPTED)).unwrap();
    let (port, hooks) = receivers().await;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let serve = start(bin, &data, &script_path);
    let hooks_body = json!({"webhooks": [
        {"url": format!("http://localhost:{port}/a"), "secret": "soak-webhook-secret-a-0123"},
        {"url": format!("http://localhost:{port}/b"), "secret": "soak-webhook-secret-b-0123"}]});
    let put = client
        .put(format!("http://{}/v1/webhooks", serve.addr))
        .bearer_auth(TOKEN)
        .json(&hooks_body)
        .send()
        .await
        .unwrap();
    assert!(put.status().is_success(), "webhooks: {}", put.status());
    let addr = Arc::new(Mutex::new(serve.addr.clone()));
    let started = Instant::now();
    let creators: Vec<_> = (0..8)
        .map(|w| {
            let (client, addr) = (client.clone(), addr.clone());
            tokio::spawn(async move {
                let mut ids = vec![];
                for i in (w..runs).step_by(8) {
                    ids.push(create(&client, &addr, i).await);
                }
                ids
            })
        })
        .collect();
    let mut serve = Some(serve);
    let (mut killed, mut termed) = (0, 0);
    let mut seed = 0x9e37_79b9_u64;
    while killed + termed < kills + terms {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        tokio::time::sleep(Duration::from_millis(200 + seed % 900)).await;
        let s = serve.take().unwrap();
        if termed < terms && (seed.is_multiple_of(4) || kills == killed) {
            tokio::task::spawn_blocking(move || s.terminate())
                .await
                .unwrap();
            termed += 1;
        } else {
            tokio::task::spawn_blocking(move || s.kill9())
                .await
                .unwrap();
            killed += 1;
        }
        let next = start(bin, &data, &script_path);
        *addr.lock().unwrap() = next.addr.clone();
        serve = Some(next);
    }
    let mut ids = vec![];
    for c in creators {
        ids.extend(c.await.unwrap());
    }
    let serve = serve.unwrap();
    let ended = wait_ended(&client, &serve.addr, runs, Duration::from_secs(600)).await;
    // Webhook retries back off (1 s doubling); give them time to land before counting.
    let deadline = Instant::now() + Duration::from_secs(600);
    while hooks.lock().unwrap().len() < 2 * runs && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let t = check(&client, &serve.addr, &ids, &hooks).await;
    let unique: BTreeSet<&String> = ids.iter().collect();
    println!(
        "crash soak: {} runs ({} distinct ids) through {killed} kill -9 and {termed} SIGTERM in {:.0} s; all ended: {ended}",
        ids.len(),
        unique.len(),
        started.elapsed().as_secs_f64()
    );
    println!("  {t:?}");
    serve.kill9();
}

async fn rss_soak(bin: &Path, runs: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let script_path = tmp.path().join("one.json");
    std::fs::write(&script_path, script(1)).unwrap();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let serve = start(bin, &data, &script_path);
    let addr = Arc::new(Mutex::new(serve.addr.clone()));
    let step = (runs / 10).max(1);
    let mut samples = vec![(0, serve.rss_mb())];
    for chunk in 0..runs.div_ceil(step) {
        let from = chunk * step;
        let to = (from + step).min(runs);
        let creators: Vec<_> = (0..16)
            .map(|w| {
                let (client, addr) = (client.clone(), addr.clone());
                tokio::spawn(async move {
                    for i in (from + w..to).step_by(16) {
                        create(&client, &addr, i).await;
                    }
                })
            })
            .collect();
        for c in creators {
            c.await.unwrap();
        }
        wait_ended(&client, &serve.addr, to, Duration::from_secs(600)).await;
        samples.push((to, serve.rss_mb()));
    }
    let line: Vec<String> = samples
        .iter()
        .map(|(n, mb)| format!("{n}: {mb:.0} MB"))
        .collect();
    println!("rss across {runs} ended runs: {}", line.join(", "));
    serve.kill9();
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let bin = PathBuf::from(
        args.get(1)
            .expect("usage: soak BIN [RUNS] [KILLS] [TERMS] [RSS_RUNS]"),
    );
    let num = |i: usize, d: usize| args.get(i).and_then(|v| v.parse().ok()).unwrap_or(d);
    let runs = num(2, 3000);
    if runs > 0 {
        crash_soak(&bin, runs, num(3, 110), num(4, 35)).await;
    }
    let rss = num(5, 20_000);
    if rss > 0 {
        rss_soak(&bin, rss).await;
    }
}
