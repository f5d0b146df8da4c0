//! The working phases of an iteration, each over the explicit [`Draft`]: the user's pending
//! decisions, the planner, the planner's tool calls, one repair pass, the executors. They
//! stage changes in `Staging`; nothing here writes to the store but a model call's spend.

use futures_util::StreamExt;
use longrun_domain::decide::{IterationError, ToolFailure};
use longrun_domain::fingerprint;
use longrun_domain::planner::{
    ExecutorOutput, ExecutorTask, PlannerOutput, RepairOutput, ToolCall, parse_contract,
    parse_planner_output, planner_schema,
};
use longrun_domain::record::PadEntry;
use longrun_domain::run::{Decision, ExecutorBrief, PendingCall, Run, ToolResultBrief};

use super::model::{Iter, Llm, llm_error};
use super::permissions::{self, Admitted};
use super::{Engine, EngineError};
use crate::prompt;
use crate::prompt::SCRATCHPAD_TAIL;
use crate::tools::{Staging, ToolOutcome, ToolRegistry};
use longrun_domain::clip;
use longrun_ports::LlmRole;

/// What the iteration has done so far, phase by phase. Nothing in it is written until the
/// commit.
#[derive(Default)]
pub(super) struct Draft {
    /// Outcomes of tool calls (decided writes, the planner's calls, repairs), in order.
    pub tool_results: Vec<ToolResultBrief>,
    pub executor_results: Vec<ExecutorBrief>,
    /// The planner's answer, when it gave a valid one.
    pub planner: Option<PlannerOutput>,
    pub error: Option<IterationError>,
    /// A cancel was requested before or during the iteration: no further model call.
    pub cancel: bool,
    /// What the planner chose to do, for the scratchpad and the repetition check.
    pub actions: Vec<String>,
    /// Writes held for the user's approval (per_write), and the questions asking for them
    /// and for the plan (approve_plan).
    pub pending_calls: Vec<PendingCall>,
    pub approval_questions: Vec<String>,
    /// The planner's and the repair pass's calls refused before they ran, and the tools whose
    /// calls ran: a refusal counts against the breaker only if its tool never ran.
    pub refused: Vec<ToolFailure>,
    pub ran: Vec<String>,
}

impl Draft {
    /// Notes which calls were refused before they ran and which tools ran.
    fn note_outcomes(&mut self, outcomes: &[ToolOutcome]) {
        for o in outcomes {
            match (o.refused, &o.result) {
                (Some(kind), Err(message)) => self.refused.push(ToolFailure {
                    tool: o.name.clone(),
                    kind,
                    message: clip(message, 500),
                }),
                (None, Ok(_)) => self.ran.push(o.name.clone()),
                _ => {}
            }
        }
    }

    /// The first refusal no later call of the same tool made good.
    pub fn tool_failure(&self) -> Option<ToolFailure> {
        self.refused
            .iter()
            .find(|f| !self.ran.contains(&f.tool))
            .cloned()
    }
}

