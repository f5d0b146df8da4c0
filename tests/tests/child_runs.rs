//! Child runs: budgets carved from the parent's remainder, the parent sleeping until its
//! children end and reading their outcomes, cancellation taking the whole tree down, detached
//! children outliving their parent, and a parent's wait timing out.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use async_trait::async_trait;
use longrun_domain::change;
use longrun_domain::run::{BudgetsInput, RunStatus};
use longrun_http::{CreateRun, create_run};
use longrun_ports::Durability;
use longrun_ports::{ChatRequest, ChatResponse, LlmClient, LlmError};
use longrun_ports::{Clock, FaultPoint, Faults, NoFaults};
use longrun_tests::{CrashOnce, TestPlatform, platform_with_llm, scripted};

/// Parents and children follow different scripts: a child's id is `{parent}-c{n}-{k}`.
struct ByRole {
    parent: Arc<dyn LlmClient>,
    child: Arc<dyn LlmClient>,
}

#[async_trait]
impl LlmClient for ByRole {
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if req.run_id.contains("-c") {
            self.child.chat(req).await
        } else {
            self.parent.chat(req).await
        }
    }
}

const PARENT: &str = r#"{"planner": [
  {"content": {"status": {"exit_signal": false, "needs_user_input": false, "progress_summary": "split the work",
    "remaining_work": ["collect the parts"]},
    "tool_calls": [
      {"name": "spawn_run", "args": {"objective": "research green tea", "budgets": {"max_tokens": 400}}},
      {"name": "spawn_run", "args": {"objective": "research black tea", "budgets": {"max_tokens": 400}}},
      {"name": "spawn_run", "args": {"objective": "research oolong", "budgets": {"max_tokens": 400}}},
      {"name": "wait_for_children", "args": {}}]},
   "usage": {"input_tokens": 10, "output_tokens": 5}},
  {"content": {"status": {"exit_signal": true, "needs_user_input": false, "progress_summary": "merged the parts",
    "remaining_work": [], "completion_evidence": ["summary.md"]},
    "tool_calls": [{"name": "doc_write", "args": {"path": "summary.md", "content": "three teas"}}]},
   "usage": {"input_tokens": 10, "output_tokens": 5}}]}"#;

const CHILD_DONE: &str = r#"{"planner": [
  {"content": {"status": {"exit_signal": true, "needs_user_input": false, "progress_summary": "wrote part {{run_id}}",
    "remaining_work": [], "completion_evidence": ["part.md"]},
    "tool_calls": [{"name": "doc_write", "args": {"path": "part.md", "content": "a part"}}]},
   "usage": {"input_tokens": 20, "output_tokens": 10}}]}"#;

const CHILD_FOREVER: &str = r#"{"planner": [
  {"content": {"status": {"exit_signal": false, "needs_user_input": false, "progress_summary": "note {{iteration}}",
    "remaining_work": ["more"]},
    "tool_calls": [{"name": "doc_write", "args": {"path": "n{{iteration}}.md", "content": "n"}}]},
   "usage": {"input_tokens": 2, "output_tokens": 1}}]}"#;

fn tree(child: &str) -> TestPlatform {
    tree_with_faults(PARENT, child, Arc::new(NoFaults))
}

fn tree_with_faults(parent: &str, child: &str, faults: Arc<dyn Faults>) -> TestPlatform {
    let llm = Arc::new(ByRole {
        parent: scripted(parent),
        child: scripted(child),
    });
    platform_with_llm(llm, faults, &[("tok-alice", "alice")], 2, |_| {})
}

async fn start(t: &TestPlatform) -> String {
    create_run(t.p(), "alice", start_request())
        .await
        .unwrap()
        .id
}

fn start_request() -> CreateRun {
    CreateRun {
        agent: None,
        objective: "compare three teas".into(),
        completion_criteria: vec![],
        grading: None,
        budgets: BudgetsInput {
            max_tokens: Some(1_000),
            ..Default::default()
        },
        thresholds: None,
        model: None,
        permission_mode: None,
        models: vec![],
        allowed_tools: None,
        context: None,
        scope: None,
        project_ids: None,
    }
}

/// Polls the worker until the run has ended and its outcome went out.
async fn settle(t: &TestPlatform, id: &str) -> longrun_domain::Run {
    for _ in 0..300 {
        let run = t.p().store.get_run(id).await.unwrap().unwrap();
        if run.status.is_ended() && run.notified {
            return run;
        }
        t.running.worker.poll_once().await.unwrap();
    }
    panic!("{id} did not end");
}

