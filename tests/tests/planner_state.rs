//! What the planner is shown of the run: the workspace index comes from the run itself, so
//! the planner sees what earlier iterations wrote without spending a call on `doc_list`.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use longrun_domain::run::BudgetsInput;
use longrun_http::{CreateRun, create_run};
use longrun_ports::NoFaults;
use longrun_tests::{platform, run_request};

/// Writes `notes/{n}.md` every iteration and never claims to be done.
const NOTES: &str = r#"{"planner": [{"content": {"status": {"exit_signal": false, "needs_user_input": false,
    "progress_summary": "note {{iteration}}", "remaining_work": ["more"]},
    "tool_calls": [{"name": "doc_write", "args": {"path": "notes/{{iteration}}.md", "content": "n{{iteration}}", "title": "Note {{iteration}}"}}]}}]}"#;

fn notes_run(iterations: i64) -> CreateRun {
    run_request(
        "keep notes",
        BudgetsInput {
            max_iterations: Some(iterations),
            ..Default::default()
        },
    )
}

#[tokio::test]
async fn the_planner_sees_the_docs_earlier_iterations_wrote_newest_first() {
    // Arrange
    let t = platform(NOTES, Arc::new(NoFaults), &[], 5);
    let id = create_run(t.p(), "alice", notes_run(3)).await.unwrap().id;

    // Act
    t.drive(&id, 200).await;

    // Assert
    let first = t.llm.planner_prompt(&id, 1).unwrap();
    let third = t.llm.planner_prompt(&id, 3).unwrap();
    assert!(
        !first.contains("notes/1.md"),
        "nothing is written before iteration 1"
    );
    let newest = third
        .find("notes/2.md")
        .expect("iteration 2's doc is listed");
    let older = third
        .find("notes/1.md")
        .expect("iteration 1's doc is listed");
    assert!(newest < older, "newest first");
    assert!(third.contains("Note 2"));
}

#[tokio::test]
async fn web_search_is_offered_to_the_planner_only_where_the_deployment_configures_it() {
    // Arrange
    let adapters = longrun_wiring::Adapters {
        search: Some(longrun_outbound::SearchSettings::new(
            longrun_outbound::SearchProvider::Brave,
            "key".into(),
        )),
        ..Default::default()
    };
    let engine = longrun_engine::EngineConfig {
        lease_ms: 30_000,
        ..Default::default()
    };
    let with = longrun_tests::platform_with_adapters(
        longrun_tests::scripted(NOTES),
        Arc::new(NoFaults),
        &[],
        5,
        |_| {},
        engine,
        adapters,
    );
    let without = platform(NOTES, Arc::new(NoFaults), &[], 5);

    // Act
    let mut prompts = vec![];
    for t in [&with, &without] {
        let id = create_run(t.p(), "alice", notes_run(1)).await.unwrap().id;
        t.drive(&id, 200).await;
        prompts.push(t.llm.planner_prompt(&id, 1).unwrap());
    }

    // Assert
    assert!(prompts[0].contains("web_search"), "offered when configured");
    assert!(
        !prompts[1].contains("web_search"),
        "absent when search is off"
    );
}

/// Alice's run of three note-writing iterations, with tokens for alice and bob.
async fn alice_notes() -> (longrun_tests::TestPlatform, String) {
    let tokens = [("tok-alice", "alice"), ("tok-bob", "bob")];
    let t = platform(NOTES, Arc::new(NoFaults), &tokens, 5);
    let id = create_run(t.p(), "alice", notes_run(3)).await.unwrap().id;
    (t, id)
}

#[tokio::test]
async fn a_message_posted_to_a_running_run_reaches_its_next_planner_and_only_that_one() {
    // Arrange
    let (t, id) = alice_notes().await;
    t.running.worker.poll_once().await.unwrap();

    // Act
    let path = format!("/v1/runs/{id}/messages");
    let body = serde_json::json!({"text": "Prefer green tea over black."});
    let (status, _, run) = t.api("tok-alice", "POST", &path, Some(body)).await;
    t.drive(&id, 200).await;

    // Assert
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["status"], "running", "a running run takes the message");
    let said = "Prefer green tea over black.";
    assert!(!t.llm.planner_prompt(&id, 1).unwrap().contains(said));
    assert!(t.llm.planner_prompt(&id, 2).unwrap().contains(said));
    assert!(
        !t.llm.planner_prompt(&id, 3).unwrap().contains(said),
        "shown once, then consumed"
    );
    let (_, _, events) = t
        .api("tok-alice", "GET", &format!("/v1/runs/{id}/events"), None)
        .await;
    let posted = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "message_posted")
        .expect("the message is in the run's log");
    assert_eq!(posted["payload"]["for_iteration"], 2);
}

