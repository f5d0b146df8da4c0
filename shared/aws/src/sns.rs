//! `SnsNotifier`: run outcomes on an SNS topic, with `status` and `user_id` message attributes
//! so subscriptions can filter.

use async_trait::async_trait;
use aws_sdk_sns::Client;
use aws_sdk_sns::types::MessageAttributeValue;
use longrun_domain::OutcomeMessage;
use longrun_ports::{Notifier, NotifyError};

use crate::describe;

pub struct SnsNotifier {
    client: Client,
    topic_arn: String,
}

impl SnsNotifier {
    pub fn new(client: Client, topic_arn: impl Into<String>) -> Self {
        SnsNotifier {
            client,
            topic_arn: topic_arn.into(),
        }
    }
}

fn string_attr(v: &str) -> Result<MessageAttributeValue, NotifyError> {
    MessageAttributeValue::builder()
        .data_type("String")
        .string_value(v)
        .build()
        .map_err(|e| NotifyError(e.to_string()))
}

#[async_trait]
impl Notifier for SnsNotifier {
    async fn publish(&self, msg: &OutcomeMessage) -> Result<(), NotifyError> {
        let body = serde_json::to_string(msg).map_err(|e| NotifyError(e.to_string()))?;
        self.client
            .publish()
            .topic_arn(&self.topic_arn)
            .subject(format!("longrun run {}", msg.status))
            .message(body)
            .message_attributes("status", string_attr(msg.status.as_str())?)
            .message_attributes("user_id", string_attr(&msg.user_id)?)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| NotifyError(describe(&e)))
    }
}
