//! What a run's end (or wait) tells the outside: the outcome message the notifier publishes and
//! the inbox record built from it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::run::{RunStatus, StoppingReason};

/// What the notifier learns about a terminal or waiting run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutcomeMessage {
    pub run_id: String,
    pub user_id: String,
    pub iteration: u32,
    pub status: RunStatus,
    pub stopping_reason: Option<StoppingReason>,
    pub summary: String,
    pub link: String,
    pub iterations: u32,
    pub tokens: u64,
    pub cost_usd: f64,
    pub at: i64,
    /// From the run's creation to its end (or to this outcome, while it waits).
    #[serde(default)]
    pub duration_ms: u64,
    /// What the run asks when it waits on the user.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub questions: Vec<String>,
}

impl OutcomeMessage {
    pub fn notification_id(&self) -> String {
        format!("{}#{}#{}", self.run_id, self.iteration, self.status)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Notification {
    /// `{run_id}#{iteration}#{status}`: one notification per outcome, however often published.
    pub id: String,
    pub user_id: String,
    pub run_id: String,
    pub status: RunStatus,
    pub title: String,
    pub summary: String,
    pub link: String,
    pub at: i64,
    pub read: bool,
    /// The run's metrics at this outcome.
    #[serde(default)]
    pub metrics: NotificationMetrics,
    /// What the run asks when it waits on the user.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub questions: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NotificationMetrics {
    pub iterations: u32,
    pub duration_ms: u64,
    pub tokens: u64,
    pub cost_usd: f64,
}

/// The inbox record for an outcome; its id makes repeated publishes land once.
pub fn notification_for(msg: &OutcomeMessage) -> Notification {
    let reason = msg
        .stopping_reason
        .as_ref()
        .map(|r| r.detail.clone())
        .unwrap_or_default();
    Notification {
        id: msg.notification_id(),
        user_id: msg.user_id.clone(),
        run_id: msg.run_id.clone(),
        status: msg.status,
        title: format!("Run {} {}", msg.run_id, msg.status),
        summary: if msg.summary.is_empty() {
            reason
        } else {
            msg.summary.clone()
        },
        link: msg.link.clone(),
        at: msg.at,
        read: false,
        metrics: NotificationMetrics {
            iterations: msg.iterations,
            duration_ms: msg.duration_ms,
            tokens: msg.tokens,
            cost_usd: msg.cost_usd,
        },
        questions: msg.questions.clone(),
    }
}

/// Whether the sweeper index holds this run: a step or an outcome may still be owed.
pub fn owes_follow_up(run: &crate::Run) -> bool {
    run.status.is_claimable() || !run.notified
}

/// The sweeper's answer from candidate runs: those not written since `updated_before` that
/// still owe a step or an outcome, oldest first, at most `limit`.
pub fn stale_owing(
    runs: impl IntoIterator<Item = crate::Run>, updated_before: i64, limit: usize,
) -> Vec<crate::Run> {
    let mut out: Vec<crate::Run> = runs
        .into_iter()
        .filter(|r| r.updated_at < updated_before && owes_follow_up(r))
        .collect();
    out.sort_by(|a, b| (a.updated_at, &a.id).cmp(&(b.updated_at, &b.id)));
    out.truncate(limit);
    out
}
