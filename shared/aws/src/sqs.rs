//! `SqsStepQueue`: one FIFO queue, `MessageGroupId = run_id`, so SQS itself keeps one message
//! per run in flight and in order; `MessageDeduplicationId` drops re-sends inside 5 minutes.

use async_trait::async_trait;
use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::MessageSystemAttributeName;
use longrun_ports::Durability;
use longrun_ports::QueueResult;
use longrun_ports::{Delivery, Enqueued, QueueError, StepMessage, StepQueue};

use crate::{describe, error_code};

pub struct SqsStepQueue {
    client: Client,
    url: String,
    wait_seconds: i32,
}

/// SQS accepts 1–128 characters of alphanumerics and punctuation.
pub fn dedup_id(raw: &str) -> String {
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c.is_ascii_punctuation() {
                c
            } else {
                '_'
            }
        })
        .take(128)
        .collect()
}

fn seconds(ms: u64) -> i32 {
    ms.div_ceil(1000).min(43_200) as i32
}

fn stale_or_unavailable(code: Option<&str>, detail: String) -> QueueError {
    match code {
        Some("ReceiptHandleIsInvalid")
        | Some("InvalidParameterValue")
        | Some("MessageNotInflight")
        | Some("AWS.SimpleQueueService.MessageNotInflight") => QueueError::StaleReceipt,
        _ => QueueError::Unavailable(detail),
    }
}

impl SqsStepQueue {
    pub fn new(client: Client, url: impl Into<String>) -> Self {
        SqsStepQueue {
            client,
            url: url.into(),
            wait_seconds: 0,
        }
    }

    /// Long polling for `receive` (tests and local drivers; Lambda polls on its own).
    pub fn with_wait_seconds(mut self, seconds: i32) -> Self {
        self.wait_seconds = seconds.clamp(0, 20);
        self
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    async fn receive_one(&self, visibility_ms: u64) -> QueueResult<Option<Delivery>> {
        let out = self
            .client
            .receive_message()
            .queue_url(&self.url)
            .max_number_of_messages(1)
            .visibility_timeout(seconds(visibility_ms))
            .wait_time_seconds(self.wait_seconds)
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .send()
            .await
            .map_err(|e| QueueError::Unavailable(describe(&e)))?;
        Ok(out
            .messages
            .unwrap_or_default()
            .into_iter()
            .next()
            .map(|m| {
                let receive_count = m
                    .attributes
                    .as_ref()
                    .and_then(|a| a.get(&MessageSystemAttributeName::ApproximateReceiveCount))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(1);
                Delivery {
                    message_id: m.message_id.unwrap_or_default(),
                    receipt: m.receipt_handle.unwrap_or_default(),
                    body: m.body.unwrap_or_default(),
                    receive_count,
                }
            }))
    }
}

#[async_trait]
impl StepQueue for SqsStepQueue {
    /// A send is durable when SQS answers, so both durabilities are the same.
    async fn enqueue(
        &self, msg: &StepMessage, dedup: &str, delay_ms: u64, _: Durability,
    ) -> QueueResult<Enqueued> {
        if delay_ms > 0 {
            // FIFO queues only have a queue-wide delay.
            return Err(QueueError::Unsupported("per-message delay on a FIFO queue"));
        }
        let body =
            serde_json::to_string(msg).map_err(|e| QueueError::Unavailable(e.to_string()))?;
        self.client
            .send_message()
            .queue_url(&self.url)
            .message_body(body)
            .message_group_id(&msg.run_id)
            .message_deduplication_id(dedup_id(dedup))
            .send()
            .await
            .map_err(|e| QueueError::Unavailable(describe(&e)))?;
        // SQS accepts a deduplicated send silently: it cannot report `Duplicate`.
        Ok(Enqueued::Sent)
    }

    /// One message per `ReceiveMessage` call: SQS may return several messages of one group in
    /// a batch, but never a group's next message while one is in flight, so single receives
    /// keep the port's one-in-flight-per-run contract. (Lambda's own poller batches; the
    /// worker handler orders a group's records itself.)
    async fn receive(&self, max: usize, visibility_ms: u64) -> QueueResult<Vec<Delivery>> {
        let mut out = vec![];
        while out.len() < max {
            let got = self.receive_one(visibility_ms).await?;
            match got {
                Some(d) => out.push(d),
                None => break,
            }
        }
        Ok(out)
    }

    async fn ack(&self, receipt: &str) -> QueueResult<()> {
        self.client
            .delete_message()
            .queue_url(&self.url)
            .receipt_handle(receipt)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| stale_or_unavailable(error_code(&e), describe(&e)))
    }

    async fn extend(&self, receipt: &str, visibility_ms: u64) -> QueueResult<()> {
        self.client
            .change_message_visibility()
            .queue_url(&self.url)
            .receipt_handle(receipt)
            .visibility_timeout(seconds(visibility_ms))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| stale_or_unavailable(error_code(&e), describe(&e)))
    }
}