#[tokio::test]
async fn three_children_share_the_parents_remainder_and_their_outcomes_wake_it() {
    // Arrange
    let t = tree(CHILD_DONE);
    let id = start(&t).await;

    // Act
    let parent = settle(&t, &id).await;

    // Assert
    assert_eq!(
        parent.status,
        RunStatus::Completed,
        "{:?}",
        parent.stopping_reason
    );
    assert_eq!(parent.children.len(), 3);
    let carved: u64 = parent
        .children
        .iter()
        .map(|c| t.p().store.get_run(&c.id))
        .collect::<futures_util::future::JoinAll<_>>()
        .await
        .into_iter()
        .map(|r| r.unwrap().unwrap().budgets.max_tokens.unwrap())
        .sum();
    assert!(
        carved <= 1_000 - 15,
        "children got {carved} tokens; the parent had 985 left after its first call"
    );
    for c in &parent.children {
        let child = t.p().store.get_run(&c.id).await.unwrap().unwrap();
        assert_eq!(child.status, RunStatus::Completed);
        assert_eq!(child.parent_run_id.as_deref(), Some(id.as_str()));
        assert_eq!(child.depth, 1);
    }
    let report = parent.report.unwrap();
    assert_eq!(report.children.len(), 3, "the report lists the children");
    assert!(
        report
            .children
            .iter()
            .all(|c| c.status == RunStatus::Completed
                && c.summary.as_deref().unwrap_or("").starts_with("wrote part"))
    );
    assert_eq!(
        parent.metrics.children_tokens,
        3 * 30,
        "children's spend is rolled up"
    );
    let woke = t.llm.planner_prompt(&id, 2).unwrap();
    assert_eq!(
        woke.matches("ended completed: wrote part").count(),
        3,
        "{woke}"
    );
    let events = t.p().store.events(&id, 0, 1_000).await.unwrap();
    let finished = events
        .iter()
        .filter(|e| e.kind == longrun_domain::EventKind::ChildFinished)
        .count();
    assert_eq!(
        finished, 3,
        "each child's outcome is in the parent's events"
    );
}

#[tokio::test]
async fn children_start_only_after_their_parents_commit_and_once_when_it_is_redelivered() {
    // Arrange: the worker dies twice in the parent's first iteration: before its commit (the
    // attempt's spawns are lost with it), then right after the retried attempt's commit.
    let faults = Arc::new(CrashOnce::new(vec![
        (FaultPoint::BeforeCommit, 1),
        (FaultPoint::AfterCommit, 1),
    ]));
    let t = tree_with_faults(PARENT, CHILD_DONE, faults.clone());
    let id = start(&t).await;
    let first_child = change::child_id(&id, 1, 1);
    let mut children_before_commit = None;

    // Act: poll, letting leases and visibility run out whenever the queue is idle.
    let mut parent = t.p().store.get_run(&id).await.unwrap().unwrap();
    for _ in 0..400 {
        parent = t.p().store.get_run(&id).await.unwrap().unwrap();
        if parent.status.is_ended() && parent.notified {
            break;
        }
        if faults.fired() == 1 && children_before_commit.is_none() {
            children_before_commit = Some(t.p().store.get_run(&first_child).await.unwrap());
        }
        if t.running.worker.poll_once().await.unwrap().received == 0 {
            t.clock.advance(31_000);
        }
    }

    // Assert
    assert_eq!(faults.fired(), 2, "both crashes happened");
    assert_eq!(
        children_before_commit,
        Some(None),
        "an attempt that never committed started no child"
    );
    assert_eq!(parent.status, RunStatus::Completed);
    assert_eq!(parent.children.len(), 3);
    for c in &parent.children {
        let child = t.p().store.get_run(&c.id).await.unwrap().unwrap();
        assert_eq!(child.status, RunStatus::Completed, "{}", c.id);
        let created = t
            .p()
            .store
            .events(&c.id, 0, 1_000)
            .await
            .unwrap()
            .iter()
            .filter(|e| e.kind == longrun_domain::EventKind::RunCreated)
            .count();
        assert_eq!(created, 1, "{} was created once", c.id);
    }
}

