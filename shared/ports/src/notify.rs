//! The `Notifier` port: a run's outcome leaves the worker (SNS on AWS, a channel locally).

use async_trait::async_trait;
use longrun_domain::OutcomeMessage;

#[derive(Debug, thiserror::Error)]
#[error("notifier unavailable: {0}")]
pub struct NotifyError(pub String);

#[async_trait]
pub trait Notifier: Send + Sync {
    async fn publish(&self, msg: &OutcomeMessage) -> Result<(), NotifyError>;
}
