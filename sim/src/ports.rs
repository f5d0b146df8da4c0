//! The simulated ports: the memory store and a FIFO queue with faults drawn from the schedule's
//! seed, a notifier that fails sometimes, and a seeded model that answers well, badly, slowly or
//! with each error kind — and that lets other actors in while a call is in flight.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use async_trait::async_trait;
use longrun_domain::run::{Run, RunStatus};
use longrun_domain::{Doc, DocMeta, Event, IterationRecord, PadEntry, RunChange, Schedule};
use longrun_domain::{DocHit, Notification, OutcomeMessage, WebhookDelivery};
use longrun_local::InMemoryRunStore;
use longrun_ports::Durability;
use longrun_ports::{
    CatalogEntry, CatalogScope, ChangeFn, Clock, DEDUP_WINDOW_MS, Delivery, Enqueued, FaultPoint,
    Faults, Inbox, Notifier, NotifyError, QueueError, RunLog, RunQuery, ScheduleStore, StepMessage,
    StepQueue, StoreError, UserCatalog, WebhookOutbox, Workspace, send_then_ack_and_next,
};
use longrun_ports::{ChatRequest, ChatResponse, LlmClient, LlmError, LlmErrorKind, LlmRole, Usage};
use longrun_ports::{IdempotencyKeys, IdempotencyRecord, QueueResult, StoreResult};
use longrun_service::Outbox;
use serde_json::{Value, json};

use crate::Sim;

/// The memory store with faults before and after writes, and races: another actor's change
/// lands just before a write.
pub struct SimStore {
    pub sim: Arc<Sim>,
    pub inner: Arc<InMemoryRunStore>,
}

impl SimStore {
    fn unavailable(&self, what: &str) -> StoreError {
        self.sim.note(format!("store: {what} unavailable"));
        StoreError::Unavailable(format!("simulated: {what}"))
    }

    /// A write that may fail before it lands, race another actor, or land and then fail.
    async fn write<T>(
        &self, what: &str, run_id: Option<&str>,
        write: impl std::future::Future<Output = StoreResult<T>>,
    ) -> StoreResult<T> {
        if self.sim.roll(15) {
            return Err(self.unavailable(what));
        }
        if let Some(id) = run_id
            && self.sim.roll(25)
        {
            crate::world::race(&self.sim, id).await;
        }
        let out = match write.await {
            // The store's last line of defence fired: the protocol tried a double commit.
            Err(StoreError::Corrupt(e)) => {
                let run = run_id.unwrap_or("-");
                self.sim
                    .violation(format!("{what} on {run} refused by the store: {e}"));
                return Err(StoreError::Corrupt(e));
            }
            out => out?,
        };
        if self.sim.roll(8) {
            return Err(self.unavailable(&format!("{what} (after it landed)")));
        }
        Ok(out)
    }
}

#[async_trait]
impl RunLog for SimStore {
    async fn create_run(&self, change: RunChange) -> StoreResult<Run> {
        self.write("create_run", None, self.inner.create_run(change))
            .await
    }

    async fn get_run(&self, run_id: &str) -> StoreResult<Option<Run>> {
        if self.sim.roll(5) {
            return Err(self.unavailable("get_run"));
        }
        self.inner.get_run(run_id).await
    }

    async fn list_runs(&self, user_id: &str, query: &RunQuery) -> StoreResult<Vec<Run>> {
        self.inner.list_runs(user_id, query).await
    }

    async fn update_run(
        &self, run_id: &str, durability: Durability, change: ChangeFn<'_>,
    ) -> StoreResult<Run> {
        let what = match durability {
            Durability::Now => "update_run",
            Durability::Deferred => "update_run (deferred)",
        };
        let write = self.inner.update_run(run_id, durability, change);
        self.write(what, Some(run_id), write).await
    }

    async fn events(&self, run_id: &str, after: u64, limit: usize) -> StoreResult<Vec<Event>> {
        self.inner.events(run_id, after, limit).await
    }

    async fn iterations(
        &self, run_id: &str, after: u32, limit: usize,
    ) -> StoreResult<Vec<IterationRecord>> {
        self.inner.iterations(run_id, after, limit).await
    }

    async fn active_runs(&self, user_id: &str) -> StoreResult<u32> {
        self.inner.active_runs(user_id).await
    }

