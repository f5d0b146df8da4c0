//! The worker crashes at every step boundary and messages are redelivered (or delivered twice):
//! every iteration is still committed exactly once, the event log stays gapless, and the books
//! match the model calls actually made.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use async_trait::async_trait;
use longrun_domain::StopType;
use longrun_domain::run::RunStatus;
use longrun_engine::EngineConfig;
use longrun_http::{AppConfig, Tokens, create_run};
use longrun_local::{RecordingNotifier, SqliteDb, SqliteRunStore, SqliteStepQueue};
use longrun_ports::Durability;
use longrun_ports::{
    Clock, Delivery, Enqueued, FaultPoint, ManualClock, NoFaults, QueueError, StepMessage,
    StepQueue,
};
use longrun_service::WorkerConfig;
use longrun_tests::{
    CountingLlm, CrashOnce, MODEL, NOTES_SCRIPT, TestPlatform, assert_gapless,
    assert_iterations_once, platform, scripted,
};

async fn start(t: &TestPlatform) -> String {
    let req = longrun_http::CreateRun {
        agent: None,
        objective: "write notes".into(),
        completion_criteria: vec![],
        grading: None,
        budgets: Default::default(),
        thresholds: None,
        permission_mode: None,
        models: vec![],
        model: None,
        allowed_tools: None,
        context: None,
        scope: None,
        project_ids: None,
    };
    create_run(t.p(), "alice", req).await.unwrap().id
}

async fn assert_books(t: &TestPlatform, run_id: &str) {
    let run = t.drive(run_id, 400).await;
    assert_eq!(
        run.status,
        RunStatus::Completed,
        "{:?}",
        run.stopping_reason
    );
    assert_eq!(
        run.stopping_reason.as_ref().unwrap().kind,
        StopType::Completed
    );
    assert_iterations_once(&*t.p().store, &run).await;
    assert_gapless(&*t.p().store, &run).await;
    assert_eq!(
        run.metrics.tokens(),
        t.llm.tokens.load(std::sync::atomic::Ordering::SeqCst),
        "tokens = the model calls actually made"
    );
    assert_eq!(
        run.metrics.llm_calls,
        t.llm.calls.load(std::sync::atomic::Ordering::SeqCst)
    );
    let cost_events: u64 = t
        .p()
        .store
        .events(run_id, 0, 10_000)
        .await
        .unwrap()
        .iter()
        .filter(|e| e.kind == longrun_domain::EventKind::IterationCostUpdate)
        .count() as u64;
    assert_eq!(
        cost_events, run.metrics.llm_calls,
        "one live cost event per call"
    );
    assert_eq!(
        t.p().store.active_runs("alice").await.unwrap(),
        0,
        "the slot is released once"
    );
    // The inbox is written before the run is marked notified, so it is there already.
    let notes = t.p().store.notifications("alice", 10).await.unwrap();
    assert_eq!(notes.len(), 1, "one notification per outcome");
    assert!(notes[0].link.ends_with(&format!("/runs/{run_id}")));
}

async fn crash_test(points: Vec<(FaultPoint, u32)>) {
    let faults = Arc::new(CrashOnce::new(points.clone()));
    // Nothing runs in the background; the test drives the worker.
    let t = platform(NOTES_SCRIPT, faults.clone(), &[], 5);
    let id = start(&t).await;
    assert_books(&t, &id).await;
    assert_eq!(faults.fired(), points.len(), "every planned crash happened");
}

#[tokio::test]
async fn a_crash_after_the_claim_is_recovered_once_the_lease_expires() {
    crash_test(vec![
        (FaultPoint::AfterClaim, 1),
        (FaultPoint::AfterClaim, 3),
    ])
    .await;
}

#[tokio::test]
async fn a_crash_after_a_model_call_keeps_its_spend_and_redoes_the_work() {
    crash_test(vec![
        (FaultPoint::AfterLlmCall, 2),
        (FaultPoint::AfterLlmCall, 4),
    ])
    .await;
}

#[tokio::test]
async fn a_crash_after_commit_before_enqueue_is_healed_by_redelivery() {
    crash_test(vec![
        (FaultPoint::AfterCommit, 2),
        (FaultPoint::AfterCommit, 5),
    ])
    .await;
}

