//! Outcome webhooks of `longrun serve` survive the process: a delivery cut short by `kill -9` or
//! by SIGTERM is sent again by the next process under the same delivery id, so every outcome
//! reaches the receiver at least once and exactly once after dropping repeats by that id.
#![allow(clippy::unwrap_used)]
#![cfg(unix)]

use std::collections::{BTreeMap, BTreeSet};

use std::path::Path;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

mod support;

const TOKEN: &str = "lr_webhook_test_token";

struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(data_dir: &Path) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_longrun"));
        cmd.args(["serve", "--port", "0", "--data-dir"])
            .arg(data_dir)
            .env("LONGRUN_TOKENS", format!("{TOKEN}:alice"))
            .env("LONGRUN_FETCH_TRUSTED_PRIVATE", "localhost");
        let (child, addr) = support::spawn_serve(cmd);
        Server { child, addr }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn kill9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// SIGTERM, then waits for the process to exit by itself.
    fn terminate(mut self) {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "serve ignored SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the receiver saw: every POST's delivery id, and the ids it answered 2xx.
#[derive(Default)]
struct Seen {
    posts: Vec<String>,
    answered: BTreeSet<String>,
}

/// A receiver on loopback that leaves the first POST of each delivery hanging (the sender is
/// killed or stopped while it waits) and answers every later one.
async fn receiver() -> (u16, Arc<Mutex<Seen>>) {
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let sink = seen.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: String| {
            let sink = sink.clone();
            async move {
                let id = headers["x-longrun-delivery"].to_str().unwrap().to_string();
                let v: Value = serde_json::from_str(&body).unwrap();
                assert_eq!(v["id"], id.as_str(), "the body names its delivery");
                let first = {
                    let mut s = sink.lock().unwrap();
                    let first = !s.posts.contains(&id);
                    s.posts.push(id.clone());
                    first
                };
                if first {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                }
                sink.lock().unwrap().answered.insert(id);
                StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (port, seen)
}

async fn api(
    client: &reqwest::Client, method: reqwest::Method, url: String, body: Option<Value>,
) -> Value {
    let mut req = client.request(method, url).bearer_auth(TOKEN);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    resp.json().await.unwrap_or(Value::Null)
}

/// Polls `ok` on the receiver's record until it holds or `limit` passes.
async fn until(seen: &Mutex<Seen>, limit: Duration, ok: impl Fn(&Seen) -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if ok(&seen.lock().unwrap()) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_cut_short_by_kill_9_or_sigterm_are_delivered_after_restart_once_per_id() {
    // Arrange: a receiver that holds each delivery's first POST; one data dir for every process.
    let (port, seen) = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let server = Server::start(dir.path());
    api(
        &client,
        reqwest::Method::PUT,
        server.url("/v1/webhooks"),
        Some(
            json!({"webhooks": [{"url": format!("http://localhost:{port}/hook"),
                                  "secret": "0123456789abcdef-local"}]}),
        ),
    )
    .await;
    let mut server = Some(server);
    let mut runs = vec![];

    // Act: 40 rounds, each creating a run and stopping the server while the run's webhook
    // hangs on the receiver — by kill -9 in even rounds, by SIGTERM in odd ones — or, every
    // fifth round, a moment after the create, wherever the run and its delivery then are.
    for round in 0..40 {
        let s = server.take().unwrap_or_else(|| Server::start(dir.path()));
        let run = api(
            &client,
            reqwest::Method::POST,
            s.url("/v1/runs"),
            Some(json!({"objective": format!("webhook round {round}")})),
        )
        .await;
        let id = run["id"].as_str().unwrap().to_string();
        if round % 5 == 4 {
            tokio::time::sleep(Duration::from_millis(40 * (round % 7) as u64)).await;
        } else {
            let prefix = format!("{id}#");
            let posted = until(&seen, Duration::from_secs(30), |s| {
                s.posts.iter().any(|p| p.starts_with(&prefix))
            })
            .await;
            assert!(posted, "round {round}: the first POST never came");
        }
        runs.push(id);
        tokio::task::spawn_blocking(move || {
            if round % 2 == 0 {
                s.kill9()
            } else {
                s.terminate()
            }
        })
        .await
        .unwrap();
    }
    let _last = Server::start(dir.path());
    let all_answered = until(&seen, Duration::from_secs(60), |s| {
        runs.iter().all(|id| {
            let prefix = format!("{id}#");
            s.answered.iter().any(|a| a.starts_with(&prefix))
        })
    })
    .await;

    // Assert: every run's outcome was answered, one delivery id per run after dropping
    // repeats, and the held deliveries were sent again by a later process.
    let seen = seen.lock().unwrap();
    let mut per_run: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for id in &seen.answered {
        let run = id.split('#').next().unwrap();
        per_run.entry(run).or_default().insert(id);
    }
    assert!(all_answered, "outcomes never delivered: {:?}", {
        let done: BTreeSet<&str> = per_run.keys().copied().collect();
        runs.iter()
            .filter(|r| !done.contains(r.as_str()))
            .collect::<Vec<_>>()
    });
    for run in &runs {
        assert_eq!(per_run[run.as_str()].len(), 1, "{run}: one outcome");
    }
    let resent = seen.posts.len() - seen.posts.iter().collect::<BTreeSet<_>>().len();
    assert!(resent >= 32, "only {resent} deliveries were sent again");
}
