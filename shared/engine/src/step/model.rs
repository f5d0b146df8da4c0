//! The iteration's model calls: budgets checked before each call, the real spend written
//! as soon as it returns (carrying the claim on the first write), cancels looked for, and a
//! retry that would outlive the worker's deadline turned into a deferral.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use longrun_domain::change;
use longrun_domain::decide::{BudgetExhausted, IterationError, check_budgets};
use longrun_domain::fingerprint;
use longrun_domain::record::IterationMetrics;
use longrun_domain::run::{Metrics, Run, Spend};

use super::claim::Claim;
use super::{Engine, EngineError};
use crate::tools::ToolRegistry;
use longrun_ports::Durability;
use longrun_ports::{ChatMessage, ChatRequest, ChatResponse, LlmError, LlmRole};
use longrun_ports::{FaultPoint, StoreError};

/// Per-iteration accounting shared by concurrent executors.
pub(super) struct Spent {
    calls: u32,
    /// Calls so far per role (planner, executor, repair, reporter, grader): each call's
    /// `role_call`.
    role_calls: [u32; 5],
    /// Time model calls waited for capacity: not running time.
    queued_ms: u64,
    pub iteration: IterationMetrics,
    run: Metrics,
    pub budget: Option<BudgetExhausted>,
}

impl Spent {
    /// A recorded spend, counted against the run's budgets and in the iteration's metrics.
    pub fn add(&mut self, spend: &Spend) {
        self.run.add_spend(spend);
        self.queued_ms += spend.queued_ms;
        self.iteration.input_tokens += spend.input_tokens;
        self.iteration.output_tokens += spend.output_tokens;
        self.iteration.cost_usd += spend.cost_usd.unwrap_or(0.0);
    }
}

/// What every phase of one iteration shares: the run as claimed, the claim, its tools and
/// its spend so far.
pub(super) struct Iter<'a> {
    pub run: &'a Run,
    pub claim: &'a Claim<'a>,
    /// `cancel_requested` as of the last read or write of the run, and when that was.
    cancel: AtomicBool,
    known_at: AtomicI64,
    /// The built-ins plus the run owner's tools.
    pub tools: Arc<ToolRegistry>,
    pub n: u32,
    pub started_at: i64,
    /// Epoch ms by which the iteration must be committed, when the trigger has one.
    deadline_ms: Option<i64>,
    spent: Mutex<Spent>,
}

impl<'a> Iter<'a> {
    pub fn new(
        run: &'a Run, claim: &'a Claim<'a>, tools: Arc<ToolRegistry>, started_at: i64,
        deadline_ms: Option<i64>,
    ) -> Self {
        Iter {
            run,
            claim,
            cancel: AtomicBool::new(run.cancel_requested),
            known_at: AtomicI64::new(started_at),
            tools,
            n: claim.n,
            started_at,
            deadline_ms,
            spent: Mutex::new(Spent {
                calls: 0,
                role_calls: [0; 5],
                queued_ms: 0,
                iteration: IterationMetrics::default(),
                run: run.budget_metrics(),
                budget: None,
            }),
        }
    }

    pub fn spent(&self) -> std::sync::MutexGuard<'_, Spent> {
        self.spent.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts one tool call against the run's `max_tool_calls`; the error is what the model
    /// sees for a call the budget no longer allows.
    pub fn take_tool_call(&self) -> Result<(), String> {
        let mut s = self.spent();
        if let Some(max) = self.run.budgets.max_tool_calls
            && s.run.tool_calls >= max
        {
            return Err(format!(
                "skipped: the run's tool-call budget is spent (max_tool_calls = {max})"
            ));
        }
        s.run.tool_calls += 1;
        s.iteration.tool_calls += 1;
        Ok(())
    }

    /// A budget used up by the spend and running time so far (`now` is when the iteration's
    /// work ended): a run whose budget is gone ends in this iteration's commit, not with an
    /// empty iteration after it.
    pub fn budget_after(&self, now: i64) -> Option<BudgetExhausted> {
        let s = self.spent();
        if s.budget.is_some() {
            return s.budget.clone();
        }
        let running = self.run.metrics.running_ms + self.elapsed(&s, now);
        check_budgets(&self.run.budgets, &s.run, self.n, running)
    }

    /// This iteration's running time at `now`: wall time less the time its model calls
    /// waited for capacity (a wait is not charged to the run's running-time budget).
    pub fn running_ms(&self, now: i64) -> u64 {
        self.elapsed(&self.spent(), now)
    }

    fn elapsed(&self, s: &Spent, now: i64) -> u64 {
        ((now - self.started_at).max(0) as u64).saturating_sub(s.queued_ms)
    }

    fn saw(&self, run: &Run, at: i64) {
        self.cancel.store(run.cancel_requested, Ordering::SeqCst);
        self.known_at.store(at, Ordering::SeqCst);
    }
}

/// A cancel is looked for before each further model call; the run as last read or written
/// answers for it when it is this fresh, which after a model call's spend it usually is.
const CANCEL_FRESH_MS: i64 = 1_000;

/// Attempts at writing a call's spend before the step gives up (the store's client retries
/// with backoff inside each).
const SPEND_WRITE_TRIES: u32 = 5;

