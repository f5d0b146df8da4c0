//! The store, split by concern: a run and its log, its workspace, the inbox, the user catalog
//! and schedules. One adapter usually implements all five (`Store`); each use case and the
//! engine name only the ones they need. Every trait has a conformance suite in `tests/` that
//! every adapter passes.

use async_trait::async_trait;
use longrun_domain::run::{Run, RunContext, RunStatus};
use longrun_domain::{
    Doc, DocHit, DocMeta, Event, IterationRecord, McpServer, Notification, PadEntry, Rejection,
    RunChange, Schedule, UserTool, Webhook,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::durability::Durability;
use crate::idempotency::IdempotencyKeys;
use crate::outbox::WebhookOutbox;

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

pub type StoreResult<T> = Result<T, StoreError>;

impl StoreError {
    pub fn is_retryable(&self) -> bool {
        matches!(self, StoreError::Conflict(_) | StoreError::Unavailable(_))
    }
}

/// A change computed from the current run. Called again with the fresh run whenever an
/// adapter retries after a race, so it must be a pure function of its input.
pub type ChangeFn<'a> = &'a (dyn Fn(&Run) -> Result<RunChange, Rejection> + Send + Sync);

/// A context's type, its entity id, or both.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContextFilter {
    pub kind: Option<String>,
    pub entity_id: Option<String>,
}

impl ContextFilter {
    pub fn matches(&self, context: Option<&RunContext>) -> bool {
        context.is_some_and(|c| {
            self.kind.as_ref().is_none_or(|k| *k == c.kind)
                && self.entity_id.as_ref().is_none_or(|e| *e == c.entity_id)
        })
    }
}

#[derive(Clone, Debug, Default)]
pub struct RunQuery {
    pub status: Option<RunStatus>,
    /// Only runs attached to a context that matches this.
    pub context: Option<ContextFilter>,
    /// Only runs created strictly before this `(created_at, id)` cursor.
    pub before: Option<(i64, String)>,
    pub limit: usize,
}

/// Runs, their iterations, the gapless event log and the per-user active counter.
///
/// Contract: `create_run` and `update_run` are atomic — the run row, every event (seqs
/// `event_seq+1..`), the iteration, docs, scratchpad entry and the counter change land
/// together or not at all. `update_run` re-evaluates the change against the freshest run
/// whenever it retries, and returns `Rejected` when the change function says no.
#[async_trait]
pub trait RunLog: Send + Sync {
    async fn create_run(&self, change: RunChange) -> StoreResult<Run>;
    async fn get_run(&self, run_id: &str) -> StoreResult<Option<Run>>;
    /// The run as last committed: what the API shows, so that it is never ahead of the
    /// run's events and iterations a caller reads next. `get_run` may return a write of a group
    /// not committed yet, which only the engine, whose write it is, may act on. Stores whose
    /// every write is committed when it returns need not override it.
    async fn get_committed_run(&self, run_id: &str) -> StoreResult<Option<Run>> {
        self.get_run(run_id).await
    }
    async fn list_runs(&self, user_id: &str, query: &RunQuery) -> StoreResult<Vec<Run>>;
    /// `Durability::Deferred` is for a change a crash may lose harmlessly: a claim (the lease
    /// is taken again) or an iteration commit whose message is not yet acknowledged (the
    /// message is redelivered and the iteration redone). Stores that batch durability may
    /// return before it is durable; it becomes durable no later than the next
    /// `Durability::Now` write, and a crash loses it only together with every later write.
    async fn update_run(
        &self, run_id: &str, durability: Durability, change: ChangeFn<'_>,
    ) -> StoreResult<Run>;
    async fn events(&self, run_id: &str, after: u64, limit: usize) -> StoreResult<Vec<Event>>;
    async fn iterations(
        &self, run_id: &str, after: u32, limit: usize,
    ) -> StoreResult<Vec<IterationRecord>>;
    async fn active_runs(&self, user_id: &str) -> StoreResult<u32>;
    /// Runs the sweeper may have to nudge, oldest write first: claimable (a next step is owed)
    /// or with an outcome not yet published, and not written since `updated_before`.
    async fn stale_runs(&self, updated_before: i64, limit: usize) -> StoreResult<Vec<Run>>;
    /// Runs waiting on their children whose wait times out at or before `now`
    /// (`children_wait_until`), earliest deadline first, at most `limit`.
    async fn waits_due(&self, now: i64, limit: usize) -> StoreResult<Vec<Run>>;
}

