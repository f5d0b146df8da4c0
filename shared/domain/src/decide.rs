//! The judgment of an iteration: exit gate, budgets, breakers. Pure; tested without a store.

use serde::{Deserialize, Serialize};

use crate::planner::StatusBlock;
use crate::run::{Budgets, Metrics, PlanStep, Run, RunStatus, StopType, StoppingReason, Streaks};

/// What the iteration changed in committed state. Anything here counts as progress.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    pub docs_changed: u32,
    pub plan_advanced: bool,
    pub remaining_shrank: bool,
    pub answers_consumed: bool,
}

impl Progress {
    pub fn made(&self) -> bool {
        self.docs_changed > 0
            || self.plan_advanced
            || self.remaining_shrank
            || self.answers_consumed
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IterationError {
    pub fingerprint: String,
    pub message: String,
    /// Non-retryable (auth, quota): the run fails at once.
    pub fatal: bool,
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
    pub error: Option<IterationError>,
    pub budget: Option<BudgetExhausted>,
    pub cancel_requested: bool,
    /// Questions for the user (`needs_user_input` or the `ask_user` tool).
    pub questions: Option<Vec<String>>,
    /// Committed workspace docs including this iteration's.
    pub workspace_docs: usize,
    /// Completion-evidence items naming an existing workspace doc path.
    pub evidence_docs: usize,
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
pub fn exit_gate_failures(
    status: &StatusBlock, plan: &[PlanStep], workspace_docs: usize, evidence_docs: usize,
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
    if workspace_docs == 0 && evidence_docs == 0 {
        failed.push(
            "no committed artifact and no completion_evidence item names an existing workspace doc path"
                .to_string(),
        );
    }
    failed
}

/// A stop rule: an outcome when the rule decides the iteration, else `None`. A rule may leave
/// guidance for the next prompt in `hints` (kept when the run waits or goes on).
type Rule = fn(&Run, &IterationFacts, &Streaks, &mut Vec<String>) -> Option<Outcome>;

/// The stop rules in the order they are tried; the first that decides wins.
const RULES: [Rule; 10] = [
    canceled,
    failed,
    completed,
    waiting_on_user,
    waiting_on_children,
    out_of_budget,
    repeated_error,
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
    if facts.action_fingerprint.is_some() {
        streaks.last_action_fingerprint = facts.action_fingerprint.clone();
    }
    streaks
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
    _: &Run, facts: &IterationFacts, _: &Streaks, hints: &mut Vec<String>,
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
    let failures = exit_gate_failures(
        status,
        &facts.plan,
        facts.workspace_docs,
        facts.evidence_docs,
    );
    if failures.is_empty() {
        let detail = if status.progress_summary.trim().is_empty() {
            "objective met".to_string()
        } else {
            status.progress_summary.clone()
        };
        return finish(StopType::Completed, detail);
    }
    hints.push(format!(
        "Your completion claim was rejected because: {}. Fix these before claiming completion again.",
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

fn repeated_error(
    run: &Run, facts: &IterationFacts, streaks: &Streaks, _: &mut Vec<String>,
) -> Option<Outcome> {
    if streaks.error < run.thresholds.repeated_error_limit {
        return None;
    }
    let msg = facts
        .error
        .as_ref()
        .map(|e| e.message.as_str())
        .unwrap_or("");
    finish(
        StopType::RepeatedError,
        format!(
            "the same error {} iterations in a row: {msg}",
            streaks.error
        ),
    )
}

fn repeated_actions(
    run: &Run, _: &IterationFacts, streaks: &Streaks, _: &mut Vec<String>,
) -> Option<Outcome> {
    if streaks.repeat < run.thresholds.repeated_action_limit {
        return None;
    }
    finish(
        StopType::NoProgress,
        format!(
            "repeated the same actions {} times without progress, even after an anti-repetition hint",
            streaks.repeat + 1
        ),
    )
}

fn no_progress(
    run: &Run, _: &IterationFacts, streaks: &Streaks, _: &mut Vec<String>,
) -> Option<Outcome> {
    if streaks.no_progress < run.thresholds.no_progress_limit {
        return None;
    }
    finish(
        StopType::NoProgress,
        format!(
            "no progress in {} consecutive iterations",
            streaks.no_progress
        ),
    )
}

fn max_iterations(
    run: &Run, facts: &IterationFacts, _: &Streaks, _: &mut Vec<String>,
) -> Option<Outcome> {
    if facts.iteration < run.budgets.max_iterations {
        return None;
    }
    finish(
        StopType::MaxIterations,
        format!("reached max_iterations = {}", run.budgets.max_iterations),
    )
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
    hints
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{Budgets, Lease, Metrics, StepStatus, Thresholds};
    use crate::testing::sample_run;

    fn status(exit: bool, remaining: &[&str]) -> StatusBlock {
        StatusBlock {
            exit_signal: exit,
            needs_user_input: false,
            blocking_questions: vec![],
            progress_summary: "did things".into(),
            remaining_work: remaining.iter().map(|s| s.to_string()).collect(),
            completion_evidence: vec![],
            next_action_hint: None,
            confidence: None,
        }
    }

    fn facts(iteration: u32, st: StatusBlock) -> IterationFacts {
        IterationFacts {
            iteration,
            status: Some(st),
            action_fingerprint: Some(format!("a{iteration}")),
            workspace_docs: 1,
            progress: Progress {
                docs_changed: 1,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn a_completion_claim_with_an_artifact_and_nothing_open_completes() {
        let v = decide(&sample_run(), &facts(2, status(true, &[])));
        assert_eq!(v.outcome.status(), RunStatus::Completed);
    }

    #[test]
    fn a_completion_claim_without_evidence_keeps_the_run_going_and_says_why() {
        let mut f = facts(2, status(true, &[]));
        f.workspace_docs = 0;
        let v = decide(&sample_run(), &f);
        assert_eq!(v.outcome, Outcome::Continue);
        assert!(
            v.hints[0].contains("no committed artifact"),
            "{:?}",
            v.hints
        );
    }

    #[test]
    fn evidence_naming_an_existing_doc_satisfies_the_artifact_condition() {
        let mut f = facts(2, status(true, &[]));
        f.workspace_docs = 0;
        f.evidence_docs = 1;
        assert_eq!(
            decide(&sample_run(), &f).outcome.status(),
            RunStatus::Completed
        );
    }

    #[test]
    fn a_completion_claim_with_remaining_work_or_open_steps_continues() {
        let v = decide(&sample_run(), &facts(2, status(true, &["write summary"])));
        assert!(v.hints[0].contains("remaining_work"));

        let mut f = facts(2, status(true, &[]));
        f.plan = vec![PlanStep {
            id: "s2".into(),
            title: "t".into(),
            status: StepStatus::InProgress,
            iteration_last_touched: 1,
        }];
        let v = decide(&sample_run(), &f);
        assert_eq!(v.outcome, Outcome::Continue);
        assert!(v.hints[0].contains("s2"));
    }

    #[test]
    fn a_valid_completion_on_the_last_allowed_iteration_is_completed() {
        let run = sample_run();
        let v = decide(&run, &facts(run.budgets.max_iterations, status(true, &[])));
        assert_eq!(
            v.outcome,
            Outcome::Finish(StoppingReason::new(StopType::Completed, "did things"))
        );
    }

    #[test]
    fn a_parent_cannot_complete_while_a_child_is_active_and_sleeps_when_it_asks() {
        let run = sample_run();
        let mut f = facts(1, status(true, &[]));
        f.active_children = 2;

        let claimed = decide(&run, &f);
        f.wait_for_children = true;
        let waiting = decide(&run, &f);

        assert_eq!(claimed.outcome, Outcome::Continue);
        assert!(claimed.hints[0].contains("2 child run(s) are still active"));
        assert_eq!(waiting.outcome, Outcome::WaitChildren);
    }

    #[test]
    fn the_last_allowed_iteration_without_completion_stops_with_max_iterations() {
        let run = sample_run();
        let v = decide(
            &run,
            &facts(run.budgets.max_iterations, status(false, &["x"])),
        );
        assert!(matches!(v.outcome, Outcome::Finish(ref r) if r.kind == StopType::MaxIterations));
    }

    #[test]
    fn three_iterations_without_progress_stop_with_no_progress() {
        let mut run = sample_run();
        for i in 1..=3 {
            let mut f = facts(i, status(false, &["x"]));
            f.progress = Progress::default();
            let v = decide(&run, &f);
            run.streaks = v.streaks.clone();
            if i < 3 {
                assert_eq!(v.outcome, Outcome::Continue, "iteration {i}");
            } else {
                assert!(
                    matches!(v.outcome, Outcome::Finish(ref r) if r.kind == StopType::NoProgress)
                );
            }
        }
    }

    #[test]
    fn a_repeated_action_set_earns_a_hint_then_a_stop() {
        let mut run = sample_run();
        run.thresholds.no_progress_limit = 10;
        let mut outcomes = vec![];
        for i in 1..=3 {
            let mut f = facts(i, status(false, &["x"]));
            f.progress = Progress::default();
            f.action_fingerprint = Some("same".into());
            let v = decide(&run, &f);
            run.streaks = v.streaks.clone();
            outcomes.push(v);
        }
        assert_eq!(outcomes[0].outcome, Outcome::Continue);
        assert!(
            outcomes[1]
                .hints
                .iter()
                .any(|h| h.contains("ANTI-REPETITION"))
        );
        assert!(
            matches!(outcomes[2].outcome, Outcome::Finish(ref r) if r.kind == StopType::NoProgress)
        );
    }

    #[test]
    fn the_same_action_with_progress_is_not_repetition() {
        let mut run = sample_run();
        for i in 1..=5 {
            let mut f = facts(i, status(false, &["x"]));
            f.action_fingerprint = Some("same".into());
            let v = decide(&run, &f);
            assert_eq!(v.outcome, Outcome::Continue);
            run.streaks = v.streaks;
        }
    }

    #[test]
    fn five_iterations_with_the_same_error_stop_with_repeated_error() {
        let mut run = sample_run();
        let mut last = None;
        for i in 1..=5 {
            let f = IterationFacts {
                iteration: i,
                error: Some(IterationError {
                    fingerprint: "fp".into(),
                    message: "planner answered garbage".into(),
                    fatal: false,
                }),
                ..Default::default()
            };
            let v = decide(&run, &f);
            run.streaks = v.streaks.clone();
            last = Some(v);
        }
        let v = last.unwrap();
        assert!(
            matches!(v.outcome, Outcome::Finish(ref r) if r.kind == StopType::RepeatedError && r.detail.contains("garbage"))
        );
    }

    #[test]
    fn a_different_error_resets_the_error_streak() {
        let mut run = sample_run();
        run.streaks.error = 4;
        run.streaks.last_error_fingerprint = Some("old".into());
        let f = IterationFacts {
            iteration: 5,
            error: Some(IterationError {
                fingerprint: "new".into(),
                message: "m".into(),
                fatal: false,
            }),
            ..Default::default()
        };
        let v = decide(&run, &f);
        assert_eq!(v.streaks.error, 1);
        assert_eq!(v.outcome, Outcome::Continue);
    }

    #[test]
    fn a_fatal_error_fails_the_run_at_once() {
        let f = IterationFacts {
            iteration: 1,
            error: Some(IterationError {
                fingerprint: "auth".into(),
                message: "auth: invalid api key".into(),
                fatal: true,
            }),
            ..Default::default()
        };
        let v = decide(&sample_run(), &f);
        assert_eq!(v.outcome.status(), RunStatus::Failed);
        assert!(matches!(v.outcome, Outcome::Finish(ref r) if r.kind == StopType::Error));
    }

    #[test]
    fn needs_user_input_waits_with_the_questions() {
        let mut st = status(false, &["x"]);
        st.needs_user_input = true;
        let mut f = facts(1, st);
        f.questions = Some(vec!["Which region?".into()]);
        let v = decide(&sample_run(), &f);
        assert_eq!(
            v.outcome,
            Outcome::Wait {
                questions: vec!["Which region?".into()]
            }
        );
    }

    #[test]
    fn an_exhausted_budget_stops_with_budget_and_names_it() {
        let mut f = facts(2, status(false, &["x"]));
        f.budget = Some(BudgetExhausted {
            kind: BudgetKind::MaxTokens,
            detail: "max_tokens: used 10 of 5 tokens".into(),
        });
        let v = decide(&sample_run(), &f);
        assert!(
            matches!(v.outcome, Outcome::Finish(ref r) if r.kind == StopType::Budget && r.detail.starts_with("max_tokens"))
        );
    }

    #[test]
    fn cancel_wins_over_everything() {
        let mut f = facts(1, status(true, &[]));
        f.cancel_requested = true;
        assert_eq!(
            decide(&sample_run(), &f).outcome.status(),
            RunStatus::Canceled
        );
    }

    #[test]
    fn budgets_are_checked_in_order_with_precise_details() {
        let b = Budgets {
            max_iterations: 5,
            max_running_ms: 1000,
            max_tokens: Some(100),
            max_cost_usd: Some(0.5),
            max_tool_calls: Some(3),
        };
        let mut m = Metrics::default();
        assert_eq!(check_budgets(&b, &m, 1, 0), None);
        assert_eq!(
            check_budgets(&b, &m, 6, 0).unwrap().kind,
            BudgetKind::MaxIterations
        );
        assert_eq!(
            check_budgets(&b, &m, 1, 1000).unwrap().kind,
            BudgetKind::MaxRunningMs
        );
        m.input_tokens = 60;
        m.output_tokens = 40;
        assert_eq!(
            check_budgets(&b, &m, 1, 0).unwrap().kind,
            BudgetKind::MaxTokens
        );
        m.output_tokens = 0;
        m.cost_usd = 0.5;
        let e = check_budgets(&b, &m, 1, 0).unwrap();
        assert_eq!(e.kind, BudgetKind::MaxCostUsd);
        assert!(e.detail.contains("max_cost_usd"));
        m.cost_usd = 0.0;
        m.tool_calls = 3;
        let e = check_budgets(&b, &m, 1, 0).unwrap();
        assert_eq!(e.kind, BudgetKind::MaxToolCalls);
        assert!(e.detail.contains("made 3 of 3"), "{}", e.detail);
    }

    #[test]
    fn thresholds_are_per_run() {
        let mut run = sample_run();
        run.thresholds = Thresholds {
            no_progress_limit: 1,
            ..Default::default()
        };
        run.lease = Some(Lease {
            owner: "w".into(),
            iteration: 1,
            expires_at: 0,
        });
        let mut f = facts(1, status(false, &["x"]));
        f.progress = Progress::default();
        assert!(
            matches!(decide(&run, &f).outcome, Outcome::Finish(ref r) if r.kind == StopType::NoProgress)
        );
    }
}
