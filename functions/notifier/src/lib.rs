//! The notifier: each SNS outcome becomes one in-app notification (idempotent on its id) and
//! one signed POST to each of the owner's webhooks, retried with backoff.

use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::event::sns::SnsEvent;
use longrun_engine::RunStore;
use longrun_engine::ports::{OutcomeMessage, StoreError, Webhook, notification_for};
use serde_json::{Value, json};
use tracing::{info, warn};

/// Webhooks are signed the way user tool calls are.
pub use longrun_fetch::user_tool::{SIGNATURE_HEADER, signature};
/// Same value on every attempt for one outcome, so receivers can drop repeats.
pub const DELIVERY_HEADER: &str = "x-longrun-delivery";

#[derive(Debug, thiserror::Error)]
pub enum NotifierError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("webhook {url} failed after {attempts} attempts: {last}")]
    Webhook {
        url: String,
        attempts: u32,
        last: String,
    },
}

impl NotifierError {
    pub fn is_retryable(&self) -> bool {
        match self {
            NotifierError::Store(e) => e.is_retryable(),
            NotifierError::Webhook { .. } => true,
        }
    }
}

/// The webhook body: the outcome, its metrics, the deep link, and a Slack-compatible `text`.
pub fn payload(msg: &OutcomeMessage) -> Value {
    let reason = msg
        .stopping_reason
        .as_ref()
        .map(|r| format!(" ({})", r.detail))
        .unwrap_or_default();
    let summary = if msg.summary.is_empty() {
        String::new()
    } else {
        format!(": {}", msg.summary)
    };
    json!({
        "id": msg.notification_id(),
        "run_id": msg.run_id,
        "status": msg.status,
        "stopping_reason": msg.stopping_reason,
        "summary": msg.summary,
        "metrics": {"iterations": msg.iterations, "tokens": msg.tokens, "cost_usd": msg.cost_usd},
        "link": msg.link,
        "at": msg.at,
        "text": format!("Run <{}|{}> {}{reason}{summary}", msg.link, msg.run_id, msg.status),
    })
}

pub struct NotifierHandler {
    store: Arc<dyn RunStore>,
    http: reqwest::Client,
    backoff: Vec<Duration>,
}

impl NotifierHandler {
    /// `backoff`: the waits between attempts (its length + 1 attempts in all).
    pub fn new(store: Arc<dyn RunStore>, backoff: Vec<Duration>) -> Result<Self, reqwest::Error> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(5))
            .connect_timeout(Duration::from_secs(3))
            // A redirect could lead the request somewhere the URL check never saw.
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(NotifierHandler {
            store,
            http,
            backoff,
        })
    }

    pub async fn handle(&self, event: SnsEvent) -> Result<(), NotifierError> {
        for record in event.records {
            match serde_json::from_str::<OutcomeMessage>(&record.sns.message) {
                Ok(msg) => self.deliver(&msg).await?,
                // It would never parse: retrying only delays the rest.
                Err(e) => {
                    warn!(message_id = %record.sns.message_id, error = %e, "skipping an unreadable outcome")
                }
            }
        }
        Ok(())
    }

    pub async fn deliver(&self, msg: &OutcomeMessage) -> Result<(), NotifierError> {
        let note = notification_for(msg);
        if self.store.put_notification(&note).await? {
            info!(run_id = %msg.run_id, status = %msg.status, "notification recorded");
        }
        let body = serde_json::to_vec(&payload(msg)).unwrap_or_default();
        for hook in self.store.webhooks(&msg.user_id).await? {
            self.post(&hook, &note.id, &body).await?;
        }
        Ok(())
    }

    async fn post(&self, hook: &Webhook, delivery: &str, body: &[u8]) -> Result<(), NotifierError> {
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
            let sent = self
                .http
                .post(&hook.url)
                .header("content-type", "application/json")
                .header(SIGNATURE_HEADER, &sig)
                .header(DELIVERY_HEADER, delivery)
                .body(body.to_vec())
                .send()
                .await;
            match sent {
                Ok(r) if r.status().is_success() => return Ok(()),
                // A 4xx other than 429 will not change on retry.
                Ok(r) if r.status().is_client_error() && r.status().as_u16() != 429 => {
                    warn!(url = %hook.url, status = %r.status(), "webhook refused the delivery");
                    return Ok(());
                }
                Ok(r) => last = format!("HTTP {}", r.status()),
                Err(e) => last = e.without_url().to_string(),
            }
        }
        Err(NotifierError::Webhook {
            url: hook.url.clone(),
            attempts,
            last,
        })
    }
}
