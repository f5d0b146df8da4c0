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
    let with = longrun_tests::platform_with(NOTES, Arc::new(NoFaults), &[], 5, |c| {
        c.search = Some(longrun_fetch::SearchSettings::new(
            longrun_fetch::SearchProvider::Brave,
            "key".into(),
        ));
    });
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
