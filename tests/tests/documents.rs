//! Documents: `doc_write` tags them, a rewrite without tags keeps them, and the workspace
//! listing filters by tag through the API.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use axum::http::StatusCode;
use longrun_http::create_run;
use longrun_ports::NoFaults;
use longrun_tests::{platform, run_request};

const SCRIPT: &str = r#"{"planner": [
  {"content": {"status": {"exit_signal": false, "needs_user_input": false,
      "progress_summary": "notes", "remaining_work": ["guide"]},
    "tool_calls": [
      {"name": "doc_write", "args": {"path": "notes/green.md", "content": "grassy", "tags": ["tea", " notes ", "tea"]}},
      {"name": "doc_write", "args": {"path": "notes/black.md", "content": "malty", "tags": ["tea"]}},
      {"name": "doc_write", "args": {"path": "plan.md", "content": "plan"}}]}},
  {"content": {"status": {"exit_signal": true, "needs_user_input": false,
      "progress_summary": "guide", "remaining_work": [], "completion_evidence": ["notes/green.md"]},
    "tool_calls": [
      {"name": "doc_write", "args": {"path": "notes/green.md", "content": "grassy, 75 °C"}}]}}]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documents_keep_their_tags_and_the_workspace_lists_those_with_a_tag() {
    // Arrange
    let t = platform(SCRIPT, Arc::new(NoFaults), &[("tok-alice", "alice")], 5);
    let id = create_run(t.p(), "alice", run_request("tea notes", Default::default()))
        .await
        .unwrap()
        .id;
    t.drive(&id, 200).await;

    // Act
    let path = |q: &str| format!("/v1/runs/{id}/workspace{q}");
    let (status, _, tagged) = t.api("tok-alice", "GET", &path("?tag=notes"), None).await;
    let (_, _, tea) = t.api("tok-alice", "GET", &path("?tag=tea"), None).await;
    let (_, _, all) = t.api("tok-alice", "GET", &path(""), None).await;
    let (_, _, green) = t
        .api(
            "tok-alice",
            "GET",
            &format!("/v1/runs/{id}/docs/notes/green.md"),
            None,
        )
        .await;

    // Assert: tags trimmed and deduplicated, kept by a rewrite without tags; updated_at set.
    assert_eq!(status, StatusCode::OK);
    let paths = |v: &serde_json::Value| -> Vec<String> {
        v["docs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["path"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(paths(&tagged), vec!["notes/green.md"]);
    assert_eq!(paths(&tea), vec!["notes/black.md", "notes/green.md"]);
    assert_eq!(paths(&all).len(), 3);
    assert_eq!(green["tags"], serde_json::json!(["tea", "notes"]));
    assert_eq!(green["content"], "grassy, 75 °C");
    assert_eq!(green["version"], 2);
    assert!(green["updated_at"].as_i64().unwrap() >= 1_700_000_000_000);
}
