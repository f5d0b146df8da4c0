//! One bounded iteration (DESIGN §5): load → claim → planner → tools → repair → executors →
//! scratchpad → decide → one fenced commit → enqueue next or publish the outcome.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use longrun_domain::change::{self, CommitPlan};
use longrun_domain::decide::{IterationError, IterationFacts, Outcome, Progress, check_budgets};
use longrun_domain::fingerprint;
use longrun_domain::planner::{
    ExecutorOutput, ExecutorTask, PlannerOutput, RepairOutput, ToolCall, parse_contract,
    parse_planner_output, planner_schema,
};
use longrun_domain::record::{IterationMetrics, IterationRecord, PadEntry};
use longrun_domain::run::{
    ChildRun, Decision, ExecutorBrief, LastIteration, Metrics, PendingCall, PermissionMode,
    PlanStep, Run, RunStatus, Spend, ToolResultBrief,
};
use longrun_domain::{Rejection, RunChange, decide};
use serde_json::json;
use tracing::{info, warn};

use crate::llm::{ChatMessage, ChatRequest, ChatResponse, LlmClient, LlmError, LlmRole};
use crate::ports::UserTool;
use crate::ports::{
    Clock, FaultPoint, Faults, Notifier, NotifyError, OutcomeMessage, QueueError, RunStore,
    StepMessage, StepQueue, StepReason, StoreError,
};
use crate::prompt::{self, SCRATCHPAD_TAIL, clip};
use crate::tools::{ChildRequest, EXECUTOR_TOOLS, Staging, ToolFactory, ToolOutcome, ToolRegistry};

#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// How long a claim holds; a crashed worker's iteration is re-claimable after it.
    pub lease_ms: u64,
    pub max_tool_calls: usize,
    pub max_executor_tasks: usize,
    pub executor_concurrency: usize,
    pub executor_tool_calls: usize,
    pub repair_max_calls: usize,
    /// Cap on one model answer's length.
    pub max_output_tokens: u32,
    /// Base of the deep links in notifications: `{app_base_url}/runs/{run_id}`.
    pub app_base_url: String,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            lease_ms: 5 * 60 * 1000,
            max_tool_calls: 8,
            max_executor_tasks: 4,
            executor_concurrency: 3,
            executor_tool_calls: 3,
            repair_max_calls: 2,
            max_output_tokens: 4_096,
            app_base_url: "http://127.0.0.1:8080".into(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Queue(#[from] QueueError),
    #[error(transparent)]
    Notify(#[from] NotifyError),
    #[error("worker crashed at {0:?} (fault injection)")]
    Crashed(FaultPoint),
    /// The iteration cannot finish before the worker's deadline; its claim is given back.
    #[error("iteration deferred by {delay_ms} ms: {reason}")]
    Deferred { delay_ms: u64, reason: String },
    /// Another attempt claimed the iteration (or it ended) while this one worked.
    #[error("superseded: {0}")]
    Superseded(Rejection),
}

impl EngineError {
    pub fn is_retryable(&self) -> bool {
        match self {
            EngineError::Store(e) => e.is_retryable(),
            EngineError::Queue(e) => e.is_retryable(),
            EngineError::Notify(_) => true,
            EngineError::Crashed(_) => false,
            EngineError::Deferred { .. } => true,
            EngineError::Superseded(_) => false,
        }
    }
}

/// What the trigger should do with the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StepOutcome {
    /// Iteration committed (or healed): delete the message.
    Done,
    /// Nothing to do for this message (stale, duplicate, run ended): delete it.
    Dropped(String),
    /// Another worker holds the run, or the iteration was deferred: make the message visible
    /// again after `delay_ms`.
    Retry { delay_ms: u64 },
}

/// A message whose iteration this attempt may not work on: wait out another worker's live
/// lease, or drop it (committed already, out of order, run not runnable).
fn turned_away(r: Rejection, now: i64) -> StepOutcome {
    match r {
        Rejection::LeaseHeld { expires_at } => StepOutcome::Retry {
            delay_ms: (expires_at - now).clamp(1_000, 60_000) as u64,
        },
        r => StepOutcome::Dropped(r.to_string()),
    }
}

/// This attempt's claim of iteration `n`, taken by its first write.
struct Claim<'a> {
    n: u32,
    owner: &'a str,
    lease_ms: u64,
    taken: AtomicBool,
}

impl Claim<'_> {
    fn is_taken(&self) -> bool {
        self.taken.load(Ordering::SeqCst)
    }

    /// `then` on `run`, claimed first when `taken` (as read before the write) says no
    /// earlier write took the claim.
    fn and_then(
        &self,
        taken: bool,
        run: &Run,
        now: i64,
        then: impl FnOnce(&Run) -> Result<RunChange, Rejection>,
    ) -> Result<RunChange, Rejection> {
        if taken {
            then(run)
        } else {
            change::claimed(run, self.n, self.owner, now, self.lease_ms, then)
        }
    }
}

/// What one sweep did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SweepReport {
    /// Runs whose next step was sent again.
    pub requeued: Vec<String>,
    /// Runs whose outcome was published again.
    pub republished: Vec<String>,
    /// Stale-looking runs left alone because a worker still holds a live lease.
    pub leased: usize,
    /// Runs started by due schedules.
    pub started: Vec<String>,
}

