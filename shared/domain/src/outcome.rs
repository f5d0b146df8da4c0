//! What a run's end (or wait) tells the outside: the outcome message the notifier publishes and
//! the inbox record built from it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::clip;
use crate::run::{Run, RunStatus, StoppingReason};

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
    /// The objective and the outcome: "Write a tea field guide — completed".
    #[serde(default)]
    pub title: String,
    /// The narrative's first sentences, or the questions when the run waits on the user.
    #[serde(default)]
    pub message: String,
}

impl OutcomeMessage {
    pub fn notification_id(&self) -> String {
        format!("{}#{}#{}", self.run_id, self.iteration, self.status)
    }

    /// The seed's `data`: what a receiver files the outcome under.
    pub fn data(&self) -> NotificationData {
        NotificationData {
            run_id: self.run_id.clone(),
            status: self.status,
            stopping_reason: self.stopping_reason.clone(),
            duration_ms: self.duration_ms,
            iterations: self.iterations,
            tokens: self.tokens,
            cost_usd: self.cost_usd,
        }
    }

    /// The title, or one for outcomes published before titles were written.
    pub fn title_or_default(&self) -> String {
        match self.title.is_empty() {
            true => format!("Run {} {}", self.run_id, self.status),
            false => self.title.clone(),
        }
    }
}

/// The body POSTed to a user's webhooks for each outcome (signed, `X-Longrun-Signature`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OutcomePayload {
    /// The delivery id `{run_id}#{iteration}#{status}#{webhook}` (`webhook`: the webhook's
    /// place in your list when the outcome was recorded), also the `X-Longrun-Delivery`
    /// header: one per outcome and webhook, the same on every attempt, so receivers can drop
    /// repeats — and two of your webhooks that reach one receiver do not look like one.
    pub id: String,
    pub title: String,
    pub message: String,
    /// The deep link to the run's page.
    pub action_url: String,
    pub data: NotificationData,
    pub run_id: String,
    pub status: RunStatus,
    pub stopping_reason: Option<StoppingReason>,
    /// The last iteration's one-line summary.
    pub summary: String,
    pub metrics: NotificationMetrics,
    pub questions: Vec<String>,
    /// The same as `action_url`.
    pub link: String,
    pub at: i64,
    /// Slack-compatible: the linked title and the message.
    pub text: String,
}

impl OutcomeMessage {
    /// The body delivered to the owner's webhook number `hook`.
    pub fn payload(&self, hook: u32) -> OutcomePayload {
        let title = self.title_or_default();
        let message = match self.message.is_empty() {
            true => String::new(),
            false => format!(": {}", self.message),
        };
        OutcomePayload {
            id: crate::outbox::delivery_id(&self.notification_id(), hook),
            text: format!("<{}|{title}>{message}", self.link),
            title,
            message: self.message.clone(),
            action_url: self.link.clone(),
            data: self.data(),
            run_id: self.run_id.clone(),
            status: self.status,
            stopping_reason: self.stopping_reason.clone(),
            summary: self.summary.clone(),
            metrics: NotificationMetrics {
                iterations: self.iterations,
                duration_ms: self.duration_ms,
                tokens: self.tokens,
                cost_usd: self.cost_usd,
            },
            questions: self.questions.clone(),
            link: self.link.clone(),
            at: self.at,
        }
    }
}

/// The run an outcome is about, its status, why it stopped and what it spent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NotificationData {
    pub run_id: String,
    pub status: RunStatus,
    pub stopping_reason: Option<StoppingReason>,
    pub duration_ms: u64,
    pub iterations: u32,
    pub tokens: u64,
    pub cost_usd: f64,
}

/// How long a title's objective part may be before it is cut at a word.
const TITLE_OBJECTIVE_CHARS: usize = 60;
/// How much of the narrative a message carries.
const MESSAGE_CHARS: usize = 320;

/// A notification's title and message for `run` at its outcome (pure: the same text in the
/// inbox, on SNS and in webhooks).
pub fn headline(run: &Run) -> (String, String) {
    let outcome = match *run.status {
        RunStatus::WaitingOnUser => "needs your answer".to_string(),
        RunStatus::WaitingOnChildren => "waiting on its child runs".to_string(),
        s => s.as_str().to_string(),
    };
    let title = format!("{} — {outcome}", objective_title(&run.objective));
    let message = if *run.status == RunStatus::WaitingOnUser && !run.questions.is_empty() {
        let asks: Vec<String> = run.questions.iter().map(|q| clip(q.trim(), 200)).collect();
        clip(&asks.join(" "), 600)
    } else {
        let report = run.report.as_ref();
        let narrative = report.map(|r| r.summary.as_str()).unwrap_or("");
        let summary = report.map(|r| r.headline.as_str()).unwrap_or("");
        let reason = run
            .stopping_reason
            .as_ref()
            .map_or("", |r| r.detail.as_str());
        let text = [narrative, summary, reason]
            .into_iter()
            .find(|t| !t.trim().is_empty())
            .unwrap_or("");
        first_sentences(text, MESSAGE_CHARS)
    };
    (title, message)
}

/// The objective's first line up to its first colon or full stop, cut at a word (the
/// notification's title, and the report's when no document names the work).
pub(crate) fn objective_title(objective: &str) -> String {
    let line = objective.trim().lines().next().unwrap_or("").trim();
    let head = line
        .split([':', ';'])
        .next()
        .unwrap_or(line)
        .split(". ")
        .next()
        .unwrap_or(line)
        .trim()
        .trim_end_matches(['.', ',', '!', '?']);
    title_case_cut(head, TITLE_OBJECTIVE_CHARS)
}

