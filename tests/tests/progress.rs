//! Progress that is really progress (issue 56 §2), through the engine: a workspace that goes
//! back to a state it had is no progress, and no progress with the same tools again forces a
//! replan that refuses the same calls.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use longrun_domain::StopType;
use longrun_domain::run::BudgetsInput;
use longrun_http::{CreateRun, create_run};
use longrun_ports::NoFaults;
use longrun_tests::{platform, run_request};

/// A planner turn writing `notes/a.md` with `content`, keeping one plan step in progress.
fn write_turn(content: &str) -> String {
    format!(
        r#"{{"content": {{"status": {{"exit_signal": false, "needs_user_input": false,
            "progress_summary": "wrote {content}", "remaining_work": ["settle the draft"]}},
          "plan_updates": [{{"id": "s1", "title": "draft", "status": "in_progress"}}],
          "tool_calls": [{{"name": "doc_write", "args": {{"path": "notes/a.md", "content": "{content}"}}}}]}}}}"#
    )
}

fn request(max_iterations: i64) -> CreateRun {
    run_request(
        "settle on a draft",
        BudgetsInput {
            max_iterations: Some(max_iterations),
            ..Default::default()
        },
    )
}

#[tokio::test]
async fn a_flipping_document_stops_with_no_progress() {
    // Arrange: v1, v2, and then the planner flips the document between the two.
    let turns: Vec<String> = ["v1", "v2", "v1", "v2", "v1", "v2", "v1", "v2", "v1", "v2"]
        .iter()
        .map(|c| write_turn(c))
        .collect();
    let script = format!(r#"{{"planner": [{}]}}"#, turns.join(","));
    let t = platform(&script, Arc::new(NoFaults), &[], 5);
    let id = create_run(t.p(), "alice", request(10)).await.unwrap().id;

    // Act
    let run = t.drive(&id, 300).await;

    // Assert: iterations 3, 4 and 5 each wrote the document, but only back to a version it had.
    let reason = run.stopping_reason.clone().unwrap();
    assert_eq!(reason.kind, StopType::NoProgress, "{}", reason.detail);
    assert_eq!(run.iteration, 5);
    let records = t.p().store.iterations(&id, 0, 10).await.unwrap();
    let progress: Vec<bool> = records.iter().map(|r| r.progress).collect();
    assert_eq!(progress, [true, true, false, false, false]);
    assert!(
        records[2].updated_docs.contains(&"notes/a.md".to_string()),
        "the flip is a write"
    );
    let fourth = t.llm.planner_prompt(&id, 4).unwrap();
    assert!(fourth.contains("went back to an earlier state"), "{fourth}");
}

/// A planner that lists a folder each iteration, nothing else, without a plan update.
const LISTS: &str = r#"{"planner": [
  {"content": {"status": {"exit_signal": false, "needs_user_input": false, "progress_summary": "looked in a/", "remaining_work": ["find the file"]},
               "tool_calls": [{"name": "doc_list", "args": {"prefix": "a/"}}]}},
  {"content": {"status": {"exit_signal": false, "needs_user_input": false, "progress_summary": "looked in b/", "remaining_work": ["find the file"]},
               "tool_calls": [{"name": "doc_list", "args": {"prefix": "b/"}}]}},
  {"content": {"status": {"exit_signal": false, "needs_user_input": false, "progress_summary": "looked in b/ again", "remaining_work": ["find the file"]},
               "tool_calls": [{"name": "doc_list", "args": {"prefix": "b/"}}]}}
]}"#;

#[tokio::test]
async fn the_forced_replan_refuses_the_same_calls() {
    // Arrange: iteration 2 lists another folder with the same tool and changes nothing.
    let t = platform(LISTS, Arc::new(NoFaults), &[], 5);
    let mut req = request(10);
    req.thresholds = Some(longrun_domain::Thresholds {
        no_progress_limit: 10,
        repeated_action_limit: 10,
        ..Default::default()
    });
    let id = create_run(t.p(), "alice", req).await.unwrap().id;

    // Act
    let run = t.drive(&id, 300).await;

    // Assert: iteration 3 was told to replan, asked again when it did not, and its repeat
    // of iteration 2's call was refused, not made.
    assert!(run.iteration >= 3, "{:?}", run.stopping_reason);
    let third = t.llm.planner_prompt(&id, 3).unwrap();
    assert!(third.contains("REPLAN REQUIRED"), "{third}");
    assert!(third.contains(r#""replan_required":true"#), "{third}");
    assert!(
        third.contains("this iteration must replan"),
        "the corrective retry: {third}"
    );
    let records = t.p().store.iterations(&id, 0, 10).await.unwrap();
    assert!(records[1].tool_results[0].ok, "iteration 2's call was made");
    let refused = &records[2].tool_results[0];
    assert!(!refused.ok);
    assert!(
        refused.result.starts_with("refused: the same call"),
        "{}",
        refused.result
    );
    assert_eq!(run.metrics.tool_calls, 2, "the refused call was not made");
}
