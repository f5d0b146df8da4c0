//! longrun's pure domain: it decides, it never does IO.

pub mod agent;
pub mod catalog;
pub mod change;
pub mod criteria;
pub mod decide;
pub mod events;
pub mod evidence;
pub mod fingerprint;
pub mod outbox;
pub mod outcome;
pub mod planner;
pub mod progress;
pub mod record;
pub mod repo;
pub mod report;
pub mod retention;
pub mod retry;
pub mod run;
pub mod schedule;
pub mod status;

#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use agent::{AgentProcessInfo, AgentView, BusMessage, TaskStatus, TaskSummary, TaskView};
pub use catalog::{McpServer, UserTool, Webhook};
pub use change::{CommitPlan, Rejection, RunChange};
pub use decide::{IterationFacts, Outcome, Verdict, decide};
pub use events::RunEvent;
pub use outbox::{
    Attempt, AttemptRecord, DeliveryState, MAX_HISTORY, WebhookDelivery, delivery_id,
};
pub use outcome::{
    Notification, NotificationData, NotificationMetrics, OutcomeMessage, OutcomePayload, headline,
    notification_for,
};
pub use record::{
    Doc, DocHit, DocMeta, Event, EventDraft, EventKind, IterationRecord, PadEntry, doc_hit,
    sequence_events,
};
pub use report::Report;
pub use retention::{EXPORT_FORMAT, Keep, RunExport};
pub use retry::{Backoff, RetryIter};
pub use run::{Budgets, BudgetsInput, Run, RunStatus, StopType, StoppingReason, Thresholds};
pub use schedule::{RunTemplate, Schedule};

/// Nothing a reader would see: Unicode white space, the ASCII separators U+001C to U+001F
/// (which regex engines count as space too) and invisible formatting characters (zero-width
/// spaces and joiners, direction marks, fillers, the BOM). [`NOT_BLANK`] states the same.
pub fn is_blank(s: &str) -> bool {
    s.chars().all(|c| {
        c.is_whitespace()
            || ('\u{1c}'..='\u{1f}').contains(&c)
            || matches!(c, '\u{ad}' | '\u{34f}' | '\u{115f}' | '\u{1160}' | '\u{180e}'
                | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{206f}' | '\u{3164}' | '\u{feff}' | '\u{ffa0}')
    })
}

/// The JSON Schema pattern of a text that is not blank (as [`is_blank`] decides) and holds no
/// control character but tab, newline and carriage return (as [`control_char`] decides).
pub const NOT_BLANK: &str = r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f\u00ad\u034f\u115f\u1160\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0][^\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]*$";

/// The JSON Schema pattern of a text with no control character but tab, newline and return.
pub const NO_CONTROLS: &str = r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]*$";

/// The first control character in `s` other than tab, newline and carriage return (C0, DEL,
/// C1): a NUL or an escape sequence has no place in an objective, a prompt or a log line.
pub fn control_char(s: &str) -> Option<char> {
    s.chars()
        .find(|&c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
}

/// `field` as a problem when `s` holds a control character (see [`control_char`]).
pub fn no_controls(field: &str, s: &str) -> Result<(), String> {
    match control_char(s) {
        Some(c) => Err(format!(
            "{field} must not contain control characters (found U+{:04X})",
            c as u32
        )),
        None => Ok(()),
    }
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

#[cfg(test)]
mod blank_tests {
    use super::*;

    #[test]
    fn invisible_formatting_characters_are_blank_and_one_visible_character_is_not() {
        assert!(is_blank("\u{200b}\u{200b}\u{feff}"));
        assert!(is_blank(" \u{2060}\u{3000}\u{a0}\u{200d}\t\n"));
        assert!(!is_blank("\u{200b}a\u{200b}"));
        assert!(!is_blank("é"));
    }

    #[test]
    fn control_characters_but_tab_newline_and_return_are_found() {
        assert_eq!(control_char("a\u{0}b"), Some('\u{0}'));
        assert_eq!(control_char("\u{1b}[2J"), Some('\u{1b}'));
        assert_eq!(control_char("\u{85}"), Some('\u{85}'));
        assert_eq!(control_char("a\tb\nc\r"), None);
        assert!(
            no_controls("objective", "x\u{7f}")
                .unwrap_err()
                .contains("U+007F")
        );
    }
}
