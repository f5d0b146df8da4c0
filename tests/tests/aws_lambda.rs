//! The serverless path on the AWS emulator: the four Lambda handlers driven by the event
//! payloads in `events/` and by real SQS/SNS messages, end to end, under crashes, duplicates,
//! lease expiry, throttling and lost messages.
#![allow(clippy::unwrap_used)]

use longrun_ports::CatalogExt;
use longrun_ports::Durability;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use http_body_util::BodyExt;
use longrun_domain::Webhook;
use longrun_domain::change;
use longrun_domain::run::{RunStatus, StopType};
use longrun_domain::{Backoff, DeliveryState};
use longrun_fn_notifier::{DELIVERY_HEADER, NotifierHandler, SIGNATURE_HEADER, signature};
use longrun_fn_sweeper::Sweeper;
use longrun_ports::{
    Clock, FaultPoint, NoFaults, StepMessage, StepQueue, StepReason, WebhookOutbox,
};
use longrun_service::OutboxConfig;
use longrun_tests::aws::{APP_BASE_URL, Stack, sqs_event, stack};
use longrun_tests::{CrashOnce, NOTES_SCRIPT, assert_gapless, assert_iterations_once, new_run};
use serde_json::{Value, json};
use tower::ServiceExt;

fn fixture(name: &str) -> String {
    let path = longrun_tests::examples_dir().join("../events").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// An API Gateway HTTP API v2 event from the fixture, re-aimed at another route, user or body.
fn api_event(method: &str, path: &str, sub: Option<&str>, body: Option<Value>) -> String {
    let mut ev: Value =
        serde_json::from_str(&fixture("apigw-http-v2-jwt-create-run.json")).unwrap();
    let (raw_path, query) = path.split_once('?').unwrap_or((path, ""));
    ev["routeKey"] = json!(format!("{method} {raw_path}"));
    ev["rawPath"] = json!(raw_path);
    ev["rawQueryString"] = json!(query);
    ev["requestContext"]["http"]["method"] = json!(method);
    ev["requestContext"]["http"]["path"] = json!(raw_path);
    match sub {
        Some(sub) => ev["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = json!(sub),
        None => {
            ev["requestContext"]
                .as_object_mut()
                .unwrap()
                .remove("authorizer");
        }
    }
    match body {
        Some(b) => ev["body"] = json!(b.to_string()),
        None => {
            ev.as_object_mut().unwrap().remove("body");
        }
    }
    ev.to_string()
}

async fn call_api(s: &Stack, event: &str) -> (StatusCode, HeaderMap, Value) {
    let req = lambda_http::request::from_str(event).unwrap();
    let resp = longrun_fn_api::app(s.p().clone())
        .oneshot(req)
        .await
        .unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    };
    (status, headers, body)
}

type Received = Arc<Mutex<Vec<(HeaderMap, Bytes)>>>;

/// A webhook receiver on loopback that records every POST.
async fn webhook_server() -> (String, Received) {
    webhook_server_answering(vec![StatusCode::NO_CONTENT]).await
}

/// One that answers each POST with the next of `answers` (the last once they run out).
async fn webhook_server_answering(answers: Vec<StatusCode>) -> (String, Received) {
    let got: Received = Arc::default();
    let store = got.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: Bytes| {
            let (store, answers) = (store.clone(), answers.clone());
            async move {
                let mut got = store.lock().unwrap();
                got.push((headers, body));
                answers[(got.len() - 1).min(answers.len() - 1)]
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (
        format!("http://{}:{}/hook", longrun_tests::HOOKS_HOST, addr.port()),
        got,
    )
}

fn notifier(s: &Stack) -> NotifierHandler {
    NotifierHandler::with_config(s.p(), retry_at_once())
}

fn sweeper(s: &Stack, stale_ms: i64) -> Sweeper {
    Sweeper::with_outbox(s.p().clone(), stale_ms, retry_at_once())
}

/// An outbox whose failed attempts are due again at once, so the next sweep retries them.
fn retry_at_once() -> OutboxConfig {
    OutboxConfig {
        retry: Backoff {
            first_ms: 0,
            max_ms: 0,
            max_retries: Some(2),
            jitter: 0.0,
        },
        ..OutboxConfig::default()
    }
}

async fn create(s: &Stack, sub: &str) -> String {
    let (status, _, body) = call_api(s, &fixture_for(sub)).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["id"].as_str().unwrap().to_string()
}

fn fixture_for(sub: &str) -> String {
    let mut ev: Value =
        serde_json::from_str(&fixture("apigw-http-v2-jwt-create-run.json")).unwrap();
    ev["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = json!(sub);
    ev.to_string()
}

async fn assert_books(s: &Stack, run_id: &str) {
    let run = s.run(run_id).await;
    assert_eq!(
        run.status,
        RunStatus::Completed,
        "{:?}",
        run.stopping_reason
    );
    assert_iterations_once(&*s.p().store, &run).await;
    assert_gapless(&*s.p().store, &run).await;
    assert_eq!(
        run.metrics.tokens(),
        s.tokens_spent(),
        "tokens = the model calls actually made"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_created_run_completes_through_real_sqs_messages_and_its_outcome_reaches_a_signed_webhook()
 {
    // Arrange
    let s = stack(NOTES_SCRIPT, Arc::new(NoFaults), 30_000).await;
    let (url, received) = webhook_server().await;
    let secret = "0123456789abcdef-secret";
    let (status, _, body) = call_api(
        &s,
        &api_event(
            "PUT",
            "/v1/webhooks",
            Some("user-jwt-1"),
            Some(json!({"webhooks": [{"url": url, "secret": secret}]})),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(
        !body.to_string().contains(secret),
        "secrets are never echoed"
    );

    // Act
    let (status, _, created) = call_api(&s, &fixture("apigw-http-v2-jwt-create-run.json")).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["user_id"], "user-jwt-1", "the user is the JWT sub");
    let run_id = created["id"].as_str().unwrap().to_string();
    let run = s.drive(&run_id, 200).await;
    let outcome = s.next_outcome().await;
    notifier(&s).handle(outcome).await.unwrap();

    // Assert
    assert_eq!(run.iteration, 6);
    assert_books(&s, &run_id).await;
    let inbox = s.p().store.notifications("user-jwt-1", 10).await.unwrap();
    assert_eq!(inbox.len(), 1);
    assert_eq!(inbox[0].status, RunStatus::Completed);
    assert_eq!(inbox[0].link, format!("{APP_BASE_URL}/runs/{run_id}"));
    let hooks = received.lock().unwrap().clone();
    assert_eq!(hooks.len(), 1);
    let (headers, body) = &hooks[0];
    assert_eq!(
        headers[SIGNATURE_HEADER].to_str().unwrap(),
        signature(secret, body),
        "the signature verifies with the user's secret"
    );
    assert_eq!(
        headers[DELIVERY_HEADER].to_str().unwrap(),
        format!("{run_id}#6#completed#0")
    );
    let payload: Value = serde_json::from_slice(body).unwrap();
    assert_eq!(payload["link"], format!("{APP_BASE_URL}/runs/{run_id}"));
    assert_eq!(payload["status"], "completed");
    assert_eq!(payload["metrics"]["iterations"], 6);
    assert!(payload["text"].as_str().unwrap().contains(&run_id));
    // The seed's content, the same through SNS into the inbox and in the webhook.
    let note = &inbox[0];
    assert!(note.title.ends_with(" — completed"), "{}", note.title);
    assert!(!note.message.is_empty());
    assert_eq!(payload["title"], note.title.as_str());
    assert_eq!(payload["message"], note.message.as_str());
    assert_eq!(payload["action_url"], note.action_url.as_str());
    assert_eq!(note.action_url, note.link);
    let data = note.data.clone().unwrap();
    assert_eq!(payload["data"], serde_json::to_value(&data).unwrap());
    assert_eq!(
        (data.run_id.as_str(), data.iterations),
        (run_id.as_str(), 6)
    );
    assert_eq!(data.stopping_reason.unwrap().kind, StopType::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_after_commit_before_enqueue_is_healed_when_the_message_comes_back() {
    let faults = Arc::new(CrashOnce::new(vec![
        (FaultPoint::AfterCommit, 2),
        (FaultPoint::AfterEnqueue, 4),
    ]));
    let s = stack(NOTES_SCRIPT, faults.clone(), 30_000).await;
    let run_id = create(&s, "alice").await;

    s.drive(&run_id, 200).await;

    assert_eq!(faults.fired(), 2);
    assert_books(&s, &run_id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_delivered_after_the_dedup_window_is_dropped_by_the_claim() {
    let s = stack(NOTES_SCRIPT, Arc::new(NoFaults), 30_000).await;
    let run_id = create(&s, "alice").await;
    let first = s.steps.receive(1, 30_000).await.unwrap();
    let resp = longrun_fn_worker::handle(&s.p().engine, "w1", sqs_event(&first), None).await;
    assert!(resp.batch_item_failures.is_empty());
    s.steps.ack(&first[0].receipt).await.unwrap();

    // The same step again, past the dedup window (a new dedup id gets it through).
    let again = StepMessage::new(&run_id, 1, StepReason::Start);
    s.steps
        .enqueue(
            &again,
            &format!("{}#late", again.dedup_id()),
            0,
            Durability::Now,
        )
        .await
        .unwrap();
    s.drive(&run_id, 200).await;

    assert_books(&s, &run_id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_that_expires_mid_iteration_lets_a_new_worker_finish_the_run() {
    let faults = Arc::new(CrashOnce::new(vec![(FaultPoint::AfterLlmCall, 3)]));
    let s = stack(NOTES_SCRIPT, faults.clone(), 1_500).await;
    let run_id = create(&s, "alice").await;

    s.drive(&run_id, 400).await;

    assert_eq!(faults.fired(), 1);
    assert_books(&s, &run_id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_dynamodb_throttling_never_doubles_or_loses_an_iteration() {
    let s = stack(NOTES_SCRIPT, Arc::new(NoFaults), 30_000).await;
    let run_id = create(&s, "alice").await;
    s.throttle.set_every(4);

    s.drive(&run_id, 400).await;

    assert!(s.throttle.injected() > 10, "{}", s.throttle.injected());
    s.throttle.set_every(0);
    assert_books(&s, &run_id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweeper_recovers_a_run_whose_next_message_was_lost() {
    let s = stack(NOTES_SCRIPT, Arc::new(NoFaults), 30_000).await;
    let run_id = create(&s, "alice").await;
    // Iteration 1 runs; then the message for iteration 2 is lost.
    let first = s.steps.receive(1, 30_000).await.unwrap();
    longrun_fn_worker::handle(&s.p().engine, "w1", sqs_event(&first), None).await;
    s.steps.ack(&first[0].receipt).await.unwrap();
    let lost = s.steps.receive(1, 30_000).await.unwrap();
    assert_eq!(StepMessage::parse(&lost[0].body).unwrap().iteration, 2);
    s.steps.ack(&lost[0].receipt).await.unwrap();
    assert!(s.steps.receive(1, 30_000).await.unwrap().is_empty());

    let scheduled = serde_json::from_str(&fixture("eventbridge-scheduled.json")).unwrap();
    let report = sweeper(&s, 0).handle(scheduled).await.unwrap();
    assert_eq!(report.requeued, vec![run_id.clone()]);
    s.drive(&run_id, 200).await;

    assert_books(&s, &run_id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweeper_republishes_an_outcome_that_was_never_marked_published() {
    let s = stack(NOTES_SCRIPT, Arc::new(NoFaults), 30_000).await;
    let run_id = create(&s, "alice").await;
    s.drive(&run_id, 200).await;
    s.next_outcome().await;
    s.p()
        .store
        .update_run(&run_id, Durability::Now, &|r| {
            let mut next = r.clone();
            next.notified = false;
            Ok(longrun_domain::RunChange::of(next, vec![]))
        })
        .await
        .unwrap();

    let scheduled = serde_json::from_str(&fixture("eventbridge-scheduled.json")).unwrap();
    let report = sweeper(&s, 0).handle(scheduled).await.unwrap();

    assert_eq!(report.republished, vec![run_id.clone()]);
    let again = s.next_outcome().await;
    let msg: Value = serde_json::from_str(&again.records[0].sns.message).unwrap();
    assert_eq!(msg["run_id"], run_id.as_str());
    assert!(s.run(&run_id).await.notified);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_user_sees_nothing_of_a_run_on_dynamodb() {
    let s = stack(NOTES_SCRIPT, Arc::new(NoFaults), 30_000).await;
    let run_id = create(&s, "user-a").await;
    let b = Some("user-b");

    for (method, path, body) in [
        ("GET", format!("/v1/runs/{run_id}"), None),
        ("GET", format!("/v1/runs/{run_id}/events"), None),
        ("GET", format!("/v1/runs/{run_id}/workspace"), None),
        ("GET", format!("/v1/runs/{run_id}/report"), None),
        ("POST", format!("/v1/runs/{run_id}/cancel"), Some(json!({}))),
        (
            "POST",
            format!("/v1/runs/{run_id}/respond"),
            Some(json!({"answer": "x"})),
        ),
    ] {
        let (status, headers, problem) = call_api(&s, &api_event(method, &path, b, body)).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {path}");
        assert_eq!(headers["content-type"], "application/problem+json");
        assert_eq!(problem["status"], 404);
    }
    let (_, _, listed) = call_api(&s, &api_event("GET", "/v1/runs", b, None)).await;
    assert_eq!(listed["runs"], json!([]));
    assert_eq!(
        s.run(&run_id).await.status,
        RunStatus::Queued,
        "cancel by B did nothing"
    );
    let (status, _, mine) = call_api(
        &s,
        &api_event("GET", &format!("/v1/runs/{run_id}"), Some("user-a"), None),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(mine["id"], run_id.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_run_is_refused_on_lambda_with_a_422_that_says_where_it_can_run() {
    // Arrange
    let s = stack(NOTES_SCRIPT, Arc::new(NoFaults), 30_000).await;
    let event = api_event(
        "POST",
        "/v1/runs",
        Some("user-agent-422"),
        Some(json!({"objective": "fix the tests", "agent": "claude"})),
    );

    // Act
    let (status, headers, problem) = call_api(&s, &event).await;

    // Assert: refused before anything was written.
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
    assert_eq!(headers["content-type"], "application/problem+json");
    let detail = problem["detail"].as_str().unwrap();
    assert!(detail.contains("longrun serve"), "{detail}");
    assert_eq!(s.p().store.active_runs("user-agent-422").await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_without_jwt_claims_is_refused_with_401_even_with_a_bearer_header() {
    let s = stack(NOTES_SCRIPT, Arc::new(NoFaults), 30_000).await;

    let (status, headers, problem) = call_api(&s, &fixture("apigw-http-v2-no-claims.json")).await;
    let mut create: Value = serde_json::from_str(&api_event(
        "POST",
        "/v1/runs",
        None,
        Some(json!({"objective": "x"})),
    ))
    .unwrap();
    create["headers"]["authorization"] = json!("Bearer anything");
    let (create_status, _, _) = call_api(&s, &create.to_string()).await;

    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(headers["content-type"], "application/problem+json");
    assert_eq!(problem["status"], 401);
    assert_eq!(create_status, StatusCode::UNAUTHORIZED);
    assert_eq!(s.p().store.active_runs("x").await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_handles_the_fixture_batch_and_acknowledges_the_unparseable_record() {
    // Arrange: the two runs the fixture's messages name.
    let s = stack(NOTES_SCRIPT, Arc::new(NoFaults), 30_000).await;
    for id in ["run-fixture-a", "run-fixture-b"] {
        s.p()
            .store
            .create_run(change::create(new_run(id, "user-jwt-1", 1), 10))
            .await
            .unwrap();
    }
    let event = serde_json::from_str(&fixture("sqs-fifo-batch.json")).unwrap();

    // Act
    let resp = longrun_fn_worker::handle(&s.p().engine, "w1", event, None).await;

    // Assert
    assert!(resp.batch_item_failures.is_empty(), "{resp:?}");
    for id in ["run-fixture-a", "run-fixture-b"] {
        let run = s.run(id).await;
        assert_eq!(run.iteration, 1);
        assert_eq!(run.status, RunStatus::Running);
    }
    let next: Vec<u32> = s
        .steps
        .receive(10, 30_000)
        .await
        .unwrap()
        .iter()
        .map(|d| StepMessage::parse(&d.body).unwrap().iteration)
        .collect();
    assert_eq!(next, vec![2, 2], "each run's next step was sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_that_must_wait_fails_with_the_later_records_of_its_run() {
    let s = stack(NOTES_SCRIPT, Arc::new(NoFaults), 30_000).await;
    s.p()
        .store
        .create_run(change::create(new_run("run-fixture-a", "u", 1), 10))
        .await
        .unwrap();
    // Another worker holds a live lease on iteration 1.
    s.p()
        .store
        .update_run("run-fixture-a", Durability::Now, &|r| {
            change::claim(
                r,
                1,
                "elsewhere",
                longrun_ports::SystemClock.now_ms(),
                60_000,
            )
        })
        .await
        .unwrap();
    let mut event: Value = serde_json::from_str(&fixture("sqs-fifo-batch.json")).unwrap();
    let mut second = event["Records"][0].clone();
    second["messageId"] = json!("second-of-a");
    second["body"] = json!(r#"{"v":1,"run_id":"run-fixture-a","iteration":2,"reason":"continue"}"#);
    event["Records"] = json!([event["Records"][0].clone(), second]);

    let resp = longrun_fn_worker::handle(
        &s.p().engine,
        "w1",
        serde_json::from_value(event).unwrap(),
        None,
    )
    .await;

    let failed: Vec<&str> = resp
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_str())
        .collect();
    assert_eq!(
        failed,
        vec!["059f36b4-87a3-44ab-83d2-661975830a7d", "second-of-a"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_notifier_records_the_outcome_once_and_the_sweeper_retries_a_failing_webhook_until_delivered()
 {
    // Arrange: one receiver that answers, one that fails its first POST.
    let s = stack(NOTES_SCRIPT, Arc::new(NoFaults), 30_000).await;
    let (url, received) = webhook_server().await;
    let (flaky, flaky_got) = webhook_server_answering(vec![
        StatusCode::SERVICE_UNAVAILABLE,
        StatusCode::NO_CONTENT,
    ])
    .await;
    let hook = |url: &str| Webhook {
        url: url.into(),
        secret: "a-long-enough-secret".into(),
    };
    s.p()
        .store
        .put_webhooks("user-jwt-1", &[hook(&url), hook(&flaky)])
        .await
        .unwrap();
    let event = || serde_json::from_str(&fixture("sns-outcome.json")).unwrap();
    let scheduled = || serde_json::from_str(&fixture("eventbridge-scheduled.json")).unwrap();

    // Act: SNS delivers the outcome twice; then two sweeps.
    let first = notifier(&s).handle(event()).await;
    let second = notifier(&s).handle(event()).await;
    let after_notifier = (
        received.lock().unwrap().len(),
        flaky_got.lock().unwrap().len(),
    );
    let sweep = sweeper(&s, 60_000).handle(scheduled()).await.unwrap();
    let next_sweep = sweeper(&s, 60_000).handle(scheduled()).await.unwrap();

    // Assert: a failing webhook fails no record; the sweeper's retry delivers it.
    assert!(first.is_ok() && second.is_ok(), "{first:?} {second:?}");
    let inbox = s.p().store.notifications("user-jwt-1", 10).await.unwrap();
    assert_eq!(
        inbox.len(),
        1,
        "one notification per outcome, however often delivered"
    );
    assert_eq!(
        after_notifier,
        (1, 1),
        "each webhook attempted once, not per SNS delivery"
    );
    assert_eq!(
        (sweep.webhook_attempts, next_sweep.webhook_attempts),
        (1, 0)
    );
    let got = flaky_got.lock().unwrap().clone();
    assert_eq!(got.len(), 2);
    assert_eq!(
        got[0].0[DELIVERY_HEADER], got[1].0[DELIVERY_HEADER],
        "a retry carries the same delivery id"
    );
    assert_eq!(got[0].1, got[1].1, "and the same bytes");
    let log = s
        .observer
        .deliveries("user-jwt-1", "run-fixture-a")
        .await
        .unwrap();
    let states: Vec<_> = log.iter().map(|d| (d.hook, d.state, d.attempts)).collect();
    assert_eq!(
        states,
        [
            (0, DeliveryState::Delivered, 1),
            (1, DeliveryState::Delivered, 2)
        ]
    );
    assert_eq!(log[1].id, got[0].0[DELIVERY_HEADER].to_str().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outcome_the_table_cannot_take_fails_the_record_so_sns_brings_it_again() {
    // Arrange: every DynamoDB request throttled while the first delivery of the outcome runs.
    let s = stack(NOTES_SCRIPT, Arc::new(NoFaults), 30_000).await;
    let (url, received) = webhook_server().await;
    let hook = Webhook {
        url,
        secret: "a-long-enough-secret".into(),
    };
    s.p()
        .store
        .put_webhooks("user-jwt-1", &[hook])
        .await
        .unwrap();
    let event = || serde_json::from_str(&fixture("sns-outcome.json")).unwrap();

    // Act
    s.throttle.set_every(1);
    let refused = notifier(&s).handle(event()).await;
    let posted_meanwhile = received.lock().unwrap().len();
    s.throttle.set_every(0);
    let again = notifier(&s).handle(event()).await;

    // Assert
    assert!(
        matches!(&refused, Err(e) if e.is_retryable()),
        "{refused:?}"
    );
    assert_eq!(posted_meanwhile, 0, "nothing is sent that is not recorded");
    assert!(again.is_ok(), "{again:?}");
    assert_eq!(received.lock().unwrap().len(), 1);
    let log = s
        .observer
        .deliveries("user-jwt-1", "run-fixture-a")
        .await
        .unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].state, DeliveryState::Delivered);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sweeper_starts_a_due_schedule_once() {
    let s = stack(NOTES_SCRIPT, Arc::new(NoFaults), 30_000).await;
    let (status, _, sched) = call_api(
        &s,
        &api_event(
            "POST",
            "/v1/schedules",
            Some("user-jwt-1"),
            Some(json!({"cron": "*/5 * * * *", "template": {"objective": "digest"}})),
        ),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{sched}");
    let mut due: longrun_domain::Schedule = serde_json::from_value(sched).unwrap();
    due.next_at = longrun_ports::SystemClock.now_ms() - 1_000;
    s.p().store.put_schedule(&due).await.unwrap();
    let scheduled = || serde_json::from_str(&fixture("eventbridge-scheduled.json")).unwrap();

    let first = sweeper(&s, 60_000).handle(scheduled()).await.unwrap();
    let second = sweeper(&s, 60_000).handle(scheduled()).await.unwrap();

    assert_eq!(first.started.len(), 1);
    assert!(second.started.is_empty());
    let run = s.run(&first.started[0]).await;
    assert_eq!(run.user_id, "user-jwt-1");
    assert_eq!(run.objective, "digest");
    let step = s.steps.receive(10, 30_000).await.unwrap();
    assert_eq!(step.len(), 1, "its first step was sent");
}

/// Stores `value` in a new, uniquely named secret; returns its name.
async fn store_secret(clients: &longrun_aws::AwsClients, prefix: &str, value: &str) -> String {
    let name = longrun_tests::aws::unique(prefix);
    clients
        .secrets
        .create_secret()
        .name(&name)
        .secret_string(value)
        .send()
        .await
        .unwrap();
    name
}

#[tokio::test]
async fn the_provider_key_is_read_from_the_secret_the_stack_names() {
    // Arrange
    longrun_tests::aws::require_emulator();
    let clients = longrun_tests::aws::clients().await;
    let name = store_secret(&clients, "longrun/openai", "sk-test-123\n").await;

    // Act
    let settings = longrun_wiring::aws::with_key_secret(
        longrun_llm::LlmSettings::default(),
        &clients,
        Some(&name),
    )
    .await
    .unwrap();

    // Assert
    assert_eq!(settings.openai_api_key.unwrap().expose(), "sk-test-123");
    assert_eq!(settings.anthropic_api_key.unwrap().expose(), "sk-test-123");
}

#[tokio::test]
async fn a_key_secret_may_hold_one_key_per_provider() {
    // Arrange
    longrun_tests::aws::require_emulator();
    let clients = longrun_tests::aws::clients().await;
    let name = store_secret(
        &clients,
        "longrun/keys",
        r#"{"openai": "sk-o", "anthropic": "sk-ant-a"}"#,
    )
    .await;
    let wrong = store_secret(&clients, "longrun/keys", r#"{"opneai": "sk-o"}"#).await;

    // Act
    let settings = longrun_wiring::aws::with_key_secret(
        longrun_llm::LlmSettings::default(),
        &clients,
        Some(&name),
    )
    .await
    .unwrap();
    let err = longrun_wiring::aws::with_key_secret(
        longrun_llm::LlmSettings::default(),
        &clients,
        Some(&wrong),
    )
    .await
    .unwrap_err();

    // Assert
    assert_eq!(settings.openai_api_key.unwrap().expose(), "sk-o");
    assert_eq!(settings.anthropic_api_key.unwrap().expose(), "sk-ant-a");
    let msg = err.to_string();
    assert!(msg.contains(&wrong) && !msg.contains("sk-o"), "{msg}");
}

#[tokio::test]
async fn a_missing_key_secret_stops_start_up_with_its_name_and_no_key() {
    // Arrange
    longrun_tests::aws::require_emulator();
    let clients = longrun_tests::aws::clients().await;

    // Act
    let err = longrun_wiring::aws::with_key_secret(
        longrun_llm::LlmSettings::default(),
        &clients,
        Some("longrun/absent"),
    )
    .await
    .unwrap_err();

    // Assert
    let msg = err.to_string();
    assert!(
        msg.contains("longrun/absent") && msg.contains("could not be read"),
        "{msg}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_retry_past_the_invocation_deadline_returns_the_step_after_the_retry_delay() {
    // Arrange: the model is rate limited once, and the invocation has no time left.
    let flaky = NOTES_SCRIPT.replacen(
        r#""planner": ["#,
        r#""planner": [{"error": {"kind": "rate_limited", "message": "slow down"}},"#,
        1,
    );
    let s = stack(&flaky, Arc::new(NoFaults), 30_000).await;
    let run_id = create(&s, "alice").await;
    let first = s.steps.receive(1, 30_000).await.unwrap();

    // Act
    let resp = longrun_fn_worker::handle(&s.p().engine, "w1", sqs_event(&first), Some(0)).await;

    // Assert: the record failed, and is back in about a second, not after the 30 s visibility.
    assert_eq!(resp.batch_item_failures.len(), 1);
    let mut again = vec![];
    for _ in 0..50 {
        again = s.steps.receive(1, 30_000).await.unwrap();
        if !again.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(again.len(), 1, "the step came back after the retry delay");
    assert_eq!(StepMessage::parse(&again[0].body).unwrap().iteration, 1);
    assert_eq!(s.run(&run_id).await.iteration, 0);

    // Act: a worker with time to spare takes the redelivery.
    let resp = longrun_fn_worker::handle(&s.p().engine, "w2", sqs_event(&again), None).await;

    // Assert
    assert!(resp.batch_item_failures.is_empty());
    assert_eq!(s.run(&run_id).await.iteration, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_run_event_starts_its_run_once_however_often_it_is_delivered() {
    // Arrange
    let s = stack(NOTES_SCRIPT, Arc::new(NoFaults), 30_000).await;
    let event = || serde_json::from_str(&fixture("eventbridge-start-run.json")).unwrap();

    // Act: EventBridge delivers at least once; here twice.
    let first = sweeper(&s, 60_000).handle(event()).await.unwrap();
    let second = sweeper(&s, 60_000).handle(event()).await.unwrap();

    // Assert
    assert_eq!(first.started.len(), 1);
    assert!(second.started.is_empty(), "the redelivery started nothing");
    let run = s.run(&first.started[0]).await;
    assert_eq!(run.user_id, "user-jwt-1");
    assert_eq!(run.objective, "Write the weekly digest of the notes");
    assert_eq!(run.budgets.max_iterations, 5);
    let step = s.steps.receive(10, 30_000).await.unwrap();
    assert_eq!(step.len(), 1, "its first step was sent once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_run_event_with_a_bad_template_fails_and_starts_nothing() {
    // Arrange
    let s = stack(NOTES_SCRIPT, Arc::new(NoFaults), 30_000).await;
    let mut event: Value = serde_json::from_str(&fixture("eventbridge-start-run.json")).unwrap();
    event["detail"]["template"]["objective"] = json!("");
    let mut unknown = event.clone();
    unknown["detail"]["template"] = json!({"objective": "x", "colour": "red"});

    // Act
    let empty = sweeper(&s, 60_000)
        .handle(serde_json::from_value(event).unwrap())
        .await;
    let unknown = sweeper(&s, 60_000)
        .handle(serde_json::from_value(unknown).unwrap())
        .await;

    // Assert
    let empty = empty.unwrap_err().to_string();
    assert!(empty.contains("objective"), "{empty}");
    let unknown = unknown.unwrap_err().to_string();
    assert!(unknown.contains("colour"), "{unknown}");
    let runs = s.steps.receive(10, 30_000).await.unwrap();
    assert!(runs.is_empty(), "no step was sent");
}
