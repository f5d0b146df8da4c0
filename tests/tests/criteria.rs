//! Completion the platform verifies (issue 56 §1), through the engine and the API: checks run
//! on what a claim cites, a grader judges plain-text criteria in a fresh context, verdicts are
//! recorded, and a failed criterion keeps the run going with its reason.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use longrun_domain::criteria::{Check, CheckKind, Criterion, Grading};
use longrun_domain::run::{BudgetsInput, RunStatus};
use longrun_domain::{EventKind, StopType};
use longrun_http::{CreateRun, create_run};
use longrun_ports::{FaultPoint, LlmRole, NoFaults};
use longrun_tests::{CrashOnce, platform, run_request};
use serde_json::json;

/// A planner turn that writes `guide.md` with `content` and claims completion citing it.
fn claim_turn(content: &str) -> String {
    format!(
        r#"{{"content": {{"status": {{"exit_signal": true, "needs_user_input": false,
            "progress_summary": "guide written", "remaining_work": [],
            "completion_evidence": ["guide.md"],
            "criteria_evidence": [{{"criterion": "c1", "evidence": ["guide.md"]}}]}},
          "tool_calls": [{{"name": "doc_write", "args": {{"path": "guide.md", "content": "{content}"}}}}]}}}}"#
    )
}

fn request(criteria: Vec<Criterion>, grading: Option<Grading>) -> CreateRun {
    let mut req = run_request(
        "a tea guide",
        BudgetsInput {
            max_iterations: Some(5),
            ..Default::default()
        },
    );
    req.completion_criteria = criteria;
    req.grading = grading;
    req
}

fn contains(doc: &str, text: &str) -> Criterion {
    Criterion::Check(Check::Contains {
        doc: doc.into(),
        text: text.into(),
    })
}

const NO_GRADING: Option<Grading> = Some(Grading {
    text: false,
    model: None,
});

#[tokio::test]
async fn a_claim_whose_cited_document_lacks_the_criterions_text_fails_until_it_holds_it() {
    // Arrange: the first guide has no oolong, the second has.
    let script = format!(
        r#"{{"planner": [{}, {}]}}"#,
        claim_turn("green and black"),
        claim_turn("green, black and oolong")
    );
    let t = platform(&script, Arc::new(NoFaults), &[], 5);
    let req = request(vec![contains("guide.md", "oolong")], None);
    let id = create_run(t.p(), "alice", req).await.unwrap().id;

    // Act
    let run = t.drive(&id, 200).await;

    // Assert
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(run.iteration, 2);
    let records = t.p().store.iterations(&id, 0, 10).await.unwrap();
    assert!(!records[0].criteria[0].passed);
    assert_eq!(records[0].criteria[0].kind, CheckKind::Contains);
    assert!(
        records[0].hints[0].contains("`guide.md` does not hold the text \"oolong\""),
        "{:?}",
        records[0].hints
    );
    assert!(records[1].criteria[0].passed);
    assert_eq!(
        run.report.as_ref().unwrap().criteria,
        records[1].criteria,
        "the report carries the verdicts of the claim that completed the run"
    );
    let second = t.llm.planner_prompt(&id, 2).unwrap();
    assert!(second.contains("does not hold the text"), "{second}");
    let events = t.p().store.events(&id, 0, 200).await.unwrap();
    let checked: Vec<_> = events
        .iter()
        .filter(|e| e.kind == EventKind::CriteriaChecked)
        .map(|e| e.payload["accepted"].as_bool().unwrap())
        .collect();
    assert_eq!(checked, [false, true]);
    // A document check is no model call.
    assert_eq!(t.llm.answered(&id, LlmRole::Grader), 0);
}

