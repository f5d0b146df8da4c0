//! The router over several providers: rotation, failover past a failing one, degraded marking
//! with cooldown, no retry of auth errors, and no sleeping past a worker's deadline.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use longrun_llm::{Backoff, Failover, LlmSettings, ModelHealth, ModelRouter, OpenAiClient, Secret};
use longrun_ports::ChatMessage;
use longrun_ports::{ChatRequest, LlmClient, LlmErrorKind, LlmRole};
use support::{Server, serve};

const A: &str = "openai:model-a";
const B: &str = "openai:model-b";

const OK: &str = r#"{"id": "c1", "object": "chat.completion", "model": "m",
  "choices": [{"index": 0, "message": {"role": "assistant", "content": "{}"}, "finish_reason": "stop"}],
  "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}}"#;

const FAST: Backoff = Backoff {
    first_ms: 1,
    max_ms: 5,
    max_retries: Some(3),
    jitter: 0.2,
};

fn req(rotation: &[&str]) -> ChatRequest {
    ChatRequest {
        run_id: "run_1".into(),
        iteration: 1,
        role: LlmRole::Planner,
        model: A.into(),
        messages: vec![ChatMessage::user("hi")],
        json_schema: None,
        max_output_tokens: None,
        idempotency_key: "run_1#1#1".into(),
        role_call: 1,
        attempt: 0,
        rotation: rotation.iter().map(|s| s.to_string()).collect(),
        deadline_ms: None,
    }
}

async fn provider(status: u16, headers: Vec<(&'static str, &'static str)>) -> (String, Server) {
    let body = if status == 200 {
        OK
    } else {
        r#"{"error": {"message": "no"}}"#
    };
    let (addr, s) = serve(
        "/v1/chat/completions",
        vec![(status, headers, body.into(), 0)],
    )
    .await;
    (format!("{addr}/v1"), s)
}

fn client(base: &str, model: &str) -> Arc<OpenAiClient> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    Arc::new(OpenAiClient::new(
        http,
        base,
        Some(Secret::new("sk")),
        model,
    ))
}

fn router(a: &str, b: &str, cooldown_ms: u64) -> ModelRouter {
    ModelRouter::build(&[], &LlmSettings::default())
        .unwrap()
        .with_client(A, client(a, "model-a"), FAST)
        .with_client(B, client(b, "model-b"), FAST)
        .with_failover(Failover {
            degrade_after: 2,
            cooldown: Duration::from_millis(cooldown_ms),
        })
}

fn health_of(router: &ModelRouter, model: &str) -> ModelHealth {
    router
        .health()
        .into_iter()
        .find(|h| h.model == model)
        .unwrap()
}

fn hits(s: &Server) -> usize {
    s.hits.load(Ordering::SeqCst)
}

#[tokio::test]
async fn calls_move_off_a_failing_provider_which_is_degraded_then_tried_again_after_cooldown() {
    // Arrange: A answers 500 to everything, B is healthy.
    let (a, a_server) = provider(500, vec![]).await;
    let (b, b_server) = provider(200, vec![]).await;
    let router = router(&a, &b, 400);

    // Act: six calls rotating over [A, B].
    for _ in 0..6 {
        let resp = router.chat(&req(&[B])).await.unwrap();
        // Assert: every answer is B's, attributed to B.
        assert_eq!(
            (resp.provider.as_str(), resp.model.as_str()),
            ("openai", "model-b")
        );
    }

    // Assert: A was tried until it failed twice, then set aside.
    assert_eq!(hits(&a_server), 2, "A is skipped once degraded");
    assert_eq!(hits(&b_server), 6);
    let a_health = health_of(&router, A);
    assert!(a_health.degraded);
    assert_eq!(a_health.consecutive_failures, 2);
    assert!(!health_of(&router, B).degraded);

    // Act: after the cooldown A gets another chance (and fails again).
    tokio::time::sleep(Duration::from_millis(450)).await;
    router.chat(&req(&[B])).await.unwrap();
    router.chat(&req(&[B])).await.unwrap();

    // Assert
    assert_eq!(hits(&a_server), 3, "A is retried once after its cooldown");
    assert!(health_of(&router, A).degraded);
}

