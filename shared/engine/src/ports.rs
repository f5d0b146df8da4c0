//! The narrow ports the engine and the API talk through. Each has a conformance suite in
//! `tests/` that every adapter must pass.

use std::sync::atomic::{AtomicI64, Ordering};

use async_trait::async_trait;
use longrun_domain::run::{Run, RunStatus, StoppingReason};
use longrun_domain::{
    Doc, DocMeta, Event, IterationRecord, PadEntry, Rejection, RunChange, Schedule,
};
use serde::{Deserialize, Serialize};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Rejected(#[from] Rejection),
    /// Lost an optimistic race more times than the adapter retries; safe to retry.
    #[error("write conflict: {0}")]
    Conflict(String),
    #[error("store unavailable: {0}")]
    Unavailable(String),
    #[error("stored data is unreadable: {0}")]
    Corrupt(String),
}

impl StoreError {
    pub fn is_retryable(&self) -> bool {
        matches!(self, StoreError::Conflict(_) | StoreError::Unavailable(_))
    }
}

/// Assigns seqs `base_seq+1..` to the change's events and advances the run's `event_seq` to
/// match. Every adapter writes exactly these events, so the log stays gapless.
pub fn sequence_events(change: &mut RunChange, base_seq: u64, at: i64) -> Vec<Event> {
    let events: Vec<Event> = change
        .events
        .iter()
        .enumerate()
        .map(|(i, d)| Event {
            run_id: change.run.id.clone(),
            seq: base_seq + 1 + i as u64,
            kind: d.kind,
            payload: d.payload.clone(),
            at,
        })
        .collect();
    change.run.event_seq = base_seq + events.len() as u64;
    events
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

/// A change computed from the current run. Called again with the fresh run whenever an
/// adapter retries after a race, so it must be a pure function of its input.
pub type ChangeFn<'a> = &'a (dyn Fn(&Run) -> Result<RunChange, Rejection> + Send + Sync);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DocHit {
    pub path: String,
    pub title: String,
    pub snippet: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
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

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NotificationMetrics {
    pub iterations: u32,
    pub duration_ms: u64,
    pub tokens: u64,
    pub cost_usd: f64,
}

#[derive(Clone, Debug, Default)]
pub struct RunQuery {
    pub status: Option<RunStatus>,
    /// Only runs created strictly before this `(created_at, id)` cursor.
    pub before: Option<(i64, String)>,
    pub limit: usize,
}

/// Runs, their iterations, the gapless event log, workspace docs, scratchpad, notifications
/// and the per-user active counter.
///
/// Contract: `create_run` and `update_run` are atomic — the run row, every event (seqs
/// `event_seq+1..`), the iteration, docs, scratchpad entry and the counter change land
/// together or not at all. `update_run` re-evaluates the change against the freshest run
/// whenever it retries, and returns `Rejected` when the change function says no.
#[async_trait]
pub trait RunStore: Send + Sync {
    async fn create_run(&self, change: RunChange) -> Result<Run, StoreError>;
    async fn get_run(&self, run_id: &str) -> Result<Option<Run>, StoreError>;
    async fn list_runs(&self, user_id: &str, query: &RunQuery) -> Result<Vec<Run>, StoreError>;
    async fn update_run(&self, run_id: &str, change: ChangeFn<'_>) -> Result<Run, StoreError>;
    /// `update_run` for a change a crash may lose harmlessly: a claim (the lease is taken
    /// again) or an iteration commit whose message is not yet acknowledged (the message is
    /// redelivered and the iteration redone). Stores that batch durability may acknowledge it
    /// before it is durable; it becomes durable no later than the next `update_run`, and a
    /// crash loses it only together with every later write.
    async fn update_run_deferred(
        &self,
        run_id: &str,
        change: ChangeFn<'_>,
    ) -> Result<Run, StoreError> {
        self.update_run(run_id, change).await
    }
    async fn events(
        &self,
        run_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError>;
    async fn iterations(
        &self,
        run_id: &str,
        after: u32,
        limit: usize,
    ) -> Result<Vec<IterationRecord>, StoreError>;
    async fn docs(
        &self,
        run_id: &str,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<DocMeta>, StoreError>;
    async fn doc(&self, run_id: &str, path: &str) -> Result<Option<Doc>, StoreError>;
    async fn search_docs(
        &self,
        run_id: &str,
        query: &str,
        limit: usize,
    ) -> Result<Vec<DocHit>, StoreError>;
    /// The last `last` scratchpad entries, oldest first.
    async fn scratchpad(&self, run_id: &str, last: usize) -> Result<Vec<PadEntry>, StoreError>;
    async fn active_runs(&self, user_id: &str) -> Result<u32, StoreError>;
    /// Idempotent on `id`: returns false when it already existed.
    async fn put_notification(&self, n: &Notification) -> Result<bool, StoreError>;
    async fn notifications(
        &self,
        user_id: &str,
        limit: usize,
    ) -> Result<Vec<Notification>, StoreError>;
    /// Marks one of `n.user_id`'s notifications read (as listed by `notifications`);
    /// idempotent, and a no-op for a notification that is gone.
    async fn mark_notification_read(&self, n: &Notification) -> Result<(), StoreError>;
    /// Runs the sweeper may have to nudge, oldest write first: claimable (a next step is owed)
    /// or with an outcome not yet published, and not written since `updated_before`.
    async fn stale_runs(&self, updated_before: i64, limit: usize) -> Result<Vec<Run>, StoreError>;
    /// Replaces the user's webhooks.
    async fn put_webhooks(&self, user_id: &str, hooks: &[Webhook]) -> Result<(), StoreError>;
    async fn webhooks(&self, user_id: &str) -> Result<Vec<Webhook>, StoreError>;
    /// Creates or replaces the schedule.
    async fn put_schedule(&self, schedule: &Schedule) -> Result<(), StoreError>;
    async fn schedules(&self, user_id: &str) -> Result<Vec<Schedule>, StoreError>;
    /// False when the user has no such schedule.
    async fn delete_schedule(&self, user_id: &str, id: &str) -> Result<bool, StoreError>;
    /// Schedules whose `next_at` is at or before `now`, earliest first.
    async fn due_schedules(&self, now: i64, limit: usize) -> Result<Vec<Schedule>, StoreError>;
    /// Stores `next` only while the stored schedule still has `next_at == from`: of two
    /// sweepers that saw the same occurrence, one advances it. False when it moved already
    /// (or was deleted).
    async fn advance_schedule(&self, next: &Schedule, from: i64) -> Result<bool, StoreError>;
    /// Creates or replaces the user's tool of that name.
    async fn put_tool(&self, user_id: &str, tool: &UserTool) -> Result<(), StoreError>;
    /// The user's tools, by name.
    async fn tools(&self, user_id: &str) -> Result<Vec<UserTool>, StoreError>;
    /// False when the user has no such tool.
    async fn delete_tool(&self, user_id: &str, name: &str) -> Result<bool, StoreError>;
    /// Creates or replaces the user's MCP server of that name.
    async fn put_mcp_server(&self, user_id: &str, server: &McpServer) -> Result<(), StoreError>;
    /// The user's MCP servers, by name.
    async fn mcp_servers(&self, user_id: &str) -> Result<Vec<McpServer>, StoreError>;
    /// False when the user has no such server.
    async fn delete_mcp_server(&self, user_id: &str, name: &str) -> Result<bool, StoreError>;
}

/// An MCP server a user registered (`POST /v1/mcp-servers`): runs of that user may call the
/// tools it lists, each named `{name}.{tool}`.
#[derive(Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct McpServer {
    /// The namespace of its tools: `[a-z][a-z0-9_]*`, at most 32 characters.
    pub name: String,
    /// Its streamable HTTP endpoint.
    pub url: String,
    /// Sent as `Authorization: Bearer {secret}`; never returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    pub created_at: i64,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "McpServer({} → {}, secret redacted)",
            self.name, self.url
        )
    }
}

/// A tool a user registered (`POST /v1/tools`): runs of that user may call it; each call is
/// POSTed to `url`, signed with `secret`.
#[derive(Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UserTool {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments; enforced before every call.
    pub parameters: serde_json::Value,
    pub url: String,
    pub secret: String,
    /// Changes something outside: held for approval under `per_write`.
    #[serde(default = "yes")]
    pub write: bool,
    pub created_at: i64,
}

fn yes() -> bool {
    true
}

impl std::fmt::Debug for UserTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UserTool({} → {}, secret redacted)", self.name, self.url)
    }
}