#[tokio::test]
async fn a_crash_after_enqueue_before_ack_does_not_double_an_iteration() {
    crash_test(vec![
        (FaultPoint::AfterEnqueue, 1),
        (FaultPoint::AfterEnqueue, 4),
    ])
    .await;
}

#[tokio::test]
async fn crashes_at_every_boundary_in_one_run_still_finish_exactly_once() {
    crash_test(vec![
        (FaultPoint::AfterClaim, 1),
        (FaultPoint::AfterLlmCall, 2),
        (FaultPoint::AfterCommit, 2),
        (FaultPoint::AfterEnqueue, 3),
        // The script answers by iteration, so the redone attempts above replay theirs and
        // iteration 6 is the final one: this crash lands between the terminal commit and the
        // outcome notification.
        (FaultPoint::AfterCommit, 6),
    ])
    .await;
}

/// Sends every message twice under different dedup ids, as a redelivery after the 5-minute
/// dedup window would.
struct TwiceQueue(Arc<dyn StepQueue>);

#[async_trait]
impl StepQueue for TwiceQueue {
    async fn enqueue(
        &self, msg: &StepMessage, dedup_id: &str, delay_ms: u64, durability: Durability,
    ) -> Result<Enqueued, QueueError> {
        let first = self.0.enqueue(msg, dedup_id, delay_ms, durability).await?;
        self.0
            .enqueue(msg, &format!("{dedup_id}#again"), delay_ms, durability)
            .await?;
        Ok(first)
    }
    async fn receive(&self, max: usize, visibility_ms: u64) -> Result<Vec<Delivery>, QueueError> {
        self.0.receive(max, visibility_ms).await
    }
    async fn ack(&self, receipt: &str) -> Result<(), QueueError> {
        self.0.ack(receipt).await
    }
    async fn extend(&self, receipt: &str, visibility_ms: u64) -> Result<(), QueueError> {
        self.0.extend(receipt, visibility_ms).await
    }
}

#[tokio::test]
async fn every_message_delivered_twice_commits_each_iteration_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = SqliteDb::open(&dir.path().join("t.sqlite3")).unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let inner: Arc<dyn StepQueue> = Arc::new(SqliteStepQueue::new(db.clone(), clock.clone()));
    let llm = Arc::new(CountingLlm::new(scripted(NOTES_SCRIPT)));
    let notifier = Arc::new(RecordingNotifier::default());
    let platform = longrun_wiring::assemble(
        Arc::new(SqliteRunStore::new(db)),
        Arc::new(TwiceQueue(inner)),
        notifier.clone(),
        llm.clone(),
        AppConfig::new(Tokens::default(), vec![MODEL.into()]).unwrap(),
        &Default::default(),
        clock.clone() as Arc<dyn Clock>,
        Arc::new(NoFaults),
        EngineConfig::default(),
        None,
    )
    .unwrap();
    let running = longrun_wiring::Running::new(platform, WorkerConfig::default());
    let t = TestPlatform {
        running,
        clock,
        llm,
        dir,
    };
    let id = start(&t).await;
    let run = t.drive(&id, 400).await;
    assert_eq!(run.status, RunStatus::Completed);
    assert_iterations_once(&*t.p().store, &run).await;
    assert_gapless(&*t.p().store, &run).await;
    assert_eq!(
        run.metrics.tokens(),
        t.llm.tokens.load(std::sync::atomic::Ordering::SeqCst)
    );
    assert_eq!(
        notifier.published.lock().unwrap().len(),
        1,
        "the outcome is published once"
    );
}

#[tokio::test]
async fn start_up_recovery_resends_a_lost_step_and_a_lost_outcome() {
    let t = platform(NOTES_SCRIPT, Arc::new(NoFaults), &[], 5);
    // A run whose first message was lost: created, never enqueued.
    let run = longrun_tests::new_run("lost", "alice", 1);
    t.p()
        .store
        .create_run(longrun_domain::change::create(run, 5))
        .await
        .unwrap();
    assert_eq!(t.running.recover().await.unwrap(), 1);
    let done = t.drive("lost", 400).await;
    assert_eq!(done.status, RunStatus::Completed);
    assert_iterations_once(&*t.p().store, &done).await;
    // Nothing is left to recover, and a second pass changes nothing.
    assert_eq!(t.running.recover().await.unwrap(), 0);
}

