//! Outcome webhooks as durable records: one delivery per outcome and webhook, recorded with the
//! inbox entry, and what each attempt's result does to it (retry later, delivered, given up).
//! Pure: the sender and the stores act on what these functions return.

use crate::retry::Backoff;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a delivery stands. `Pending` is attempted (again) once `next_at` has passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryState {
    Pending,
    Delivered,
    /// Refused for good by the receiver (a 4xx other than 429, a URL the SSRF guard refuses) or
    /// out of attempts; kept with the last error so the owner can see why.
    GivenUp,
}

impl DeliveryState {
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryState::Pending => "pending",
            DeliveryState::Delivered => "delivered",
            DeliveryState::GivenUp => "given_up",
        }
    }
}

/// The id of one outcome's delivery to one webhook, `{notification_id}#{hook}`: receivers drop
/// repeats by it, so it is one per (outcome, webhook) — two webhooks of a user that reach one
/// receiver are two deliveries to it — and it is recorded with the delivery, the same on
/// every attempt.
pub fn delivery_id(notification_id: &str, hook: u32) -> String {
    format!("{notification_id}#{hook}")
}

/// One outcome on its way to one of its owner's webhooks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WebhookDelivery {
    /// The delivery id ([`delivery_id`]; deliveries recorded before it named the webhook
    /// carry the outcome's notification id): sent as the delivery header and as the body's
    /// `id` on every attempt, so each receiver can drop repeats.
    pub id: String,
    /// The webhook's place in its owner's list when the outcome was recorded.
    pub hook: u32,
    pub user_id: String,
    pub run_id: String,
    pub url: String,
    /// The body's signature under the webhook's secret, computed when recorded: the secret
    /// stays in the catalog, and every attempt sends the same bytes.
    pub signature: String,
    pub body: String,
    pub state: DeliveryState,
    pub attempts: u32,
    /// When it is due next (pending), or when it settled.
    pub next_at: i64,
    pub created_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The attempts made, oldest first (the latest `MAX_HISTORY`): what the owner sees of why
    /// it was delivered late or given up. Absent from deliveries recorded before it was kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<AttemptRecord>,
}

/// Attempts kept per delivery: the default policy's 12 and then some, bounded so a policy
/// with many attempts cannot grow the record without end.
pub const MAX_HISTORY: usize = 20;

/// One attempt of a delivery, as kept on it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AttemptRecord {
    /// When the attempt ended (ms since the epoch).
    pub at: i64,
    /// Why it failed: the receiver's status (`HTTP 503 Service Unavailable`) or what stopped
    /// the request (a timeout, a refused connection, the SSRF guard); null when delivered.
    pub error: Option<String>,
}

/// What one attempt came to.
#[derive(Clone, Debug, PartialEq)]
pub enum Attempt {
    Delivered,
    /// Will not change on retry.
    Refused(String),
    /// May work later: a 5xx, a 429, a timeout, a connection refused.
    Failed(String),
}