#[tokio::test]
async fn canceling_the_parent_cancels_every_child_within_one_iteration() {
    // Arrange: the parent waits on three children that would never finish.
    let t = tree(CHILD_FOREVER);
    let id = start(&t).await;
    for _ in 0..60 {
        t.running.worker.poll_once().await.unwrap();
        let parent = t.p().store.get_run(&id).await.unwrap().unwrap();
        let mut working = parent.children.len() == 3;
        for c in &parent.children {
            working &= t.p().store.get_run(&c.id).await.unwrap().unwrap().iteration >= 1;
        }
        if working {
            break;
        }
    }
    let parent = t.p().store.get_run(&id).await.unwrap().unwrap();
    assert_eq!(parent.status, RunStatus::WaitingOnChildren);
    let mut at_cancel = vec![];
    for c in &parent.children {
        let child = t.p().store.get_run(&c.id).await.unwrap().unwrap();
        assert!(child.iteration >= 1, "children were working");
        at_cancel.push((c.id.clone(), child.iteration));
    }

    // Act
    let docs = t.p().store.docs(&id, "", 100).await.unwrap();
    let now = t.clock.now_ms();
    let canceled = t
        .p()
        .store
        .update_run(&id, Durability::Now, &|r| {
            change::request_cancel(r, &docs, now)
        })
        .await
        .unwrap();
    t.p().follow_up.send(&canceled).await.unwrap();
    for (child, _) in &at_cancel {
        settle(&t, child).await;
    }

    // Assert
    for (child, iteration) in at_cancel {
        let c = t.p().store.get_run(&child).await.unwrap().unwrap();
        assert_eq!(c.status, RunStatus::Canceled, "{child}");
        assert!(
            c.iteration <= iteration + 1,
            "{child} ran on: {} > {iteration} + 1",
            c.iteration
        );
    }
    let parent = t.p().store.get_run(&id).await.unwrap().unwrap();
    assert_eq!(parent.status, RunStatus::Canceled);
    assert!(
        parent
            .children
            .iter()
            .all(|c| c.status == RunStatus::Canceled)
    );
}

#[test]
fn a_childs_budget_never_exceeds_what_the_parent_has_left() {
    use longrun_domain::run::{Budgets, Run, Thresholds, carve_child_budgets};
    let mut parent = Run::new(
        "p",
        "alice",
        "o",
        "m",
        Budgets {
            max_tokens: Some(1_000),
            max_cost_usd: Some(1.0),
            ..Budgets::default()
        },
        Thresholds::default(),
        0,
    );
    parent.metrics.input_tokens = 100;
    parent.metrics.cost_usd = 0.25;
    let ask = |t: i64| BudgetsInput {
        max_tokens: Some(t),
        ..Default::default()
    };

    let first = carve_child_budgets(&parent, &[], &ask(600), &Budgets::default()).unwrap();
    let second = carve_child_budgets(
        &parent,
        std::slice::from_ref(&first),
        &ask(600),
        &Budgets::default(),
    )
    .unwrap();
    let third = carve_child_budgets(
        &parent,
        &[first.clone(), second.clone()],
        &ask(10),
        &Budgets::default(),
    );

    assert_eq!(first.max_tokens, Some(600));
    assert_eq!(second.max_tokens, Some(300), "capped at the remainder");
    assert!(third.is_err(), "nothing left: {third:?}");
    assert_eq!(
        first.max_cost_usd,
        Some(0.375),
        "unasked limits get half the remainder"
    );
    assert_eq!(second.max_cost_usd, Some(0.1875));
}

#[tokio::test]
async fn a_spawn_past_the_configured_depth_is_a_tool_error_and_nothing_starts() {
    // Arrange: this deployment allows no nesting at all.
    let llm = Arc::new(ByRole {
        parent: scripted(PARENT),
        child: scripted(CHILD_DONE),
    });
    let t = platform_with_llm(llm, Arc::new(NoFaults), &[("tok-alice", "alice")], 2, |c| {
        c.max_run_depth = 0;
    });
    let id = start(&t).await;

    // Act
    let parent = settle(&t, &id).await;

    // Assert
    let it1 = t.p().store.iterations(&id, 0, 1).await.unwrap().remove(0);
    assert!(
        it1.tool_results[0]
            .result
            .contains("runs may nest at most 0 deep"),
        "{:?}",
        it1.tool_results[0]
    );
    assert!(parent.children.is_empty());
    assert_eq!(parent.status, RunStatus::Completed);
}

const PARENT_DETACHES: &str = r#"{"planner": [
  {"content": {"status": {"exit_signal": true, "needs_user_input": false, "progress_summary": "handed off the archive",
    "remaining_work": [], "completion_evidence": ["summary.md"]},
    "tool_calls": [
      {"name": "spawn_run", "args": {"objective": "archive the tea notes", "detached": true,
        "budgets": {"max_iterations": 3, "max_tokens": 400}}},
      {"name": "doc_write", "args": {"path": "summary.md", "content": "archive handed off"}}]},
   "usage": {"input_tokens": 10, "output_tokens": 5}}]}"#;

