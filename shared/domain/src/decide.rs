//! The judgment of an iteration: exit gate, budgets, breakers. Pure; tested without a store.

use serde::{Deserialize, Serialize};

use crate::evidence::{ClaimEvidence, EvidenceProblem, awaits_grading, judge_evidence};
use crate::planner::StatusBlock;
use crate::progress;
use crate::run::{Budgets, Metrics, PlanStep, Run, RunStatus, StopType, StoppingReason, Streaks};

/// What the iteration changed in committed state. Anything here counts as progress, but a
/// change of the workspace that only takes it back to a state the run was in before.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    pub docs_changed: u32,
    pub plan_advanced: bool,
    pub remaining_shrank: bool,
    pub answers_consumed: bool,
    /// The workspace (documents and plan statuses) is left in a state one of the last
    /// iterations left (`Streaks::states`): its changes undid others.
    pub revisited: bool,
}

impl Progress {
    pub fn made(&self) -> bool {
        let workspace = (self.docs_changed > 0 || self.plan_advanced) && !self.revisited;
        workspace || self.remaining_shrank || self.answers_consumed
    }
}

/// The workspace as an iteration leaves it: the docs' hash (see `progress::doc_part`) and the
/// state it makes with the plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkspaceAfter {
    pub docs_hash: u64,
    pub state: String,
}

impl WorkspaceAfter {
    /// The workspace after a commit that changed the docs' hash by `docs_delta` (the XOR of
    /// the parts of the documents it wrote, old and new) and left `plan`.
    pub fn of(run: &Run, docs_delta: u64, plan: &[PlanStep]) -> WorkspaceAfter {
        let docs_hash = progress::parse_docs_hash(&run.streaks.docs_hash) ^ docs_delta;
        WorkspaceAfter {
            docs_hash,
            state: progress::workspace_state(docs_hash, plan),
        }
    }

    /// The run was in this state after one of its last iterations.
    pub fn seen_before(&self, run: &Run) -> bool {
        run.streaks.states.contains(&self.state)
    }
}

/// A tool call the planner asked for: its tool, and the fingerprint of the call (name and
/// arguments) that a forced replan refuses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallSeen {
    pub tool: String,
    pub fingerprint: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IterationError {
    pub fingerprint: String,
    pub message: String,
    /// Non-retryable (auth, quota): the run fails at once.
    pub fatal: bool,
}

/// Why a tool call was refused before it ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolFailureKind {
    /// No tool of that name exists, or the run or task may not use it.
    UnknownTool,
    /// The arguments do not match the tool's schema.
    InvalidArguments,
}