/// A run's workspace documents and scratchpad, as committed by `RunLog::update_run`.
#[async_trait]
pub trait Workspace: Send + Sync {
    async fn docs(&self, run_id: &str, prefix: &str, limit: usize) -> StoreResult<Vec<DocMeta>>;
    async fn doc(&self, run_id: &str, path: &str) -> StoreResult<Option<Doc>>;
    /// Matches as `longrun_domain::doc_hit` does.
    async fn search_docs(
        &self, run_id: &str, query: &str, limit: usize,
    ) -> StoreResult<Vec<DocHit>>;
    /// The last `last` scratchpad entries, oldest first.
    async fn scratchpad(&self, run_id: &str, last: usize) -> StoreResult<Vec<PadEntry>>;
}

/// The in-app notifications of each user.
#[async_trait]
pub trait Inbox: Send + Sync {
    /// Idempotent on `id`: returns false when it already existed.
    async fn put_notification(&self, n: &Notification) -> StoreResult<bool>;
    /// The user's latest notifications, newest first.
    async fn notifications(&self, user_id: &str, limit: usize) -> StoreResult<Vec<Notification>> {
        self.notifications_page(user_id, None, limit).await
    }
    /// A page of them, newest first: only those strictly before the `(at, id)` cursor when one
    /// is given (the last of the previous page), so paging sees each notification once.
    async fn notifications_page(
        &self, user_id: &str, before: Option<&(i64, String)>, limit: usize,
    ) -> StoreResult<Vec<Notification>>;
    /// Marks one of `n.user_id`'s notifications read (as listed by `notifications`);
    /// idempotent, and a no-op for a notification that is gone.
    async fn mark_notification_read(&self, n: &Notification) -> StoreResult<()>;
}

/// The kinds of record a user keeps in their catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CatalogKind {
    Tool,
    McpServer,
    Webhook,
}

impl CatalogKind {
    pub const ALL: [CatalogKind; 3] = [
        CatalogKind::Tool,
        CatalogKind::McpServer,
        CatalogKind::Webhook,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CatalogKind::Tool => "tool",
            CatalogKind::McpServer => "mcp",
            CatalogKind::Webhook => "webhook",
        }
    }
}

/// One user's entries of one kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CatalogScope<'a> {
    pub user_id: &'a str,
    pub kind: CatalogKind,
}

/// An entry's key and its value.
pub type CatalogEntry = (String, Value);