#[tokio::test]
async fn a_recovered_provider_is_healthy_again() {
    let (a, a_server) = serve(
        "/v1/chat/completions",
        vec![
            (500, vec![], "x".into(), 0),
            (500, vec![], "x".into(), 0),
            (200, vec![], OK.into(), 0),
        ],
    )
    .await;
    let (b, _) = provider(200, vec![]).await;
    let router = router(&format!("{a}/v1"), &b, 50);
    for _ in 0..4 {
        router.chat(&req(&[B])).await.unwrap();
    }
    assert!(health_of(&router, A).degraded);

    tokio::time::sleep(Duration::from_millis(80)).await;
    let mut served_by_a = 0;
    for _ in 0..4 {
        if router.chat(&req(&[B])).await.unwrap().model == "model-a" {
            served_by_a += 1;
        }
    }

    assert_eq!(served_by_a, 2, "back in the rotation: every other call");
    assert_eq!(hits(&a_server), 4);
    let a_health = health_of(&router, A);
    assert_eq!(
        (a_health.degraded, a_health.consecutive_failures),
        (false, 0)
    );
}

#[tokio::test]
async fn an_auth_error_is_neither_retried_nor_failed_over() {
    let (a, a_server) = provider(401, vec![]).await;
    let (b, b_server) = provider(200, vec![]).await;
    let router = router(&a, &b, 1_000);

    // A fresh router's rotation starts at the request's own model.
    let err = router.chat(&req(&[B])).await.unwrap_err();

    assert_eq!(err.kind, LlmErrorKind::Auth);
    assert_eq!(hits(&a_server), 1);
    assert_eq!(
        hits(&b_server),
        0,
        "a bad key is not papered over by another provider"
    );
    assert!(!router.health().iter().any(|h| h.degraded));
}

#[tokio::test]
async fn a_retry_that_would_outlive_the_deadline_is_handed_back_with_its_delay() {
    let (a, a_server) = provider(429, vec![("retry-after", "5")]).await;
    let router = ModelRouter::build(&[], &LlmSettings::default())
        .unwrap()
        .with_client(A, client(&a, "model-a"), Backoff::PROVIDER);
    let mut r = req(&[]);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    r.deadline_ms = Some(now + 2_000);

    let started = std::time::Instant::now();
    let err = router.chat(&r).await.unwrap_err();

    assert_eq!(err.kind, LlmErrorKind::RateLimited);
    assert_eq!(
        err.requeue_after_ms,
        Some(5_000),
        "Retry-After is the requeue delay"
    );
    assert_eq!(hits(&a_server), 1, "no retry was made");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "it did not sleep"
    );
}

#[tokio::test]
async fn a_model_limit_admits_no_more_than_its_rate_and_hands_back_what_cannot_wait() {
    // Arrange: model A may take 2 requests a minute; the worker must finish within a second.
    let (a, server) = provider(200, vec![]).await;
    let mut settings = LlmSettings {
        openai_base_url: a.clone(),
        openai_api_key: Some(Secret::new("sk")),
        retry: FAST,
        ..LlmSettings::default()
    };
    settings.limits = longrun_llm::ModelLimits::parse([format!("{A}=rpm:2").as_str()]).unwrap();
    let router = ModelRouter::build(&[A.to_string()], &settings).unwrap();
    let mut r = req(&[]);
    r.deadline_ms = Some(longrun_ports::Clock::now_ms(&longrun_ports::SystemClock) + 1_000);

    // Act
    let first = router.chat(&r).await;
    let second = router.chat(&r).await;
    let third = router.chat(&r).await;

    // Assert: the third call was never sent; its claim would be handed back until capacity.
    assert!(first.is_ok() && second.is_ok());
    let err = third.unwrap_err();
    assert_eq!(err.kind, LlmErrorKind::RateLimited);
    assert!(err.requeue_after_ms.unwrap() > 50_000, "{err:?}");
    assert_eq!(server.hits.load(Ordering::SeqCst), 2);
}
