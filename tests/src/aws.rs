//! The AWS emulator side of the tests: clients built from the standard environment that
//! `scripts/with-moto` sets, and fresh, uniquely named resources per test.

use longrun_aws::{AwsClients, DynamoDbRunStore, SqsStepQueue, load_config, provision};

/// Panics with the way out when the emulator is not configured, and refuses anything but a
/// loopback endpoint so a test can never touch a real account.
pub fn require_emulator() -> String {
    let url = std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| {
        panic!("AWS adapter tests need the emulator: run `make test` (or `scripts/with-moto cargo test`)")
    });
    assert!(
        url.starts_with("http://127.0.0.1:") || url.starts_with("http://localhost:"),
        "AWS_ENDPOINT_URL must be a loopback emulator, got {url}"
    );
    // `scripts/with-dynamodb-local` sends DynamoDB alone to AWS's own emulator.
    if let Ok(ddb) = std::env::var("AWS_ENDPOINT_URL_DYNAMODB") {
        assert!(
            ddb.starts_with("http://127.0.0.1:") || ddb.starts_with("http://localhost:"),
            "AWS_ENDPOINT_URL_DYNAMODB must be a loopback emulator, got {ddb}"
        );
    }
    url
}

pub async fn clients() -> AwsClients {
    require_emulator();
    AwsClients::new(&load_config().await)
}

pub fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::new_v4().simple())
}

pub async fn table(c: &AwsClients) -> String {
    let name = unique("longrun");
    provision::create_table(c, &name).await.unwrap();
    name
}

pub async fn dynamodb_store(c: &AwsClients) -> DynamoDbRunStore {
    let t = table(c).await;
    DynamoDbRunStore::new(c.dynamodb.clone(), t, test_sealer())
}

/// The sealing key of every test stack: fixed, so a second store on the same table (an
/// observer) opens what the first sealed.
pub fn test_sealer() -> longrun_ports::Sealer {
    longrun_ports::Sealer::from_secret_text("test-sealing-key-of-the-emulated-stacks-0123")
        .expect("a valid test key")
}

/// A FIFO step queue with a dead-letter queue after `max_receives`; returns `(queue, dlq_url)`.
pub async fn step_queue(c: &AwsClients, max_receives: u32) -> (SqsStepQueue, String) {
    let (url, dlq) = provision::create_step_queue(c, &unique("steps"), 30, max_receives)
        .await
        .unwrap();
    (SqsStepQueue::new(c.sqs.clone(), url), dlq)
}

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use aws_lambda_events::event::sns::SnsEvent;
use aws_lambda_events::event::sqs::SqsEvent;
use longrun_aws::{CallCounter, ThrottleInjector};
use longrun_domain::run::Run;
use longrun_engine::EngineConfig;
use longrun_http::{AppConfig, Platform, Tokens};
use longrun_ports::{Delivery, Faults, StepMessage, StepQueue};
use longrun_wiring::aws::AwsSettings;
use serde_json::{Value, json};

use crate::{CountingLlm, MODEL, scripted};

pub const APP_BASE_URL: &str = "https://console.example.com";

/// The whole serverless stack on the emulator: table, FIFO step queue (+DLQ), outcome topic
/// with a subscribed queue, and the platform the four functions share.
pub struct Stack {
    pub platform: Platform,
    pub settings: AwsSettings,
    pub llm: Arc<CountingLlm>,
    pub throttle: ThrottleInjector,
    /// The step queue as Lambda's poller sees it (plain clients, no injected faults).
    pub steps: SqsStepQueue,
    /// The standard queue subscribed to the outcome topic.
    pub outcomes: SqsStepQueue,
    /// The table as the test sees it (uncounted, never throttled).
    pub observer: DynamoDbRunStore,
}

pub async fn stack(script: &str, faults: Arc<dyn Faults>, lease_ms: u64) -> Stack {
    stack_with(script, faults, lease_ms, None).await
}

/// `stack` whose clients, including the stand-in for Lambda's SQS poller, count their calls.
pub async fn stack_with(
    script: &str, faults: Arc<dyn Faults>, lease_ms: u64, counter: Option<CallCounter>,
) -> Stack {
    let plain = clients().await;
    let table = table(&plain).await;
    let (queue_url, _dlq) = provision::create_step_queue(&plain, &unique("steps"), 30, 10)
        .await
        .unwrap();
    let topic_arn = provision::create_topic(&plain, &unique("outcomes"))
        .await
        .unwrap();
    let outcomes_url = provision::subscribe_queue(&plain, &topic_arn, &unique("inbox"))
        .await
        .unwrap();
    let settings = AwsSettings {
        table,
        queue_url: queue_url.clone(),
        topic_arn,
        sealer: test_sealer(),
    };
    let throttle = ThrottleInjector::new(0);
    let config = load_config().await;
    let faulty = AwsClients::with_interceptors(&config, counter.clone(), Some(throttle.clone()));
    let poller = AwsClients::with_interceptors(&config, counter, None);
    let llm = Arc::new(CountingLlm::new(scripted(script)));
    let mut app = AppConfig::new(Tokens::default(), vec![MODEL.to_string()]).unwrap();
    app.app_base_url = APP_BASE_URL.into();
    app.active_limit = 3;
    // Webhook receivers in tests listen on loopback under a name the deployment trusts.
    app.fetch.policy.trusted_private = vec![crate::HOOKS_HOST.into()];
    app.fetch.lookup = Some(crate::hooks_lookup());
    let platform = longrun_wiring::aws::platform(
        &faulty,
        &settings,
        app,
        &Default::default(),
        Some(llm.clone()),
        faults,
        EngineConfig {
            lease_ms,
            ..Default::default()
        },
    )
    .unwrap();
    let observer = DynamoDbRunStore::new(
        plain.dynamodb.clone(),
        settings.table.clone(),
        test_sealer(),
    );
    Stack {
        observer,
        platform,
        settings,
        llm,
        throttle,
        steps: SqsStepQueue::new(poller.sqs.clone(), queue_url),
        outcomes: SqsStepQueue::new(poller.sqs.clone(), outcomes_url),
    }
}

