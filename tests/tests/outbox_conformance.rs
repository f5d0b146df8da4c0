//! The `WebhookOutbox` contract, run against every adapter (memory, SQLite, DynamoDB on the
//! emulator), and the outbox's delivery loop against a real receiver on loopback: retried with
//! the same delivery id, given up on a refusal, taken again when an attempt was cut short.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, StatusCode};
use longrun_aws::DynamoDbRunStore;
use longrun_domain::{
    AttemptRecord, Backoff, DeliveryState, Notification, NotificationMetrics, OutcomeMessage,
    RunStatus, Webhook, WebhookDelivery,
};
use longrun_local::{InMemoryRunStore, SqliteDb, SqliteRunStore};
use longrun_outbound::WebhookSender;
use longrun_ports::{CatalogExt, Clock, Inbox, ManualClock, WebhookOutbox};
use longrun_service::{Outbox, OutboxConfig};

fn note(id: &str, user: &str) -> Notification {
    Notification {
        id: id.into(),
        user_id: user.into(),
        run_id: "r1".into(),
        status: RunStatus::Completed,
        title: "t".into(),
        summary: String::new(),
        link: "https://app.example/runs/r1".into(),
        at: 10,
        read: false,
        metrics: NotificationMetrics::default(),
        questions: vec![],
        message: String::new(),
        action_url: String::new(),
        data: None,
    }
}

fn delivery(id: &str, hook: u32, user: &str, next_at: i64) -> WebhookDelivery {
    WebhookDelivery {
        id: id.into(),
        hook,
        user_id: user.into(),
        run_id: "r1".into(),
        url: format!("https://hooks.example/{hook}"),
        signature: "sha256=00".into(),
        body: "{}".into(),
        state: DeliveryState::Pending,
        attempts: 0,
        next_at,
        created_at: next_at,
        last_error: None,
        history: vec![],
    }
}

mod suite {
    use super::*;

    pub async fn an_outcome_and_its_deliveries_are_recorded_together_and_once<
        S: WebhookOutbox + Inbox,
    >(
        s: &S,
    ) {
        // Arrange
        let n = note("r1#2#completed", "u1");
        let ds = [delivery(&n.id, 0, "u1", 100), delivery(&n.id, 1, "u1", 100)];

        // Act
        let first = s.put_outcome(&n, &ds).await.unwrap();
        let again = s
            .put_outcome(&n, &[delivery(&n.id, 2, "u1", 100)])
            .await
            .unwrap();

        // Assert: the inbox entry and both deliveries; the repeat added nothing.
        assert!(first);
        assert!(!again);
        assert_eq!(s.notifications("u1", 10).await.unwrap().len(), 1);
        let log = s.deliveries("u1", "r1").await.unwrap();
        assert_eq!(log.iter().map(|d| d.hook).collect::<Vec<_>>(), [0, 1]);
        assert!(s.deliveries("u2", "r1").await.unwrap().is_empty(), "scoped");
    }

    pub async fn a_due_delivery_goes_to_one_taker_until_its_lease_ends<S: WebhookOutbox>(s: &S) {
        // Arrange: one due now, one due later.
        let n = note("r1#1#completed", "u1");
        let ds = [delivery(&n.id, 0, "u1", 100), delivery(&n.id, 1, "u1", 500)];
        s.put_outcome(&n, &ds).await.unwrap();

        // Act
        let taken = s.take_due(100, 1_000, 10).await.unwrap();
        let meanwhile = s.take_due(200, 1_100, 10).await.unwrap();
        let after_lease = s.take_due(1_000, 2_000, 10).await.unwrap();

        // Assert
        assert_eq!(taken.iter().map(|d| d.hook).collect::<Vec<_>>(), [0]);
        assert!(meanwhile.is_empty());
        assert_eq!(
            after_lease.iter().map(|d| d.hook).collect::<Vec<_>>(),
            [1, 0],
            "earliest first: the later one's wait ended before the lease"
        );
    }

