//! The report a person reads: a narrative from one final model call, priced and counted in the
//! run's spend, made once per committed end; a narrative from the records, saying why, when no
//! model may or can write it.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use async_trait::async_trait;

use longrun_domain::BudgetsInput;
use longrun_domain::report::{NarrativeSource, Relationship};
use longrun_domain::run::{RunStatus, StopType};
use longrun_http::create_run;
use longrun_ports::{ChatRequest, ChatResponse, LlmClient, LlmError, LlmRole};
use longrun_ports::{FaultPoint, Faults, NoFaults};
use longrun_tests::{CrashOnce, TestPlatform, platform, platform_with_llm, run_request, scripted};

const DONE: &str = r#"{"content": {"status": {"exit_signal": true, "needs_user_input": false,
    "progress_summary": "wrote the answer", "remaining_work": [], "completion_evidence": ["a.md"]},
  "tool_calls": [{"name": "doc_write", "args": {"path": "a.md", "content": "the answer"}}]},
  "usage": {"input_tokens": 100, "output_tokens": 10}}"#;

const GOING: &str = r#"{"content": {"status": {"exit_signal": false, "needs_user_input": false,
    "progress_summary": "still working", "remaining_work": ["more"]},
  "tool_calls": [{"name": "doc_write", "args": {"path": "n{{iteration}}.md", "content": "x"}}]},
  "usage": {"input_tokens": 100, "output_tokens": 50}}"#;

fn script(planner: &str, reporter: &str) -> String {
    format!(r#"{{"planner": [{planner}], "reporter": [{reporter}]}}"#)
}

fn answer(text: &str) -> String {
    format!(r#"{{"content": "{text}", "usage": {{"input_tokens": 40, "output_tokens": 20}}}}"#)
}

async fn run_to_end(
    script: &str, faults: Arc<dyn Faults>, budgets: BudgetsInput,
) -> (TestPlatform, longrun_domain::run::Run) {
    let t = platform(script, faults, &[("tok-alice", "alice")], 5);
    let id = create_run(t.p(), "alice", run_request("answer the question", budgets))
        .await
        .unwrap()
        .id;
    let run = t.drive(&id, 200).await;
    (t, run)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completed_run_reports_a_narrative_from_one_final_model_call_counted_in_its_spend() {
    // Arrange
    let script = script(
        DONE,
        &answer("You asked a question. The run answered it in a.md."),
    );

    // Act
    let (t, run) = run_to_end(&script, Arc::new(NoFaults), Default::default()).await;

    // Assert: the narrative is the model's, and its call is in the run's and the record's books.
    assert_eq!(
        run.status,
        RunStatus::Completed,
        "{:?}",
        run.stopping_reason
    );
    let report = run.report.clone().unwrap();
    assert_eq!(report.summary_source, NarrativeSource::Model);
    assert_eq!(
        report.summary,
        "You asked a question. The run answered it in a.md."
    );
    assert_eq!(run.metrics.llm_calls, 2);
    assert_eq!(run.metrics.tokens(), 110 + 60);
    assert_eq!(
        report.metrics.total_tokens, 170,
        "the report counts the final call"
    );
    assert_eq!(report.headline, "wrote the answer");
    assert_eq!(report.title, "Complete: Answer the question");
    let supports: Vec<&str> = report
        .what_changed
        .linked
        .iter()
        .filter(|l| l.relationship == Relationship::Supports)
        .map(|l| l.from_id.as_str())
        .collect();
    assert_eq!(
        supports,
        vec!["a.md"],
        "the evidence's document supports the run"
    );
    let records = t.p().store.iterations(&run.id, 0, 10).await.unwrap();
    assert_eq!(records[0].metrics.llm_calls, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_its_token_budget_ended_gets_a_narrative_from_the_records_saying_so() {
    // Arrange: the first iteration spends 150 of 100 tokens.
    let script = script(GOING, &answer("never asked"));
    let budgets = BudgetsInput {
        max_tokens: Some(100),
        ..Default::default()
    };

    // Act
    let (t, run) = run_to_end(&script, Arc::new(NoFaults), budgets).await;

    // Assert: no final call was made; the narrative says what happened and why no model wrote it.
    assert_eq!(run.stopping_reason.as_ref().unwrap().kind, StopType::Budget);
    let r = run.report.unwrap();
    assert_eq!(r.summary_source, NarrativeSource::Records);
    let note = r.summary_note.unwrap();
    assert!(note.contains("budget that ended the run"), "{note}");
    assert!(r.summary.contains("answer the question"), "{}", r.summary);
    assert!(r.summary.contains("n1.md"), "{}", r.summary);
    assert_eq!(t.llm.calls.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_no_model_answers_the_final_call_the_narrative_comes_from_the_records() {
    // Arrange
    let script = script(
        DONE,
        r#"{"error": {"kind": "auth", "message": "key revoked"}}"#,
    );

    // Act
    let (_t, run) = run_to_end(&script, Arc::new(NoFaults), Default::default()).await;

    // Assert
    assert_eq!(run.status, RunStatus::Completed);
    let r = run.report.unwrap();
    assert_eq!(r.summary_source, NarrativeSource::Records);
    assert!(r.summary_note.unwrap().contains("no model answered"));
    assert!(r.summary.contains("wrote the answer"), "{}", r.summary);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redelivered_final_iteration_does_not_call_the_model_again() {
    // Arrange: the worker crashes after the final commit, before its follow-up.
    let script = script(DONE, &format!("{}, {}", answer("first"), answer("second")));
    let faults = Arc::new(CrashOnce::new(vec![(FaultPoint::AfterCommit, 1)]));

    // Act
    let (t, run) = run_to_end(&script, faults.clone(), Default::default()).await;

    // Assert: the redelivery healed the follow-up without a second final call.
    assert_eq!(faults.fired(), 1);
    assert_eq!(run.report.unwrap().summary, "first");
    assert_eq!(t.llm.calls.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert_eq!(run.metrics.llm_calls, 2);
}

/// A model whose narratives say which final call wrote them: a scripted model answers a
/// redone call as it answered the first, so only the count tells the two apart.
struct NumberedNarratives {
    inner: Arc<dyn LlmClient>,
    calls: AtomicU32,
}

#[async_trait]
impl LlmClient for NumberedNarratives {
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut resp = self.inner.chat(req).await?;
        if req.role == LlmRole::Reporter {
            let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
            resp.content = format!("{} (final call {n})", resp.content);
        }
        Ok(resp)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_final_iteration_redone_after_a_crash_commits_one_narrative_and_counts_both_calls() {
    // Arrange: the worker crashes after the final call, before the commit.
    let llm = Arc::new(NumberedNarratives {
        inner: scripted(&script(DONE, &answer("the answer"))),
        calls: AtomicU32::new(0),
    });
    let faults = Arc::new(CrashOnce::new(vec![(FaultPoint::BeforeCommit, 1)]));
    let t = platform_with_llm(llm, faults.clone(), &[("tok-alice", "alice")], 5, |_| {});
    let id = create_run(
        t.p(),
        "alice",
        run_request("answer the question", Default::default()),
    )
    .await
    .unwrap()
    .id;

    // Act
    let run = t.drive(&id, 200).await;

    // Assert: the redo wrote the committed narrative; every answered call is in the books.
    assert_eq!(faults.fired(), 1);
    assert_eq!(run.report.unwrap().summary, "the answer (final call 2)");
    let answered = t.llm.calls.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(answered, 4);
    assert_eq!(run.metrics.llm_calls, answered);
}
