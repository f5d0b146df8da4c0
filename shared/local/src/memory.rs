//! In-memory store and queue: the same semantics as SQLite, for tests and throwaway runs.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use longrun_domain::change::ActiveDelta;
use longrun_domain::doc_hit;
use longrun_domain::outcome::stale_owing;
use longrun_domain::run::Run;
use longrun_domain::{DeliveryState, DocHit, Notification, WebhookDelivery, sequence_events};
use longrun_domain::{
    Doc, DocMeta, Event, IterationRecord, PadEntry, Rejection, RunChange, Schedule,
};
use longrun_ports::Durability;
use longrun_ports::{CatalogEntry, CatalogScope, QueueResult, StoreResult};
use longrun_ports::{
    CatalogKind, ChangeFn, Clock, DEDUP_WINDOW_MS, Delivery, Enqueued, Inbox, QueueError, RunLog,
    RunQuery, ScheduleStore, StepMessage, StepQueue, StoreError, UserCatalog, WebhookOutbox,
    Workspace,
};
use longrun_ports::{IdempotencyKeys, IdempotencyRecord};
use serde_json::Value;

mod archive;

#[derive(Default)]
struct State {
    runs: HashMap<String, Run>,
    events: HashMap<String, Vec<Event>>,
    iterations: HashMap<String, BTreeMap<u32, IterationRecord>>,
    docs: HashMap<String, BTreeMap<String, Doc>>,
    pads: HashMap<String, BTreeMap<u32, PadEntry>>,
    active: HashMap<String, u32>,
    notifications: HashMap<String, Notification>,
    /// The user catalog: (user, kind, key) → entry.
    catalog: BTreeMap<(String, CatalogKind, String), serde_json::Value>,
    schedules: HashMap<String, Schedule>,
    /// The webhook outbox: (delivery id, hook) → delivery; a lease is its `next_at`.
    outbox: BTreeMap<(String, u32), WebhookDelivery>,
    /// Idempotency keys: (user, key) → record.
    keys: HashMap<(String, String), IdempotencyRecord>,
}

#[derive(Default)]
pub struct InMemoryRunStore {
    state: Mutex<State>,
}

impl InMemoryRunStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn apply(state: &mut State, mut change: RunChange, base_seq: u64) -> StoreResult<Run> {
    let user = change.run.user_id.clone();
    let count = state.active.get(&user).copied().unwrap_or(0);
    let count = match change.active {
        ActiveDelta::None => count,
        ActiveDelta::Acquire { limit } if count >= limit => {
            return Err(Rejection::LimitExceeded { limit }.into());
        }
        ActiveDelta::Acquire { .. } => count + 1,
        ActiveDelta::Release => count.saturating_sub(1),
    };
    let id = change.run.id.clone();
    let at = change.run.updated_at;
    let events = sequence_events(&mut change, base_seq, at);
    if let Some(rec) = &change.iteration
        && state
            .iterations
            .get(&id)
            .is_some_and(|m| m.contains_key(&rec.n))
    {
        return Err(StoreError::Corrupt(format!(
            "iteration {} committed twice",
            rec.n
        )));
    }
    state.active.insert(user, count);
    state.events.entry(id.clone()).or_default().extend(events);
    if let Some(rec) = change.iteration {
        state
            .iterations
            .entry(id.clone())
            .or_default()
            .insert(rec.n, rec);
    }
    let docs = state.docs.entry(id.clone()).or_default();
    for d in change.docs {
        docs.insert(d.path.clone(), d);
    }
    if let Some(p) = change.pad {
        state.pads.entry(id.clone()).or_default().insert(p.n, p);
    }
    state.runs.insert(id, change.run.clone());
    Ok(change.run)
}

pub(crate) fn run_matches(run: &Run, user_id: &str, q: &RunQuery) -> bool {
    run.user_id == user_id
        && q.status.is_none_or(|s| s == run.status)
        && q.context
            .as_ref()
            .is_none_or(|c| c.matches(run.context.as_ref()))
        && q.before
            .as_ref()
            .is_none_or(|(at, id)| (run.created_at, run.id.as_str()) < (*at, id.as_str()))
}