#[tokio::test]
async fn a_restart_resumes_an_iteration_the_gone_process_had_in_flight_at_once() {
    // Arrange: a worker received iteration 1, wrote its claim and died.
    let faults = Arc::new(CrashOnce::new(vec![(FaultPoint::AfterClaim, 1)]));
    let t = platform(NOTES_SCRIPT, faults, &[], 5);
    let id = start(&t).await;
    let d = t.p().queue.receive(1, 30_000).await.unwrap().pop().unwrap();
    let msg = StepMessage::parse(&d.body).unwrap();
    assert!(t.p().engine.step(&msg, "gone-worker").await.is_err());
    assert!(t.p().queue.receive(1, 30_000).await.unwrap().is_empty());

    // Act: start-up recovery, with no time passing.
    t.running.recover().await.unwrap();

    // Assert: the message is back and a new worker may claim the iteration now.
    let again = t.p().queue.receive(1, 30_000).await.unwrap().pop().unwrap();
    let msg = StepMessage::parse(&again.body).unwrap();
    assert_eq!(
        t.p().engine.step(&msg, "new-worker").await.unwrap(),
        longrun_engine::StepOutcome::Done
    );
    let run = t.p().store.get_run(&id).await.unwrap().unwrap();
    assert_eq!(run.iteration, 1);
}

fn unavailable(e: impl std::fmt::Display) -> longrun_ports::StoreError {
    longrun_ports::StoreError::Unavailable(e.to_string())
}

#[tokio::test]
async fn a_step_lost_with_a_rolled_back_group_is_sent_again_without_a_restart() {
    // Arrange: the healer watches the database; a run's next step is lost, and a write that
    // fails half-way rolls its group back (what loses unacknowledged writes in a live process).
    let t = platform(NOTES_SCRIPT, Arc::new(NoFaults), &[], 5);
    let (_stop, rx) = tokio::sync::watch::channel(false);
    let _healer = t
        .running
        .spawn_healer(std::time::Duration::from_millis(10), rx)
        .unwrap();
    let id = start(&t).await;
    let db = t.running.db.clone().unwrap();
    db.write(|c| c.execute("DELETE FROM queue", []).map_err(unavailable))
        .await
        .unwrap();
    let failed = db
        .write(|c| {
            c.execute("INSERT INTO active (user_id, count) VALUES ('x', 0)", [])
                .map_err(unavailable)?;
            Err::<(), _>(longrun_ports::StoreError::Unavailable("disk full".into()))
        })
        .await;
    assert!(failed.is_err());

    // Act: wait (real time) for the healer to send the step again.
    let mut queued = 0;
    for _ in 0..500 {
        queued = db
            .read(|c| c.query_row("SELECT count(*) FROM queue", [], |r| r.get::<_, i64>(0)))
            .await
            .unwrap();
        if queued > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }

    // Assert
    assert_eq!(queued, 1, "the healer must re-send the lost step");
    let done = t.drive(&id, 400).await;
    assert_eq!(done.status, RunStatus::Completed);
    assert_iterations_once(&*t.p().store, &done).await;
}

/// Forwards to a queue and records every delivery: its run, and whether it was handed back
/// with an ack (a worker carrying its run on) rather than by a receive.
struct Recording {
    inner: Arc<dyn StepQueue>,
    seen: std::sync::Mutex<Vec<(String, bool)>>,
}

impl Recording {
    fn note(&self, d: &Delivery, carried: bool) {
        let run = StepMessage::parse(&d.body).unwrap().run_id;
        self.seen.lock().unwrap().push((run, carried));
    }

    fn seen(&self) -> Vec<(String, bool)> {
        self.seen.lock().unwrap().clone()
    }
}