#[tokio::test]
async fn a_detached_child_outlives_its_parents_end_on_its_own_budget_and_stays_in_its_lineage() {
    // Arrange: the parent completes in the iteration that spawns a child that never finishes
    // by itself.
    let t = tree_with_faults(PARENT_DETACHES, CHILD_FOREVER, Arc::new(NoFaults));
    let id = start(&t).await;

    // Act
    let parent = settle(&t, &id).await;
    let child_id = parent.children[0].id.clone();
    let at_parents_end = t.p().store.get_run(&child_id).await.unwrap().unwrap();
    let child = settle(&t, &child_id).await;
    let parent_after = t.p().store.get_run(&id).await.unwrap().unwrap();

    // Assert
    assert_eq!(
        parent.status,
        RunStatus::Completed,
        "{:?}",
        parent.stopping_reason
    );
    assert!(parent.children[0].detached);
    assert!(
        !at_parents_end.status.is_ended(),
        "the parent's end left it running: {}",
        at_parents_end.status
    );
    assert_eq!(child.parent_run_id.as_deref(), Some(id.as_str()));
    assert_eq!(child.depth, 1);
    assert_eq!(child.status, RunStatus::Stopped, "it ran to its own budget");
    assert_eq!(child.iteration, 3);
    assert_eq!(
        parent_after.children[0].status,
        RunStatus::Stopped,
        "its end is recorded in its parent's lineage"
    );
    assert_eq!(parent_after.status, RunStatus::Completed);
}

const PARENT_WAITS: &str = r#"{"planner": [
  {"content": {"status": {"exit_signal": false, "needs_user_input": false, "progress_summary": "split the work",
    "remaining_work": ["collect the part"]},
    "tool_calls": [
      {"name": "spawn_run", "args": {"objective": "research pu-erh", "budgets": {"max_iterations": 40, "max_tokens": 400}}},
      {"name": "wait_for_children", "args": {}}]},
   "usage": {"input_tokens": 10, "output_tokens": 5}},
  {"content": {"status": {"exit_signal": true, "needs_user_input": false, "progress_summary": "went on without it",
    "remaining_work": [], "completion_evidence": ["summary.md"]},
    "tool_calls": [{"name": "doc_write", "args": {"path": "summary.md", "content": "without pu-erh"}}]},
   "usage": {"input_tokens": 10, "output_tokens": 5}}]}"#;

#[tokio::test]
async fn a_parent_whose_wait_times_out_goes_on_and_its_next_prompt_names_the_child_still_running() {
    // Arrange: a one-minute wait for a child that never finishes by itself.
    let t = tree_with_faults(PARENT_WAITS, CHILD_FOREVER, Arc::new(NoFaults));
    let mut req = start_request();
    req.thresholds = Some(longrun_domain::run::Thresholds {
        child_wait_timeout_s: 60,
        ..Default::default()
    });
    let id = create_run(t.p(), "alice", req).await.unwrap().id;
    let mut parent = t.p().store.get_run(&id).await.unwrap().unwrap();
    for _ in 0..60 {
        parent = t.p().store.get_run(&id).await.unwrap().unwrap();
        if parent.status == RunStatus::WaitingOnChildren {
            break;
        }
        t.running.worker.poll_once().await.unwrap();
    }
    assert_eq!(parent.status, RunStatus::WaitingOnChildren);
    let child_id = parent.children[0].id.clone();

    // Act
    let early = t.p().follow_up.wake_waits(10).await.unwrap();
    t.clock.advance(61_000);
    let woken = t.p().follow_up.wake_waits(10).await.unwrap();
    let parent = settle(&t, &id).await;
    let child = t.p().store.get_run(&child_id).await.unwrap().unwrap();

    // Assert
    assert!(early.is_empty(), "not before the timeout");
    assert_eq!(woken, vec![id.clone()]);
    assert_eq!(
        parent.status,
        RunStatus::Completed,
        "{:?}",
        parent.stopping_reason
    );
    let prompt = t.llm.planner_prompt(&id, 2).unwrap();
    assert!(prompt.contains("timed out"), "{prompt}");
    assert!(prompt.contains(&child_id), "{prompt}");
    let events = t.p().store.events(&id, 0, 1_000).await.unwrap();
    let timed_out = events
        .iter()
        .find(|e| e.kind == longrun_domain::EventKind::ChildWaitTimedOut)
        .expect("the timeout is in the parent's log");
    assert_eq!(
        timed_out.payload["still_running"],
        serde_json::json!([child_id])
    );
    assert!(timed_out.payload["waited_ms"].as_i64().unwrap() >= 60_000);
    assert!(parent.children[0].detached, "left running on its own");
    assert_ne!(
        child.status,
        RunStatus::Canceled,
        "the parent's end did not take it down"
    );
}