/// What `read` finds in a run's entry of a per-run map; nothing when the run has none.
fn of_run<M, T>(map: &HashMap<String, M>, run_id: &str, read: impl FnOnce(&M) -> Vec<T>) -> Vec<T> {
    map.get(run_id).map(read).unwrap_or_default()
}

#[async_trait]
impl RunLog for InMemoryRunStore {
    async fn create_run(&self, change: RunChange) -> StoreResult<Run> {
        let mut state = self.lock();
        if state.runs.contains_key(&change.run.id) {
            return Err(StoreError::Rejected(Rejection::Conflict(format!(
                "run {} already exists",
                change.run.id
            ))));
        }
        apply(&mut state, change, 0)
    }

    async fn get_run(&self, run_id: &str) -> StoreResult<Option<Run>> {
        Ok(self.lock().runs.get(run_id).cloned())
    }

    async fn list_runs(&self, user_id: &str, q: &RunQuery) -> StoreResult<Vec<Run>> {
        let state = self.lock();
        let mut runs: Vec<Run> = state
            .runs
            .values()
            .filter(|r| run_matches(r, user_id, q))
            .cloned()
            .collect();
        runs.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
        runs.truncate(q.limit);
        Ok(runs)
    }

    async fn update_run(
        &self, run_id: &str, _: Durability, change: ChangeFn<'_>,
    ) -> StoreResult<Run> {
        let mut state = self.lock();
        let run = state.runs.get(run_id).ok_or(Rejection::NotFound)?;
        let base = run.event_seq;
        let c = change(run)?;
        apply(&mut state, c, base)
    }

    async fn events(&self, run_id: &str, after: u64, limit: usize) -> StoreResult<Vec<Event>> {
        let state = self.lock();
        Ok(of_run(&state.events, run_id, |e| {
            e.iter()
                .filter(|e| e.seq > after)
                .take(limit)
                .cloned()
                .collect()
        }))
    }

    async fn iterations(
        &self, run_id: &str, after: u32, limit: usize,
    ) -> StoreResult<Vec<IterationRecord>> {
        let state = self.lock();
        Ok(of_run(&state.iterations, run_id, |m| {
            m.range(after + 1..)
                .take(limit)
                .map(|(_, r)| r.clone())
                .collect()
        }))
    }

    async fn active_runs(&self, user_id: &str) -> StoreResult<u32> {
        Ok(self.lock().active.get(user_id).copied().unwrap_or(0))
    }

    async fn stale_runs(&self, updated_before: i64, limit: usize) -> StoreResult<Vec<Run>> {
        let runs = self.lock().runs.values().cloned().collect::<Vec<_>>();
        Ok(stale_owing(runs, updated_before, limit))
    }

    async fn waits_due(&self, now: i64, limit: usize) -> StoreResult<Vec<Run>> {
        let runs = self.lock().runs.values().cloned().collect::<Vec<_>>();
        Ok(longrun_domain::outcome::waits_due(runs, now, limit))
    }
}

#[async_trait]
impl Workspace for InMemoryRunStore {
    async fn docs(&self, run_id: &str, prefix: &str, limit: usize) -> StoreResult<Vec<DocMeta>> {
        let state = self.lock();
        Ok(of_run(&state.docs, run_id, |m| {
            let under = m.values().filter(|d| d.path.starts_with(prefix));
            under.take(limit).map(Doc::meta).collect()
        }))
    }

    async fn doc(&self, run_id: &str, path: &str) -> StoreResult<Option<Doc>> {
        Ok(self
            .lock()
            .docs
            .get(run_id)
            .and_then(|m| m.get(path))
            .cloned())
    }

    async fn search_docs(
        &self, run_id: &str, query: &str, limit: usize,
    ) -> StoreResult<Vec<DocHit>> {
        let state = self.lock();
        Ok(of_run(&state.docs, run_id, |m| {
            let hits = m
                .values()
                .filter_map(|d| doc_hit(&d.path, &d.title, &d.content, query));
            hits.take(limit).collect()
        }))
    }

