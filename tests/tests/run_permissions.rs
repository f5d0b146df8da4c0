//! Per-run permissions and the tool-call budget: `allowed_tools` narrows what the planner is
//! offered and may call; `max_tool_calls` bounds the calls over the whole run.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use longrun_domain::StopType;
use longrun_domain::run::{BudgetsInput, RunStatus};
use longrun_http::{CreateRun, create_run};
use longrun_ports::NoFaults;
use longrun_tests::platform;

/// Every iteration writes two docs and lists the workspace; it never claims to be done.
const BUSY: &str = r#"{
  "planner": [
    {"content": {"status": {"exit_signal": false, "needs_user_input": false, "progress_summary": "wrote a/{{iteration}} and b/{{iteration}}", "remaining_work": ["more"]},
                 "tool_calls": [{"name": "doc_write", "args": {"path": "a/{{iteration}}.md", "content": "a {{iteration}}"}},
                                {"name": "doc_write", "args": {"path": "b/{{iteration}}.md", "content": "b {{iteration}}"}},
                                {"name": "spawn_run", "args": {"objective": "a part"}}]},
     "usage": {"input_tokens": 100, "output_tokens": 20}}
  ]
}"#;

fn request(budgets: BudgetsInput, allowed_tools: Option<Vec<String>>) -> CreateRun {
    CreateRun {
        allowed_tools,
        context: None,
        scope: None,
        project_ids: None,
        ..longrun_tests::run_request("write many notes", budgets)
    }
}

/// A run of BUSY allowed only `doc_write`.
async fn start_writer(t: &longrun_tests::TestPlatform, budgets: BudgetsInput) -> String {
    let allowed = Some(vec!["doc_write".to_string()]);
    create_run(t.p(), "alice", request(budgets, allowed))
        .await
        .unwrap()
        .id
}

#[tokio::test]
async fn a_run_stops_when_its_tool_call_budget_is_spent_and_never_makes_more() {
    let t = platform(BUSY, Arc::new(NoFaults), &[], 5);
    let id = start_writer(
        &t,
        BudgetsInput {
            max_tool_calls: Some(5),
            ..Default::default()
        },
    )
    .await;

    let run = t.drive(&id, 200).await;

    assert_eq!(run.status, RunStatus::Stopped);
    let reason = run.stopping_reason.unwrap();
    assert_eq!(reason.kind, StopType::Budget);
    assert!(
        reason.detail.contains("max_tool_calls"),
        "{}",
        reason.detail
    );
    assert_eq!(
        run.metrics.tool_calls, 5,
        "2 + 2 + 1 calls, the 6th refused"
    );
    assert_eq!(
        run.iteration, 2,
        "iteration 2 made the 4th and 5th call and ended the run"
    );
    let docs = t.p().store.docs(&id, "", 100).await.unwrap();
    assert_eq!(docs.len(), 4);
}

#[tokio::test]
async fn allowed_tools_narrow_what_the_planner_is_offered_and_may_call() {
    let t = platform(BUSY, Arc::new(NoFaults), &[], 5);
    let id = start_writer(
        &t,
        BudgetsInput {
            max_iterations: Some(1),
            ..Default::default()
        },
    )
    .await;

    let run = t.drive(&id, 200).await;

    let prompt = t.llm.planner_prompt(&id, 1).unwrap();
    assert!(prompt.contains("doc_write"));
    assert!(
        !prompt.contains("spawn_run"),
        "a tool outside allowed_tools is not offered"
    );
    let it = t.p().store.iterations(&id, 0, 10).await.unwrap();
    let refused = it[0]
        .tool_results
        .iter()
        .find(|r| r.name == "spawn_run")
        .unwrap();
    assert!(!refused.ok);
    assert!(run.children.is_empty(), "no child run was started");
}

#[tokio::test]
async fn a_run_naming_a_tool_that_does_not_exist_is_refused_and_nothing_is_written() {
    let t = platform(BUSY, Arc::new(NoFaults), &[], 5);
    let allowed = Some(vec!["doc_write".to_string(), "teleport".to_string()]);

    let err = create_run(t.p(), "alice", request(BudgetsInput::default(), allowed))
        .await
        .unwrap_err();

    assert!(err.to_string().contains("teleport"), "{err}");
    assert_eq!(t.p().store.active_runs("alice").await.unwrap(), 0);
}
