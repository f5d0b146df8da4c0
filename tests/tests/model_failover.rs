//! A run over several models: rotation and failover inside the loop, attribution of every
//! call to the model that answered, and an iteration handed back when a model retry would
//! outlive the worker's deadline.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::Ordering;

use longrun_domain::record::EventKind;
use longrun_domain::run::RunStatus;
use longrun_engine::StepOutcome;
use longrun_http::{CreateRun, create_run};
use longrun_llm::{Backoff, ModelRouter, Script, ScriptedLlm};
use longrun_ports::LlmClient;
use longrun_ports::{NoFaults, StepMessage, StepReason};
use longrun_tests::{MODEL, NOTES_SCRIPT, TestPlatform, platform_with_llm};

const DOWN: &str = "script:down.json";

const ALWAYS_500: &str = r#"{"planner": [{"error": {"kind": "server", "message": "upstream 500"}}],
  "executor": [{"error": {"kind": "server", "message": "upstream 500"}}]}"#;

fn router(routes: &[(&str, &str)]) -> Arc<dyn LlmClient> {
    let mut r = ModelRouter::build(&[], &Default::default()).unwrap();
    for (spec, script) in routes {
        let name = spec.trim_start_matches("script:");
        let script = Script::parse(script, name).unwrap();
        r = r.with_client(
            spec,
            Arc::new(ScriptedLlm::new(name, script)),
            Backoff::SIMULATED,
        );
    }
    Arc::new(r)
}

fn platform_over(llm: Arc<dyn LlmClient>) -> TestPlatform {
    platform_with_llm(llm, Arc::new(NoFaults), &[], 5, |c| {
        c.models.push(DOWN.into());
        c.priced_models.clear();
    })
}

async fn start(t: &TestPlatform, models: &[&str]) -> String {
    let req = CreateRun {
        agent: None,
        objective: "write notes".into(),
        completion_criteria: vec![],
        grading: None,
        budgets: Default::default(),
        thresholds: None,
        model: None,
        models: models.iter().map(|m| m.to_string()).collect(),
        permission_mode: None,
        allowed_tools: None,
        context: None,
        scope: None,
        project_ids: None,
    };
    create_run(t.p(), "alice", req).await.unwrap().id
}

#[tokio::test]
async fn a_run_over_two_models_fails_over_and_books_every_call_to_the_model_that_answered() {
    // Arrange: the run's first model answers nothing but 500s.
    let t = platform_over(router(&[(DOWN, ALWAYS_500), (MODEL, NOTES_SCRIPT)]));
    let id = start(&t, &[DOWN, MODEL]).await;

    // Act
    let run = t.drive(&id, 400).await;

    // Assert: the run did its work on the healthy model, and only that model was booked.
    assert_eq!(
        run.status,
        RunStatus::Completed,
        "{:?}",
        run.stopping_reason
    );
    assert_eq!(run.models, vec![DOWN.to_string(), MODEL.to_string()]);
    assert_eq!(
        run.metrics.by_model.keys().collect::<Vec<_>>(),
        vec!["script:test.json"]
    );
    let booked = &run.metrics.by_model["script:test.json"];
    assert_eq!(booked.calls, t.llm.calls.load(Ordering::SeqCst));
    assert_eq!(run.metrics.tokens(), t.llm.tokens.load(Ordering::SeqCst));
}

#[tokio::test]
async fn models_outside_the_servers_list_are_refused_at_creation() {
    let t = platform_over(router(&[(MODEL, NOTES_SCRIPT)]));
    let req = CreateRun {
        agent: None,
        objective: "x".into(),
        completion_criteria: vec![],
        grading: None,
        budgets: Default::default(),
        thresholds: None,
        model: Some(MODEL.into()),
        models: vec!["openai:gpt-4.1".into()],
        permission_mode: None,
        allowed_tools: None,
        context: None,
        scope: None,
        project_ids: None,
    };
    let err = create_run(t.p(), "alice", req).await.unwrap_err();
    assert!(err.to_string().contains("first of models"), "{err}");

    let req = CreateRun {
        agent: None,
        objective: "x".into(),
        completion_criteria: vec![],
        grading: None,
        budgets: Default::default(),
        thresholds: None,
        model: None,
        models: vec![MODEL.into(), "openai:gpt-4.1".into()],
        permission_mode: None,
        allowed_tools: None,
        context: None,
        scope: None,
        project_ids: None,
    };
    let err = create_run(t.p(), "alice", req).await.unwrap_err();
    assert!(
        err.to_string().contains("openai:gpt-4.1` is not available"),
        "{err}"
    );
}

#[tokio::test]
async fn a_model_retry_past_the_deadline_hands_the_iteration_back_and_the_next_delivery_commits_it()
{
    // Arrange: the model is rate limited once, then answers.
    let flaky = NOTES_SCRIPT.replacen(
        r#""planner": ["#,
        r#""planner": [{"error": {"kind": "rate_limited", "message": "slow down"}},"#,
        1,
    );
    let t = platform_over(router(&[(MODEL, &flaky)]));
    let id = start(&t, &[]).await;
    let msg = StepMessage::new(&id, 1, StepReason::Start);

    // Act: a worker whose deadline has already passed.
    let outcome = t.p().engine.step_until(&msg, "w1", Some(0)).await.unwrap();

    // Assert: nothing committed, the claim given back, the reason on the log.
    let StepOutcome::Retry { delay_ms } = outcome else {
        panic!("expected a retry, got {outcome:?}");
    };
    assert!(delay_ms >= 1_000);
    let run = t.p().store.get_run(&id).await.unwrap().unwrap();
    assert_eq!(run.iteration, 0);
    assert!(run.lease.is_none(), "another worker may take it at once");
    let events = t.p().store.events(&id, 0, 100).await.unwrap();
    let deferred = events
        .iter()
        .find(|e| e.kind == EventKind::IterationDeferred)
        .expect("an iteration_deferred event");
    assert!(
        deferred.payload["reason"]
            .as_str()
            .unwrap()
            .contains("slow down")
    );

    // Act: another worker, with time to spare, gets the redelivery.
    let outcome = t.p().engine.step(&msg, "w2").await.unwrap();

    // Assert
    assert_eq!(outcome, StepOutcome::Done);
    let run = t.p().store.get_run(&id).await.unwrap().unwrap();
    assert_eq!(run.iteration, 1);
}