#[async_trait]
impl StepQueue for Recording {
    async fn enqueue(
        &self, msg: &StepMessage, dedup_id: &str, delay_ms: u64, durability: Durability,
    ) -> Result<Enqueued, QueueError> {
        self.inner
            .enqueue(msg, dedup_id, delay_ms, durability)
            .await
    }
    async fn receive(&self, max: usize, visibility_ms: u64) -> Result<Vec<Delivery>, QueueError> {
        let got = self.inner.receive(max, visibility_ms).await?;
        got.iter().for_each(|d| self.note(d, false));
        Ok(got)
    }
    async fn ack(&self, receipt: &str) -> Result<(), QueueError> {
        self.inner.ack(receipt).await
    }
    async fn ack_and_next(
        &self, receipt: &str, send: Option<&StepMessage>, visibility_ms: u64,
    ) -> Result<Option<Delivery>, QueueError> {
        let next = self
            .inner
            .ack_and_next(receipt, send, visibility_ms)
            .await?;
        next.iter().for_each(|d| self.note(d, true));
        Ok(next)
    }
    async fn extend(&self, receipt: &str, visibility_ms: u64) -> Result<(), QueueError> {
        self.inner.extend(receipt, visibility_ms).await
    }
}

/// The embedded platform on SQLite with its queue recorded, driven by the worker loop `serve`
/// runs (not one poll at a time).
fn served(faults: Arc<CrashOnce>, worker: WorkerConfig) -> (TestPlatform, Arc<Recording>) {
    let dir = tempfile::tempdir().unwrap();
    let db = SqliteDb::open(&dir.path().join("t.sqlite3")).unwrap();
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let queue = Arc::new(Recording {
        inner: Arc::new(SqliteStepQueue::new(db.clone(), clock.clone())),
        seen: Default::default(),
    });
    let llm = Arc::new(CountingLlm::new(scripted(NOTES_SCRIPT)));
    let platform = longrun_wiring::assemble(
        Arc::new(SqliteRunStore::new(db)),
        queue.clone(),
        Arc::new(RecordingNotifier::default()),
        llm.clone(),
        AppConfig::new(Tokens::default(), vec![MODEL.into()]).unwrap(),
        &Default::default(),
        clock.clone() as Arc<dyn Clock>,
        faults,
        EngineConfig {
            lease_ms: 30_000,
            ..Default::default()
        },
        None,
    )
    .unwrap();
    let running = longrun_wiring::Running::new(platform, worker);
    let t = TestPlatform {
        running,
        clock,
        llm,
        dir,
    };
    (t, queue)
}

