//! One bounded iteration (ARCHITECTURE.md, "The iteration"), as its phases:
//! load → claim → pending decisions → planner → tools → repair → executors → decide →
//! one fenced commit → follow-up (next step or outcome).
//!
//! `claim` holds the fenced claim; `model` the model calls, budgets and spend; `phases` the
//! working phases over the iteration's draft; `permissions` the permission modes; `conclude`
//! the verdict and the commit plan; `narrative` the report's final model call; `follow_up` what
//! follows a commit; `user_tools` the tools a run may call; `agent` an agent run's iteration
//! (one coding-agent process instead of the planner).

mod agent;
mod claim;
mod conclude;
mod follow_up;
mod model;
mod narrative;
mod permissions;
mod phases;
mod user_tools;
mod verdicts;

use std::sync::Arc;

use longrun_domain::Rejection;
use longrun_domain::change::{self, CommitPlan};
use longrun_domain::run::{Run, RunStatus};
use tracing::{info, warn};

use self::claim::{Claim, turned_away};
use self::model::Iter;
use self::phases::Draft;
use crate::tools::{Staging, ToolRegistry};
use longrun_ports::Durability;
use longrun_ports::LlmClient;
use longrun_ports::{AgentHost, McpConnector, ToolFactory};
use longrun_ports::{FaultPoint, Faults, NotifyError, QueueError, StepMessage, Store, StoreError};

pub use self::follow_up::{FollowUp, SweepReport};
pub use self::user_tools::{McpCache, UserToolCache};

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
    /// Iteration committed and the run goes on: its next step, not sent, for a caller that
    /// asked for it to send it with this message's ack (`StepQueue::ack_and_next`).
    Next(StepMessage),
}

pub struct Engine {
    pub follow_up: FollowUp,
    pub llm: Arc<dyn LlmClient>,
    pub tools: Arc<ToolRegistry>,
    /// Builds the tools users registered; without it runs use the built-ins only.
    pub user_tools: Option<Arc<dyn ToolFactory>>,
    pub user_tool_specs: UserToolCache,
    /// Lists and calls users' MCP servers; without it runs have no MCP tools.
    pub mcp: Option<Arc<dyn McpConnector>>,
    pub mcp_cache: McpCache,
    /// Starts the coding-agent processes of agent runs; `None` where no process can be
    /// started (Lambda), and agent runs are refused at creation.
    pub agents: Option<Arc<dyn AgentHost>>,
    pub faults: Arc<dyn Faults>,
    pub config: EngineConfig,
}

impl Engine {
    fn store(&self) -> &Arc<dyn Store> {
        &self.follow_up.store
    }

    fn now(&self) -> i64 {
        self.follow_up.clock.now_ms()
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
        &self, msg: &StepMessage, owner: &str, deadline_ms: Option<i64>,
    ) -> Result<StepOutcome, EngineError> {
        self.step_handing_back(msg, owner, deadline_ms, false).await
    }

    /// `step_until`; with `hand_back`, a run that goes on returns its next step
    /// (`StepOutcome::Next`) instead of sending it, for the caller to send with the ack.
    pub async fn step_handing_back(
        &self, msg: &StepMessage, owner: &str, deadline_ms: Option<i64>, hand_back: bool,
    ) -> Result<StepOutcome, EngineError> {
        let n = msg.iteration;
        let Some(run) = self.store().get_run(&msg.run_id).await? else {
            return Ok(StepOutcome::Dropped("run not found".into()));
        };
        if run.iteration >= n {
            // Redelivery of a committed iteration: heal a crash between commit and send.
            if run.iteration == n {
                self.follow_up.start_children(&run, n).await?;
                self.follow_up.send(&run).await?;
            }
            return Ok(StepOutcome::Dropped(format!(
                "iteration {n} already committed"
            )));
        }
        let now = self.now();
        // Checked here, written with the attempt's first write (before its first model call
        // when the run still shows queued): a duplicate delivery or a live lease is turned
        // away before any model call, at no cost.
        let claim = Claim::new(n, owner, self.config.lease_ms, &run);
        let run = match change::claim(&run, n, owner, now, self.config.lease_ms) {
            Ok(claim) => claim.run,
            Err(r) => return Ok(turned_away(r, now)),
        };
        let plan = match self.work(&run, &claim, now, deadline_ms).await {
            Ok(plan) => plan,
            Err(EngineError::Superseded(r)) => return Ok(turned_away(r, self.now())),
            Err(EngineError::Deferred { delay_ms, reason }) => {
                self.defer(&run, &claim, &reason).await?;
                warn!(delay_ms, %reason, "iteration deferred past the worker's deadline");
                return Ok(StepOutcome::Retry { delay_ms });
            }
            Err(e) => return Err(e),
        };
        self.crash(FaultPoint::BeforeCommit, &run.id, n)?;
        let run = match self.commit(&run, &claim, &plan).await? {
            Ok(run) => run,
            Err(r) => {
                warn!(reason = %r, "commit refused; another attempt owns this iteration");
                return Ok(StepOutcome::Dropped(r.to_string()));
            }
        };
        info!(status = %run.status, tokens = run.metrics.tokens(), "iteration committed");
        self.crash(FaultPoint::AfterCommit, &run.id, n)?;
        // Effects of the commit, only now that it landed; a crash before them is healed by
        // the redelivery, which finds the iteration committed.
        self.follow_up.start_children(&run, n).await?;
        if hand_back
            && run.status == RunStatus::Running
            && let Some(next) = follow_up::next_step(&run)
        {
            return Ok(StepOutcome::Next(next));
        }
        self.follow_up.send_deferred(&run).await?;
        self.crash(FaultPoint::AfterEnqueue, &run.id, n)?;
        Ok(StepOutcome::Done)
    }

