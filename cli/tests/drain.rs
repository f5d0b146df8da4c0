//! SIGTERM drains `longrun serve` within its grace: a model call longer than the grace does not
//! hold the process, and the iteration it belonged to is done once by the next start.
#![allow(clippy::unwrap_used)]
#![cfg(unix)]

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

mod support;

const TOKEN: &str = "lr_drain_test_token";

fn start(data_dir: &Path, script: &Path) -> (Child, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_longrun"));
    cmd.args(["serve", "--port", "0", "--drain-grace", "1", "--model"])
        .arg(format!("script:{}", script.display()))
        .arg("--data-dir")
        .arg(data_dir)
        .env("LONGRUN_TOKENS", format!("{TOKEN}:alice"));
    support::spawn_serve(cmd)
}

/// The demo script with `latency_ms` on every planner answer.
fn script(path: &Path, latency_ms: u64) {
    let mut demo: Value = serde_json::from_str(include_str!("../../examples/demo.json")).unwrap();
    for step in demo["planner"].as_array_mut().unwrap() {
        step["latency_ms"] = json!(latency_ms);
    }
    std::fs::write(path, demo.to_string()).unwrap();
}

async fn get(client: &reqwest::Client, addr: &str, path: &str) -> Value {
    client
        .get(format!("http://{addr}{path}"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_with_a_model_call_longer_than_the_grace_exits_and_the_next_start_redoes_it_once() {
    // Arrange: a model whose every call takes 20 s, and a run whose first call is under way.
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model.json");
    script(&model, 20_000);
    let (mut child, addr) = start(dir.path(), &model);
    let client = reqwest::Client::new();
    let run: Value = support::create_run(
        &client,
        format!("http://{addr}/v1/runs"),
        TOKEN,
        "drain test",
    )
    .await;
    let id = run["id"].as_str().unwrap().to_string();
    tokio::time::sleep(Duration::from_millis(1_500)).await;

    // Act: SIGTERM, then a start with a model that answers at once.
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let stopping = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if stopping.elapsed() > Duration::from_secs(15) {
            let _ = child.kill();
            panic!("serve waited on the model call past its drain grace");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    script(&model, 0);
    let (mut next, addr) = start(dir.path(), &model);
    let deadline = Instant::now() + Duration::from_secs(60);
    let ended = loop {
        let r = get(&client, &addr, &format!("/v1/runs/{id}")).await;
        if ["completed", "failed", "stopped", "canceled"].contains(&r["status"].as_str().unwrap()) {
            break r;
        }
        assert!(Instant::now() < deadline, "the run never ended: {r}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let its = get(
        &client,
        &addr,
        &format!("/v1/runs/{id}/iterations?limit=500"),
    )
    .await;
    let _ = next.kill();
    let _ = next.wait();

    // Assert: a clean exit within the grace, and every iteration committed once.
    assert!(status.success(), "exit status {status:?}");
    assert_eq!(ended["status"], "completed");
    let ns: Vec<u64> = its["iterations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["n"].as_u64().unwrap())
        .collect();
    let n = ended["iteration"].as_u64().unwrap();
    assert_eq!(ns, (1..=n).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_answers_an_open_long_poll_and_ends_an_open_event_stream_cleanly() {
    // Arrange: a run whose first model call takes 20 s, a long-poll and an event stream open on
    // it, both waiting for an event that will not come before the shutdown.
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model.json");
    script(&model, 20_000);
    let (mut child, addr) = start(dir.path(), &model);
    let client = reqwest::Client::new();
    let run: Value = support::create_run(
        &client,
        format!("http://{addr}/v1/runs"),
        TOKEN,
        "drain test",
    )
    .await;
    let id = run["id"].as_str().unwrap().to_string();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let seen = get(&client, &addr, &format!("/v1/runs/{id}")).await["event_seq"]
        .as_u64()
        .unwrap();
    let poll = client
        .get(format!(
            "http://{addr}/v1/runs/{id}/events?after={seen}&wait=30"
        ))
        .bearer_auth(TOKEN)
        .send();
    let poll = tokio::spawn(poll);
    let stream = client
        .get(format!("http://{addr}/v1/runs/{id}/stream?after={seen}"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;

    // Act
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let polled = tokio::time::timeout(Duration::from_secs(10), poll)
        .await
        .expect("the long-poll was answered")
        .unwrap()
        .unwrap();
    let polled_status = polled.status();
    let polled: Value = polled.json().await.unwrap();
    let streamed = tokio::time::timeout(Duration::from_secs(10), stream.text())
        .await
        .expect("the stream ended");
    let _ = child.wait();

    // Assert: an answer, not a dropped connection; a stream that ended, not one cut.
    assert_eq!(polled_status, 200);
    assert_eq!(polled["events"], json!([]));
    assert_eq!(polled["next_after"], seen);
    assert!(streamed.is_ok(), "the stream was cut: {streamed:?}");
}