#[tokio::test]
async fn a_grader_that_answers_fail_keeps_the_run_going_with_its_reason() {
    // Arrange: the grader fails iteration 1's claim and passes iteration 2's.
    let script = format!(
        r#"{{"planner": [{}, {}],
            "grader": [{{"content": {{"pass": false, "reasons": "only two teas are described"}}}},
                       {{"content": "```json\n{{\"pass\": true, \"reasons\": \"three teas\"}}\n```"}}]}}"#,
        claim_turn("green and black"),
        claim_turn("green, black and oolong")
    );
    let t = platform(&script, Arc::new(NoFaults), &[], 5);
    let req = request(vec!["covers three teas".into()], None);
    let id = create_run(t.p(), "alice", req).await.unwrap().id;

    // Act
    let run = t.drive(&id, 200).await;

    // Assert
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(run.iteration, 2);
    let records = t.p().store.iterations(&id, 0, 10).await.unwrap();
    let first = &records[0].criteria[0];
    assert_eq!(first.kind, CheckKind::Grader);
    assert!(!first.passed);
    assert_eq!(first.reason, "only two teas are described");
    assert_eq!(first.looked_at, ["guide.md"]);
    assert!(records[0].hints[0].contains("only two teas are described"));
    assert_eq!(records[1].criteria[0].reason, "three teas");
    // One grader call per claim, priced and counted like every call.
    assert_eq!(t.llm.answered(&id, LlmRole::Grader), 2);
    assert_eq!(records[0].metrics.llm_calls, 2);
    let events = t.p().store.events(&id, 0, 200).await.unwrap();
    assert!(
        events
            .iter()
            .any(|e| e.kind == EventKind::IterationCostUpdate && e.payload["role"] == "grader")
    );
}

#[tokio::test]
async fn a_grader_sees_the_cited_content_in_a_fresh_context() {
    // Arrange
    let script = format!(
        r#"{{"planner": [{}], "grader": [{{"content": {{"pass": true, "reasons": "ok"}}}}]}}"#,
        claim_turn("green, black and oolong")
    );
    let t = platform(&script, Arc::new(NoFaults), &[], 5);
    let req = request(vec!["covers three teas".into()], None);
    let id = create_run(t.p(), "alice", req).await.unwrap().id;

    // Act
    let run = t.drive(&id, 200).await;

    // Assert: the planner's prompt is not the grader's; only its own inputs are.
    assert_eq!(run.status, RunStatus::Completed);
    let prompts = t.llm.answered.lock().unwrap().clone();
    assert!(prompts.iter().any(|(_, _, r)| *r == LlmRole::Grader));
    let planner = t.llm.planner_prompt(&id, 1).unwrap();
    assert!(planner.contains("covers three teas"), "{planner}");
}

#[tokio::test]
async fn with_grading_off_the_mapping_alone_decides_and_no_grader_is_called() {
    // Arrange: a script whose grader would fail everything.
    let script = format!(
        r#"{{"planner": [{}], "grader": [{{"content": {{"pass": false, "reasons": "no"}}}}]}}"#,
        claim_turn("green, black and oolong")
    );
    let t = platform(&script, Arc::new(NoFaults), &[], 5);
    let req = request(vec!["covers three teas".into()], NO_GRADING);
    let id = create_run(t.p(), "alice", req).await.unwrap().id;

    // Act
    let run = t.drive(&id, 200).await;

    // Assert
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(run.iteration, 1);
    assert_eq!(t.llm.answered(&id, LlmRole::Grader), 0);
}

#[tokio::test]
async fn a_grade_is_made_once_per_claim_even_when_the_iteration_is_redelivered() {
    // Arrange: the worker dies after the grade, before the commit.
    let script = format!(
        r#"{{"planner": [{}], "grader": [{{"content": {{"pass": true, "reasons": "three teas"}}}}]}}"#,
        claim_turn("green, black and oolong")
    );
    let faults = Arc::new(CrashOnce::new(vec![(FaultPoint::BeforeCommit, 1)]));
    let t = platform(&script, faults, &[], 5);
    let req = request(vec!["covers three teas".into()], None);
    let id = create_run(t.p(), "alice", req).await.unwrap().id;

    // Act
    let run = t.drive(&id, 200).await;

    // Assert: the planner was asked twice (the crash lost its answer), the grader once.
    assert_eq!(run.status, RunStatus::Completed);
    assert_eq!(t.llm.answered(&id, LlmRole::Planner), 2);
    assert_eq!(t.llm.answered(&id, LlmRole::Grader), 1);
    assert!(run.grades.is_empty(), "the commit clears the held grade");
    let records = t.p().store.iterations(&id, 0, 10).await.unwrap();
    assert!(records[0].criteria[0].passed);
}