pub(super) enum Llm {
    Answer(ChatResponse),
    Failed(LlmError),
    /// A budget ran out before the call; it was not made.
    OutOfBudget,
}

impl Engine {
    pub(super) async fn call_llm(
        &self, it: &Iter<'_>, role: LlmRole, messages: Vec<ChatMessage>,
        json_schema: Option<Arc<serde_json::Value>>,
    ) -> Result<Llm, EngineError> {
        let (call, role_call) = {
            let mut s = it.spent();
            let running = it.run.metrics.running_ms + it.elapsed(&s, self.now());
            if s.budget.is_none() {
                s.budget = check_budgets(&it.run.budgets, &s.run, it.n, running);
            }
            if s.budget.is_some() {
                return Ok(Llm::OutOfBudget);
            }
            s.calls += 1;
            s.role_calls[role as usize] += 1;
            (s.calls, s.role_calls[role as usize])
        };
        let req = ChatRequest {
            run_id: it.run.id.clone(),
            iteration: it.n,
            role,
            model: match (role, &it.run.grading.model) {
                (LlmRole::Grader, Some(model)) => model.clone(),
                _ => it.run.model.clone(),
            },
            messages,
            json_schema,
            max_output_tokens: Some(self.config.max_output_tokens),
            idempotency_key: format!("{}#{}#{}", it.run.id, it.n, call),
            role_call,
            attempt: 0,
            // A grader model of its own is that model alone.
            rotation: match (role, &it.run.grading.model) {
                (LlmRole::Grader, Some(_)) => vec![],
                _ => it.run.models.iter().skip(1).cloned().collect(),
            },
            deadline_ms: it.deadline_ms,
        };
        if it.claim.to_show_before_a_call() {
            self.take_claim(it.run, it.claim, false).await?;
            self.crash(FaultPoint::AfterClaim, &it.run.id, it.n)?;
        }
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
                // The wait for capacity before a failed call is not running time either.
                it.spent().queued_ms += e.queued_ms;
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
            queued_ms: resp.queued_ms,
        };
        let key = format!("{}#{}", it.claim.owner, req.idempotency_key);
        let claiming = !it.claim.is_taken();
        self.record_spend(it, &spend, &key, claiming).await?;
        if claiming {
            it.claim.took();
            self.crash(FaultPoint::AfterClaim, &it.run.id, it.n)?;
        }
        {
            let mut s = it.spent();
            s.add(&spend);
            s.iteration.llm_calls += 1;
        }
        self.crash(FaultPoint::AfterLlmCall, &it.run.id, it.n)?;
        Ok(Llm::Answer(resp))
    }

    /// Writes a call's spend (taking the claim with it on the attempt's first write; fenced on
    /// the claim after it), retrying a store that failed: the money was spent, and budgets must
    /// see it. Keyed, so a write that landed before its error counts once. An attempt that no
    /// longer holds the iteration records the spend unfenced and stops.
    pub(super) async fn record_spend(
        &self, it: &Iter<'_>, spend: &Spend, key: &str, claiming: bool,
    ) -> Result<(), EngineError> {
        let mut tries = 0;
        loop {
            tries += 1;
            let now = self.now();
            let written = self
                .store()
                .update_run(&it.run.id, Durability::Now, &|r| {
                    let spent = |c: &Run| Ok(change::record_spend_once(c, it.n, spend, key, now));
                    if claiming {
                        it.claim.and_then(false, r, now, spent)
                    } else {
                        it.claim.if_held(r, spent)
                    }
                })
                .await;
            match written {
                Ok(run) => {
                    it.saw(&run, now);
                    return Ok(());
                }
                Err(StoreError::Rejected(rejection)) => {
                    // Another attempt owns the iteration; this call was made all the same.
                    self.record_unclaimed_spend(it, spend, key).await?;
                    return Err(EngineError::Superseded(rejection));
                }
                Err(e) if e.is_retryable() && tries < SPEND_WRITE_TRIES => {
                    tracing::warn!(error = %e, tries, "recording a model call's spend failed; retrying");
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    async fn record_unclaimed_spend(
        &self, it: &Iter<'_>, spend: &Spend, key: &str,
    ) -> Result<(), EngineError> {
        let mut tries = 0;
        loop {
            tries += 1;
            let now = self.now();
            match self
                .store()
                .update_run(&it.run.id, Durability::Now, &|r| {
                    Ok(change::record_spend_once(r, it.n, spend, key, now))
                })
                .await
            {
                Ok(_) | Err(StoreError::Rejected(_)) => return Ok(()),
                Err(e) if e.is_retryable() && tries < SPEND_WRITE_TRIES => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    pub(super) async fn cancel_requested(&self, it: &Iter<'_>) -> Result<bool, EngineError> {
        let now = self.now();
        if now - it.known_at.load(Ordering::SeqCst) > CANCEL_FRESH_MS {
            match self.store().get_run(&it.run.id).await? {
                Some(run) => it.saw(&run, now),
                None => return Ok(true),
            }
        }
        Ok(it.cancel.load(Ordering::SeqCst))
    }
}

pub(super) fn llm_error(e: &LlmError) -> IterationError {
    IterationError {
        fingerprint: fingerprint::of_error(&format!("llm {:?} {}", e.kind, e.message)),
        message: format!("model call failed: {e}"),
        fatal: !e.is_retryable(),
    }
}
