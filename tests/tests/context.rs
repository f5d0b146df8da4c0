//! A run attached to the thing it is about: `context` on create, returned, and a filter of
//! `GET /v1/runs`.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use axum::http::StatusCode;
use longrun_ports::NoFaults;
use longrun_tests::{NOTES_SCRIPT, platform};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_carry_their_context_and_are_listed_by_it() {
    // Arrange
    let t = platform(
        NOTES_SCRIPT,
        Arc::new(NoFaults),
        &[("tok-alice", "alice")],
        10,
    );
    let create = |body| t.api("tok-alice", "POST", "/v1/runs", Some(body));
    let (status, _, tea) =
        create(json!({"objective": "tea", "context": {"type": "project", "entity_id": "p-1"}}))
            .await;
    let (_, _, other) =
        create(json!({"objective": "coffee", "context": {"type": "project", "entity_id": "p-2"}}))
            .await;
    create(json!({"objective": "loose"})).await;

    // Act
    let (blank, _, bad) =
        create(json!({"objective": "x", "context": {"type": " ", "entity_id": "p"}})).await;
    let (extra, _, _) = create(json!({"objective": "x", "context_type": "project"})).await;
    let (_, _, p1) = t
        .api(
            "tok-alice",
            "GET",
            "/v1/runs?context_type=project&entity_id=p-1",
            None,
        )
        .await;
    let (_, _, projects) = t
        .api("tok-alice", "GET", "/v1/runs?context_type=project", None)
        .await;
    let (_, _, by_entity) = t
        .api("tok-alice", "GET", "/v1/runs?entity_id=p-2", None)
        .await;
    let (_, _, got) = t
        .api(
            "tok-alice",
            "GET",
            &format!("/v1/runs/{}", tea["id"].as_str().unwrap()),
            None,
        )
        .await;

    // Assert
    assert_eq!(status, StatusCode::CREATED, "{tea}");
    assert_eq!(
        tea["context"],
        json!({"type": "project", "entity_id": "p-1"})
    );
    assert_eq!(got["context"], tea["context"]);
    assert_eq!(blank, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
    assert!(
        bad["detail"].as_str().unwrap().contains("context.type"),
        "{bad}"
    );
    assert_eq!(
        extra,
        StatusCode::UNPROCESSABLE_ENTITY,
        "the seed's flat names are not the API's"
    );
    let ids = |v: &serde_json::Value| -> Vec<String> {
        v["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&p1), vec![tea["id"].as_str().unwrap()]);
    assert_eq!(p1["runs"][0]["context"]["entity_id"], "p-1");
    assert_eq!(ids(&projects).len(), 2);
    assert_eq!(ids(&by_entity), vec![other["id"].as_str().unwrap()]);
}

#[tokio::test]
async fn a_runs_scope_and_project_ids_are_checked_kept_and_reach_the_planner() {
    // Arrange
    let t = platform(
        NOTES_SCRIPT,
        Arc::new(NoFaults),
        &[("tok-alice", "alice")],
        10,
    );
    let create = |body| t.api("tok-alice", "POST", "/v1/runs", Some(body));

    // Act
    let (status, _, run) = create(json!({"objective": "compare", "scope": "multi_project",
        "project_ids": ["p-1", "p-2"]}))
    .await;
    let (two, _, too_many) =
        create(json!({"objective": "x", "scope": "project", "project_ids": ["p-1", "p-2"]})).await;
    let (bare, _, unscoped) = create(json!({"objective": "x", "project_ids": ["p-1"]})).await;
    let (odd, _, _) = create(json!({"objective": "x", "scope": "galaxy"})).await;
    let id = run["id"].as_str().unwrap().to_string();
    t.drive(&id, 200).await;

    // Assert
    assert_eq!(status, StatusCode::CREATED, "{run}");
    assert_eq!(
        run["scope"],
        json!({"scope": "multi_project", "project_ids": ["p-1", "p-2"]})
    );
    assert_eq!(two, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        too_many["detail"]
            .as_str()
            .unwrap()
            .contains("scope `project` takes exactly one project id"),
        "{too_many}"
    );
    assert_eq!(bare, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        unscoped["detail"]
            .as_str()
            .unwrap()
            .contains("project_ids needs a scope"),
        "{unscoped}"
    );
    assert_eq!(odd, StatusCode::UNPROCESSABLE_ENTITY, "an unknown scope");
    let prompt = t.llm.planner_prompt(&id, 1).unwrap();
    assert!(
        prompt.contains(r#""scope":{"project_ids":["p-1","p-2"],"scope":"multi_project"}"#),
        "{prompt}"
    );
}