    async fn stale_runs(&self, updated_before: i64, limit: usize) -> StoreResult<Vec<Run>> {
        self.inner.stale_runs(updated_before, limit).await
    }

    async fn waits_due(&self, now: i64, limit: usize) -> StoreResult<Vec<Run>> {
        if self.sim.roll(5) {
            return Err(self.unavailable("waits_due"));
        }
        self.inner.waits_due(now, limit).await
    }
}

#[async_trait]
impl Workspace for SimStore {
    async fn docs(&self, run_id: &str, prefix: &str, limit: usize) -> StoreResult<Vec<DocMeta>> {
        self.inner.docs(run_id, prefix, limit).await
    }

    async fn doc(&self, run_id: &str, path: &str) -> StoreResult<Option<Doc>> {
        self.inner.doc(run_id, path).await
    }

    async fn search_docs(
        &self, run_id: &str, query: &str, limit: usize,
    ) -> StoreResult<Vec<DocHit>> {
        self.inner.search_docs(run_id, query, limit).await
    }

    async fn scratchpad(&self, run_id: &str, last: usize) -> StoreResult<Vec<PadEntry>> {
        self.inner.scratchpad(run_id, last).await
    }
}

#[async_trait]
impl IdempotencyKeys for SimStore {
    async fn claim_key(&self, rec: &IdempotencyRecord) -> StoreResult<IdempotencyRecord> {
        self.write("claim_key", None, self.inner.claim_key(rec))
            .await
    }

    async fn finish_key(
        &self, user_id: &str, key: &str, resource_id: &str, response: &Value,
    ) -> StoreResult<Value> {
        self.write(
            "finish_key",
            None,
            self.inner.finish_key(user_id, key, resource_id, response),
        )
        .await
    }
}

#[async_trait]
impl Inbox for SimStore {
    async fn put_notification(&self, n: &Notification) -> StoreResult<bool> {
        self.write("put_notification", None, self.inner.put_notification(n))
            .await
    }

    async fn notifications_page(
        &self, user_id: &str, before: Option<&(i64, String)>, limit: usize,
    ) -> StoreResult<Vec<Notification>> {
        self.inner.notifications_page(user_id, before, limit).await
    }

    async fn mark_notification_read(&self, n: &Notification) -> StoreResult<()> {
        self.inner.mark_notification_read(n).await
    }
}

/// The outbox's writes fail (before or after they land) like any other; a lease taken by a
/// `take_due` whose answer is lost stays taken until it ends.
#[async_trait]
impl WebhookOutbox for SimStore {
    async fn put_outcome(
        &self, n: &Notification, deliveries: &[WebhookDelivery],
    ) -> StoreResult<bool> {
        self.write("put_outcome", None, self.inner.put_outcome(n, deliveries))
            .await
    }

    async fn take_due(
        &self, now: i64, lease_until: i64, limit: usize,
    ) -> StoreResult<Vec<WebhookDelivery>> {
        self.write(
            "take_due",
            None,
            self.inner.take_due(now, lease_until, limit),
        )
        .await
    }

    async fn record_attempt(&self, d: &WebhookDelivery) -> StoreResult<()> {
        self.write("record_attempt", None, self.inner.record_attempt(d))
            .await
    }

    async fn deliveries(&self, user_id: &str, run_id: &str) -> StoreResult<Vec<WebhookDelivery>> {
        self.inner.deliveries(user_id, run_id).await
    }
}

#[async_trait]
impl ScheduleStore for SimStore {
    async fn put_schedule(&self, schedule: &Schedule) -> StoreResult<()> {
        self.inner.put_schedule(schedule).await
    }

    async fn schedules(&self, user_id: &str) -> StoreResult<Vec<Schedule>> {
        self.inner.schedules(user_id).await
    }

    async fn delete_schedule(&self, user_id: &str, id: &str) -> StoreResult<bool> {
        self.inner.delete_schedule(user_id, id).await
    }

    async fn due_schedules(&self, now: i64, limit: usize) -> StoreResult<Vec<Schedule>> {
        self.inner.due_schedules(now, limit).await
    }

    async fn advance_schedule(&self, next: &Schedule, from: i64) -> StoreResult<bool> {
        self.inner.advance_schedule(next, from).await
    }
}