    pub async fn a_recorded_attempt_settles_or_reschedules_the_delivery<S: WebhookOutbox>(s: &S) {
        // Arrange
        let n = note("r1#1#completed", "u1");
        s.put_outcome(
            &n,
            &[delivery(&n.id, 0, "u1", 100), delivery(&n.id, 1, "u1", 100)],
        )
        .await
        .unwrap();
        let taken = s.take_due(100, 1_000, 10).await.unwrap();

        // Act: the first delivered, the second to be retried at 300.
        let mut done = taken[0].clone();
        done.state = DeliveryState::Delivered;
        done.attempts = 1;
        let mut retry = taken[1].clone();
        retry.attempts = 1;
        retry.next_at = 300;
        retry.last_error = Some("HTTP 503".into());
        retry.history = vec![AttemptRecord {
            at: 100,
            error: Some("HTTP 503".into()),
        }];
        s.record_attempt(&done).await.unwrap();
        s.record_attempt(&retry).await.unwrap();

        // Assert
        assert!(s.take_due(299, 2_000, 10).await.unwrap().is_empty());
        let due = s.take_due(300, 2_000, 10).await.unwrap();
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].last_error.as_deref(), Some("HTTP 503"));
        assert_eq!(due[0].history, retry.history, "each attempt is kept");
        let log = s.deliveries("u1", "r1").await.unwrap();
        assert_eq!(log[0].state, DeliveryState::Delivered);
        assert_eq!(log[1].attempts, 1);
    }

    pub async fn takers_at_the_same_moment_share_the_due_deliveries_without_overlap<
        S: WebhookOutbox,
    >(
        s: &S,
    ) {
        // Arrange: six due deliveries of two outcomes.
        for run in ["r1#1#completed", "r1#2#failed"] {
            let n = note(run, "u1");
            let ds: Vec<_> = (0..3).map(|h| delivery(&n.id, h, "u1", 100)).collect();
            s.put_outcome(&n, &ds).await.unwrap();
        }

        // Act
        let (a, b) = tokio::join!(s.take_due(100, 1_000, 10), s.take_due(100, 1_000, 10));

        // Assert: every delivery taken once, by one of them.
        let mut taken: Vec<_> = a
            .unwrap()
            .into_iter()
            .chain(b.unwrap())
            .map(|d| (d.id, d.hook))
            .collect();
        taken.sort();
        let before = taken.len();
        taken.dedup();
        assert_eq!((before, taken.len()), (6, 6));
    }
}

macro_rules! conformance {
    ($adapter:ident: $($test:ident),* $(,)?) => {
        mod $adapter {
            $(
                #[tokio::test]
                async fn $test() {
                    let (store, _dir) = super::$adapter().await;
                    super::suite::$test(&*store).await;
                }
            )*
        }
    };
}

macro_rules! all_adapters {
    ($($adapter:ident),*) => {
        $(conformance!($adapter:
            an_outcome_and_its_deliveries_are_recorded_together_and_once,
            a_due_delivery_goes_to_one_taker_until_its_lease_ends,
            a_recorded_attempt_settles_or_reschedules_the_delivery,
            takers_at_the_same_moment_share_the_due_deliveries_without_overlap,
        );)*
    };
}

async fn memory() -> (Arc<InMemoryRunStore>, Option<tempfile::TempDir>) {
    (Arc::new(InMemoryRunStore::new()), None)
}

async fn sqlite() -> (Arc<SqliteRunStore>, Option<tempfile::TempDir>) {
    let dir = tempfile::tempdir().unwrap();
    let db = SqliteDb::open(&dir.path().join("t.sqlite3")).unwrap();
    (Arc::new(SqliteRunStore::new(db)), Some(dir))
}

async fn dynamodb() -> (Arc<DynamoDbRunStore>, Option<tempfile::TempDir>) {
    let c = longrun_tests::aws::clients().await;
    (Arc::new(longrun_tests::aws::dynamodb_store(&c).await), None)
}

all_adapters!(memory, sqlite, dynamodb);

#[tokio::test]
async fn a_restarted_sqlite_store_hands_back_the_deliveries_a_gone_process_had_taken() {
    // Arrange: a delivery taken with a long lease, then the process is gone.
    let (s, _dir) = sqlite().await;
    let n = note("r1#1#completed", "u1");
    s.put_outcome(&n, &[delivery(&n.id, 0, "u1", 100)])
        .await
        .unwrap();
    assert_eq!(s.take_due(100, 60_000, 10).await.unwrap().len(), 1);

    // Act
    let released = s.release_outbox_leases(200).await.unwrap();

    // Assert: due again at once, not after the lease.
    assert_eq!(released, 1);
    assert_eq!(s.take_due(200, 30_000, 10).await.unwrap().len(), 1);
}

/// What the receiver got: (delivery id, signature, body) per POST.
type Posts = Arc<Mutex<Vec<(String, String, String)>>>;