    /// The iteration's work, phase by phase, against staged state; nothing is written except
    /// live spend (children it spawns are created after the commit).
    async fn work(
        &self, run: &Run, claim: &Claim<'_>, started_at: i64, deadline_ms: Option<i64>,
    ) -> Result<CommitPlan, EngineError> {
        if run.agent.is_some() {
            return self.agent_work(run, claim, started_at).await;
        }
        let staging = self.staging(run, claim, started_at);
        staging.set_parent(run);
        let tools = self.tools_for(run).await?;
        let mut draft = Draft {
            cancel: run.cancel_requested,
            ..Draft::default()
        };
        let told = self
            .pending_decisions(run, &tools, &staging, &mut draft)
            .await;
        let it = Iter::new(
            told.as_ref().unwrap_or(run),
            claim,
            tools,
            started_at,
            deadline_ms,
        );
        self.planner(&it, &staging, &mut draft).await?;
        // A cancel that came during the planner's call: nothing it asked for is done.
        if draft.planner.is_some() && !draft.cancel && self.cancel_requested(&it).await? {
            draft.cancel = true;
        }
        if let Some(out) = draft.planner.clone().filter(|_| !draft.cancel) {
            let admitted = permissions::admit(it.run, it.n, &it.tools, &out, &staging, &mut draft);
            let failed = self.tool_calls(&it, &staging, &admitted, &mut draft).await;
            let more_llm = !failed.is_empty() || !admitted.executor_tasks.is_empty();
            if more_llm && self.cancel_requested(&it).await? {
                draft.cancel = true;
            }
            self.repair(&it, &staging, &failed, &mut draft).await?;
            self.executors(&it, &staging, &admitted.executor_tasks, &mut draft)
                .await?;
        }
        self.conclude(&it, staging, draft).await
    }

    /// Where the iteration's changes wait for its commit.
    fn staging(&self, run: &Run, claim: &Claim<'_>, started_at: i64) -> Staging {
        Staging::new(
            self.store().clone(),
            &run.id,
            claim.n,
            run.plan.clone(),
            started_at,
        )
    }

    /// The one fenced write of the iteration. Deferred: until message n is acknowledged, a
    /// lost commit is redone on redelivery. `Ok(Err(_))` when another attempt owns it.
    async fn commit(
        &self, run: &Run, claim: &Claim<'_>, plan: &CommitPlan,
    ) -> Result<Result<Run, Rejection>, EngineError> {
        let taken = claim.is_taken();
        let now = self.now();
        match self
            .store()
            .update_run(&run.id, Durability::Deferred, &|r| {
                claim.and_then(taken, r, now, |c| plan.apply(c))
            })
            .await
        {
            Ok(run) => Ok(Ok(run)),
            Err(StoreError::Rejected(r)) => Ok(Err(r)),
            Err(e) => Err(e.into()),
        }
    }

    /// Gives the claim back, with the deferral on the log even when no write took the claim.
    async fn defer(&self, run: &Run, claim: &Claim<'_>, reason: &str) -> Result<(), EngineError> {
        let taken = claim.is_taken();
        let now = self.now();
        let released = self
            .store()
            .update_run(&run.id, Durability::Now, &|r| {
                claim.and_then(taken, r, now, |c| {
                    change::release(c, claim.n, claim.owner, reason, now)
                })
            })
            .await;
        match released {
            Ok(_) | Err(StoreError::Rejected(_)) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}