#[async_trait]
impl UserCatalog for SimStore {
    async fn put_entry(
        &self, scope: CatalogScope<'_>, key: &str, value: &Value,
    ) -> StoreResult<()> {
        self.inner.put_entry(scope, key, value).await
    }
    async fn entries(&self, scope: CatalogScope<'_>) -> StoreResult<Vec<CatalogEntry>> {
        self.inner.entries(scope).await
    }
    async fn delete_entry(&self, scope: CatalogScope<'_>, key: &str) -> StoreResult<bool> {
        self.inner.delete_entry(scope, key).await
    }
    async fn replace_entries(
        &self, scope: CatalogScope<'_>, entries: &[CatalogEntry],
    ) -> StoreResult<()> {
        self.inner.replace_entries(scope, entries).await
    }
}

struct Message {
    seq: u64,
    group: String,
    body: String,
    visible_at: i64,
    receive_count: u32,
    /// The receipt of the delivery in flight, if any.
    receipt: Option<String>,
}

#[derive(Default)]
struct QueueState {
    messages: Vec<Message>,
    dedup: HashMap<String, i64>,
    next: u64,
    /// Bodies moved to the dead-letter queue; the sweeper re-sends what their runs still owe.
    dead: Vec<String>,
}

impl QueueState {
    /// The heads a receive at `now` may deliver, oldest first (a delivery whose visibility ran
    /// out is visible again, under a new receipt).
    fn ready_heads(&mut self, now: i64) -> Vec<usize> {
        for m in self.messages.iter_mut() {
            if m.receipt.is_some() && m.visible_at <= now {
                m.receipt = None;
            }
        }
        let mut heads: BTreeMap<&str, usize> = BTreeMap::new();
        let mut busy: Vec<&str> = vec![];
        for (i, m) in self.messages.iter().enumerate() {
            if m.receipt.is_some() {
                busy.push(&m.group);
            }
            heads.entry(&m.group).or_insert(i);
        }
        let mut ready: Vec<usize> = heads
            .iter()
            .filter(|(g, i)| !busy.contains(g) && self.messages[**i].visible_at <= now)
            .map(|(_, i)| *i)
            .collect();
        ready.sort_by_key(|i| self.messages[*i].seq);
        ready
    }

    /// Delivers the messages at these positions; one received too often is dead-lettered.
    fn deliver(&mut self, picked: &[usize], now: i64, visibility_ms: u64) -> Vec<Delivery> {
        let mut out = vec![];
        let mut dead = vec![];
        for &i in picked {
            self.next += 1;
            let receipt = format!("r{}", self.next);
            let m = &mut self.messages[i];
            m.receive_count += 1;
            if m.receive_count > MAX_RECEIVES {
                dead.push(m.seq);
                continue;
            }
            m.receipt = Some(receipt.clone());
            m.visible_at = now + visibility_ms as i64;
            out.push(Delivery {
                message_id: format!("m{}", m.seq),
                receipt,
                body: m.body.clone(),
                receive_count: m.receive_count,
            });
        }
        for seq in dead {
            if let Some(pos) = self.messages.iter().position(|m| m.seq == seq) {
                let m = self.messages.remove(pos);
                self.dead.push(m.body);
            }
        }
        out
    }

    /// Where the message this receipt names is; a stale receipt once it was acked or received
    /// again.
    fn received(&self, receipt: &str) -> QueueResult<usize> {
        let pos = self
            .messages
            .iter()
            .position(|m| m.receipt.as_deref() == Some(receipt));
        pos.ok_or(QueueError::StaleReceipt)
    }
}

/// SQS FIFO as the worker sees it: per-group order with at most one message in flight, a
/// 5-minute dedup window, visibility timeouts on the simulated clock and a dead-letter queue;
/// under faults it duplicates sends, delays them, serves groups in any order, loses acks and
/// fails calls.
pub struct SimQueue {
    pub sim: Arc<Sim>,
    state: std::sync::Mutex<QueueState>,
}

/// Receives before a message is dead-lettered: the stacks' and serve's one threshold.
const MAX_RECEIVES: u32 = longrun_local::MAX_RECEIVES;

