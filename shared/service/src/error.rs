//! What a use case can answer besides success; transports map it (HTTP to problem+json, MCP to
//! tool errors, the sweeper to a retry).

use longrun_domain::{DomainError, Rejection};
use longrun_engine::EngineError;
use longrun_ports::{QueueError, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// The request itself is wrong; the message names the field.
    #[error("{0}")]
    Invalid(String),
    #[error("{0} not found")]
    NotFound(String),
    /// Well formed, but the state says no (a run not waiting, a tool not registered).
    #[error("{0}")]
    Conflict(String),
    /// A per-user limit (active runs, schedules, registrations).
    #[error("{0}")]
    LimitExceeded(String),
    /// Storage or the queue is busy or down: retry later.
    #[error("{0}")]
    Unavailable(String),
    #[error("internal error")]
    Internal(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl ServiceError {
    pub fn internal(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        ServiceError::Internal(Box::new(e))
    }

    pub fn is_retryable(&self) -> bool {
        matches!(self, ServiceError::Unavailable(_))
    }
}

impl From<StoreError> for ServiceError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Rejected(r) => r.into(),
            StoreError::Conflict(m) => {
                ServiceError::Unavailable(format!("concurrent update, retry: {m}"))
            }
            StoreError::Unavailable(_) => {
                ServiceError::Unavailable("storage is unavailable, retry later".into())
            }
            e @ StoreError::Corrupt(_) => ServiceError::internal(e),
        }
    }
}

impl From<Rejection> for ServiceError {
    fn from(r: Rejection) -> Self {
        match r {
            Rejection::NotFound => ServiceError::NotFound("run".into()),
            Rejection::LimitExceeded { limit } => ServiceError::LimitExceeded(format!(
                "you already have {limit} active runs (the limit); wait for one to finish or cancel one"
            )),
            other => ServiceError::Conflict(other.to_string()),
        }
    }
}

impl From<DomainError> for ServiceError {
    fn from(e: DomainError) -> Self {
        ServiceError::Invalid(e.to_string())
    }
}

impl From<EngineError> for ServiceError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::Store(s) => s.into(),
            other if other.is_retryable() => ServiceError::Unavailable(other.to_string()),
            other => ServiceError::internal(other),
        }
    }
}

impl From<QueueError> for ServiceError {
    fn from(e: QueueError) -> Self {
        ServiceError::from(EngineError::Queue(e))
    }
}