/// Sends what follows a commit: the next step, or the outcome notification. Shared by the
/// worker and the API (respond, continue, cancel).
#[derive(Clone)]
pub struct Dispatch {
    pub store: Arc<dyn RunStore>,
    pub queue: Arc<dyn StepQueue>,
    pub notifier: Arc<dyn Notifier>,
    pub clock: Arc<dyn Clock>,
    pub app_base_url: String,
}

impl Dispatch {
    pub fn link(&self, run_id: &str) -> String {
        format!("{}/runs/{run_id}", self.app_base_url.trim_end_matches('/'))
    }

    pub async fn enqueue_next(&self, run: &Run, reason: StepReason) -> Result<(), EngineError> {
        let msg = StepMessage::new(&run.id, run.iteration + 1, reason);
        self.queue.enqueue(&msg, &msg.dedup_id(), 0).await?;
        Ok(())
    }

    /// Publishes the run's outcome once, then records that it was sent. A crash in between
    /// publishes again later; notification ids make that harmless downstream.
    pub async fn publish_outcome(&self, run: &Run) -> Result<(), EngineError> {
        if run.notified {
            return Ok(());
        }
        let summary = run
            .report
            .as_ref()
            .map(|r| r.summary.clone())
            .unwrap_or_default();
        let msg = OutcomeMessage {
            run_id: run.id.clone(),
            user_id: run.user_id.clone(),
            iteration: run.iteration,
            status: run.status,
            stopping_reason: run.stopping_reason.clone(),
            summary,
            link: self.link(&run.id),
            iterations: run.metrics.iterations,
            tokens: run.metrics.tokens(),
            cost_usd: run.metrics.cost_usd,
            at: self.clock.now_ms(),
        };
        self.notifier.publish(&msg).await?;
        let marked = self
            .store
            .update_run(&run.id, &|r| {
                change::mark_notified(r)
                    .map(|next| RunChange::of(next, vec![]))
                    .ok_or(Rejection::Conflict("already notified".into()))
            })
            .await;
        match marked {
            Ok(_) | Err(StoreError::Rejected(_)) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Nudges runs not written for `stale_ms`: a claimable run with no live lease gets its
    /// next step again (a dedup id with a sweep suffix gets past the dedup window; the claim
    /// makes a duplicate harmless), and an outcome never marked published is published.
    pub async fn sweep(&self, stale_ms: i64, limit: usize) -> Result<SweepReport, EngineError> {
        let now = self.clock.now_ms();
        let mut report = SweepReport::default();
        for run in self.store.stale_runs(now - stale_ms, limit).await? {
            if run.status.is_claimable() {
                if run.lease_is_live(now) {
                    report.leased += 1;
                    continue;
                }
                let msg = StepMessage::new(&run.id, run.iteration + 1, StepReason::Sweep);
                let dedup = format!("{}#sweep-{}", msg.dedup_id(), now / 60_000);
                self.queue.enqueue(&msg, &dedup, 0).await?;
                info!(run_id = %run.id, iteration = run.iteration + 1, "sweeper re-sent a stalled step");
                report.requeued.push(run.id);
            } else if !run.notified {
                self.follow_up(&run).await?;
                info!(run_id = %run.id, status = %run.status, "sweeper re-published an outcome");
                report.republished.push(run.id);
            }
        }
        Ok(report)
    }

    /// `follow_up` from inside a worker step, whose message is still unacknowledged: a send
    /// lost in a crash is re-sent when the message is redelivered.
    pub async fn follow_up_deferred(&self, run: &Run) -> Result<(), EngineError> {
        if run.status == RunStatus::Running {
            let msg = StepMessage::new(&run.id, run.iteration + 1, StepReason::Continue);
            self.queue
                .enqueue_deferred(&msg, &msg.dedup_id(), 0)
                .await?;
            return Ok(());
        }
        self.follow_up(run).await
    }

    /// What must follow a committed iteration: the next message, or the outcome.
    pub async fn follow_up(&self, run: &Run) -> Result<(), EngineError> {
        match run.status {
            RunStatus::Running => self.enqueue_next(run, StepReason::Continue).await,
            RunStatus::Queued => self.enqueue_next(run, StepReason::Resume).await,
            // The user holds it; `continue` sends the next step.
            RunStatus::Paused => Ok(()),
            _ => {
                if run.status.is_ended() {
                    self.cancel_children(run).await?;
                    self.settle_in_parent(run).await?;
                }
                self.publish_outcome(run).await
            }
        }
    }

    /// An ended run takes its active children with it: queued or waiting ones end now, a
    /// running one before its next model call.
    async fn cancel_children(&self, run: &Run) -> Result<(), EngineError> {
        for child in run.children.iter().filter(|c| !c.status.is_ended()) {
            let docs = self.store.docs(&child.id, "", 10_000).await?;
            let now = self.clock.now_ms();
            match self
                .store
                .update_run(&child.id, &|r| change::request_cancel(r, &docs, now))
                .await
            {
                Ok(c) if c.status.is_ended() => Box::pin(self.follow_up(&c)).await?,
                Ok(_) | Err(StoreError::Rejected(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// An ended child reports to its parent, which wakes if it waited for its last child.
    async fn settle_in_parent(&self, child: &Run) -> Result<(), EngineError> {
        let Some(parent_id) = &child.parent_run_id else {
            return Ok(());
        };
        let now = self.clock.now_ms();
        match self
            .store
            .update_run(parent_id, &|p| change::child_finished(p, child, now))
            .await
        {
            Ok(parent) if parent.status == RunStatus::Queued => {
                self.enqueue_next(&parent, StepReason::ChildDone).await
            }
            Ok(_) | Err(StoreError::Rejected(_)) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Creates a child `spawn_run` asked for, once: a redelivered iteration finds it exists.
    async fn spawn_child(&self, parent: &Run, req: &ChildRequest) -> Result<ChildRun, EngineError> {
        let now = self.clock.now_ms();
        let mut child = Run::new(
            &req.id,
            &parent.user_id,
            &req.objective,
            &parent.model,
            req.budgets.clone(),
            parent.thresholds.clone(),
            now,
        );
        child.parent_run_id = Some(parent.id.clone());
        child.depth = parent.depth + 1;
        child.permission_mode = parent.permission_mode;
        child.models = parent.models.clone();
        // Children are part of their parent's run, not new runs of the user's: no slot limit.
        let created = match self.store.create_run(change::create(child, u32::MAX)).await {
            Ok(run) => run,
            Err(StoreError::Rejected(_)) => match self.store.get_run(&req.id).await? {
                Some(run) if run.parent_run_id.as_deref() == Some(&parent.id) => run,
                _ => {
                    return Err(EngineError::Store(StoreError::Rejected(
                        Rejection::Conflict(format!(
                            "run {} exists and is not a child of {}",
                            req.id, parent.id
                        )),
                    )));
                }
            },
            Err(e) => return Err(e.into()),
        };
        if created.iteration == 0 && created.status == RunStatus::Queued {
            self.enqueue_next(&created, StepReason::Start).await?;
        }
        Ok(ChildRun {
            id: created.id.clone(),
            objective: created.objective.clone(),
            status: created.status,
            budgets: created.budgets.clone(),
            summary: None,
            tokens: 0,
            cost_usd: 0.0,
        })
    }
}

pub struct Engine {
    pub dispatch: Dispatch,
    pub llm: Arc<dyn LlmClient>,
    pub tools: Arc<ToolRegistry>,
    /// Builds the tools users registered; without it runs use the built-ins only.
    pub user_tools: Option<Arc<dyn ToolFactory>>,
    pub user_tool_specs: UserToolCache,
    pub faults: Arc<dyn Faults>,
    pub config: EngineConfig,
}

/// Users' registered tool specs, re-read at most every [`UserToolCache::TTL_MS`]: one store
/// read per user per half minute instead of one per iteration. The tools themselves are
/// built per iteration (their idempotency counters are per iteration).
#[derive(Default)]
pub struct UserToolCache(Mutex<HashMap<String, (i64, Vec<UserTool>)>>);

impl UserToolCache {
    pub const TTL_MS: i64 = 30_000;
    const MAX_USERS: usize = 10_000;

    fn get(&self, user_id: &str, now: i64) -> Option<Vec<UserTool>> {
        let map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.get(user_id)
            .filter(|(at, _)| now - at < Self::TTL_MS)
            .map(|(_, specs)| specs.clone())
    }

    fn put(&self, user_id: &str, now: i64, specs: Vec<UserTool>) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= Self::MAX_USERS {
            map.retain(|_, (at, _)| now - *at < Self::TTL_MS);
        }
        map.insert(user_id.to_string(), (now, specs));
    }
}

/// Per-iteration accounting shared by concurrent executors.
struct Spent {
    calls: u32,
    iteration: IterationMetrics,
    run: Metrics,
    budget: Option<longrun_domain::decide::BudgetExhausted>,
}

struct Iter<'a> {
    run: &'a Run,
    claim: &'a Claim<'a>,
    /// `cancel_requested` as of the last read or write of the run, and when that was.
    cancel: AtomicBool,
    known_at: AtomicI64,
    /// The built-ins plus the run owner's tools.
    tools: Arc<ToolRegistry>,
    n: u32,
    started_at: i64,
    /// Epoch ms by which the iteration must be committed, when the trigger has one.
    deadline_ms: Option<i64>,
    spent: Mutex<Spent>,
}

impl Iter<'_> {
    fn spent(&self) -> std::sync::MutexGuard<'_, Spent> {
        self.spent.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn saw(&self, run: &Run, at: i64) {
        self.cancel.store(run.cancel_requested, Ordering::SeqCst);
        self.known_at.store(at, Ordering::SeqCst);
    }
}

/// A cancel is looked for before each further model call; the run as last read or written
/// answers for it when it is this fresh, which after a model call's spend it usually is.
const CANCEL_FRESH_MS: i64 = 1_000;

enum Llm {
    Answer(ChatResponse),
    Failed(LlmError),
    /// A budget ran out before the call; it was not made.
    OutOfBudget,
}

impl Engine {
    fn store(&self) -> &Arc<dyn RunStore> {
        &self.dispatch.store
    }

    fn now(&self) -> i64 {
        self.dispatch.clock.now_ms()
    }

    fn crash(&self, point: FaultPoint, run_id: &str, n: u32) -> Result<(), EngineError> {
        if self.faults.crash_at(point, run_id, n) {
            return Err(EngineError::Crashed(point));
        }
        Ok(())
    }

    #[tracing::instrument(name = "step", skip_all, fields(run_id = %msg.run_id, iteration = msg.iteration))]
    pub async fn step(&self, msg: &StepMessage, owner: &str) -> Result<StepOutcome, EngineError> {
        self.step_until(msg, owner, None).await
    }

    /// One step that must be committed by `deadline_ms` (a Lambda invocation's deadline less
    /// the time a commit needs): model retries that would outlive it are not slept through;
    /// the claim is given back and the message returns to the queue after the retry delay.
    pub async fn step_until(
        &self,
        msg: &StepMessage,
        owner: &str,
        deadline_ms: Option<i64>,
    ) -> Result<StepOutcome, EngineError> {
        let n = msg.iteration;
        let Some(run) = self.store().get_run(&msg.run_id).await? else {
            return Ok(StepOutcome::Dropped("run not found".into()));
        };
        if run.iteration >= n {
            // Redelivery of a committed iteration: heal a crash between commit and send.
            if run.iteration == n {
                self.dispatch.follow_up(&run).await?;
            }
            return Ok(StepOutcome::Dropped(format!(
                "iteration {n} already committed"
            )));
        }
        let now = self.now();
        // Checked here, written with the attempt's first write: a duplicate delivery or a
        // live lease is turned away before any model call, at no cost.
        let run = match change::claim(&run, n, owner, now, self.config.lease_ms) {
            Ok(claim) => claim.run,
            Err(r) => return Ok(turned_away(r, now)),
        };
        let claim = Claim {
            n,
            owner,
            lease_ms: self.config.lease_ms,
            taken: AtomicBool::new(false),
        };

        let plan = match self.work(&run, n, &claim, now, deadline_ms).await {
            Ok(plan) => plan,
            Err(EngineError::Superseded(r)) => return Ok(turned_away(r, self.now())),
            Err(EngineError::Deferred { delay_ms, reason }) => {
                // The deferral goes on the log even when no write took the claim yet.
                let taken = claim.is_taken();
                let now = self.now();
                match self
                    .store()
                    .update_run(&run.id, &|r| {
                        claim.and_then(taken, r, now, |c| {
                            change::release(c, n, owner, &reason, now)
                        })
                    })
                    .await
                {
                    Ok(_) | Err(StoreError::Rejected(_)) => {}
                    Err(e) => return Err(e.into()),
                }
                warn!(delay_ms, %reason, "iteration deferred past the worker's deadline");
                return Ok(StepOutcome::Retry { delay_ms });
            }
            Err(e) => return Err(e),
        };
        self.crash(FaultPoint::BeforeCommit, &run.id, n)?;
        // Deferred: until message n is acknowledged, a lost commit is redone on redelivery.
        let taken = claim.is_taken();
        let now = self.now();
        let committed = self
            .store()
            .update_run_deferred(&run.id, &|r| {
                claim.and_then(taken, r, now, |c| plan.apply(c))
            })
            .await;
        let run = match committed {
            Ok(run) => run,
            Err(StoreError::Rejected(r)) => {
                warn!(reason = %r, "commit refused; another attempt owns this iteration");
                return Ok(StepOutcome::Dropped(r.to_string()));
            }
            Err(e) => return Err(e.into()),
        };
        info!(status = %run.status, tokens = run.metrics.tokens(), "iteration committed");
        self.crash(FaultPoint::AfterCommit, &run.id, n)?;
        self.dispatch.follow_up_deferred(&run).await?;
        self.crash(FaultPoint::AfterEnqueue, &run.id, n)?;
        Ok(StepOutcome::Done)
    }

    async fn call_llm(
        &self,
        it: &Iter<'_>,
        role: LlmRole,
        messages: Vec<ChatMessage>,
        json_schema: Option<Arc<serde_json::Value>>,
    ) -> Result<Llm, EngineError> {
        let call = {
            let mut s = it.spent();
            let running = it.run.metrics.running_ms + (self.now() - it.started_at).max(0) as u64;
            if s.budget.is_none() {
                s.budget = check_budgets(&it.run.budgets, &s.run, it.n, running);
            }
            if s.budget.is_some() {
                return Ok(Llm::OutOfBudget);
            }
            s.calls += 1;
            s.calls
        };
        let req = ChatRequest {
            run_id: it.run.id.clone(),
            iteration: it.n,
            role,
            model: it.run.model.clone(),
            messages,
            json_schema,
            max_output_tokens: Some(self.config.max_output_tokens),
            idempotency_key: format!("{}#{}#{}", it.run.id, it.n, call),
            rotation: it.run.models.iter().skip(1).cloned().collect(),
            deadline_ms: it.deadline_ms,
        };
        let resp = match self.llm.chat(&req).await {
            Ok(resp) => resp,
            Err(e) => {
                if let Some(delay_ms) = e.requeue_after_ms {
                    return Err(EngineError::Deferred {
                        delay_ms,
                        reason: format!(
                            "model call failed ({e}); retrying would pass the deadline"
                        ),
                    });
                }
                return Ok(Llm::Failed(e));
            }
        };
        let spend = Spend {
            model: format!("{}:{}", resp.provider, resp.model),
            role: role.as_str().to_string(),
            input_tokens: resp.usage.input_tokens
                + resp.usage.cache_read_tokens
                + resp.usage.cache_write_tokens,
            output_tokens: resp.usage.output_tokens,
            cached_tokens: resp.usage.cache_read_tokens,
            cost_usd: resp.cost_usd,
            latency_ms: resp.latency_ms,
        };
        let now = self.now();
        let claiming = !it.claim.is_taken();
        let written = self
            .store()
            .update_run(&it.run.id, &|r| {
                it.claim.and_then(!claiming, r, now, |c| {
                    Ok(change::record_spend(c, it.n, &spend, now))
                })
            })
            .await;
        match written {
            Ok(run) => it.saw(&run, now),
            Err(StoreError::Rejected(rejection)) if claiming => {
                // Another attempt owns the iteration; this call was made all the same.
                match self
                    .store()
                    .update_run(&it.run.id, &|r| {
                        Ok(change::record_spend(r, it.n, &spend, now))
                    })
                    .await
                {
                    Ok(_) | Err(StoreError::Rejected(_)) => {}
                    Err(e) => return Err(e.into()),
                }
                return Err(EngineError::Superseded(rejection));
            }
            Err(e) => return Err(e.into()),
        }
        if claiming {
            it.claim.taken.store(true, Ordering::SeqCst);
            self.crash(FaultPoint::AfterClaim, &it.run.id, it.n)?;
        }
        {
            let mut s = it.spent();
            s.run.add_spend(&spend);
            s.iteration.llm_calls += 1;
            s.iteration.input_tokens += spend.input_tokens;
            s.iteration.output_tokens += spend.output_tokens;
            s.iteration.cost_usd += spend.cost_usd.unwrap_or(0.0);
        }
        self.crash(FaultPoint::AfterLlmCall, &it.run.id, it.n)?;
        Ok(Llm::Answer(resp))
    }

    async fn cancel_requested(&self, it: &Iter<'_>) -> Result<bool, EngineError> {
        let now = self.now();
        if now - it.known_at.load(Ordering::SeqCst) > CANCEL_FRESH_MS {
            match self.store().get_run(&it.run.id).await? {
                Some(run) => it.saw(&run, now),
                None => return Ok(true),
            }
        }
        Ok(it.cancel.load(Ordering::SeqCst))
    }

    /// Planner with one corrective retry. Returns the output or the iteration's error.
    async fn plan(
        &self,
        it: &Iter<'_>,
        pad: &[PadEntry],
    ) -> Result<Result<Option<PlannerOutput>, IterationError>, EngineError> {
        let mut correction: Option<(String, String)> = None;
        for attempt in 0..2 {
            let messages = prompt::planner_messages(
                it.run,
                it.n,
                pad,
                it.tools.prompt_block(),
                correction.as_ref().map(|(a, e)| (a.as_str(), e.as_str())),
            );
            let resp = match self
                .call_llm(it, LlmRole::Planner, messages, Some(planner_schema()))
                .await?
            {
                Llm::Answer(r) => r,
                Llm::OutOfBudget => return Ok(Ok(None)),
                Llm::Failed(e) => return Ok(Err(llm_error(&e))),
            };
            match parse_planner_output(&resp.content) {
                Ok(out) => return Ok(Ok(Some(out))),
                Err(err) if attempt == 0 => {
                    correction = Some((resp.content, err.to_string()));
                }
                Err(err) => {
                    let message = format!("planner output invalid after a corrective retry: {err}");
                    return Ok(Err(IterationError {
                        fingerprint: fingerprint::of_error(&format!("contract {}", err.path)),
                        message,
                        fatal: false,
                    }));
                }
            }
        }
        Ok(Ok(None))
    }

    /// The built-ins, plus the tools the run's owner registered.
    async fn tools_for(&self, user_id: &str) -> Result<Arc<ToolRegistry>, EngineError> {
        let Some(factory) = &self.user_tools else {
            return Ok(self.tools.clone());
        };
        let now = self.now();
        let specs = match self.user_tool_specs.get(user_id, now) {
            Some(specs) => specs,
            None => {
                let specs = self.store().tools(user_id).await?;
                self.user_tool_specs.put(user_id, now, specs.clone());
                specs
            }
        };
        if specs.is_empty() {
            return Ok(self.tools.clone());
        }
        let extra = specs
            .iter()
            .filter_map(|spec| match factory.build(spec) {
                Ok(t) => Some(t),
                Err(e) => {
                    warn!(tool = %spec.name, error = %e, "a user tool was left out");
                    None
                }
            })
            .collect();
        Ok(Arc::new(self.tools.with_extra(extra)))
    }

    async fn run_tools(
        &self,
        tools: &ToolRegistry,
        staging: &Staging,
        calls: &[ToolCall],
        allowed: Option<&[&str]>,
        limit: usize,
    ) -> Vec<ToolOutcome> {
        let mut out = Vec::with_capacity(calls.len().min(limit));
        for (i, call) in calls.iter().enumerate() {
            if i >= limit {
                out.push(ToolOutcome {
                    name: call.name.clone(),
                    args: call.args.clone(),
                    result: Err(format!("skipped: at most {limit} tool calls per turn")),
                });
                continue;
            }
            out.push(tools.invoke(staging, call, allowed).await);
        }
        out
    }

    async fn repair(
        &self,
        it: &Iter<'_>,
        staging: &Staging,
        failed: &[ToolOutcome],
    ) -> Result<Vec<ToolOutcome>, EngineError> {
        let max = self.config.repair_max_calls;
        let failures: Vec<_> = failed
            .iter()
            .map(|f| {
                (
                    f.name.clone(),
                    f.args.clone(),
                    f.result.clone().err().unwrap_or_default(),
                )
            })
            .collect();
        let messages = prompt::repair_messages(&failures, &it.tools.specs(None), max);
        let resp = match self.call_llm(it, LlmRole::Repair, messages, None).await? {
            Llm::Answer(r) => r,
            _ => return Ok(vec![]),
        };
        let Ok(repair) = parse_contract::<RepairOutput>(&resp.content) else {
            return Ok(vec![]);
        };
        let calls: Vec<ToolCall> = repair.tool_calls.into_iter().take(max).collect();
        Ok(self.run_tools(&it.tools, staging, &calls, None, max).await)
    }

    async fn execute(
        &self,
        it: &Iter<'_>,
        staging: &Staging,
        task: &ExecutorTask,
    ) -> Result<ExecutorBrief, EngineError> {
        // Under per_write executors only read: every write goes through the planner, where
        // each one can be approved.
        let read_only = it.run.permission_mode == PermissionMode::PerWrite;
        let allowed: Vec<&str> = EXECUTOR_TOOLS
            .into_iter()
            .filter(|t| task.tools.is_empty() || task.tools.iter().any(|x| x == t))
            .filter(|t| !read_only || !it.tools.writes(t))
            .collect();
        let max = self.config.executor_tool_calls;
        let messages = prompt::executor_messages(
            &it.run.objective,
            &task.title,
            &task.instructions,
            &it.tools.specs(Some(&allowed)),
            max,
        );
        let brief = |summary: String, tool_results| ExecutorBrief {
            title: clip(&task.title, 200),
            summary,
            tool_results,
        };
        let resp = match self.call_llm(it, LlmRole::Executor, messages, None).await? {
            Llm::Answer(r) => r,
            Llm::OutOfBudget => return Ok(brief("not run: budget exhausted".into(), vec![])),
            Llm::Failed(e) => return Ok(brief(format!("failed: {e}"), vec![])),
        };
        let out = match parse_contract::<ExecutorOutput>(&resp.content) {
            Ok(out) => out,
            Err(e) => {
                return Ok(brief(
                    format!("answer did not follow the contract: {e}"),
                    vec![],
                ));
            }
        };
        let results = self
            .run_tools(&it.tools, staging, &out.tool_calls, Some(&allowed), max)
            .await;
        Ok(brief(
            clip(&out.summary, 500),
            results.iter().map(|r| brief_of(r, false)).collect(),
        ))
    }

    /// Does the iteration's work against staged state and decides; nothing is written except
    /// live spend.
    async fn work(
        &self,
        run: &Run,
        n: u32,
        claim: &Claim<'_>,
        started_at: i64,
        deadline_ms: Option<i64>,
    ) -> Result<CommitPlan, EngineError> {
        let staging = Staging::new(
            self.store().clone(),
            &run.id,
            n,
            run.plan.clone(),
            started_at,
        );
        staging.set_parent(run);
        let tools = self.tools_for(&run.user_id).await?;
        // Writes the user decided on (per_write) are carried out or refused first, and the
        // planner is told which.
        let mut tool_results: Vec<ToolResultBrief> = vec![];
        let mut decided = vec![];
        for call in &run.pending_calls {
            let outcome = match &call.decision {
                Some(Decision::Approved) => {
                    let c = ToolCall {
                        name: call.name.clone(),
                        args: call.args.clone(),
                    };
                    tools.invoke(&staging, &c, None).await
                }
                Some(Decision::Rejected { reason }) => ToolOutcome {
                    name: call.name.clone(),
                    args: call.args.clone(),
                    result: Err(format!("rejected by the user: {reason}")),
                },
                None => continue,
            };
            decided.push(format!(
                "{} {} (id {}): {}",
                call.name,
                clip(&call.args.to_string(), 120),
                call.id,
                match &outcome.result {
                    Ok(_) => "approved and done".to_string(),
                    Err(e) => clip(e, 200),
                }
            ));
            tool_results.push(brief_of(&outcome, false));
        }
        let told;
        let run = if decided.is_empty() {
            run
        } else {
            let mut r = run.clone();
            r.hints.push(format!(
                "The user decided on the writes you proposed: {}. Do not repeat a rejected write.",
                decided.join("; ")
            ));
            told = r;
            &told
        };
        let it = Iter {
            run,
            claim,
            cancel: AtomicBool::new(run.cancel_requested),
            known_at: AtomicI64::new(started_at),
            tools,
            n,
            started_at,
            deadline_ms,
            spent: Mutex::new(Spent {
                calls: 0,
                iteration: IterationMetrics::default(),
                run: run.budget_metrics(),
                budget: None,
            }),
        };
        let mode = run.permission_mode;
        let hold_plan = mode == PermissionMode::ApprovePlan && !run.plan_approved;
        let mut pending_calls: Vec<PendingCall> = vec![];
        let mut approval_questions: Vec<String> = vec![];
        let mut cancel = run.cancel_requested;
        let mut error = None;
        let mut planner = None;
        let mut executor_results = vec![];
        let mut actions = vec![];

        if !cancel {
            let pad = self.store().scratchpad(&run.id, SCRATCHPAD_TAIL).await?;
            match self.plan(&it, &pad).await? {
                Ok(out) => planner = out,
                Err(e) => error = Some(e),
            }
        }
        if let Some(out) = &planner {
            let updates: Vec<_> = out
                .plan_updates
                .iter()
                .map(|u| (u.id.clone(), u.title.clone(), u.status))
                .collect();
            staging.update_plan(&updates);
            actions.extend(
                out.tool_calls
                    .iter()
                    .map(|c| format!("{} {}", c.name, clip(&c.args.to_string(), 150))),
            );
            actions.extend(
                out.executor_tasks
                    .iter()
                    .map(|t| format!("executor: {}", t.title)),
            );

            // Under approve_plan nothing runs until a plan is approved; under per_write
            // writes are held for approval and the rest runs.
            let (writes, calls): (Vec<ToolCall>, Vec<ToolCall>) = if hold_plan {
                approval_questions.push(format!(
                    "Approve this plan? Respond with approve: true to start the work, or answer \
                     with what to change.\n{}",
                    render_plan(&staging.plan())
                ));
                (vec![], vec![])
            } else if mode == PermissionMode::PerWrite {
                out.tool_calls
                    .iter()
                    .cloned()
                    .partition(|c| it.tools.writes(&c.name))
            } else {
                (vec![], out.tool_calls.clone())
            };
            for (k, w) in writes.into_iter().enumerate() {
                let id = format!("c{n}.{}", k + 1);
                approval_questions.push(format!(
                    "Approve {} {} (id {id})?",
                    w.name,
                    clip(&w.args.to_string(), 300)
                ));
                pending_calls.push(PendingCall {
                    id,
                    name: w.name,
                    args: w.args,
                    decision: None,
                });
            }
            {
                let s = it.spent();
                let m = &s.iteration;
                staging.note_spend(m.input_tokens + m.output_tokens, m.cost_usd);
            }
            let outcomes = self
                .run_tools(
                    &it.tools,
                    &staging,
                    &calls,
                    None,
                    self.config.max_tool_calls,
                )
                .await;
            let failed: Vec<ToolOutcome> = outcomes
                .iter()
                .filter(|o| o.result.is_err())
                .cloned()
                .collect();
            tool_results.extend(outcomes.iter().map(|o| brief_of(o, false)));

            let executor_tasks: &[ExecutorTask] = if hold_plan { &[] } else { &out.executor_tasks };
            let more_llm = !failed.is_empty() || !executor_tasks.is_empty();
            if more_llm && self.cancel_requested(&it).await? {
                cancel = true;
            }
            if !failed.is_empty() && !cancel {
                let repaired = self.repair(&it, &staging, &failed).await?;
                tool_results.extend(repaired.iter().map(|o| brief_of(o, true)));
            }
            if !cancel {
                // Futures are built up front: a lazily mapped stream trips the `Send` check
                // of the spawned worker future on its higher-ranked closure lifetimes.
                let pending: Vec<_> = executor_tasks
                    .iter()
                    .take(self.config.max_executor_tasks)
                    .map(|task| self.execute(&it, &staging, task))
                    .collect();
                let briefs: Vec<Result<ExecutorBrief, EngineError>> =
                    futures_util::stream::iter(pending)
                        .buffered(self.config.executor_concurrency.max(1))
                        .collect()
                        .await;
                for b in briefs {
                    executor_results.push(b?);
                }
            }
        }

        // Evidence is checked against the workspace as it will be after this commit.
        let mut evidence_docs = 0;
        let evidence = planner
            .as_ref()
            .map(|p| p.status.completion_evidence.clone())
            .unwrap_or_default();
        for item in &evidence {
            for token in path_like_tokens(item) {
                if staging.doc_exists(&token).await {
                    evidence_docs += 1;
                    break;
                }
            }
        }
        let staged = staging.finish();
        let mut children = Vec::with_capacity(staged.spawned.len());
        for req in &staged.spawned {
            children.push(self.dispatch.spawn_child(run, req).await?);
        }
        let status = planner.as_ref().map(|p| p.status.clone());
        let remaining_work = status
            .as_ref()
            .map(|s| s.remaining_work.clone())
            .unwrap_or_else(|| run.remaining_work.clone());
        let progress = Progress {
            docs_changed: (staged.created.len() + staged.updated.len()) as u32,
            plan_advanced: staged.plan_advanced,
            remaining_shrank: status.is_some() && remaining_work.len() < run.remaining_work.len(),
            answers_consumed: planner.is_some() && !run.pending_answers.is_empty(),
        };
        let mut questions = staged.questions.clone();
        let awaiting_approval = !approval_questions.is_empty();
        questions.extend(approval_questions);
        if let Some(s) = &status
            && s.needs_user_input
        {
            questions.extend(s.blocking_questions.iter().cloned());
            if questions.is_empty() {
                questions.push(format!(
                    "The agent needs your input: {}",
                    clip(&s.progress_summary, 500)
                ));
            }
        }
        let action_fingerprint = planner.as_ref().map(|p| {
            fingerprint::of_json(&json!({
                "tools": p.tool_calls.iter().map(|c| json!([c.name, c.args])).collect::<Vec<_>>(),
                "executors": p.executor_tasks.iter().map(|t| json!([t.title, t.instructions])).collect::<Vec<_>>(),
            }))
        });
        let (budget, iteration_metrics) = {
            let s = it.spent();
            (s.budget.clone(), s.iteration.clone())
        };
        let facts = IterationFacts {
            iteration: n,
            status: status.clone(),
            plan: staged.plan.clone(),
            progress: progress.clone(),
            action_fingerprint,
            error: error.clone(),
            budget: budget.clone(),
            cancel_requested: cancel,
            questions: (!questions.is_empty()).then_some(questions),
            workspace_docs: run.metrics.docs as usize + staged.created.len(),
            evidence_docs,
            awaiting_approval,
            active_children: run.active_children() + children.len(),
            wait_for_children: staged.wait_for_children,
        };
        let verdict = decide(run, &facts);
        let now = self.now();
        let running_ms = (now - started_at).max(0) as u64;
        let summary = match (&status, &error, &verdict.outcome) {
            (_, _, Outcome::Finish(r))
                if r.kind == longrun_domain::StopType::Canceled && status.is_none() =>
            {
                "Canceled before the iteration's work.".to_string()
            }
            (Some(s), _, _) => clip(&s.progress_summary, 2_000),
            (None, Some(e), _) => clip(&e.message, 2_000),
            (None, None, _) => match &budget {
                Some(b) => format!("No work done: {}", b.detail),
                None => "No work done.".to_string(),
            },
        };
        let workspace = if matches!(verdict.outcome, Outcome::Continue) {
            vec![]
        } else {
            let mut all = self.store().docs(&run.id, "", 10_000).await?;
            for d in &staged.docs {
                match all.iter_mut().find(|m| m.path == d.path) {
                    Some(m) => *m = d.meta(),
                    None => all.push(d.meta()),
                }
            }
            all.sort_by(|a, b| a.path.cmp(&b.path));
            all
        };
        let last_iteration = LastIteration {
            iteration: n,
            tool_results: tool_results.iter().take(12).cloned().collect(),
            executor_results: executor_results.iter().take(6).cloned().collect(),
            created_docs: staged.created.iter().take(20).cloned().collect(),
            updated_docs: staged.updated.iter().take(20).cloned().collect(),
            progress_delta: progress.made(),
            error: error.as_ref().map(|e| clip(&e.message, 500)),
        };
        let mut results: Vec<String> = tool_results
            .iter()
            .map(|r| {
                format!(
                    "{} {}: {}",
                    r.name,
                    if r.ok { "ok" } else { "failed" },
                    clip(&r.result, 200)
                )
            })
            .collect();
        results.extend(
            executor_results
                .iter()
                .map(|e| format!("executor {}: {}", e.title, clip(&e.summary, 200))),
        );
        let mut artifacts: Vec<String> = staged
            .created
            .iter()
            .map(|p| format!("created {p}"))
            .collect();
        artifacts.extend(staged.updated.iter().map(|p| format!("updated {p}")));
        let pad = PadEntry {
            n,
            at: now,
            summary: summary.clone(),
            actions,
            results,
            artifacts,
            plan_changes: staged.plan_changes.clone(),
            remaining_work: remaining_work.clone(),
        };
        let record = IterationRecord {
            run_id: run.id.clone(),
            n,
            outcome: verdict.outcome.status(),
            summary: summary.clone(),
            status_block: status,
            tool_results,
            executor_results,
            created_docs: staged.created.clone(),
            updated_docs: staged.updated.clone(),
            metrics: IterationMetrics {
                running_ms,
                ..iteration_metrics
            },
            error,
            progress: progress.made(),
            hints: verdict.hints.clone(),
            stopping_reason: None,
            started_at,
            committed_at: now,
        };
        Ok(CommitPlan {
            n,
            owner: claim.owner.to_string(),
            verdict,
            plan: staged.plan,
            remaining_work,
            last_iteration,
            answers_consumed: progress.answers_consumed,
            running_ms,
            record,
            docs: staged.docs,
            pad,
            summary,
            workspace,
            evidence,
            pending_calls,
            children,
            now,
        })
    }
}

fn llm_error(e: &LlmError) -> IterationError {
    IterationError {
        fingerprint: fingerprint::of_error(&format!("llm {:?} {}", e.kind, e.message)),
        message: format!("model call failed: {e}"),
        fatal: !e.is_retryable(),
    }
}

fn render_plan(plan: &[PlanStep]) -> String {
    if plan.is_empty() {
        return "(the planner proposed no plan steps)".into();
    }
    plan.iter()
        .map(|p| format!("- [{}] {}", p.status.as_str(), p.title))
        .collect::<Vec<_>>()
        .join("\n")
}

fn brief_of(o: &ToolOutcome, repaired: bool) -> ToolResultBrief {
    ToolResultBrief {
        name: o.name.clone(),
        ok: o.result.is_ok(),
        result: match &o.result {
            Ok(v) => clip(&v.to_string(), 400),
            Err(e) => clip(e, 400),
        },
        repaired,
    }
}

/// Words of an evidence item that look like workspace paths (`notes/a.md`, `report.md`).
fn path_like_tokens(item: &str) -> Vec<String> {
    item.split(|c: char| {
        c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | '"' | '\'' | '`' | '[' | ']')
    })
    .map(|t| {
        t.trim_matches(|c: char| matches!(c, '.' | ':' | '!' | '?'))
            .trim_start_matches('/')
    })
    .filter(|t| !t.is_empty() && (t.contains('/') || t.contains('.')))
    .map(str::to_string)
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_paths_are_found_inside_prose() {
        assert_eq!(
            path_like_tokens("Wrote `notes/summary.md` and report.md."),
            vec!["notes/summary.md", "report.md"]
        );
        assert!(path_like_tokens("all done").is_empty());
    }
}