impl SimQueue {
    pub fn new(sim: Arc<Sim>) -> Self {
        SimQueue {
            sim,
            state: Default::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn len(&self) -> usize {
        self.lock().messages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn push(&self, body: &str, group: &str, visible_at: i64) {
        let mut st = self.lock();
        st.next += 1;
        let seq = st.next;
        st.messages.push(Message {
            seq,
            group: group.to_string(),
            body: body.to_string(),
            visible_at,
            receive_count: 0,
            receipt: None,
        });
    }
}

#[async_trait]
impl StepQueue for SimQueue {
    async fn enqueue(
        &self, msg: &StepMessage, dedup_id: &str, delay_ms: u64, _: Durability,
    ) -> QueueResult<Enqueued> {
        if self.sim.roll(10) {
            self.sim.note(format!("queue: send {dedup_id} failed"));
            return Err(QueueError::Unavailable("simulated send failure".into()));
        }
        let now = self.sim.clock.now_ms();
        {
            let mut st = self.lock();
            if st
                .dedup
                .get(dedup_id)
                .is_some_and(|at| now - at < DEDUP_WINDOW_MS)
            {
                return Ok(Enqueued::Duplicate);
            }
            st.dedup.insert(dedup_id.to_string(), now);
        }
        let body =
            serde_json::to_string(msg).map_err(|e| QueueError::Unavailable(e.to_string()))?;
        let delay = delay_ms as i64
            + if self.sim.roll(50) {
                self.sim.range(1, 20_000) as i64
            } else {
                0
            };
        self.push(&body, &msg.run_id, now + delay);
        if self.sim.roll(15) {
            self.sim.note(format!("queue: {dedup_id} sent twice"));
            self.push(&body, &msg.run_id, now + delay);
        }
        Ok(Enqueued::Sent)
    }

    async fn receive(&self, max: usize, visibility_ms: u64) -> QueueResult<Vec<Delivery>> {
        if self.sim.roll(5) {
            return Err(QueueError::Unavailable("simulated receive failure".into()));
        }
        let now = self.sim.clock.now_ms();
        let shuffle = self.sim.roll(300);
        let salt = self.sim.range(0, u32::MAX as u64);
        let mut st = self.lock();
        let mut ready = st.ready_heads(now);
        if shuffle {
            ready.sort_by_key(|i| (st.messages[*i].seq ^ salt).wrapping_mul(0x9E37_79B9));
        }
        ready.truncate(max);
        Ok(st.deliver(&ready, now, visibility_ms))
    }

    /// The ack (lost now and then, as any ack), then the run's next message when it is the
    /// only one a receive could deliver.
    async fn ack_and_next(
        &self, receipt: &str, send: Option<&StepMessage>, visibility_ms: u64,
    ) -> QueueResult<Option<Delivery>> {
        if let Some(msg) = send {
            return send_then_ack_and_next(self, msg, receipt, visibility_ms).await;
        }
        let group = {
            let st = self.lock();
            let pos = st.received(receipt)?;
            st.messages[pos].group.clone()
        };
        self.ack(receipt).await?;
        let now = self.sim.clock.now_ms();
        let mut st = self.lock();
        let ready = st.ready_heads(now);
        match ready[..] {
            [i] if st.messages[i].group == group => {
                let next = st.deliver(&[i], now, visibility_ms).pop();
                if let Some(d) = &next {
                    self.sim.note(format!(
                        "queue: {receipt} acked, carried on with {}",
                        d.body
                    ));
                }
                Ok(next)
            }
            _ => Ok(None),
        }
    }

    async fn ack(&self, receipt: &str) -> QueueResult<()> {
        if self.sim.roll(20) {
            self.sim.note(format!("queue: ack {receipt} lost"));
            return Ok(());
        }
        let mut st = self.lock();
        let pos = st.received(receipt)?;
        st.messages.remove(pos);
        Ok(())
    }

    async fn extend(&self, receipt: &str, visibility_ms: u64) -> QueueResult<()> {
        let now = self.sim.clock.now_ms();
        let mut st = self.lock();
        let pos = st.received(receipt)?;
        st.messages[pos].visible_at = now + visibility_ms as i64;
        Ok(())
    }
}

/// `serve`'s notifier (the inbox entry and the webhook deliveries written together before the
/// run is marked notified), failing sometimes before it writes.
pub struct SimNotifier {
    pub sim: Arc<Sim>,
    pub outbox: Arc<Outbox>,
}

#[async_trait]
impl Notifier for SimNotifier {
    async fn publish(&self, msg: &OutcomeMessage) -> Result<(), NotifyError> {
        if self.sim.roll(15) {
            return Err(NotifyError("simulated: topic unavailable".into()));
        }
        self.outbox
            .record(msg)
            .await
            .map(|_| ())
            .map_err(|e| NotifyError(format!("recording the outcome: {e}")))
    }
}

pub struct SimFaults {
    pub sim: Arc<Sim>,
}

impl Faults for SimFaults {
    fn crash_at(&self, point: FaultPoint, run_id: &str, iteration: u32) -> bool {
        let crash = self.sim.roll(12);
        if crash {
            self.sim
                .note(format!("crash at {point:?} in {run_id}#{iteration}"));
        }
        crash
    }
}

/// Whole-run spend as the model saw it: what the run's metrics must add up to.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spent {
    pub calls: u64,
    pub tokens: u64,
    pub cost_usd: f64,
    /// The most tokens one call used: the overshoot a budget may see.
    pub max_call: u64,
}

/// A seeded model. Planner answers: work (a doc, sometimes an executor task), complete with
/// evidence, ask the user, spawn a child (and wait for it), malformed JSON, bad tool arguments,
/// or an error of any kind. Calls take simulated time, sometimes past the lease.
pub struct SimLlm {
    pub sim: Arc<Sim>,
}

const ERRORS: [LlmErrorKind; 7] = [
    LlmErrorKind::RateLimited,
    LlmErrorKind::Server,
    LlmErrorKind::Timeout,
    LlmErrorKind::Auth,
    LlmErrorKind::Quota,
    LlmErrorKind::BadRequest,
    LlmErrorKind::Malformed,
];

/// A completion claim, honest or not: the exit gate must turn down every dishonest one
/// (no evidence, a doc that does not exist or is empty, a criterion left unmapped).
fn claim(roll: u64, n: u32, criteria: usize) -> Value {
    let map = |upto: usize, evidence: &str| -> Value {
        (1..=upto)
            .map(|i| json!({"criterion": format!("c{i}"), "evidence": [evidence]}))
            .collect()
    };
    let earlier = format!("notes/{}.md", n.saturating_sub(1));
    let (calls, evidence, mapped) = match roll {
        0..=5 => (
            vec![write("final.md", "final")],
            vec![],
            map(criteria, "final.md"),
        ),
        6..=8 => (vec![], vec!["missing.md"], map(criteria, "missing.md")),
        9..=10 => (
            vec![write("empty.md", " ")],
            vec!["empty.md"],
            map(criteria, "empty.md"),
        ),
        11..=12 => (
            vec![write("final.md", "final")],
            vec!["final.md"],
            map(criteria.saturating_sub(1), "final.md"),
        ),
        13..=15 => (vec![], vec![earlier.as_str()], map(criteria, &earlier)),
        _ => (
            vec![write("final.md", "final")],
            vec!["final.md"],
            map(criteria, "final.md"),
        ),
    };
    let mut st = status(true, false, "done", &evidence);
    st["criteria_evidence"] = mapped;
    json!({"status": st, "tool_calls": calls})
}

fn status(exit: bool, ask: bool, summary: &str, evidence: &[&str]) -> Value {
    json!({
        "exit_signal": exit,
        "needs_user_input": ask,
        "blocking_questions": if ask { vec!["which source should I trust?"] } else { vec![] },
        "progress_summary": summary,
        "remaining_work": if exit { vec![] } else { vec!["more"] },
        "completion_evidence": evidence,
    })
}

fn write(path: &str, content: &str) -> Value {
    json!({"name": "doc_write", "args": {"path": path, "content": content}})
}

impl SimLlm {
    fn planner(&self, n: u32, criteria: usize) -> Result<String, LlmErrorKind> {
        let roll = self.sim.range(0, 99);
        let note = format!("notes/{n}.md");
        let out = match roll {
            0..=44 => {
                let mut out = json!({"status": status(false, false, &format!("wrote {note}"), &[]),
                    "tool_calls": [write(&note, &format!("note {n}"))]});
                if self.sim.chance(300) {
                    out["executor_tasks"] = json!([{"title": format!("expand {n}"),
                        "instructions": format!("write exec/{n}.md"), "tools": ["doc_write"]}]);
                }
                out
            }
            45..=59 => claim(self.sim.range(0, 39), n, criteria),
            60..=64 => json!({"status": status(false, true, "need a choice", &[])}),
            65..=70 => {
                // Some children are fire-and-forget: never waited for, never ended with their parent.
                let detached = self.sim.chance(300);
                let mut calls = vec![json!({"name": "spawn_run", "args": {
                    "objective": format!("part {n}"), "budgets": {"max_iterations": 3},
                    "detached": detached}})];
                if self.sim.chance(600) {
                    calls.push(json!({"name": "wait_for_children", "args": {}}));
                }
                json!({"status": status(false, false, "spawned a part", &[]), "tool_calls": calls})
            }
            71..=75 => return Ok("{\"status\": {\"exit_signal\": tru".into()),
            76..=80 => json!({"status": status(false, false, "bad args", &[]),
                "tool_calls": [{"name": "doc_write", "args": {"path": 5}}]}),
            81..=85 => json!({"status": status(false, false, "same as before", &[])}),
            _ => {
                let kind = ERRORS[self.sim.below(ERRORS.len() as u64) as usize];
                return Err(kind);
            }
        };
        Ok(out.to_string())
    }

    fn answer(&self, req: &ChatRequest, criteria: usize) -> Result<String, LlmErrorKind> {
        let n = req.iteration;
        match req.role {
            LlmRole::Planner => self.planner(n, criteria),
            LlmRole::Executor if self.sim.chance(100) => Ok("not json".into()),
            LlmRole::Executor => Ok(json!({"tool_calls": [write(&format!("exec/{n}.md"), "e")],
                "summary": "ok"})
            .to_string()),
            LlmRole::Repair if self.sim.chance(200) => Err(LlmErrorKind::Server),
            LlmRole::Repair => {
                Ok(json!({"tool_calls": [write(&format!("fixed/{n}.md"), "f")]}).to_string())
            }
            // A grader fails, says no, or answers what is not JSON, now and then.
            LlmRole::Grader if self.sim.chance(50) => Err(LlmErrorKind::Server),
            LlmRole::Grader if self.sim.chance(20) => Ok("I think it passes.".into()),
            LlmRole::Grader if self.sim.chance(4) => {
                Ok(json!({"pass": false, "reasons": "not shown"}).to_string())
            }
            LlmRole::Grader => Ok(json!({"pass": true, "reasons": "shown"}).to_string()),
            LlmRole::Reporter if self.sim.chance(100) => Err(LlmErrorKind::Server),
            LlmRole::Reporter => Ok(format!(
                "The run was asked for its objective. It worked for {n} iteration(s). \
                 It wrote its findings to the workspace. Nothing more is left."
            )),
        }
    }
}

#[async_trait]
impl LlmClient for SimLlm {
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let sim = &self.sim;
        let run = sim.inner.get_run(&req.run_id).await.ok().flatten();
        let criteria = run.as_ref().map_or(0, |r| r.completion_criteria.len());
        if let Some(run) = run
            && run.status == RunStatus::Canceled
        {
            sim.violation(format!(
                "a {} call started for {} after its cancel was committed",
                req.role.as_str(),
                req.run_id
            ));
        }
        let slow = sim.roll(30);
        let latency = if slow {
            // Past the lease and the message's visibility: another worker may take it over.
            sim.range(31_000, 45_000)
        } else {
            sim.range(0, 3_000)
        };
        sim.clock.advance(latency as i64);
        // Others act while the call is in flight: the user, the sweeper, another worker.
        if slow && sim.chance(500) {
            crate::world::take_over(sim).await;
        } else if sim.roll(60) {
            crate::world::interleave(sim, &req.run_id).await;
        }
        let content = self.answer(req, criteria).map_err(|kind| {
            sim.note(format!(
                "model: {kind:?} for {}#{}",
                req.run_id, req.iteration
            ));
            // As a proxy that quotes the request does: the key must not get any further.
            LlmError::new(
                kind,
                format!(
                    "simulated; the proxy echoed {}",
                    crate::secrets::PROVIDER_KEY
                ),
            )
        })?;
        let usage = Usage {
            input_tokens: sim.range(50, 600),
            output_tokens: sim.range(5, 120),
            ..Default::default()
        };
        let tokens = usage.input_tokens + usage.output_tokens;
        let cost = tokens as f64 * 1e-6;
        sim.spent(&req.run_id, tokens, cost);
        sim.note(format!(
            "model: {} {}#{} served {tokens} tokens",
            req.role.as_str(),
            req.run_id,
            req.iteration
        ));
        Ok(ChatResponse {
            content,
            usage,
            provider: "sim".into(),
            model: req.model.clone(),
            latency_ms: latency,
            cost_usd: Some(cost),
            queued_ms: 0,
        })
    }
}