#[tokio::test]
async fn a_message_over_mcp_reaches_the_next_planner_like_one_over_http() {
    // Arrange
    let (t, id) = alice_notes().await;
    t.running.worker.poll_once().await.unwrap();
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "post_message", "arguments": {"run_id": id, "text": "Cite the sources."}}});

    // Act
    let (status, _, reply) = t.api("tok-alice", "POST", "/mcp", Some(call)).await;
    t.drive(&id, 200).await;

    // Assert
    assert_eq!(status, 200);
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    assert!(
        t.llm
            .planner_prompt(&id, 2)
            .unwrap()
            .contains("Cite the sources.")
    );
}

#[tokio::test]
async fn messages_are_refused_to_other_users_when_blank_and_once_the_run_ended() {
    // Arrange
    let (t, id) = alice_notes().await;
    let path = format!("/v1/runs/{id}/messages");
    let text = |s: &str| Some(serde_json::json!({ "text": s }));

    // Act
    let (bob, _, _) = t.api("tok-bob", "POST", &path, text("hi")).await;
    let (blank, blank_type, _) = t.api("tok-alice", "POST", &path, text(" \n ")).await;
    t.drive(&id, 200).await;
    let (ended, _, problem) = t.api("tok-alice", "POST", &path, text("too late")).await;

    // Assert
    assert_eq!(bob, 404, "another user's run does not exist for them");
    assert!(blank.is_client_error(), "{blank}");
    assert_eq!(blank_type, "application/problem+json");
    assert_eq!(ended, 409, "{problem}");
    assert!(problem["detail"].as_str().unwrap().contains("continue"));
}

/// Plans two steps and hands `s1` to an executor, which marks it done with a note and also
/// tries to mark `s2`, which it was not given.
const EXECUTOR_MARKS: &str = r#"{"planner": [{"content": {"status": {"exit_signal": false, "needs_user_input": false,
    "progress_summary": "delegated s1", "remaining_work": ["s2"]},
    "plan_updates": [{"id": "s1", "title": "find sources", "status": "in_progress"},
                     {"id": "s2", "title": "write the guide", "status": "pending"}],
    "executor_tasks": [{"title": "find sources", "instructions": "write sources.md", "tools": ["doc_write"],
                        "plan_steps": ["s1"]}]}}],
  "executor": [{"content": {"tool_calls": [{"name": "doc_write", "args": {"path": "sources.md", "content": "three"}}],
    "summary": "found three", "plan_updates": [{"id": "s1", "status": "done", "note": "three sources"},
                                              {"id": "s2", "status": "done"}]}}]}"#;

#[tokio::test]
async fn an_executor_marks_the_plan_steps_it_was_given_and_no_other() {
    // Arrange
    let t = platform(EXECUTOR_MARKS, Arc::new(NoFaults), &[], 5);
    let id = create_run(t.p(), "alice", notes_run(1)).await.unwrap().id;

    // Act
    t.drive(&id, 200).await;

    // Assert
    let run = t.p().store.get_run(&id).await.unwrap().unwrap();
    let step = |id: &str| run.plan.iter().find(|s| s.id == id).unwrap().clone();
    assert_eq!(step("s1").status, longrun_domain::run::StepStatus::Done);
    assert_eq!(step("s1").notes.as_deref(), Some("three sources"));
    assert_eq!(step("s2").status, longrun_domain::run::StepStatus::Pending);
    let it1 = t.p().store.iterations(&id, 0, 1).await.unwrap().remove(0);
    let pad = t.p().store.scratchpad(&id, 1).await.unwrap().remove(0);
    assert!(
        pad.plan_changes
            .iter()
            .any(|c| c.starts_with("s1 ") && c.contains("Done") && c.contains("executor")),
        "{:?}",
        pad.plan_changes
    );
    let brief = &it1.executor_results[0];
    assert!(
        brief.summary.contains("step s2 was not given to this task"),
        "{}",
        brief.summary
    );
}