    async fn scratchpad(&self, run_id: &str, last: usize) -> StoreResult<Vec<PadEntry>> {
        let state = self.lock();
        let mut out: Vec<PadEntry> = state
            .pads
            .get(run_id)
            .map(|m| m.values().rev().take(last).cloned().collect())
            .unwrap_or_default();
        out.reverse();
        Ok(out)
    }
}

#[async_trait]
impl Inbox for InMemoryRunStore {
    async fn put_notification(&self, n: &Notification) -> StoreResult<bool> {
        let mut state = self.lock();
        if state.notifications.contains_key(&n.id) {
            return Ok(false);
        }
        state.notifications.insert(n.id.clone(), n.clone());
        Ok(true)
    }

    async fn notifications_page(
        &self, user_id: &str, before: Option<&(i64, String)>, limit: usize,
    ) -> StoreResult<Vec<Notification>> {
        let state = self.lock();
        let mut out: Vec<Notification> = state
            .notifications
            .values()
            .filter(|n| n.user_id == user_id)
            .filter(|n| before.is_none_or(|(at, id)| (n.at, &n.id) < (*at, id)))
            .cloned()
            .collect();
        out.sort_by(|a, b| (b.at, &b.id).cmp(&(a.at, &a.id)));
        out.truncate(limit);
        Ok(out)
    }

    async fn mark_notification_read(&self, n: &Notification) -> StoreResult<()> {
        if let Some(kept) = self.lock().notifications.get_mut(&n.id)
            && kept.user_id == n.user_id
        {
            kept.read = true;
        }
        Ok(())
    }
}

#[async_trait]
impl IdempotencyKeys for InMemoryRunStore {
    async fn claim_key(&self, rec: &IdempotencyRecord) -> StoreResult<IdempotencyRecord> {
        let mut state = self.lock();
        let slot = (rec.user_id.clone(), rec.key.clone());
        match state.keys.get(&slot) {
            Some(held) if held.expires_at > rec.created_at => Ok(held.clone()),
            _ => {
                state.keys.insert(slot, rec.clone());
                Ok(rec.clone())
            }
        }
    }

    async fn finish_key(
        &self, user_id: &str, key: &str, resource_id: &str, response: &Value,
    ) -> StoreResult<Value> {
        let mut state = self.lock();
        match state.keys.get_mut(&(user_id.to_string(), key.to_string())) {
            Some(held) if held.resource_id == resource_id => Ok(held
                .response
                .get_or_insert_with(|| response.clone())
                .clone()),
            _ => Ok(response.clone()),
        }
    }
}

#[async_trait]
impl WebhookOutbox for InMemoryRunStore {
    async fn put_outcome(
        &self, n: &Notification, deliveries: &[WebhookDelivery],
    ) -> StoreResult<bool> {
        let mut state = self.lock();
        if state.notifications.contains_key(&n.id) {
            return Ok(false);
        }
        state.notifications.insert(n.id.clone(), n.clone());
        for d in deliveries {
            state.outbox.insert((d.id.clone(), d.hook), d.clone());
        }
        Ok(true)
    }

    async fn take_due(
        &self, now: i64, lease_until: i64, limit: usize,
    ) -> StoreResult<Vec<WebhookDelivery>> {
        let mut state = self.lock();
        let mut due: Vec<&mut WebhookDelivery> = state
            .outbox
            .values_mut()
            .filter(|d| d.state == DeliveryState::Pending && d.next_at <= now)
            .collect();
        due.sort_by_key(|d| d.next_at);
        Ok(due
            .into_iter()
            .take(limit)
            .map(|d| {
                let taken = d.clone();
                d.next_at = lease_until;
                taken
            })
            .collect())
    }

    async fn record_attempt(&self, d: &WebhookDelivery) -> StoreResult<()> {
        self.lock().outbox.insert((d.id.clone(), d.hook), d.clone());
        Ok(())
    }

