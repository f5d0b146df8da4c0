//! Outcome webhooks, shared by the notifier Lambda, the sweeper and `longrun serve`: URLs
//! checked by the SSRF guard when registered, each delivery POSTed signed through the guarded
//! client (names resolved once and pinned, no redirects); the outbox (`crate::outbox`) retries.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use longrun_domain::{Attempt, OutcomeMessage, WebhookDelivery};
use longrun_ports::WebhookPoster;
use serde_json::Value;
use tracing::warn;

use crate::config::FetchConfig;
use crate::error::ServiceError;

/// Webhooks are signed the way user tool calls are.
pub use longrun_outbound::user_tool::{SIGNATURE_HEADER, signature};
/// The delivery id (`longrun_domain::delivery_id`): one per outcome and webhook, the same
/// on every attempt, so receivers can drop repeats.
pub const DELIVERY_HEADER: &str = "x-longrun-delivery";

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
/// (the same as the inbox entry's), the outcome's earlier fields, and a Slack-compatible `text`;
/// its `id` is the delivery's to the owner's webhook number `hook`.
pub fn payload(msg: &OutcomeMessage, hook: u32) -> Value {
    serde_json::to_value(msg.payload(hook)).unwrap_or_default()
}

/// Posts a delivery to its webhook through the SSRF-guarded client: the real `WebhookPoster`.
pub struct WebhookSender {
    http: reqwest::Client,
}

impl WebhookSender {
    /// One attempt per call, bounded by the client's connect (3 s) and request (5 s)
    /// timeouts: the outbox keeps the backoff, durably.
    pub fn new(fetch: &FetchConfig) -> Result<Self, reqwest::Error> {
        let http = longrun_outbound::guarded_client(
            Arc::new(fetch.policy.clone()),
            fetch.lookup.clone(),
            Duration::from_secs(3),
            Duration::from_secs(5),
        )?;
        Ok(WebhookSender { http })
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
            // Refused, timed out or TLS: what the owner reads in the delivery log.
            Err(e) => Attempt::Failed(longrun_transport::describe(&e)),
        }
    }
}

#[async_trait]
impl WebhookPoster for WebhookSender {
    async fn post(&self, d: &WebhookDelivery) -> Attempt {
        self.attempt(&d.url, &d.signature, &d.id, d.body.as_bytes())
            .await
    }
}
