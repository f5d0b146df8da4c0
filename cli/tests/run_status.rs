//! What a run's status says while its iteration works: `running` from the claim on, not
//! `queued` until the first model call returns.
#![allow(clippy::unwrap_used)]

use std::process::Command;

use serde_json::{Value, json};

mod support;

const TOKEN: &str = "lr_run_status_test_token";

#[tokio::test]
async fn a_run_shows_running_while_its_first_model_call_is_still_in_flight() {
    // Arrange: a model that takes seconds to answer its first call (usage given, so a
    // recorded call shows in the run's tokens).
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("slow.json");
    let planner = json!({"planner": [{"latency_ms": 4000, "usage": {"input_tokens": 100, "output_tokens": 50},
        "content": {"status": {"exit_signal": true, "needs_user_input": false, "progress_summary": "wrote it",
                               "remaining_work": [], "completion_evidence": ["a.md"]},
                    "tool_calls": [{"name": "doc_write", "args": {"path": "a.md", "content": "A"}}]}}]});
    std::fs::write(&script, planner.to_string()).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_longrun"));
    cmd.args(["serve", "--port", "0", "--data-dir"])
        .arg(dir.path().join("data"))
        .arg("--model")
        .arg(format!("script:{}", script.display()))
        .env("LONGRUN_TOKENS", format!("{TOKEN}:alice"));
    let (mut child, addr) = support::spawn_serve(cmd);
    let client = reqwest::Client::new();
    let get = |path: String| {
        let req = client
            .get(format!("http://{addr}{path}"))
            .bearer_auth(TOKEN);
        async move { req.send().await.unwrap().json::<Value>().await.unwrap() }
    };

    // Act: create the run, then read it until it is no longer queued.
    let run: Value = support::create_run(
        &client,
        format!("http://{addr}/v1/runs"),
        TOKEN,
        "write a.md",
    )
    .await;
    let id = run["id"].as_str().unwrap().to_string();
    let seen = loop {
        let r = get(format!("/v1/runs/{id}")).await;
        if r["status"] != "queued" {
            break r;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let events = get(format!("/v1/runs/{id}/events")).await;
    let _ = child.kill();
    let _ = child.wait();

    // Assert: the first status after queued is running, with the call not yet recorded
    // (no tokens, nothing committed), and the claim is on the log.
    assert_eq!(seen["status"], "running", "{seen:#}");
    assert_eq!(seen["iteration"], 0, "{seen:#}");
    assert_eq!(
        seen["tokens"], 0,
        "the first call had already returned: {seen:#}"
    );
    let types: Vec<&str> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["type"].as_str())
        .collect();
    assert!(types.contains(&"iteration_started"), "{types:?}");
}