    async fn deliveries(&self, user_id: &str, run_id: &str) -> StoreResult<Vec<WebhookDelivery>> {
        let mut out: Vec<WebhookDelivery> = self
            .lock()
            .outbox
            .values()
            .filter(|d| d.run_id == run_id && d.user_id == user_id)
            .cloned()
            .collect();
        out.sort_by(|a, b| (a.created_at, &a.id, a.hook).cmp(&(b.created_at, &b.id, b.hook)));
        Ok(out)
    }
}

#[async_trait]
impl ScheduleStore for InMemoryRunStore {
    async fn put_schedule(&self, schedule: &Schedule) -> StoreResult<()> {
        self.lock()
            .schedules
            .insert(schedule.id.clone(), schedule.clone());
        Ok(())
    }

    async fn schedules(&self, user_id: &str) -> StoreResult<Vec<Schedule>> {
        let mut out: Vec<Schedule> = self
            .lock()
            .schedules
            .values()
            .filter(|s| s.user_id == user_id)
            .cloned()
            .collect();
        out.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(out)
    }

    async fn delete_schedule(&self, user_id: &str, id: &str) -> StoreResult<bool> {
        let mut state = self.lock();
        if state
            .schedules
            .get(id)
            .is_some_and(|s| s.user_id == user_id)
        {
            state.schedules.remove(id);
            return Ok(true);
        }
        Ok(false)
    }

    async fn due_schedules(&self, now: i64, limit: usize) -> StoreResult<Vec<Schedule>> {
        let mut out: Vec<Schedule> = self
            .lock()
            .schedules
            .values()
            .filter(|s| s.next_at <= now)
            .cloned()
            .collect();
        out.sort_by(|a, b| (a.next_at, &a.id).cmp(&(b.next_at, &b.id)));
        out.truncate(limit);
        Ok(out)
    }

