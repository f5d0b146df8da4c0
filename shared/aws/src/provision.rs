//! Creates the table, queues and topic the way the infrastructure code does, for tests, the
//! local emulator and a first try-out. Production deploys use `infra/`.

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType,
    Projection as AwsProjection, ProjectionType, ScalarAttributeType, TimeToLiveSpecification,
};
use aws_sdk_sqs::types::QueueAttributeName;

use crate::capacity::{IndexSpec, Projection};
use crate::dynamodb::INDEXES;
use crate::{AwsClients, describe};

#[derive(Debug, thiserror::Error)]
#[error("provisioning {what} failed: {message}")]
pub struct ProvisionError {
    pub what: String,
    pub message: String,
}

fn failed(what: &str, message: impl ToString) -> ProvisionError {
    ProvisionError {
        what: what.to_string(),
        message: message.to_string(),
    }
}

fn key(name: &str, kind: KeyType) -> Result<KeySchemaElement, ProvisionError> {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(kind)
        .build()
        .map_err(|e| failed("key schema", e))
}

fn string_attr(name: &str) -> Result<AttributeDefinition, ProvisionError> {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(ScalarAttributeType::S)
        .build()
        .map_err(|e| failed("attribute", e))
}

fn gsi(ix: &IndexSpec) -> Result<GlobalSecondaryIndex, ProvisionError> {
    let projection = match ix.projection {
        Projection::All => AwsProjection::builder().projection_type(ProjectionType::All),
        Projection::KeysOnly => AwsProjection::builder().projection_type(ProjectionType::KeysOnly),
        Projection::Include(names) => names.iter().fold(
            AwsProjection::builder().projection_type(ProjectionType::Include),
            |p, n| p.non_key_attributes(*n),
        ),
    };
    GlobalSecondaryIndex::builder()
        .index_name(ix.name)
        .key_schema(key(ix.pk, KeyType::Hash)?)
        .key_schema(key(ix.sk, KeyType::Range)?)
        .projection(projection.build())
        .build()
        .map_err(|e| failed("index", e))
}

/// The single table: PK/SK, GSI1 (a user's runs), GSI2 (sparse sweeper index), TTL on
/// `expires_at`, on-demand billing.
pub async fn create_table(c: &AwsClients, table: &str) -> Result<(), ProvisionError> {
    let mut req = c
        .dynamodb
        .create_table()
        .table_name(table)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(key("PK", KeyType::Hash)?)
        .key_schema(key("SK", KeyType::Range)?)
        .attribute_definitions(string_attr("PK")?)
        .attribute_definitions(string_attr("SK")?);
    for ix in &INDEXES {
        req = req
            .global_secondary_indexes(gsi(ix)?)
            .attribute_definitions(string_attr(ix.pk)?)
            .attribute_definitions(string_attr(ix.sk)?);
    }
    req.send()
        .await
        .map_err(|e| failed(&format!("table {table}"), describe(&e)))?;
    c.dynamodb
        .update_time_to_live()
        .table_name(table)
        .time_to_live_specification(
            TimeToLiveSpecification::builder()
                .enabled(true)
                .attribute_name("expires_at")
                .build()
                .map_err(|e| failed("ttl", e))?,
        )
        .send()
        .await
        .map_err(|e| failed(&format!("ttl on {table}"), describe(&e)))?;
    Ok(())
}

/// A FIFO step queue `{name}.fifo` with a dead-letter queue after `max_receives` receives.
/// Returns `(queue_url, dlq_url)`.
pub async fn create_step_queue(
    c: &AwsClients, name: &str, visibility_s: u32, max_receives: u32,
) -> Result<(String, String), ProvisionError> {
    let fifo = (QueueAttributeName::FifoQueue, "true".to_string());
    let dlq_url = create_queue(
        c,
        &format!("{name}-dlq.fifo"),
        "dead-letter queue",
        vec![fifo.clone()],
    )
    .await?;
    let dlq_arn = queue_arn(c, &dlq_url).await?;
    let redrive =
        serde_json::json!({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": max_receives});
    let url = create_queue(
        c,
        &format!("{name}.fifo"),
        "step queue",
        vec![
            fifo,
            (
                QueueAttributeName::VisibilityTimeout,
                visibility_s.to_string(),
            ),
            (QueueAttributeName::RedrivePolicy, redrive.to_string()),
        ],
    )
    .await?;
    Ok((url, dlq_url))
}

/// A queue with these attributes; `what` names it in an error. Returns its URL.
async fn create_queue(
    c: &AwsClients, name: &str, what: &str, attributes: Vec<(QueueAttributeName, String)>,
) -> Result<String, ProvisionError> {
    let out = c
        .sqs
        .create_queue()
        .queue_name(name)
        .set_attributes((!attributes.is_empty()).then(|| attributes.into_iter().collect()))
        .send()
        .await
        .map_err(|e| failed(what, describe(&e)))?;
    Ok(out.queue_url.unwrap_or_default())
}

pub async fn queue_arn(c: &AwsClients, url: &str) -> Result<String, ProvisionError> {
    c.sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|e| failed("queue attributes", describe(&e)))?
        .attributes
        .and_then(|mut a| a.remove(&QueueAttributeName::QueueArn))
        .ok_or_else(|| failed("queue attributes", "no QueueArn"))
}

/// The outcome topic. Returns its ARN.
pub async fn create_topic(c: &AwsClients, name: &str) -> Result<String, ProvisionError> {
    c.sns
        .create_topic()
        .name(name)
        .send()
        .await
        .map_err(|e| failed("topic", describe(&e)))?
        .topic_arn
        .ok_or_else(|| failed("topic", "no TopicArn"))
}

/// A standard queue subscribed to the topic (SNS envelopes, not raw). Returns its URL.
pub async fn subscribe_queue(
    c: &AwsClients, topic_arn: &str, name: &str,
) -> Result<String, ProvisionError> {
    let url = create_queue(c, name, "subscriber queue", vec![]).await?;
    let arn = queue_arn(c, &url).await?;
    c.sns
        .subscribe()
        .topic_arn(topic_arn)
        .protocol("sqs")
        .endpoint(arn)
        .send()
        .await
        .map_err(|e| failed("subscription", describe(&e)))?;
    Ok(url)
}

/// A Secrets Manager secret holding a fresh random sealing key (64 hex characters), as the
/// infrastructure's generated secret does; returns its name.
pub async fn create_seal_secret(c: &AwsClients, name: &str) -> Result<String, ProvisionError> {
    let key = longrun_ports::Sealer::new_key().map_err(|e| failed("sealing key", e))?;
    let text: String = key.iter().map(|b| format!("{b:02x}")).collect();
    c.secrets
        .create_secret()
        .name(name)
        .secret_string(text)
        .send()
        .await
        .map_err(|e| failed("sealing key secret", describe(&e)))?;
    Ok(name.to_string())
}