/// One keyed collection per user and kind: what a user registers once for all their runs.
/// Values are opaque JSON to the store; `CatalogExt` gives the typed view.
#[async_trait]
pub trait UserCatalog: Send + Sync {
    /// Creates or replaces the entry under `key`.
    async fn put_entry(&self, scope: CatalogScope<'_>, key: &str, value: &Value)
    -> StoreResult<()>;
    /// The user's entries of that kind, by key.
    async fn entries(&self, scope: CatalogScope<'_>) -> StoreResult<Vec<CatalogEntry>>;
    /// False when there was no such entry.
    async fn delete_entry(&self, scope: CatalogScope<'_>, key: &str) -> StoreResult<bool>;
    /// Replaces every entry of that kind at once (atomically where the store can).
    async fn replace_entries(
        &self, scope: CatalogScope<'_>, entries: &[CatalogEntry],
    ) -> StoreResult<()>;
}

/// Scheduled run templates and the due scan.
#[async_trait]
pub trait ScheduleStore: Send + Sync {
    /// Creates or replaces the schedule.
    async fn put_schedule(&self, schedule: &Schedule) -> StoreResult<()>;
    async fn schedules(&self, user_id: &str) -> StoreResult<Vec<Schedule>>;
    /// False when the user has no such schedule.
    async fn delete_schedule(&self, user_id: &str, id: &str) -> StoreResult<bool>;
    /// Schedules whose `next_at` is at or before `now`, earliest first.
    async fn due_schedules(&self, now: i64, limit: usize) -> StoreResult<Vec<Schedule>>;
    /// Stores `next` only while the stored schedule still has `next_at == from`: of two
    /// sweepers that saw the same occurrence, one advances it. False when it moved already
    /// (or was deleted).
    async fn advance_schedule(&self, next: &Schedule, from: i64) -> StoreResult<bool>;
}

/// Everything one database holds; what wiring passes around. Use cases and the engine take
/// the narrower traits it upcasts to.
pub trait Store:
    RunLog + Workspace + Inbox + UserCatalog + ScheduleStore + IdempotencyKeys + WebhookOutbox
{
}

impl<
    T: RunLog
        + Workspace
        + Inbox
        + UserCatalog
        + ScheduleStore
        + IdempotencyKeys
        + WebhookOutbox
        + ?Sized,
> Store for T
{
}

fn scope(user_id: &str, kind: CatalogKind) -> CatalogScope<'_> {
    CatalogScope { user_id, kind }
}

fn encode<T: Serialize>(v: &T) -> StoreResult<Value> {
    let value = serde_json::to_value(v).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    learn_secret(&value);
    Ok(value)
}

/// A registered secret, learned as it passes through the catalog, is kept out of error text
/// from then on (`crate::redact`).
fn learn_secret(value: &Value) {
    if let Some(secret) = value.get("secret").and_then(Value::as_str) {
        crate::redact::register(secret);
    }
}

fn decode<T: DeserializeOwned>(entries: Vec<(String, Value)>) -> StoreResult<Vec<T>> {
    entries
        .into_iter()
        .map(|(_, v)| {
            learn_secret(&v);
            serde_json::from_value(v).map_err(|e| StoreError::Corrupt(e.to_string()))
        })
        .collect()
}

/// The typed view of the catalog: tools and MCP servers keyed by name, webhooks as one list.
#[async_trait]
pub trait CatalogExt: UserCatalog {
    /// Creates or replaces the user's tool of that name.
    async fn put_tool(&self, user_id: &str, tool: &UserTool) -> StoreResult<()> {
        let value = encode(tool)?;
        self.put_entry(scope(user_id, CatalogKind::Tool), &tool.name, &value)
            .await
    }
    /// The user's tools, by name.
    async fn tools(&self, user_id: &str) -> StoreResult<Vec<UserTool>> {
        decode(self.entries(scope(user_id, CatalogKind::Tool)).await?)
    }
    /// False when the user has no such tool.
    async fn delete_tool(&self, user_id: &str, name: &str) -> StoreResult<bool> {
        self.delete_entry(scope(user_id, CatalogKind::Tool), name)
            .await
    }
    /// Creates or replaces the user's MCP server of that name.
    async fn put_mcp_server(&self, user_id: &str, server: &McpServer) -> StoreResult<()> {
        let value = encode(server)?;
        self.put_entry(scope(user_id, CatalogKind::McpServer), &server.name, &value)
            .await
    }
    /// The user's MCP servers, by name.
    async fn mcp_servers(&self, user_id: &str) -> StoreResult<Vec<McpServer>> {
        decode(self.entries(scope(user_id, CatalogKind::McpServer)).await?)
    }
    /// False when the user has no such server.
    async fn delete_mcp_server(&self, user_id: &str, name: &str) -> StoreResult<bool> {
        self.delete_entry(scope(user_id, CatalogKind::McpServer), name)
            .await
    }
    /// Replaces the user's webhooks; their order is kept.
    async fn put_webhooks(&self, user_id: &str, hooks: &[Webhook]) -> StoreResult<()> {
        let entries = hooks
            .iter()
            .enumerate()
            .map(|(i, h)| Ok((format!("{i:04}"), encode(h)?)))
            .collect::<StoreResult<Vec<_>>>()?;
        self.replace_entries(scope(user_id, CatalogKind::Webhook), &entries)
            .await
    }
    async fn webhooks(&self, user_id: &str) -> StoreResult<Vec<Webhook>> {
        decode(self.entries(scope(user_id, CatalogKind::Webhook)).await?)
    }
}

impl<T: UserCatalog + ?Sized> CatalogExt for T {}