/// A tool call refused before it ran, that no later call of the same tool in the iteration
/// (the repair pass included) made good.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolFailure {
    pub tool: String,
    pub kind: ToolFailureKind,
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BudgetKind {
    MaxIterations,
    MaxRunningMs,
    MaxTokens,
    MaxCostUsd,
    MaxToolCalls,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetExhausted {
    pub kind: BudgetKind,
    pub detail: String,
}

/// Checked before every LLM call. `iteration` is the one being worked on; `running_ms`
/// includes the time already spent in it.
pub fn check_budgets(
    budgets: &Budgets, metrics: &Metrics, iteration: u32, running_ms: u64,
) -> Option<BudgetExhausted> {
    if iteration > budgets.max_iterations {
        return Some(BudgetExhausted {
            kind: BudgetKind::MaxIterations,
            detail: format!(
                "max_iterations: iteration {iteration} would exceed the limit of {}",
                budgets.max_iterations
            ),
        });
    }
    if let Some(max) = budgets.max_tokens
        && metrics.tokens() >= max
    {
        return Some(BudgetExhausted {
            kind: BudgetKind::MaxTokens,
            detail: format!("max_tokens: used {} of {max} tokens", metrics.tokens()),
        });
    }
    if let Some(max) = budgets.max_tool_calls
        && metrics.tool_calls >= max
    {
        return Some(BudgetExhausted {
            kind: BudgetKind::MaxToolCalls,
            detail: format!(
                "max_tool_calls: made {} of {max} tool calls",
                metrics.tool_calls
            ),
        });
    }
    if let Some(max) = budgets.max_cost_usd
        && metrics.cost_usd >= max
    {
        return Some(BudgetExhausted {
            kind: BudgetKind::MaxCostUsd,
            detail: format!("max_cost_usd: spent ${:.6} of ${max}", metrics.cost_usd),
        });
    }
    if running_ms >= budgets.max_running_ms {
        return Some(BudgetExhausted {
            kind: BudgetKind::MaxRunningMs,
            detail: format!(
                "max_running_ms: ran {running_ms} ms of {} ms",
                budgets.max_running_ms
            ),
        });
    }
    None
}

/// Everything the decision needs to know about the iteration just worked.
#[derive(Clone, Debug, Default)]
pub struct IterationFacts {
    pub iteration: u32,
    /// The planner's status block; `None` when the planner produced nothing usable.
    pub status: Option<StatusBlock>,
    /// The plan after this iteration's updates.
    pub plan: Vec<PlanStep>,
    pub progress: Progress,
    /// Fingerprint of the action set (tool names + args, executor tasks); `None` on error.
    pub action_fingerprint: Option<String>,
    /// The planner's tool calls, in order.
    pub calls: Vec<CallSeen>,
    /// The workspace as the commit leaves it; `None` when unknown (nothing is remembered).
    pub workspace: Option<WorkspaceAfter>,
    pub error: Option<IterationError>,
    /// A tool call refused before it ran and not repaired (the first, when several were).
    pub tool_failure: Option<ToolFailure>,
    pub budget: Option<BudgetExhausted>,
    pub cancel_requested: bool,
    /// Questions for the user (`needs_user_input` or the `ask_user` tool).
    pub questions: Option<Vec<String>>,
    /// The completion claim's evidence, each document it names looked up in the workspace
    /// as it will be after this commit.
    pub claim: ClaimEvidence,
    /// Work waits for the user's approval (a plan, or writes), so the run cannot be complete.
    pub awaiting_approval: bool,
    /// Child runs still active after this iteration (including ones it spawned).
    pub active_children: usize,
    /// The planner asked to wait for its children (`wait_for_children`).
    pub wait_for_children: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Continue,
    Wait {
        questions: Vec<String>,
    },
    /// Sleep until a child run ends; burns no running time.
    WaitChildren,
    Finish(StoppingReason),
}

impl Outcome {
    /// The run status this outcome commits.
    pub fn status(&self) -> RunStatus {
        match self {
            Outcome::Continue => RunStatus::Running,
            Outcome::Wait { .. } => RunStatus::WaitingOnUser,
            Outcome::WaitChildren => RunStatus::WaitingOnChildren,
            Outcome::Finish(r) => match r.kind {
                StopType::Completed => RunStatus::Completed,
                StopType::Canceled => RunStatus::Canceled,
                StopType::Error => RunStatus::Failed,
                StopType::WaitingOnUser => RunStatus::WaitingOnUser,
                _ => RunStatus::Stopped,
            },
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub outcome: Outcome,
    pub streaks: Streaks,
    /// Guidance for the next planner prompt.
    pub hints: Vec<String>,
}

/// Conditions of the exit gate that are not met; empty means the completion claim holds.
/// `evidence` is what `judge_evidence` found wrong with the claim's evidence.
pub fn exit_gate_failures(
    status: &StatusBlock, plan: &[PlanStep], evidence: &[EvidenceProblem],
) -> Vec<String> {
    let mut failed = vec![];
    if !status.exit_signal {
        failed.push("exit_signal is false".to_string());
    }
    if status.needs_user_input {
        failed.push("needs_user_input is true".to_string());
    }
    if !status.remaining_work.is_empty() {
        failed.push(format!(
            "remaining_work is not empty ({} items)",
            status.remaining_work.len()
        ));
    }
    let open: Vec<&str> = plan
        .iter()
        .filter(|s| s.status.is_open())
        .map(|s| s.id.as_str())
        .collect();
    if !open.is_empty() {
        failed.push(format!(
            "plan steps still pending or in progress: {}",
            open.join(", ")
        ));
    }
    failed.extend(evidence.iter().map(|p| p.to_string()));
    failed
}

/// How the hint of a completion claim the exit gate turned down begins: an agent run's next
/// start removes the DONE it wrote and tells the agent why.
pub const CLAIM_REJECTED: &str = "Your completion claim was rejected because";

/// Whether a grader's verdicts are all that a completion claim lacks: the gate's other
/// conditions hold and every evidence problem is a criterion not graded yet. The engine asks
/// the grader only then, so a claim that fails anyway costs no grader call.
pub fn grading_decides(
    run: &Run, status: &StatusBlock, plan: &[PlanStep], claim: &ClaimEvidence, iteration: u32,
) -> bool {
    status.exit_signal
        && exit_gate_failures(status, plan, &[]).is_empty()
        && awaits_grading(&judge_evidence(
            &run.completion_criteria,
            run.grading.text,
            claim,
            plan,
            iteration,
        ))
}

/// A stop rule: an outcome when the rule decides the iteration, else `None`. A rule may leave
/// guidance for the next prompt in `hints` (kept when the run waits or goes on).
type Rule = fn(&Run, &IterationFacts, &Streaks, &mut Vec<String>) -> Option<Outcome>;

/// The stop rules in the order they are tried; the first that decides wins.
const RULES: [Rule; 11] = [
    canceled,
    failed,
    completed,
    waiting_on_user,
    waiting_on_children,
    out_of_budget,
    repeated_error,
    repeated_tool_failure,
    repeated_actions,
    no_progress,
    max_iterations,
];

pub fn decide(run: &Run, facts: &IterationFacts) -> Verdict {
    let streaks = next_streaks(run, facts);
    let mut hints = vec![];
    for rule in RULES {
        if let Some(outcome) = rule(run, facts, &streaks, &mut hints) {
            if matches!(outcome, Outcome::Finish(_)) {
                hints.clear();
            }
            return Verdict {
                outcome,
                streaks,
                hints,
            };
        }
    }
    hints.extend(carry_on_hints(run, facts, &streaks));
    Verdict {
        outcome: Outcome::Continue,
        streaks,
        hints,
    }
}

/// The breakers' counters after this iteration.
fn next_streaks(run: &Run, facts: &IterationFacts) -> Streaks {
    let mut streaks = run.streaks.clone();
    let progress = facts.progress.made();
    match &facts.error {
        Some(err) => {
            streaks.error = if streaks.last_error_fingerprint.as_deref() == Some(&err.fingerprint) {
                streaks.error + 1
            } else {
                1
            };
            streaks.last_error_fingerprint = Some(err.fingerprint.clone());
            // An errored iteration is judged by the error breaker, not the progress one, so that
            // a persistent error is named as such instead of as "no progress".
            if progress {
                streaks.no_progress = 0;
            }
        }
        None => {
            streaks.error = 0;
            streaks.last_error_fingerprint = None;
            streaks.no_progress = if progress { 0 } else { streaks.no_progress + 1 };
        }
    }
    let repeated = !progress
        && facts.action_fingerprint.is_some()
        && facts.action_fingerprint == streaks.last_action_fingerprint;
    streaks.repeat = if repeated { streaks.repeat + 1 } else { 0 };
    streaks.tool_failure = if facts.tool_failure.is_some() {
        streaks.tool_failure + 1
    } else {
        0
    };
    if facts.action_fingerprint.is_some() {
        streaks.last_action_fingerprint = facts.action_fingerprint.clone();
    }
    let mut tools: Vec<String> = facts.calls.iter().map(|c| c.tool.clone()).collect();
    tools.sort();
    tools.dedup();
    // No progress with the same tool set again (issue 56 §2, the planner and executor
    // document's §4.5): the next iteration must replan, and may not make these calls.
    let same_tools = !tools.is_empty() && tools == run.streaks.last_tools;
    streaks.replan = if !progress && same_tools && facts.error.is_none() {
        facts.calls.iter().map(|c| c.fingerprint.clone()).collect()
    } else {
        vec![]
    };
    if facts.action_fingerprint.is_some() {
        streaks.last_tools = tools;
    }
    if let Some(w) = &facts.workspace {
        streaks.docs_hash = progress::format_docs_hash(w.docs_hash);
        progress::remember(&mut streaks.states, &w.state);
    }
    streaks.history.push(history_line(facts, progress));
    let extra = streaks.history.len().saturating_sub(HISTORY_KEPT);
    streaks.history.drain(..extra);
    streaks
}

/// Iterations in the planner's recent history (`Streaks::history`), a line of at most
/// `HISTORY_LINE` characters each: the run row carries them.
const HISTORY_KEPT: usize = 6;
const HISTORY_LINE: usize = 160;

/// One iteration in a line: whether it moved the run on, its tool calls, what it left to do.
fn history_line(facts: &IterationFacts, progress: bool) -> String {
    let tools = match facts.calls.len() {
        0 => "no tool calls".to_string(),
        _ => facts
            .calls
            .iter()
            .map(|c| c.tool.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    };
    let result = match (&facts.error, progress) {
        (Some(e), _) => format!("failed: {}", crate::clip(&e.message, 80)),
        (None, true) => "progress".to_string(),
        (None, false) if facts.progress.revisited => {
            "no progress: the workspace went back to an earlier state".to_string()
        }
        (None, false) => "no progress".to_string(),
    };
    let remaining = match &facts.status {
        Some(s) => format!("; {} item(s) of remaining work", s.remaining_work.len()),
        None => String::new(),
    };
    let line = format!("{}: {result} ({tools}){remaining}", facts.iteration);
    crate::clip(&line, HISTORY_LINE)
}

fn finish(kind: StopType, detail: impl Into<String>) -> Option<Outcome> {
    Some(Outcome::Finish(StoppingReason::new(kind, detail.into())))
}

fn canceled(_: &Run, facts: &IterationFacts, _: &Streaks, _: &mut Vec<String>) -> Option<Outcome> {
    facts
        .cancel_requested
        .then(|| finish(StopType::Canceled, "canceled by the user"))
        .flatten()
}

/// A non-retryable error (auth, quota) fails the run at once.
fn failed(_: &Run, facts: &IterationFacts, _: &Streaks, _: &mut Vec<String>) -> Option<Outcome> {
    let err = facts.error.as_ref().filter(|e| e.fatal)?;
    finish(StopType::Error, err.message.clone())
}

/// The exit gate: a completion claim holds only with no active child, nothing awaiting
/// approval, and every gate condition met; a rejected claim tells the planner why.
fn completed(
    run: &Run, facts: &IterationFacts, _: &Streaks, hints: &mut Vec<String>,
) -> Option<Outcome> {
    let status = facts.status.as_ref().filter(|s| s.exit_signal)?;
    if facts.active_children > 0 {
        hints.push(format!(
            "Your completion claim was rejected because {} child run(s) are still active: call \
             wait_for_children and use their reports.",
            facts.active_children
        ));
        return None;
    }
    if facts.awaiting_approval {
        return None;
    }
    let mut evidence = judge_evidence(
        &run.completion_criteria,
        run.grading.text,
        &facts.claim,
        &facts.plan,
        facts.iteration,
    );
    // Not graded because something else was wrong first: that is the reason to give.
    if !exit_gate_failures(status, &facts.plan, &[]).is_empty() {
        evidence.retain(|p| !matches!(p, EvidenceProblem::Ungraded { .. }));
    }
    let failures = exit_gate_failures(status, &facts.plan, &evidence);
    if failures.is_empty() {
        let detail = if status.progress_summary.trim().is_empty() {
            "objective met".to_string()
        } else {
            status.progress_summary.clone()
        };
        return finish(StopType::Completed, detail);
    }
    hints.push(format!(
        "{CLAIM_REJECTED}: {}. Fix these before claiming completion again.",
        failures.join("; ")
    ));
    None
}

fn waiting_on_user(
    _: &Run, facts: &IterationFacts, _: &Streaks, _: &mut Vec<String>,
) -> Option<Outcome> {
    let questions = facts.questions.as_ref()?;
    Some(Outcome::Wait {
        questions: questions.clone(),
    })
}

fn waiting_on_children(
    _: &Run, facts: &IterationFacts, _: &Streaks, _: &mut Vec<String>,
) -> Option<Outcome> {
    (facts.wait_for_children && facts.active_children > 0 && facts.budget.is_none())
        .then_some(Outcome::WaitChildren)
}

fn out_of_budget(
    _: &Run, facts: &IterationFacts, _: &Streaks, _: &mut Vec<String>,
) -> Option<Outcome> {
    let b = facts.budget.as_ref()?;
    let kind = match b.kind {
        BudgetKind::MaxIterations => StopType::MaxIterations,
        _ => StopType::Budget,
    };
    finish(kind, b.detail.clone())
}

/// A breaker: a stop of `kind` once `count` reached `limit`.
fn breaker(count: u32, limit: u32, kind: StopType, detail: String) -> Option<Outcome> {
    if count < limit {
        return None;
    }
    finish(kind, detail)
}

fn repeated_error(
    run: &Run, facts: &IterationFacts, streaks: &Streaks, _: &mut Vec<String>,
) -> Option<Outcome> {
    let msg = facts.error.as_ref().map_or("", |e| e.message.as_str());
    let n = streaks.error;
    let detail = format!("the same error {n} iterations in a row: {msg}");
    let limit = run.thresholds.repeated_error_limit;
    breaker(n, limit, StopType::RepeatedError, detail)
}

/// Tool calls refused before they ran (a tool that does not exist, arguments its schema
/// refuses), iteration after iteration, despite the repair pass.
fn repeated_tool_failure(
    run: &Run, facts: &IterationFacts, streaks: &Streaks, _: &mut Vec<String>,
) -> Option<Outcome> {
    let f = facts.tool_failure.as_ref()?;
    let what = match f.kind {
        ToolFailureKind::UnknownTool => format!("called tool `{}`, which it cannot use", f.tool),
        ToolFailureKind::InvalidArguments => {
            format!("gave tool `{}` arguments its schema refuses", f.tool)
        }
    };
    let n = streaks.tool_failure;
    let detail = format!(
        "{n} iterations in a row {what}, and repair did not fix it: {}",
        f.message
    );
    let limit = run.thresholds.repeated_tool_failure_limit;
    breaker(n, limit, StopType::RepeatedError, detail)
}

fn repeated_actions(
    run: &Run, _: &IterationFacts, streaks: &Streaks, _: &mut Vec<String>,
) -> Option<Outcome> {
    // The previous iteration's verdict gave the hint only if it already saw a repeat.
    let hinted = if run.streaks.repeat > 0 {
        ", even after an anti-repetition hint"
    } else {
        ""
    };
    let times = streaks.repeat + 1;
    let detail =
        format!("the same action set {times} iterations in a row without progress{hinted}");
    let limit = run.thresholds.repeated_action_limit;
    breaker(streaks.repeat, limit, StopType::NoProgress, detail)
}

fn no_progress(
    run: &Run, _: &IterationFacts, streaks: &Streaks, _: &mut Vec<String>,
) -> Option<Outcome> {
    let n = streaks.no_progress;
    let detail = format!("no progress in {n} consecutive iterations");
    let limit = run.thresholds.no_progress_limit;
    breaker(n, limit, StopType::NoProgress, detail)
}

fn max_iterations(
    run: &Run, facts: &IterationFacts, _: &Streaks, _: &mut Vec<String>,
) -> Option<Outcome> {
    let limit = run.budgets.max_iterations;
    let detail = format!("reached max_iterations = {limit}");
    breaker(facts.iteration, limit, StopType::MaxIterations, detail)
}

/// Guidance for a run that goes on: repetition, idleness, the last error.
fn carry_on_hints(run: &Run, facts: &IterationFacts, streaks: &Streaks) -> Vec<String> {
    let mut hints = vec![];
    if streaks.repeat > 0 {
        hints.push(
            "ANTI-REPETITION: your last action set was identical to the one before and changed nothing. \
             You MUST replan: choose different tools, arguments or steps, or ask the user."
                .to_string(),
        );
    }
    let remaining = facts.status.as_ref().map(|s| &s.remaining_work);
    if let Some(remaining) = remaining
        && !remaining.is_empty()
        && *remaining == run.remaining_work
        && !facts.progress.made()
    {
        hints.push(
            "ANTI-REPETITION: your remaining_work is the same as the iteration before's and nothing \
             changed. Do not repeat the same action; choose a different approach or replan."
                .to_string(),
        );
    }
    if !streaks.replan.is_empty() {
        hints.push(format!(
            "REPLAN REQUIRED: the last iteration called the same tools as the one before ({}) and \
             changed nothing. This iteration must update the plan (plan_updates), and its calls \
             are refused if made again with the same arguments: choose other calls or steps, or \
             ask the user.",
            streaks.last_tools.join(", ")
        ));
    }
    if streaks.no_progress > 0 {
        hints.push(format!(
            "No progress for {} iteration(s): nothing in the workspace, plan or remaining work changed. \
             The run stops after {}.",
            streaks.no_progress, run.thresholds.no_progress_limit
        ));
    }
    if let Some(err) = &facts.error {
        hints.push(format!("The last iteration failed: {}", err.message));
    }
    if let Some(f) = &facts.tool_failure {
        hints.push(format!(
            "Your call to `{}` was refused before it ran ({} iteration(s) in a row; the run stops \
             after {}): {}. Use only the listed tools, with arguments that match their schemas.",
            f.tool, streaks.tool_failure, run.thresholds.repeated_tool_failure_limit, f.message
        ));
    }
    hints
}

// The tests live beside this file: the verdict has as many cases as rules.
#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
