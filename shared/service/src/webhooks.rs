//! Outcome webhooks, shared by the notifier Lambda and `longrun serve`: URLs checked by the
//! SSRF guard when registered, each outcome POSTed signed through the guarded client (names
//! resolved once and pinned, no redirects), retried with backoff.

use longrun_ports::CatalogExt;
use std::sync::Arc;
use std::time::Duration;

use longrun_domain::{Attempt, OutcomeMessage, Webhook};
use longrun_ports::StoreError;
use longrun_ports::UserCatalog;
use serde_json::Value;
use tracing::warn;

use crate::config::FetchConfig;
use crate::error::ServiceError;

/// Webhooks are signed the way user tool calls are.
pub use longrun_outbound::user_tool::{SIGNATURE_HEADER, signature};
/// Same value on every attempt for one outcome, so receivers can drop repeats.
pub const DELIVERY_HEADER: &str = "x-longrun-delivery";

#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("webhook {url} failed after {attempts} attempts: {last}")]
    Failed {
        url: String,
        attempts: u32,
        last: String,
    },
}

impl WebhookError {
    pub fn is_retryable(&self) -> bool {
        match self {
            WebhookError::Store(e) => e.is_retryable(),
            WebhookError::Failed { .. } => true,
        }
    }
}

/// A webhook URL as `PUT /v1/webhooks` accepts it: https (plain http only to a host the
/// deployment trusts as private, e.g. a local receiver), and nothing the SSRF guard refuses —
/// private, loopback, link-local and metadata addresses in any spelling, credentials in the URL.
pub fn check_url(raw: &str, fetch: &FetchConfig) -> Result<(), ServiceError> {
    fetch
        .policy
        .check_registrable(raw)
        .map(|_| ())
        .map_err(|m| ServiceError::Invalid(format!("webhooks[].url {m}")))
}

/// The webhook body (`OutcomePayload`): the seed's `title`, `message`, `action_url` and `data`
/// (the same as the inbox entry's), the outcome's earlier fields, and a Slack-compatible `text`.
pub fn payload(msg: &OutcomeMessage) -> Value {
    serde_json::to_value(msg.payload()).unwrap_or_default()
}

/// Posts outcomes to their owner's webhooks through the SSRF-guarded client.
pub struct WebhookSender {
    http: reqwest::Client,
    backoff: Vec<Duration>,
}

impl WebhookSender {
    /// `backoff`: the waits between attempts (its length + 1 attempts in all).
    pub fn new(fetch: &FetchConfig, backoff: Vec<Duration>) -> Result<Self, reqwest::Error> {
        let http = longrun_outbound::guarded_client(
            Arc::new(fetch.policy.clone()),
            fetch.lookup.clone(),
            Duration::from_secs(3),
            Duration::from_secs(5),
        )?;
        Ok(WebhookSender { http, backoff })
    }

    /// One signed POST of the outcome to each of its owner's webhooks; `delivery` is the same
    /// on every retry of one outcome.
    pub async fn post_all(
        &self, store: &dyn UserCatalog, msg: &OutcomeMessage, delivery: &str,
    ) -> Result<(), WebhookError> {
        let body = serde_json::to_vec(&payload(msg)).unwrap_or_default();
        for hook in store.webhooks(&msg.user_id).await? {
            self.post(&hook, delivery, &body).await?;
        }
        Ok(())
    }

    async fn post(&self, hook: &Webhook, delivery: &str, body: &[u8]) -> Result<(), WebhookError> {
        let sig = signature(&hook.secret, body);
        let mut last = String::new();
        let attempts = self.backoff.len() as u32 + 1;
        for attempt in 0..attempts {
            if let Some(wait) = attempt
                .checked_sub(1)
                .and_then(|i| self.backoff.get(i as usize))
            {
                tokio::time::sleep(*wait).await;
            }
            match self.attempt(&hook.url, &sig, delivery, body).await {
                // A refusal will not change on retry.
                Attempt::Delivered | Attempt::Refused(_) => return Ok(()),
                Attempt::Failed(why) => last = why,
            }
        }
        Err(WebhookError::Failed {
            url: hook.url.clone(),
            attempts,
            last,
        })
    }

    /// One signed POST of `body` (already signed: `sig`) under the delivery id.
    pub async fn attempt(&self, url: &str, sig: &str, delivery: &str, body: &[u8]) -> Attempt {
        let sent = self
            .http
            .post(url)
            .header("content-type", "application/json")
            .header(SIGNATURE_HEADER, sig)
            .header(DELIVERY_HEADER, delivery)
            .body(body.to_vec())
            .send()
            .await;
        match sent {
            Ok(r) if r.status().is_success() => Attempt::Delivered,
            // A 4xx other than 429 will not change on retry.
            Ok(r) if r.status().is_client_error() && r.status().as_u16() != 429 => {
                warn!(url = %url, status = %r.status(), "webhook refused the delivery");
                Attempt::Refused(format!("HTTP {}", r.status()))
            }
            Ok(r) => Attempt::Failed(format!("HTTP {}", r.status())),
            // A URL the guard refuses (stored before it was checked, or a name that now
            // resolves to a private address) is never retried.
            Err(e) if longrun_outbound::refusal_in(&e).is_some() => {
                let e = e.without_url();
                warn!(url = %url, error = %e, "webhook refused by the SSRF guard");
                Attempt::Refused(format!("refused by the SSRF guard: {e}"))
            }
            Err(e) => Attempt::Failed(e.without_url().to_string()),
        }
    }
}