/// Deliveries as the SQS event Lambda's poller would hand the worker.
pub fn sqs_event(deliveries: &[Delivery]) -> SqsEvent {
    let records: Vec<Value> = deliveries
        .iter()
        .map(|d| {
            let group = StepMessage::parse(&d.body)
                .map(|m| m.run_id)
                .unwrap_or_else(|_| "unparseable".into());
            json!({
                "messageId": d.message_id,
                "receiptHandle": d.receipt,
                "body": d.body,
                "attributes": {
                    "ApproximateReceiveCount": d.receive_count.to_string(),
                    "MessageGroupId": group,
                },
                "messageAttributes": {},
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:steps.fifo",
                "awsRegion": "us-east-1",
            })
        })
        .collect();
    serde_json::from_value(json!({ "Records": records })).unwrap()
}

/// An SNS envelope received on a subscribed queue, as the SNS event Lambda would deliver.
pub fn sns_event(envelope: &str) -> SnsEvent {
    let mut sns: Value = serde_json::from_str(envelope).unwrap();
    let obj = sns.as_object_mut().unwrap();
    for (from, to) in [
        ("SigningCertURL", "SigningCertUrl"),
        ("UnsubscribeURL", "UnsubscribeUrl"),
    ] {
        if let Some(v) = obj.remove(from) {
            obj.insert(to.into(), v);
        }
    }
    obj.entry("SigningCertUrl").or_insert(json!(""));
    obj.entry("UnsubscribeUrl").or_insert(json!(""));
    obj.entry("Signature").or_insert(json!(""));
    obj.entry("SignatureVersion").or_insert(json!("1"));
    serde_json::from_value(json!({"Records": [{
        "EventSource": "aws:sns",
        "EventVersion": "1.0",
        "EventSubscriptionArn": "arn:aws:sns:us-east-1:123456789012:outcomes:sub",
        "Sns": sns,
    }]}))
    .unwrap()
}

impl Stack {
    pub fn p(&self) -> &Platform {
        &self.platform
    }

    pub async fn run(&self, id: &str) -> Run {
        use longrun_ports::RunLog;
        self.observer.get_run(id).await.unwrap().unwrap()
    }

    /// Plays Lambda's SQS poller: receive, invoke the worker handler with the batch, delete
    /// what succeeded, let failures come back a second later. A failed batch is followed by a fresh
    /// execution environment (a new lease owner), as after a crash.
    pub async fn drive(&self, run_id: &str, max_rounds: usize) -> Run {
        let mut owner = unique("lambda");
        for _ in 0..max_rounds {
            let run = self.run(run_id).await;
            if (run.status.is_ended() || run.status.is_waiting()) && run.notified {
                return run;
            }
            // One message per run is in flight: a batch of one is what the run can use.
            let deliveries = self.steps.receive(1, 30_000).await.unwrap();
            if deliveries.is_empty() {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            let resp =
                longrun_fn_worker::handle(&self.p().engine, &owner, sqs_event(&deliveries), None)
                    .await;
            let failed: Vec<&str> = resp
                .batch_item_failures
                .iter()
                .map(|f| f.item_identifier.as_str())
                .collect();
            for d in &deliveries {
                if failed.contains(&d.message_id.as_str()) {
                    // Back after a (shortened) visibility timeout, as Lambda returns it.
                    self.steps.extend(&d.receipt, 1_000).await.unwrap();
                } else {
                    self.steps.ack(&d.receipt).await.unwrap();
                }
            }
            if !failed.is_empty() {
                owner = unique("lambda");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        let run = self.run(run_id).await;
        panic!(
            "run {run_id} did not settle within {max_rounds} rounds: {} at iteration {}, lease {:?}",
            run.status, run.iteration, run.lease
        );
    }

    /// The next outcome that reached the subscribed queue, as an SNS event.
    pub async fn next_outcome(&self) -> SnsEvent {
        for _ in 0..100 {
            if let Some(d) = self.outcomes.receive(1, 30_000).await.unwrap().pop() {
                self.outcomes.ack(&d.receipt).await.unwrap();
                return sns_event(&d.body);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no outcome reached the subscribed queue");
    }

    pub fn tokens_spent(&self) -> u64 {
        self.llm.tokens.load(Ordering::SeqCst)
    }
}
