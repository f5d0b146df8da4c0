//! Outcome webhooks, shared by the notifier Lambda, the sweeper and `longrun serve`: URLs
//! checked by the SSRF guard when registered, each delivery signed and POSTed by the
//! platform's `WebhookPoster` (the guarded client); the outbox (`crate::outbox`) retries.

use longrun_domain::OutcomeMessage;
use serde_json::Value;

/// Webhooks are signed the way user tool calls are.
pub use longrun_ports::signing::{DELIVERY_HEADER, SIGNATURE_HEADER, signature};

/// The webhook body (`OutcomePayload`): the seed's `title`, `message`, `action_url` and `data`
/// (the same as the inbox entry's), the outcome's earlier fields, and a Slack-compatible `text`;
/// its `id` is the delivery's to the owner's webhook number `hook`.
pub fn payload(msg: &OutcomeMessage, hook: u32) -> Value {
    serde_json::to_value(msg.payload(hook)).unwrap_or_default()
}