/// Runs the worker loop until every run in `ids` has ended and been notified. When nothing
/// moves for a while, the manual clock jumps past the lease and visibility timeouts, as time
/// passes after a crash.
async fn serve_until_ended(t: &TestPlatform, ids: &[&str]) {
    let (stop, rx) = tokio::sync::watch::channel(false);
    let worker = tokio::spawn(t.running.worker.clone().run(rx));
    let (mut last, mut still) = (0, 0);
    for _ in 0..4_000 {
        let mut done = 0;
        let mut progress = 0;
        for id in ids {
            let run = t.p().store.get_run(id).await.unwrap().unwrap();
            progress += run.iteration + run.event_seq as u32;
            done += usize::from(run.status.is_ended() && run.notified);
        }
        if done == ids.len() {
            stop.send(true).unwrap();
            worker.await.unwrap();
            return;
        }
        still = if progress == last { still + 1 } else { 0 };
        last = progress;
        if still == 100 {
            t.clock.advance(31_000);
            still = 0;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!("the runs did not end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_alone_is_carried_on_by_its_worker_after_one_receive() {
    // Arrange
    let (t, queue) = served(Arc::new(CrashOnce::new(vec![])), WorkerConfig::default());
    let id = start(&t).await;

    // Act
    serve_until_ended(&t, &[&id]).await;

    // Assert
    let run = t.p().store.get_run(&id).await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Completed);
    assert_iterations_once(&*t.p().store, &run).await;
    let seen = queue.seen();
    assert_eq!(seen.len(), run.iteration as usize, "{seen:?}");
    assert!(!seen[0].1, "the first step comes by a receive");
    assert!(
        seen[1..].iter().all(|(_, carried)| *carried),
        "every later step is handed back with the ack: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_one_slot_two_users_runs_take_turns_rather_than_one_carrying_on() {
    // Arrange
    let one_slot = WorkerConfig {
        max_inflight: 1,
        batch: 1,
        ..WorkerConfig::default()
    };
    let (t, queue) = served(Arc::new(CrashOnce::new(vec![])), one_slot);
    let alice = start(&t).await;
    let mut req = longrun_tests::run_request("write notes", Default::default());
    req.objective = "write notes too".into();
    let bob = create_run(t.p(), "bob", req).await.unwrap().id;

    // Act
    serve_until_ended(&t, &[&alice, &bob]).await;

    // Assert: while both have steps, no run has two in a row, and none is carried on.
    let seen = queue.seen();
    let last = |id: &str| seen.iter().rposition(|(r, _)| r == id).unwrap();
    let both = last(&alice).min(last(&bob));
    assert!(both >= 3, "{seen:?}");
    for pair in seen[..=both].windows(2) {
        assert_ne!(pair[0].0, pair[1].0, "a run went twice in a row: {seen:?}");
        assert!(!pair[1].1, "carried on while the other waited: {seen:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_in_a_step_carried_on_is_redelivered_and_each_iteration_lands_once() {
    // Arrange: iteration 2 comes back with iteration 1's ack; the worker dies in it twice.
    let faults = Arc::new(CrashOnce::new(vec![
        (FaultPoint::AfterClaim, 2),
        (FaultPoint::AfterCommit, 3),
    ]));
    let (t, queue) = served(faults.clone(), WorkerConfig::default());
    let id = start(&t).await;

    // Act
    serve_until_ended(&t, &[&id]).await;

    // Assert
    assert_eq!(faults.fired(), 2);
    let run = t.p().store.get_run(&id).await.unwrap().unwrap();
    assert_eq!(run.status, RunStatus::Completed);
    assert_iterations_once(&*t.p().store, &run).await;
    assert_gapless(&*t.p().store, &run).await;
    assert_eq!(
        run.metrics.llm_calls,
        t.llm.calls.load(std::sync::atomic::Ordering::SeqCst),
        "the books match the calls made"
    );
    assert!(queue.seen().iter().any(|(_, carried)| *carried));
}

/// A write the user must approve, then a completion claim.
const APPROVED_WRITE: &str = r#"{"planner": [
  {"content": {"status": {"exit_signal": false, "needs_user_input": false, "progress_summary": "drafting",
    "remaining_work": ["finish"]},
    "tool_calls": [{"name": "doc_write", "args": {"path": "keep.md", "content": "keep me"}}]}},
  {"content": {"status": {"exit_signal": true, "needs_user_input": false, "progress_summary": "done",
    "remaining_work": [], "completion_evidence": ["keep.md"]}}}]}"#;

#[tokio::test]
async fn an_approved_write_is_not_made_by_a_redelivery_that_sees_the_cancel() {
    // Arrange: the user approves the held write; the iteration that makes it crashes before
    // its commit, and the user cancels while it is stranded.
    let t = platform(
        APPROVED_WRITE,
        Arc::new(CrashOnce::new(vec![(FaultPoint::BeforeCommit, 2)])),
        &[],
        5,
    );
    let mut req = longrun_tests::run_request("draft", Default::default());
    req.permission_mode = Some(longrun_domain::run::PermissionMode::PerWrite);
    let id = create_run(t.p(), "alice", req).await.unwrap().id;
    t.drive(&id, 100).await;
    let decision = longrun_domain::change::CallDecision {
        id: "c1.1".into(),
        approve: true,
        reason: None,
    };
    let approval = longrun_domain::change::Approval {
        approve: None,
        decisions: vec![decision],
    };
    longrun_http::api::respond_run(t.p(), "alice", &id, "", approval)
        .await
        .unwrap();
    for _ in 0..10 {
        if t.running.worker.poll_once().await.unwrap().received > 0 {
            break;
        }
    }
    let stranded = t.p().store.get_run(&id).await.unwrap().unwrap();
    assert_eq!(
        stranded.status,
        RunStatus::Running,
        "the crash left it claimed"
    );

    // Act
    longrun_http::api::cancel_run(t.p(), "alice", &id)
        .await
        .unwrap();
    let run = t.drive(&id, 200).await;

    // Assert
    assert_eq!(run.status, RunStatus::Canceled);
    let docs = t.p().store.docs(&id, "", 10).await.unwrap();
    assert!(
        docs.is_empty(),
        "nothing written after the cancel: {docs:?}"
    );
}