impl WebhookDelivery {
    /// The delivery after an attempt that ended at `now`.
    /// `policy` (`Backoff::WEBHOOK` in production) spaces the attempts and bounds how many.
    pub fn after(&self, attempt: &Attempt, now: i64, policy: &Backoff) -> WebhookDelivery {
        let mut next = self.clone();
        next.attempts = self.attempts.saturating_add(1);
        next.next_at = now;
        let error = match attempt {
            Attempt::Delivered => None,
            Attempt::Refused(why) | Attempt::Failed(why) => Some(why.clone()),
        };
        next.history.push(AttemptRecord { at: now, error });
        let over = next.history.len().saturating_sub(MAX_HISTORY);
        next.history.drain(..over);
        match attempt {
            Attempt::Delivered => {
                next.state = DeliveryState::Delivered;
            }
            Attempt::Refused(why) => {
                next.state = DeliveryState::GivenUp;
                next.last_error = Some(why.clone());
            }
            Attempt::Failed(why) => {
                next.last_error = Some(why.clone());
                // Attempt k failed: retry number k-1 comes next, if the policy allows it.
                let retry = next.attempts.saturating_sub(1);
                if policy.allows(retry) {
                    let wait = i64::try_from(policy.delay_ms(retry)).unwrap_or(i64::MAX);
                    next.next_at = now.saturating_add(wait);
                } else {
                    next.state = DeliveryState::GivenUp;
                }
            }
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending() -> WebhookDelivery {
        WebhookDelivery {
            id: "r1#3#completed".into(),
            hook: 0,
            user_id: "u".into(),
            run_id: "r1".into(),
            url: "https://hooks.example/h".into(),
            signature: "sha256=00".into(),
            body: "{}".into(),
            state: DeliveryState::Pending,
            attempts: 0,
            next_at: 0,
            created_at: 0,
            last_error: None,
            history: vec![],
        }
    }

    #[test]
    fn a_failed_attempt_is_retried_later_with_a_doubling_wait_capped_by_the_policy() {
        // Arrange
        let policy = Backoff {
            max_ms: 3_000,
            ..Backoff::WEBHOOK
        };
        let failed = Attempt::Failed("HTTP 503".into());

        // Act
        let first = pending().after(&failed, 100, &policy);
        let second = first.after(&failed, 2_000, &policy);
        let third = second.after(&failed, 5_000, &policy);

        // Assert
        assert_eq!(first.state, DeliveryState::Pending);
        assert_eq!(
            [first.next_at, second.next_at, third.next_at],
            [1_100, 4_000, 8_000]
        );
        assert_eq!(third.attempts, 3);
        assert_eq!(third.last_error.as_deref(), Some("HTTP 503"));
    }

    #[test]
    fn a_delivery_out_of_attempts_is_given_up_and_keeps_its_last_error() {
        // Arrange
        let policy = Backoff {
            max_retries: Some(1),
            ..Backoff::WEBHOOK
        };
        let failed = Attempt::Failed("connection refused".into());

        // Act
        let last = pending()
            .after(&failed, 0, &policy)
            .after(&failed, 10, &policy);

        // Assert
        assert_eq!(last.state, DeliveryState::GivenUp);
        assert_eq!(last.attempts, 2);
        assert_eq!(last.last_error.as_deref(), Some("connection refused"));
    }

    #[test]
    fn a_refusal_gives_up_at_once_and_a_success_settles_the_delivery() {
        let policy = Backoff::WEBHOOK;

        let refused = pending().after(&Attempt::Refused("HTTP 410".into()), 5, &policy);
        let delivered = pending().after(&Attempt::Delivered, 5, &policy);

        assert_eq!(refused.state, DeliveryState::GivenUp);
        assert_eq!(refused.attempts, 1);
        assert_eq!(delivered.state, DeliveryState::Delivered);
        assert_eq!(delivered.last_error, None);
    }

    #[test]
    fn each_attempt_is_kept_with_its_time_and_error_up_to_the_latest_few() {
        // Arrange
        let policy = Backoff {
            first_ms: 1,
            max_ms: 1,
            max_retries: Some(99),
            jitter: 0.0,
        };
        let mut d = pending();

        // Act
        for at in 0..30 {
            d = d.after(&Attempt::Failed(format!("HTTP 50{}", at % 10)), at, &policy);
        }
        let delivered = d.after(&Attempt::Delivered, 30, &policy);

        // Assert
        assert_eq!(delivered.attempts, 31);
        assert_eq!(delivered.history.len(), MAX_HISTORY);
        assert_eq!(
            delivered.history.last(),
            Some(&AttemptRecord {
                at: 30,
                error: None
            })
        );
        assert_eq!(
            delivered.history[0],
            AttemptRecord {
                at: 11,
                error: Some("HTTP 501".into())
            }
        );
    }
}
