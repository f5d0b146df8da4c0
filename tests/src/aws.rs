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
    DynamoDbRunStore::new(c.dynamodb.clone(), t)
}

/// A FIFO step queue with a dead-letter queue after `max_receives`; returns `(queue, dlq_url)`.
pub async fn step_queue(c: &AwsClients, max_receives: u32) -> (SqsStepQueue, String) {
    let (url, dlq) = provision::create_step_queue(c, &unique("steps"), 30, max_receives)
        .await
        .unwrap();
    (SqsStepQueue::new(c.sqs.clone(), url), dlq)
}
