//! Provider keys kept in Secrets Manager: read once as a function starts, never logged.

use aws_sdk_secretsmanager::Client;

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("secret `{name}` could not be read: {reason}")]
    Unreadable {
        name: String,
        reason: String,
        retryable: bool,
    },
    #[error("secret `{0}` has no string value")]
    NotAString(String),
}

impl SecretError {
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            SecretError::Unreadable {
                retryable: true,
                ..
            }
        )
    }
}

/// The string value of the secret `name` (a name or an ARN).
pub async fn secret_string(client: &Client, name: &str) -> Result<String, SecretError> {
    let out = client
        .get_secret_value()
        .secret_id(name)
        .send()
        .await
        .map_err(|e| {
            let service = e.as_service_error();
            // A missing secret or a denied read will not change by retrying.
            let retryable = !service.is_some_and(|s| {
                s.is_resource_not_found_exception() || s.is_invalid_request_exception()
            }) && e.raw_response().is_none_or(|r| r.status().as_u16() >= 500);
            SecretError::Unreadable {
                name: name.to_string(),
                reason: service
                    .and_then(|s| s.meta().message().map(str::to_string))
                    .unwrap_or_else(|| format!("{e}")),
                retryable,
            }
        })?;
    out.secret_string
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.trim().to_string())
        .ok_or_else(|| SecretError::NotAString(name.to_string()))
}