/// `text`'s words up to `max` characters, cut at a word, its first letter upper case;
/// `Run` when it has none.
pub(crate) fn title_case_cut(text: &str, max: usize) -> String {
    let mut title = String::new();
    for word in text.split_whitespace() {
        if title.chars().count() + word.chars().count() + 1 > max {
            title.push('…');
            break;
        }
        if !title.is_empty() {
            title.push(' ');
        }
        title.push_str(word);
    }
    let mut chars = title.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => "Run".to_string(),
    }
}

/// Whole sentences from the start of `text`, as many as fit in `max` characters (at least
/// one, clipped).
fn first_sentences(text: &str, max: usize) -> String {
    let text = text.trim();
    let mut out = String::new();
    for sentence in text.split_inclusive(". ") {
        if !out.is_empty() && out.chars().count() + sentence.chars().count() > max {
            break;
        }
        out.push_str(sentence);
    }
    clip(out.trim(), max)
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
    /// The narrative's first sentences, or the questions when the run waits on the user.
    #[serde(default)]
    pub message: String,
    /// The deep link to the run's page (the same as `link`).
    #[serde(default)]
    pub action_url: String,
    /// The run, its status, why it stopped and what it spent (absent on notifications stored
    /// before it was written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<NotificationData>,
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
        title: msg.title_or_default(),
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
        message: msg.message.clone(),
        action_url: msg.link.clone(),
        data: Some(msg.data()),
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

/// The answer to `waits_due` from candidate runs: those waiting on children whose wait times
/// out at or before `now`, earliest deadline first, at most `limit`.
pub fn waits_due(
    runs: impl IntoIterator<Item = crate::Run>, now: i64, limit: usize,
) -> Vec<crate::Run> {
    let mut out: Vec<(i64, crate::Run)> = runs
        .into_iter()
        .filter(|r| r.status == crate::RunStatus::WaitingOnChildren)
        .filter_map(|r| {
            r.children_wait_until
                .filter(|at| *at <= now)
                .map(|at| (at, r))
        })
        .collect();
    out.sort_by(|(a, x), (b, y)| (a, &x.id).cmp(&(b, &y.id)));
    out.into_iter().take(limit).map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Narrative, build_report};
    use crate::run::StopType;
    use crate::testing::sample_run;

    fn ended(objective: &str, narrative: &str) -> Run {
        let mut run = sample_run();
        run.objective = objective.into();
        run.transition_to(RunStatus::Completed, 10).unwrap();
        run.stopping_reason = Some(StoppingReason::new(
            StopType::Completed,
            "evidence accepted",
        ));
        let n = Narrative::by_model(narrative);
        run.report = Some(build_report(&run, &[], "last step", &[], n, 10));
        run
    }

    #[test]
    fn the_title_names_the_objective_and_the_outcome_and_the_message_opens_the_narrative() {
        let run = ended(
            "tea field guide: how each tea is made, brewed and chosen",
            "You asked for a tea guide. It is in guide.md. The notes hold the sources. Nothing is left.",
        );

        let (title, message) = headline(&run);

        assert_eq!(title, "Tea field guide — completed");
        assert!(
            message.starts_with("You asked for a tea guide. It is in guide.md."),
            "{message}"
        );
        assert!(message.chars().count() <= MESSAGE_CHARS);
    }

    #[test]
    fn a_long_objective_is_cut_at_a_word_and_a_waiting_run_s_message_is_its_questions() {
        let mut run = sample_run();
        run.objective = "compare every public dataset of tea cultivars across the regions that grow them and rank them".into();
        run.transition_to(RunStatus::WaitingOnUser, 10).unwrap();
        run.questions = vec!["Which regions?".into(), "Include blends?".into()];

        let (title, message) = headline(&run);

        assert_eq!(
            title,
            "Compare every public dataset of tea cultivars across the… — needs your answer"
        );
        assert_eq!(message, "Which regions? Include blends?");
    }

    #[test]
    fn the_inbox_entry_carries_the_seed_s_title_message_action_url_and_data() {
        let msg = OutcomeMessage {
            run_id: "run-1".into(),
            user_id: "alice".into(),
            iteration: 3,
            status: RunStatus::Stopped,
            stopping_reason: Some(StoppingReason::new(StopType::Budget, "max_tokens")),
            summary: "s".into(),
            link: "https://app/runs/run-1".into(),
            iterations: 3,
            tokens: 900,
            cost_usd: 0.5,
            at: 20,
            duration_ms: 1_000,
            questions: vec![],
            title: "Tea guide — stopped".into(),
            message: "It ran out of tokens.".into(),
        };

        let n = notification_for(&msg);

        assert_eq!(n.title, "Tea guide — stopped");
        assert_eq!(n.message, "It ran out of tokens.");
        assert_eq!(n.action_url, "https://app/runs/run-1");
        let data = n.data.unwrap();
        assert_eq!(
            (data.run_id.as_str(), data.status),
            ("run-1", RunStatus::Stopped)
        );
        assert_eq!(data.stopping_reason.unwrap().kind, StopType::Budget);
        assert_eq!(
            (data.iterations, data.tokens, data.duration_ms),
            (3, 900, 1_000)
        );
    }
}
