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

/// SNS takes a subject of printable ASCII under 100 characters: the title, spelled so.
fn sns_subject(title: &str) -> String {
    let ascii: String = title
        .replace(['—', '–'], "-")
        .replace('…', "...")
        .chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .collect();
    ascii.trim().chars().take(99).collect()
}

#[async_trait]
impl Notifier for SnsNotifier {
    async fn publish(&self, msg: &OutcomeMessage) -> Result<(), NotifyError> {
        // The outcome, plus the seed's `action_url` and `data` as the inbox and webhooks
        // carry them; the notifier reads the outcome and ignores the rest.
        let mut body = serde_json::to_value(msg).map_err(|e| NotifyError(e.to_string()))?;
        let data = serde_json::to_value(msg.data()).map_err(|e| NotifyError(e.to_string()))?;
        if let Some(o) = body.as_object_mut() {
            o.insert("action_url".into(), msg.link.clone().into());
            o.insert("data".into(), data);
        }
        self.client
            .publish()
            .topic_arn(&self.topic_arn)
            .subject(sns_subject(&msg.title_or_default()))
            .message(body.to_string())
            .message_attributes("status", string_attr(msg.status.as_str())?)
            .message_attributes("user_id", string_attr(&msg.user_id)?)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| NotifyError(describe(&e)))
    }
}

#[cfg(test)]
mod tests {
    use super::sns_subject;

    #[test]
    fn the_sns_subject_is_the_title_in_printable_ascii_under_100_characters() {
        assert_eq!(
            sns_subject("Tea field guide — completed"),
            "Tea field guide - completed"
        );
        assert_eq!(sns_subject("Thé… — stopped"), "Th... - stopped");
        assert_eq!(sns_subject(&"x".repeat(300)).len(), 99);
    }
}
