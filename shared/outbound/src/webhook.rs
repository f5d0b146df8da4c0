//! Outcome webhooks on the wire: each delivery POSTed, already signed, through the guarded
//! client (names resolved once and pinned, no redirects), one attempt per call; the outbox
//! keeps the backoff.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use longrun_domain::{Attempt, WebhookDelivery};
use longrun_ports::signing::{DELIVERY_HEADER, SIGNATURE_HEADER};
use longrun_ports::{FetchPolicy, HostLookup, WebhookPoster};
use tracing::warn;

/// Posts a delivery to its webhook through the SSRF-guarded client: the real `WebhookPoster`.
pub struct WebhookSender {
    http: reqwest::Client,
}

impl WebhookSender {
    /// One attempt per call, bounded by the client's connect (3 s) and request (5 s)
    /// timeouts: the outbox keeps the backoff, durably.
    pub fn new(policy: FetchPolicy, lookup: Arc<dyn HostLookup>) -> Result<Self, reqwest::Error> {
        let http = crate::guarded_client(
            Arc::new(policy),
            lookup,
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
            Err(e) if crate::refusal_in(&e).is_some() => {
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