/// A receiver on loopback answering each POST with the next status of `answers` (the last
/// one once they run out).
async fn receiver(answers: Vec<StatusCode>) -> (String, Posts) {
    let posts: Posts = Arc::default();
    let sink = posts.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: String| {
            let (sink, answers) = (sink.clone(), answers.clone());
            async move {
                let mut p = sink.lock().unwrap();
                let header = |k: &str| headers[k].to_str().unwrap().to_string();
                p.push((
                    header("x-longrun-delivery"),
                    header("x-longrun-signature"),
                    body,
                ));
                answers[(p.len() - 1).min(answers.len() - 1)]
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (
        format!("http://{}:{port}/hook", longrun_tests::HOOKS_HOST),
        posts,
    )
}

fn outcome() -> OutcomeMessage {
    OutcomeMessage {
        run_id: "r1".into(),
        user_id: "u1".into(),
        iteration: 3,
        status: RunStatus::Completed,
        stopping_reason: None,
        summary: "done".into(),
        link: "https://app.example/runs/r1".into(),
        iterations: 3,
        tokens: 10,
        cost_usd: 0.0,
        at: 1_000,
        duration_ms: 5,
        questions: vec![],
        title: "Tea guide — completed".into(),
        message: "It wrote the guide.".into(),
    }
}

/// An outbox over a memory store with the user's one webhook at `url`.
async fn outbox(url: &str) -> (Outbox, Arc<InMemoryRunStore>, Arc<ManualClock>) {
    outbox_to(&[url]).await
}

/// An outbox over a memory store with the user's webhooks at `urls`, in that order.
async fn outbox_to(urls: &[&str]) -> (Outbox, Arc<InMemoryRunStore>, Arc<ManualClock>) {
    let store = Arc::new(InMemoryRunStore::new());
    let hooks: Vec<Webhook> = urls
        .iter()
        .map(|url| Webhook {
            url: url.to_string(),
            secret: "0123456789abcdef-local".into(),
        })
        .collect();
    store.put_webhooks("u1", &hooks).await.unwrap();
    let policy = longrun_ports::FetchPolicy {
        trusted_private: vec![longrun_tests::HOOKS_HOST.into()],
        ..Default::default()
    };
    let clock = Arc::new(ManualClock::new(1_000));
    let config = OutboxConfig {
        retry: Backoff {
            first_ms: 1_000,
            max_ms: 60_000,
            max_retries: Some(2),
            jitter: 0.0,
        },
        ..OutboxConfig::default()
    };
    let outbox = Outbox::new(
        store.clone(),
        store.clone(),
        Arc::new(WebhookSender::new(policy, longrun_tests::hooks_lookup()).unwrap()),
        clock.clone() as Arc<dyn Clock>,
        config,
    );
    (outbox, store, clock)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_receiver_gets_the_same_signed_delivery_again_after_the_wait_until_it_answers() {
    // Arrange: the receiver fails twice, then answers.
    let (url, posts) = receiver(vec![
        StatusCode::INTERNAL_SERVER_ERROR,
        StatusCode::TOO_MANY_REQUESTS,
        StatusCode::NO_CONTENT,
    ])
    .await;
    let (outbox, store, clock) = outbox(&url).await;

    // Act: record, then a pass before each wait ends and after it.
    assert!(outbox.record(&outcome()).await.unwrap());
    let first = outbox.deliver_due().await.unwrap();
    let too_soon = outbox.deliver_due().await.unwrap();
    clock.advance(1_000);
    let second = outbox.deliver_due().await.unwrap();
    clock.advance(2_000);
    let third = outbox.deliver_due().await.unwrap();
    clock.advance(60_000);
    let after = outbox.deliver_due().await.unwrap();

    // Assert: three POSTs of the same bytes under one id; delivered on the third.
    assert_eq!([first, too_soon, second, third, after], [1, 0, 1, 1, 0]);
    let posts = posts.lock().unwrap().clone();
    assert_eq!(posts.len(), 3);
    assert!(posts.iter().all(|p| p == &posts[0]), "identical attempts");
    assert_eq!(posts[0].0, "r1#3#completed#0");
    let log = store.deliveries("u1", "r1").await.unwrap();
    assert_eq!(log[0].state, DeliveryState::Delivered);
    assert_eq!(log[0].attempts, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_the_receiver_refuses_or_that_runs_out_of_attempts_is_given_up_with_its_error() {
    // Arrange: one receiver that refuses for good, one that always fails.
    let (gone, gone_posts) = receiver(vec![StatusCode::GONE]).await;
    let (down, down_posts) = receiver(vec![StatusCode::BAD_GATEWAY]).await;
    let (refused, refused_store, _) = outbox(&gone).await;
    let (failing, failing_store, clock) = outbox(&down).await;

    // Act
    refused.record(&outcome()).await.unwrap();
    failing.record(&outcome()).await.unwrap();
    refused.deliver_due().await.unwrap();
    for _ in 0..5 {
        failing.deliver_due().await.unwrap();
        clock.advance(60_000);
    }

    // Assert
    let gone_log = refused_store.deliveries("u1", "r1").await.unwrap();
    assert_eq!(gone_log[0].state, DeliveryState::GivenUp);
    assert_eq!(gone_log[0].last_error.as_deref(), Some("HTTP 410 Gone"));
    assert_eq!(gone_posts.lock().unwrap().len(), 1);
    let down_log = failing_store.deliveries("u1", "r1").await.unwrap();
    assert_eq!(down_log[0].state, DeliveryState::GivenUp);
    assert_eq!(down_log[0].attempts, 3, "the policy's three attempts");
    assert_eq!(down_posts.lock().unwrap().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delivering_at_once_attempts_each_webhook_once_leaves_the_retry_to_the_outbox_and_records_a_repeat_once()
 {
    // Arrange: the receiver fails the first POST.
    let (url, posts) = receiver(vec![StatusCode::BAD_GATEWAY, StatusCode::NO_CONTENT]).await;
    let (outbox, store, clock) = outbox(&url).await;

    // Act: the notifier's way, twice (SNS delivers at least once); a taker meanwhile; then
    // a pass once the retry is due.
    let first = outbox.deliver_now(&outcome()).await.unwrap();
    let repeat = outbox.deliver_now(&outcome()).await.unwrap();
    let meanwhile = outbox.deliver_due().await.unwrap();
    clock.advance(1_000);
    let retried = outbox.deliver_due().await.unwrap();

    // Assert
    assert_eq!([first, repeat, meanwhile, retried], [1, 0, 0, 1]);
    assert_eq!(store.notifications("u1", 10).await.unwrap().len(), 1);
    assert_eq!(posts.lock().unwrap().len(), 2);
    let log = store.deliveries("u1", "r1").await.unwrap();
    assert_eq!(
        (log[0].state, log[0].attempts),
        (DeliveryState::Delivered, 2)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_webhooks_of_one_user_get_their_own_delivery_id_for_one_outcome_and_a_retry_keeps_it() {
    // Arrange: both webhooks reach one receiver (as one service deduplicating for both);
    // it fails the first POST and answers every later one.
    let (url, posts) = receiver(vec![StatusCode::BAD_GATEWAY, StatusCode::NO_CONTENT]).await;
    let second = format!("{url}?second");
    let (outbox, store, clock) = outbox_to(&[&url, &second]).await;

    // Act: one outcome; a pass; then the retry once its wait is over.
    outbox.record(&outcome()).await.unwrap();
    outbox.deliver_due().await.unwrap();
    clock.advance(1_000);
    outbox.deliver_due().await.unwrap();

    // Assert: three POSTs, two delivery ids; the retried one kept its id, and each body names
    // its own delivery.
    let posts = posts.lock().unwrap().clone();
    assert_eq!(posts.len(), 3);
    let ids: std::collections::BTreeSet<&str> = posts.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(
        ids,
        ["r1#3#completed#0", "r1#3#completed#1"]
            .into_iter()
            .collect()
    );
    let retried = &posts[2].0;
    assert_eq!(
        posts.iter().filter(|p| &p.0 == retried).count(),
        2,
        "the retry carries the id of the delivery it retries"
    );
    for (id, _, body) in &posts {
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["id"], id.as_str());
    }
    let log = store.deliveries("u1", "r1").await.unwrap();
    let mut recorded: Vec<(&str, DeliveryState)> =
        log.iter().map(|d| (d.id.as_str(), d.state)).collect();
    recorded.sort_by_key(|r| r.0);
    assert_eq!(
        recorded,
        [
            ("r1#3#completed#0", DeliveryState::Delivered),
            ("r1#3#completed#1", DeliveryState::Delivered)
        ]
    );
}