#[tokio::test]
async fn a_run_whose_plan_is_all_done_completes_without_cited_evidence() {
    // Arrange: the claim cites nothing, but every plan step is done and the guide written.
    let script = r#"{"planner": [
      {"content": {"status": {"exit_signal": false, "needs_user_input": false,
          "progress_summary": "drafting", "remaining_work": ["finish"]},
        "plan_updates": [{"id": "s1", "title": "write the guide", "status": "in_progress"}],
        "tool_calls": [{"name": "doc_write", "args": {"path": "guide.md", "content": "three teas"}}]}},
      {"content": {"status": {"exit_signal": true, "needs_user_input": false,
          "progress_summary": "done", "remaining_work": [], "completion_evidence": []},
        "plan_updates": [{"id": "s1", "title": "write the guide", "status": "done"}]}}]}"#;
    let t = platform(script, Arc::new(NoFaults), &[], 5);
    let id = create_run(t.p(), "alice", request(vec![], None))
        .await
        .unwrap()
        .id;

    // Act
    let run = t.drive(&id, 200).await;

    // Assert
    assert_eq!(run.status, RunStatus::Completed, "{:?}", run.hints);
    assert_eq!(run.iteration, 2);
    let records = t.p().store.iterations(&id, 0, 10).await.unwrap();
    let claim = records[1].status_block.as_ref().unwrap();
    assert!(
        claim.completion_evidence.is_empty(),
        "the claim itself cited nothing"
    );
}

#[tokio::test]
async fn a_claim_naming_nothing_without_a_done_plan_still_fails() {
    // Arrange
    let script = r#"{"planner": [
      {"content": {"status": {"exit_signal": true, "needs_user_input": false,
          "progress_summary": "done", "remaining_work": [], "completion_evidence": []},
        "tool_calls": [{"name": "doc_write", "args": {"path": "guide.md", "content": "three teas"}}]}}]}"#;
    let t = platform(script, Arc::new(NoFaults), &[], 5);
    let mut req = request(vec![], None);
    req.budgets.max_iterations = Some(2);
    let id = create_run(t.p(), "alice", req).await.unwrap().id;

    // Act
    let run = t.drive(&id, 200).await;

    // Assert
    assert_ne!(run.status, RunStatus::Completed);
    assert_ne!(run.stopping_reason.unwrap().kind, StopType::Completed);
    let records = t.p().store.iterations(&id, 0, 10).await.unwrap();
    assert!(
        records[0].hints[0].contains("completion_evidence names no workspace document"),
        "{:?}",
        records[0].hints
    );
}

#[tokio::test]
async fn a_check_the_run_cannot_hold_is_refused_with_the_field_named() {
    // Arrange
    let t = platform("{}", Arc::new(NoFaults), &[("tok", "alice")], 5);
    let cases = [
        (
            json!([{"check": "command", "run": "cargo test"}]),
            "completion_criteria[0]: a command check runs in an agent run's task folder",
        ),
        (
            json!(["fine", {"check": "contains", "doc": "a.md", "text": "x", "extra": 1}]),
            "unknown field `extra`",
        ),
        (
            json!([{"check": "contains", "doc": "a.md", "text": " "}]),
            "completion_criteria[0].text must be 1 to 500 characters",
        ),
        (
            json!([{"check": "smells", "doc": "a.md"}]),
            "unknown variant `smells`",
        ),
    ];

    for (criteria, needle) in cases {
        // Act
        let (status, _, body) = t
            .api(
                "tok",
                "POST",
                "/v1/runs",
                Some(json!({"objective": "x", "completion_criteria": criteria})),
            )
            .await;

        // Assert
        assert!(status.is_client_error(), "{criteria}: {status}");
        assert!(
            body["detail"].as_str().unwrap_or("").contains(needle),
            "{criteria}: {body}"
        );
    }
    let (_, _, runs) = t.api("tok", "GET", "/v1/runs", None).await;
    assert_eq!(runs["runs"].as_array().map_or(0, Vec::len), 0, "{runs}");
}

#[tokio::test]
async fn criteria_and_grading_are_served_as_they_were_written() {
    // Arrange
    let t = platform("{}", Arc::new(NoFaults), &[("tok", "alice")], 5);
    let criteria =
        json!(["covers three teas", {"check": "contains", "doc": "guide.md", "text": "oolong"}]);

    // Act
    let (status, _, run) = t
        .api(
            "tok",
            "POST",
            "/v1/runs",
            Some(json!({"objective": "x", "completion_criteria": criteria,
                        "grading": {"text": false}})),
        )
        .await;

    // Assert
    assert_eq!(status.as_u16(), 201, "{run}");
    assert_eq!(run["completion_criteria"], criteria);
    assert_eq!(run["grading"]["text"], false);
}