    async fn advance_schedule(&self, next: &Schedule, from: i64) -> StoreResult<bool> {
        let mut state = self.lock();
        match state.schedules.get_mut(&next.id) {
            Some(s) if s.next_at == from => {
                *s = next.clone();
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

#[async_trait]
impl UserCatalog for InMemoryRunStore {
    async fn put_entry(
        &self, scope: CatalogScope<'_>, key: &str, value: &Value,
    ) -> StoreResult<()> {
        let CatalogScope { user_id, kind } = scope;
        self.lock()
            .catalog
            .insert((user_id.to_string(), kind, key.to_string()), value.clone());
        Ok(())
    }

    async fn entries(&self, scope: CatalogScope<'_>) -> StoreResult<Vec<CatalogEntry>> {
        let CatalogScope { user_id, kind } = scope;
        Ok(self
            .lock()
            .catalog
            .iter()
            .filter(|((u, k, _), _)| u == user_id && *k == kind)
            .map(|((_, _, key), v)| (key.clone(), v.clone()))
            .collect())
    }

    async fn delete_entry(&self, scope: CatalogScope<'_>, key: &str) -> StoreResult<bool> {
        let CatalogScope { user_id, kind } = scope;
        Ok(self
            .lock()
            .catalog
            .remove(&(user_id.to_string(), kind, key.to_string()))
            .is_some())
    }

    async fn replace_entries(
        &self, scope: CatalogScope<'_>, entries: &[CatalogEntry],
    ) -> StoreResult<()> {
        let CatalogScope { user_id, kind } = scope;
        let mut state = self.lock();
        state
            .catalog
            .retain(|(u, k, _), _| !(u == user_id && *k == kind));
        for (key, v) in entries {
            state
                .catalog
                .insert((user_id.to_string(), kind, key.clone()), v.clone());
        }
        Ok(())
    }
}

struct QueuedMessage {
    seq: u64,
    message_id: String,
    group: String,
    body: String,
    visible_at: i64,
    receipt: Option<String>,
    receive_count: u32,
}

#[derive(Default)]
struct QueueState {
    next_seq: u64,
    messages: Vec<QueuedMessage>,
    dedup: HashMap<String, i64>,
    dead: Vec<QueuedMessage>,
}

/// In-memory FIFO queue grouped by run id.
pub struct InMemoryStepQueue {
    clock: Arc<dyn Clock>,
    max_receives: u32,
    state: Mutex<QueueState>,
}

impl InMemoryStepQueue {
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        InMemoryStepQueue {
            clock,
            max_receives: crate::MAX_RECEIVES,
            state: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn dead_letters(&self) -> Vec<String> {
        self.lock().dead.iter().map(|m| m.body.clone()).collect()
    }

    /// Enqueues a raw body, as a broken producer might.
    pub fn enqueue_raw(&self, group: &str, body: &str) {
        let mut s = self.lock();
        s.next_seq += 1;
        let seq = s.next_seq;
        s.messages.push(QueuedMessage {
            seq,
            message_id: format!("m-{seq}"),
            group: group.into(),
            body: body.into(),
            visible_at: 0,
            receipt: None,
            receive_count: 0,
        });
    }
}

#[async_trait]
impl StepQueue for InMemoryStepQueue {
    async fn enqueue(
        &self, msg: &StepMessage, dedup_id: &str, delay_ms: u64, _: Durability,
    ) -> QueueResult<Enqueued> {
        let now = self.clock.now_ms();
        let body =
            serde_json::to_string(msg).map_err(|e| QueueError::Unavailable(e.to_string()))?;
        let mut s = self.lock();
        s.dedup.retain(|_, exp| *exp > now);
        if s.dedup.contains_key(dedup_id) {
            return Ok(Enqueued::Duplicate);
        }
        s.dedup.insert(dedup_id.to_string(), now + DEDUP_WINDOW_MS);
        s.next_seq += 1;
        let seq = s.next_seq;
        s.messages.push(QueuedMessage {
            seq,
            message_id: format!("m-{seq}"),
            group: msg.run_id.clone(),
            body,
            visible_at: now + delay_ms as i64,
            receipt: None,
            receive_count: 0,
        });
        Ok(Enqueued::Sent)
    }

    async fn receive(&self, max: usize, visibility_ms: u64) -> QueueResult<Vec<Delivery>> {
        let now = self.clock.now_ms();
        let mut s = self.lock();
        let mut seen_groups = std::collections::HashSet::new();
        let mut out = vec![];
        let mut dead = vec![];
        s.messages.sort_by_key(|m| m.seq);
        for (i, m) in s.messages.iter_mut().enumerate() {
            // Only the head of each group may be delivered, and only when visible.
            if seen_groups.contains(&m.group) || out.len() >= max {
                continue;
            }
            if m.visible_at > now {
                seen_groups.insert(m.group.clone());
                continue;
            }
            if m.receive_count >= self.max_receives {
                // Dead-lettered: the message behind it becomes the head.
                dead.push(i);
                continue;
            }
            seen_groups.insert(m.group.clone());
            m.receive_count += 1;
            m.visible_at = now + visibility_ms as i64;
            let receipt = format!("{}-{}", m.message_id, m.receive_count);
            m.receipt = Some(receipt.clone());
            out.push(Delivery {
                message_id: m.message_id.clone(),
                receipt,
                body: m.body.clone(),
                receive_count: m.receive_count,
            });
        }
        for i in dead.into_iter().rev() {
            let m = s.messages.remove(i);
            s.dead.push(m);
        }
        Ok(out)
    }

    async fn ack(&self, receipt: &str) -> QueueResult<()> {
        let mut s = self.lock();
        let before = s.messages.len();
        s.messages.retain(|m| m.receipt.as_deref() != Some(receipt));
        if s.messages.len() == before {
            return Err(QueueError::StaleReceipt);
        }
        Ok(())
    }

    async fn extend(&self, receipt: &str, visibility_ms: u64) -> QueueResult<()> {
        let now = self.clock.now_ms();
        let mut s = self.lock();
        let m = s
            .messages
            .iter_mut()
            .find(|m| m.receipt.as_deref() == Some(receipt))
            .ok_or(QueueError::StaleReceipt)?;
        m.visible_at = now + visibility_ms as i64;
        Ok(())
    }
}
