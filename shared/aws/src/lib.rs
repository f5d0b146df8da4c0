//! The AWS adapters: `DynamoDbRunStore`, `SqsStepQueue`, `SnsNotifier`, plus the provisioning
//! the tests and a first deploy need. The only crate that names `aws-sdk-*` types.
//!
//! Clients are built once from the standard configuration chain, so the endpoint is chosen
//! only by the standard `AWS_ENDPOINT_URL` / `AWS_ENDPOINT_URL_<SERVICE>` settings.

pub mod bedrock;
pub mod capacity;
pub mod dynamodb;
pub mod interceptors;
pub mod provision;
pub mod secrets;
pub mod sns;
pub mod sqs;

use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, SdkConfig};

pub use bedrock::BedrockClient;
pub use dynamodb::DynamoDbRunStore;
pub use interceptors::{CallCounter, CallTally, ThrottleInjector};
pub use sns::SnsNotifier;
pub use sqs::SqsStepQueue;

/// The SDK's HTTP client on rustls with ring, the TLS stack reqwest uses too.
pub fn https_client() -> aws_smithy_runtime_api::client::http::SharedHttpClient {
    aws_smithy_http_client::Builder::new()
        .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
            aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
        ))
        .build_https()
}

/// The shared SDK configuration: standard retries (3 attempts, backoff with jitter) and
/// timeouts short enough that a hung call fails inside one Lambda invocation.
pub async fn load_config() -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .http_client(https_client())
        .retry_config(RetryConfig::standard().with_max_attempts(3))
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(3))
                .operation_attempt_timeout(Duration::from_secs(10))
                .operation_timeout(Duration::from_secs(25))
                .build(),
        )
        .load()
        .await
}

/// The three clients, built once at start-up. Interceptors (call counting, fault injection)
/// are attached here so every adapter built from these clients carries them.
#[derive(Clone, Debug)]
pub struct AwsClients {
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub sns: aws_sdk_sns::Client,
    pub secrets: aws_sdk_secretsmanager::Client,
    /// The configuration they came from, for clients built with their own settings (Bedrock's
    /// model timeout).
    pub config: SdkConfig,
}

impl AwsClients {
    pub fn new(config: &SdkConfig) -> Self {
        Self::with_interceptors(config, None, None)
    }

    pub fn with_interceptors(
        config: &SdkConfig, counter: Option<CallCounter>, throttle: Option<ThrottleInjector>,
    ) -> Self {
        let mut ddb = aws_sdk_dynamodb::config::Builder::from(config);
        let mut sqs = aws_sdk_sqs::config::Builder::from(config);
        let mut sns = aws_sdk_sns::config::Builder::from(config);
        if let Some(c) = counter {
            ddb = ddb.interceptor(c.clone());
            sqs = sqs.interceptor(c.clone());
            sns = sns.interceptor(c);
        }
        if let Some(t) = throttle {
            ddb = ddb.interceptor(t);
        }
        AwsClients {
            dynamodb: aws_sdk_dynamodb::Client::from_conf(ddb.build()),
            sqs: aws_sdk_sqs::Client::from_conf(sqs.build()),
            sns: aws_sdk_sns::Client::from_conf(sns.build()),
            secrets: aws_sdk_secretsmanager::Client::new(config),
            config: config.clone(),
        }
    }
}

/// An SDK error as one line: service code and message, or the transport failure.
pub(crate) fn describe<E>(e: &aws_sdk_dynamodb::error::SdkError<E>) -> String
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata + std::error::Error + 'static,
{
    match e.as_service_error() {
        Some(se) => format!(
            "{}: {}",
            se.code().unwrap_or("unknown"),
            se.message().unwrap_or_default()
        ),
        None => aws_sdk_dynamodb::error::DisplayErrorContext(e).to_string(),
    }
}

pub(crate) fn error_code<E>(e: &aws_sdk_dynamodb::error::SdkError<E>) -> Option<&str>
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata,
{
    e.as_service_error().and_then(|se| se.code())
}
