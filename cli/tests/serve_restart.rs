//! A run carried across a `kill -9` of `longrun serve` ends where its script says: the
//! restarted process answers the iteration in flight with the script's step for that
//! iteration, not with the script's first step.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::Value;

mod support;

const TOKEN: &str = "lr_restart_test_token";

/// A step that writes this iteration's note and goes on; slow enough (400 ms a call) that the
/// run is still going when the test kills the server.
const GOING: &str = r#"{"content": {"status": {"exit_signal": false, "needs_user_input": false,
    "progress_summary": "wrote notes/{{iteration}}.md", "remaining_work": ["more notes"]},
  "tool_calls": [{"name": "doc_write", "args": {"path": "notes/{{iteration}}.md", "content": "note {{iteration}}"}}]},
  "usage": {"input_tokens": 100, "output_tokens": 20}, "latency_ms": 400}"#;

const DONE: &str = r#"{"content": {"status": {"exit_signal": true, "needs_user_input": false,
    "progress_summary": "done", "remaining_work": [], "completion_evidence": ["final.md"]},
  "tool_calls": [{"name": "doc_write", "args": {"path": "final.md", "content": "final"}}]},
  "usage": {"input_tokens": 100, "output_tokens": 20}}"#;

/// Five iterations that go on, and a sixth that ends the run.
fn script() -> String {
    format!(r#"{{"planner": [{GOING}, {GOING}, {GOING}, {GOING}, {GOING}, {DONE}]}}"#)
}

/// A `longrun serve` process, killed (`kill -9`) when dropped.
struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `longrun serve` on a free loopback port over `data_dir`, and the address it listens on.
fn serve(data_dir: &Path, model: &str) -> (Serve, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_longrun"));
    cmd.args(["serve", "--port", "0", "--model", model, "--data-dir"])
        .arg(data_dir)
        .env("LONGRUN_TOKENS", format!("{TOKEN}:alice"));
    let (child, addr) = support::spawn_serve(cmd);
    (Serve(child), addr)
}

async fn get(client: &reqwest::Client, addr: &str, path: &str) -> Value {
    let res = client
        .get(format!("http://{addr}{path}"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "GET {path}: {}", res.status());
    res.json().await.unwrap()
}

/// Polls the run until `done` holds of it, for at most a minute.
async fn until(
    client: &reqwest::Client, addr: &str, id: &str, done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let run = get(client, addr, &format!("/v1/runs/{id}")).await;
        if done(&run) {
            return run;
        }
        assert!(Instant::now() < deadline, "waited a minute: {run}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_mid_way_ends_after_a_restart_at_the_iteration_its_script_says() {
    // Arrange: a six-iteration script; a run of it two iterations in, its third in flight.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("six.json");
    std::fs::write(&path, script()).unwrap();
    let model = format!("script:{}", path.display());
    let data = dir.path().join("data");
    let client = reqwest::Client::new();
    let (first, addr) = serve(&data, &model);
    let created: Value = support::create_run(
        &client,
        format!("http://{addr}/v1/runs"),
        TOKEN,
        "write six notes",
    )
    .await;
    let id = created["id"].as_str().unwrap().to_string();
    let before = until(&client, &addr, &id, |r| r["iteration"].as_u64() >= Some(2)).await;
    assert_eq!(before["status"], "running", "the kill must come mid-run");

    // Act: kill -9, and start again on the same data.
    drop(first);
    let (second, addr) = serve(&data, &model);
    let ended = until(&client, &addr, &id, |r| !r["ended_at"].is_null()).await;
    let records = get(
        &client,
        &addr,
        &format!("/v1/runs/{id}/iterations?limit=50"),
    )
    .await;
    drop(second);

    // Assert: the sixth step ended it in the sixth iteration, each iteration committed once.
    assert_eq!(ended["status"], "completed", "{ended}");
    assert_eq!(ended["iteration"], 6, "{ended}");
    let ns: Vec<u64> = records["iterations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["n"].as_u64().unwrap())
        .collect();
    assert_eq!(ns, (1..=6).collect::<Vec<_>>());
}