impl Engine {
    /// Writes the user decided on (per_write) are carried out or refused first. Returns the
    /// run with a hint telling the planner which, when there were any.
    pub(super) async fn pending_decisions(
        &self, run: &Run, tools: &ToolRegistry, staging: &Staging, draft: &mut Draft,
    ) -> Option<Run> {
        // A cancel seen at the claim (a redelivery after the user canceled) makes no write,
        // the approved ones included: the run ends with this commit.
        if draft.cancel {
            return None;
        }
        let mut decided = vec![];
        for call in &run.pending_calls {
            let outcome = match &call.decision {
                Some(Decision::Approved) => {
                    let c = ToolCall {
                        name: call.name.clone(),
                        args: call.args.clone(),
                    };
                    tools.invoke(staging, &c, None).await
                }
                Some(Decision::Rejected { reason }) => ToolOutcome {
                    name: call.name.clone(),
                    args: call.args.clone(),
                    result: Err(format!("rejected by the user: {reason}")),
                    refused: None,
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
            draft.tool_results.push(brief_of(&outcome, false));
        }
        if decided.is_empty() {
            return None;
        }
        let mut told = run.clone();
        told.hints.push(format!(
            "The user decided on the writes you proposed: {}. Do not repeat a rejected write.",
            decided.join("; ")
        ));
        Some(told)
    }

    /// Asks the planner (unless a cancel is pending), stages its plan updates and notes its
    /// actions.
    pub(super) async fn planner(
        &self, it: &Iter<'_>, staging: &Staging, draft: &mut Draft,
    ) -> Result<(), EngineError> {
        if draft.cancel {
            return Ok(());
        }
        let pad = self.store().scratchpad(&it.run.id, SCRATCHPAD_TAIL).await?;
        staging.carry_sources(pad.iter().rev().flat_map(|e| &e.sources));
        match self.ask_planner(it, &pad).await? {
            Ok(out) => draft.planner = out,
            Err(e) => draft.error = Some(e),
        }
        let Some(out) = &draft.planner else {
            return Ok(());
        };
        let updates: Vec<_> = out
            .plan_updates
            .iter()
            .map(|u| (u.id.clone(), u.title.clone(), u.status))
            .collect();
        staging.update_plan(&updates);
        draft.actions.extend(
            out.tool_calls
                .iter()
                .map(|c| format!("{} {}", c.name, clip(&c.args.to_string(), 150))),
        );
        draft.actions.extend(
            out.executor_tasks
                .iter()
                .map(|t| format!("executor: {}", t.title)),
        );
        Ok(())
    }

    /// Planner with one corrective retry. Returns the output or the iteration's error.
    async fn ask_planner(
        &self, it: &Iter<'_>, pad: &[PadEntry],
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
                Ok(out) if attempt == 0 && replan_unmet(it.run, &out).is_some() => {
                    let unmet = replan_unmet(it.run, &out).unwrap_or_default();
                    correction = Some((resp.content, unmet));
                }
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

    /// Runs the admitted calls of the planner; returns the ones that failed, for repair.
    pub(super) async fn tool_calls(
        &self, it: &Iter<'_>, staging: &Staging, admitted: &Admitted, draft: &mut Draft,
    ) -> Vec<ToolOutcome> {
        {
            let s = it.spent();
            let m = &s.iteration;
            staging.note_spend(m.input_tokens + m.output_tokens, m.cost_usd);
        }
        let (calls, refused) = refuse_for_replan(it.run, admitted.calls.clone());
        let outcomes = self
            .run_tools(it, staging, &calls, None, self.config.max_tool_calls)
            .await;
        draft
            .tool_results
            .extend(refused.iter().chain(&outcomes).map(|o| brief_of(o, false)));
        draft.note_outcomes(&outcomes);
        // A refused repeat is not the repair pass's to fix: it would only make it again.
        outcomes.into_iter().filter(|o| o.result.is_err()).collect()
    }

    /// One repair pass over failed calls: at most `repair_max_calls` corrected calls.
    pub(super) async fn repair(
        &self, it: &Iter<'_>, staging: &Staging, failed: &[ToolOutcome], draft: &mut Draft,
    ) -> Result<(), EngineError> {
        if failed.is_empty() || draft.cancel {
            return Ok(());
        }
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
            _ => return Ok(()),
        };
        let Ok(repair) = parse_contract::<RepairOutput>(&resp.content) else {
            return Ok(());
        };
        let calls: Vec<ToolCall> = repair.tool_calls.into_iter().take(max).collect();
        let calls = permissions::hold_writes(it.run, it.n, &it.tools, calls, draft);
        let (calls, refused) = refuse_for_replan(it.run, calls);
        let repaired = self.run_tools(it, staging, &calls, None, max).await;
        draft
            .tool_results
            .extend(refused.iter().chain(&repaired).map(|o| brief_of(o, true)));
        draft.note_outcomes(&repaired);
        Ok(())
    }

    /// The planner's executor tasks, fanned out with bounded concurrency.
    pub(super) async fn executors(
        &self, it: &Iter<'_>, staging: &Staging, tasks: &[ExecutorTask], draft: &mut Draft,
    ) -> Result<(), EngineError> {
        if draft.cancel {
            return Ok(());
        }
        // Futures are built up front: a lazily mapped stream trips the `Send` check of the
        // spawned worker future on its higher-ranked closure lifetimes.
        let pending: Vec<_> = tasks
            .iter()
            .take(self.config.max_executor_tasks)
            .map(|task| self.execute(it, staging, task))
            .collect();
        let briefs: Vec<Result<ExecutorBrief, EngineError>> = futures_util::stream::iter(pending)
            .buffered(self.config.executor_concurrency.max(1))
            .collect()
            .await;
        for b in briefs {
            draft.executor_results.push(b?);
        }
        Ok(())
    }

    async fn execute(
        &self, it: &Iter<'_>, staging: &Staging, task: &ExecutorTask,
    ) -> Result<ExecutorBrief, EngineError> {
        let allowed = permissions::executor_tools(it.run, &it.tools, task);
        let max = self.config.executor_tool_calls;
        let steps = staging.plan_steps(&task.plan_steps);
        let messages =
            prompt::executor_messages(it.run, task, &steps, &it.tools.specs(Some(&allowed)), max);
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
            .run_tools(it, staging, &out.tool_calls, Some(&allowed), max)
            .await;
        let refused =
            staging.executor_plan_updates(&task.title, &task.plan_steps, &out.plan_updates);
        let mut summary = clip(&out.summary, 500);
        if !refused.is_empty() {
            summary.push_str(&format!(" (plan updates refused: {})", refused.join("; ")));
        }
        Ok(brief(
            summary,
            results.iter().map(|r| brief_of(r, false)).collect(),
        ))
    }

    async fn run_tools(
        &self, it: &Iter<'_>, staging: &Staging, calls: &[ToolCall], allowed: Option<&[&str]>,
        limit: usize,
    ) -> Vec<ToolOutcome> {
        let mut out = Vec::with_capacity(calls.len().min(limit));
        for (i, call) in calls.iter().enumerate() {
            if i >= limit {
                out.push(ToolOutcome {
                    name: call.name.clone(),
                    args: call.args.clone(),
                    result: Err(format!("skipped: at most {limit} tool calls per turn")),
                    refused: None,
                });
                continue;
            }
            // Looked for before every call: none is made once a cancel is seen.
            if matches!(self.cancel_requested(it).await, Ok(true) | Err(_)) {
                out.push(ToolOutcome {
                    name: call.name.clone(),
                    args: call.args.clone(),
                    result: Err("skipped: the run was canceled".into()),
                    refused: None,
                });
                continue;
            }
            if let Err(e) = it.take_tool_call() {
                out.push(ToolOutcome {
                    name: call.name.clone(),
                    args: call.args.clone(),
                    result: Err(e),
                    refused: None,
                });
                continue;
            }
            out.push(it.tools.invoke(staging, call, allowed).await);
        }
        out
    }
}

/// Under a forced replan (`Streaks::replan`), what the planner's answer lacks: plan updates, or
/// calls other than the ones refused. `None` when there is no forced replan, or it is met.
fn replan_unmet(run: &Run, out: &PlannerOutput) -> Option<String> {
    if run.streaks.replan.is_empty() {
        return None;
    }
    let repeated: Vec<&str> = out
        .tool_calls
        .iter()
        .filter(|c| is_refused_for_replan(run, c))
        .map(|c| c.name.as_str())
        .collect();
    match (out.plan_updates.is_empty(), repeated.is_empty()) {
        (false, true) => None,
        (empty, _) => {
            let mut unmet = vec![];
            if empty {
                unmet.push("plan_updates is empty".to_string());
            }
            if !repeated.is_empty() {
                unmet.push(format!(
                    "the calls to {} repeat the last iteration's, which changed nothing",
                    repeated.join(", ")
                ));
            }
            Some(format!(
                "this iteration must replan (REPLAN REQUIRED in hints), but {}",
                unmet.join(" and ")
            ))
        }
    }
}

fn is_refused_for_replan(run: &Run, call: &ToolCall) -> bool {
    let seen = super::conclude::call_seen(call);
    run.streaks.replan.contains(&seen.fingerprint)
}

/// The calls to make, and the refusals of those a forced replan forbids (the last
/// iteration's, which made no progress): a refusal is not made, nor counted as a refused tool.
fn refuse_for_replan(run: &Run, calls: Vec<ToolCall>) -> (Vec<ToolCall>, Vec<ToolOutcome>) {
    let (refused, calls): (Vec<ToolCall>, Vec<ToolCall>) = calls
        .into_iter()
        .partition(|c| is_refused_for_replan(run, c));
    let refused = refused
        .into_iter()
        .map(|c| ToolOutcome {
            name: c.name,
            args: c.args,
            result: Err(
                "refused: the same call as the last iteration's, which changed \
                         nothing; replan with other calls"
                    .into(),
            ),
            refused: None,
        })
        .collect();
    (calls, refused)
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
