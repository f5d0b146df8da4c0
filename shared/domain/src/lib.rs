//! longrun's pure domain: it decides, it never does IO.

pub mod catalog;
pub mod change;
pub mod decide;
pub mod events;
pub mod evidence;
pub mod fingerprint;
pub mod outbox;
pub mod outcome;
pub mod planner;
pub mod record;
pub mod report;
pub mod run;
pub mod schedule;
pub mod status;

#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use catalog::{McpServer, UserTool, Webhook};
pub use change::{CommitPlan, Rejection, RunChange};
pub use decide::{IterationFacts, Outcome, Verdict, decide};
pub use events::RunEvent;
pub use outbox::{Attempt, DeliveryState, RetryPolicy, WebhookDelivery};
pub use outcome::{
    Notification, NotificationData, NotificationMetrics, OutcomeMessage, OutcomePayload, headline,
    notification_for,
};
pub use record::{
    Doc, DocHit, DocMeta, Event, EventDraft, EventKind, IterationRecord, PadEntry, doc_hit,
    sequence_events,
};
pub use report::Report;
pub use run::{Budgets, BudgetsInput, Run, RunStatus, StopType, StoppingReason, Thresholds};
pub use schedule::{RunTemplate, Schedule};

/// Nothing but whitespace, as JSON Schema patterns see it (`\S` in the API document): Unicode
/// white space plus the ASCII separators U+001C to U+001F, which regex engines count too.
pub fn is_blank(s: &str) -> bool {
    s.chars()
        .all(|c| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

/// At most `max_chars` characters of `s`, with an ellipsis when cut.
pub fn clip(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max_chars).collect();
    out.push('…');
    out
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DomainError {
    #[error("illegal status transition {from} -> {to}")]
    IllegalTransition { from: RunStatus, to: RunStatus },
    #[error("{field} {message}")]
    InvalidField {
        field: &'static str,
        message: String,
    },
}