/// Where a user's run outcomes are POSTed, signed with the secret (HMAC-SHA256).
#[derive(Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Webhook {
    pub url: String,
    /// At least 16 characters.
    #[schemars(length(min = 16))]
    pub secret: String,
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Webhook({}, secret redacted)", self.url)
    }
}

/// Whether the sweeper index holds this run: a step or an outcome may still be owed.
pub fn owes_follow_up(run: &Run) -> bool {
    run.status.is_claimable() || !run.notified
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepReason {
    Start,
    Continue,
    Respond,
    Resume,
    Sweep,
    ChildDone,
}

/// One queue message = one iteration (DESIGN §5).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepMessage {
    pub v: u32,
    pub run_id: String,
    pub iteration: u32,
    pub reason: StepReason,
}

impl StepMessage {
    pub fn new(run_id: &str, iteration: u32, reason: StepReason) -> Self {
        StepMessage {
            v: 1,
            run_id: run_id.to_string(),
            iteration,
            reason,
        }
    }

    /// FIFO dedup id. Re-sends that must get through the dedup window add a suffix; the claim,
    /// not the dedup id, is what prevents a double commit.
    pub fn dedup_id(&self) -> String {
        format!("{}#{}", self.run_id, self.iteration)
    }

    pub fn parse(body: &str) -> Result<StepMessage, String> {
        let msg: StepMessage = serde_json::from_str(body).map_err(|e| e.to_string())?;
        if msg.v != 1 {
            return Err(format!("unsupported message version {}", msg.v));
        }
        Ok(msg)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    pub message_id: String,
    pub receipt: String,
    pub body: String,
    /// 1 on first delivery.
    pub receive_count: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enqueued {
    Sent,
    /// Same dedup id seen within the dedup window: dropped.
    Duplicate,
}

#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("queue unavailable: {0}")]
    Unavailable(String),
    #[error("unknown or expired receipt")]
    StaleReceipt,
    #[error("queue operation not supported here: {0}")]
    Unsupported(&'static str),
}

impl QueueError {
    pub fn is_retryable(&self) -> bool {
        matches!(self, QueueError::Unavailable(_))
    }
}

pub const DEDUP_WINDOW_MS: i64 = 5 * 60 * 1000;

/// FIFO step queue grouped by run: at most one message per run is in flight, messages of a run
/// arrive in order, a dedup id seen in the last 5 minutes is dropped, and an unacknowledged
/// message becomes visible again after its visibility timeout.
#[async_trait]
pub trait StepQueue: Send + Sync {
    async fn enqueue(
        &self,
        msg: &StepMessage,
        dedup_id: &str,
        delay_ms: u64,
    ) -> Result<Enqueued, QueueError>;
    /// `enqueue` for a send a crash may lose harmlessly because the message that caused it is
    /// not yet acknowledged (it is redelivered and re-sends). Defaults to `enqueue`.
    async fn enqueue_deferred(
        &self,
        msg: &StepMessage,
        dedup_id: &str,
        delay_ms: u64,
    ) -> Result<Enqueued, QueueError> {
        self.enqueue(msg, dedup_id, delay_ms).await
    }
    async fn receive(&self, max: usize, visibility_ms: u64) -> Result<Vec<Delivery>, QueueError>;
    async fn ack(&self, receipt: &str) -> Result<(), QueueError>;
    /// Sets the message's remaining invisibility (0 releases it now).
    async fn extend(&self, receipt: &str, visibility_ms: u64) -> Result<(), QueueError>;
}

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

#[derive(Debug, thiserror::Error)]
#[error("notifier unavailable: {0}")]
pub struct NotifyError(pub String);

#[async_trait]
pub trait Notifier: Send + Sync {
    async fn publish(&self, msg: &OutcomeMessage) -> Result<(), NotifyError>;
}

pub trait Clock: Send + Sync {
    fn now_ms(&self) -> i64;
}

#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or_default()
    }
}

/// A clock tests move by hand.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new(start_ms: i64) -> Self {
        ManualClock(AtomicI64::new(start_ms))
    }
    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// Step boundaries where a fault hook can crash the worker (tests only in practice).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultPoint {
    AfterClaim,
    AfterLlmCall,
    /// The iteration's work (model and tool calls) is done; nothing of it is committed.
    BeforeCommit,
    AfterCommit,
    AfterEnqueue,
}

pub trait Faults: Send + Sync {
    /// True makes the step stop dead at `point`, as a crash would: no ack, no cleanup.
    fn crash_at(&self, point: FaultPoint, run_id: &str, iteration: u32) -> bool;
}

pub struct NoFaults;

impl Faults for NoFaults {
    fn crash_at(&self, _: FaultPoint, _: &str, _: u32) -> bool {
        false
    }
}
