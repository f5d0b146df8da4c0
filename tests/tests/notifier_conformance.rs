//! The `Notifier` contract, run against every adapter: an outcome is delivered whole, once per
//! publish, with what a subscriber filters on (status, user).
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use longrun_domain::OutcomeMessage;
use longrun_domain::run::{RunStatus, StopType, StoppingReason};
use longrun_local::ChannelNotifier;
use longrun_ports::Notifier;
use serde_json::Value;

/// What a subscriber received: the outcome and the attributes it could filter on.
type Received = (OutcomeMessage, Option<(String, String)>);

fn outcome(run: &str, status: RunStatus) -> OutcomeMessage {
    OutcomeMessage {
        run_id: run.into(),
        user_id: "alice".into(),
        iteration: 4,
        status,
        stopping_reason: Some(StoppingReason::new(StopType::Completed, "exit gate passed")),
        summary: "wrote the guide".into(),
        link: format!("https://console.example.com/runs/{run}"),
        iterations: 4,
        tokens: 1234,
        cost_usd: 0.01,
        at: 1_795_320_000_000,
        duration_ms: 61_000,
        questions: vec![],
        title: "Tea guide — completed".into(),
        message: "It wrote the guide.".into(),
    }
}

/// A notifier and a way to read what its subscribers got.
struct Fixture {
    notifier: Box<dyn Notifier>,
    inbox: Inbox,
}

enum Inbox {
    Channel(tokio::sync::mpsc::UnboundedReceiver<OutcomeMessage>),
    Sns(longrun_aws::SqsStepQueue),
}

impl Inbox {
    async fn next(&mut self) -> Option<Received> {
        match self {
            Inbox::Channel(rx) => tokio::time::timeout(Duration::from_millis(200), rx.recv())
                .await
                .ok()
                .flatten()
                .map(|m| {
                    let attrs = (m.status.as_str().to_string(), m.user_id.clone());
                    (m, Some(attrs))
                }),
            Inbox::Sns(queue) => {
                use longrun_ports::StepQueue;
                for _ in 0..10 {
                    if let Some(d) = queue.receive(1, 30_000).await.unwrap().pop() {
                        queue.ack(&d.receipt).await.unwrap();
                        let env: Value = serde_json::from_str(&d.body).unwrap();
                        let msg = serde_json::from_str(env["Message"].as_str().unwrap()).unwrap();
                        let attr = |k: &str| {
                            env["MessageAttributes"][k]["Value"]
                                .as_str()
                                .unwrap_or_default()
                                .to_string()
                        };
                        return Some((msg, Some((attr("status"), attr("user_id")))));
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                None
            }
        }
    }
}

async fn channel() -> Fixture {
    let (notifier, rx) = ChannelNotifier::new();
    Fixture {
        notifier: Box::new(notifier),
        inbox: Inbox::Channel(rx),
    }
}

/// SNS on the emulator, read through a subscribed queue.
async fn sns() -> Fixture {
    use longrun_tests::aws::{clients, unique};
    let c = clients().await;
    let topic = longrun_aws::provision::create_topic(&c, &unique("outcomes"))
        .await
        .unwrap();
    let url = longrun_aws::provision::subscribe_queue(&c, &topic, &unique("inbox"))
        .await
        .unwrap();
    Fixture {
        notifier: Box::new(longrun_aws::SnsNotifier::new(c.sns.clone(), topic)),
        inbox: Inbox::Sns(longrun_aws::SqsStepQueue::new(c.sqs.clone(), url)),
    }
}

mod suite {
    use super::*;

    pub async fn an_outcome_arrives_whole_with_its_status_and_user(mut f: Fixture) {
        let sent = outcome("r1", RunStatus::Completed);
        f.notifier.publish(&sent).await.unwrap();
        let (got, attrs) = f.inbox.next().await.expect("delivered");
        assert_eq!(got, sent);
        assert_eq!(attrs, Some(("completed".into(), "alice".into())));
        assert!(f.inbox.next().await.is_none(), "delivered once");
    }

    pub async fn each_publish_is_delivered_and_ids_tell_repeats_apart(mut f: Fixture) {
        let waiting = outcome("r1", RunStatus::WaitingOnUser);
        let done = outcome("r1", RunStatus::Completed);
        f.notifier.publish(&waiting).await.unwrap();
        f.notifier.publish(&done).await.unwrap();
        f.notifier.publish(&done).await.unwrap();
        let mut ids = vec![];
        while let Some((m, _)) = f.inbox.next().await {
            ids.push(m.notification_id());
        }
        ids.sort();
        assert_eq!(
            ids,
            vec!["r1#4#completed", "r1#4#completed", "r1#4#waiting_on_user"],
            "at-least-once: repeats arrive and carry the same notification id"
        );
    }
}

macro_rules! conformance {
    ($($adapter:ident),*) => {
        $(
            mod $adapter {
                #[tokio::test] async fn an_outcome_arrives_whole_with_its_status_and_user() { super::suite::an_outcome_arrives_whole_with_its_status_and_user(super::$adapter().await).await }
                #[tokio::test] async fn each_publish_is_delivered_and_ids_tell_repeats_apart() { super::suite::each_publish_is_delivered_and_ids_tell_repeats_apart(super::$adapter().await).await }
            }
        )*
    };
}

conformance!(channel, sns);

/// The embedded notifier is the inbox itself: it has written the notification, once per
/// outcome, by the time `publish` returns (so "notified" is never ahead of the inbox).
#[tokio::test]
async fn the_inbox_notifier_has_recorded_the_outcome_when_publish_returns() {
    use longrun_ports::Store;
    // Arrange
    let store: std::sync::Arc<dyn Store> =
        std::sync::Arc::new(longrun_local::InMemoryRunStore::new());
    let notifier = longrun_local::InboxNotifier::new(store.clone());
    let done = outcome("r1", RunStatus::Completed);

    // Act
    notifier.publish(&done).await.unwrap();
    notifier.publish(&done).await.unwrap();

    // Assert
    let inbox = store.notifications("alice", 10).await.unwrap();
    assert_eq!(
        inbox.len(),
        1,
        "one entry per outcome, however often published"
    );
    assert_eq!(inbox[0].run_id, "r1");
    assert!(inbox[0].link.ends_with("/runs/r1"));
    assert_eq!(inbox[0].metrics.iterations, 4);
    assert_eq!(inbox[0].metrics.duration_ms, 61_000);
    assert_eq!(inbox[0].metrics.tokens, 1234);
}
