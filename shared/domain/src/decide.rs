//! The judgment of an iteration: exit gate, budgets, breakers. Pure; tested without a store.

use serde::{Deserialize, Serialize};

use crate::evidence::{ClaimEvidence, EvidenceProblem, judge_evidence};
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
    let evidence = judge_evidence(
        &run.completion_criteria,
        &facts.claim,
        &facts.plan,
        facts.iteration,
    );
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

/// Tool calls refused before they ran (a tool that does not exist, arguments its schema
/// refuses), iteration after iteration, despite the repair pass.
fn repeated_tool_failure(
    run: &Run, facts: &IterationFacts, streaks: &Streaks, _: &mut Vec<String>,
) -> Option<Outcome> {
    let f = facts.tool_failure.as_ref()?;
    if streaks.tool_failure < run.thresholds.repeated_tool_failure_limit {
        return None;
    }
    let what = match f.kind {
        ToolFailureKind::UnknownTool => format!("called tool `{}`, which it cannot use", f.tool),
        ToolFailureKind::InvalidArguments => {
            format!("gave tool `{}` arguments its schema refuses", f.tool)
        }
    };
    finish(
        StopType::RepeatedError,
        format!(
            "{} iterations in a row {what}, and repair did not fix it: {}",
            streaks.tool_failure, f.message
        ),
    )
}

fn repeated_actions(
    run: &Run, _: &IterationFacts, streaks: &Streaks, _: &mut Vec<String>,
) -> Option<Outcome> {
    if streaks.repeat < run.thresholds.repeated_action_limit {
        return None;
    }
    // The previous iteration's verdict gave the hint only if it already saw a repeat.
    let hinted = if run.streaks.repeat > 0 {
        ", even after an anti-repetition hint"
    } else {
        ""
    };
    finish(
        StopType::NoProgress,
        format!(
            "the same action set {} iterations in a row without progress{hinted}",
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
    if let Some(f) = &facts.tool_failure {
        hints.push(format!(
            "Your call to `{}` was refused before it ran ({} iteration(s) in a row; the run stops \
             after {}): {}. Use only the listed tools, with arguments that match their schemas.",
            f.tool, streaks.tool_failure, run.thresholds.repeated_tool_failure_limit, f.message
        ));
    }
    hints
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::{CriterionEvidence, DocFound};
    use crate::run::{Budgets, Metrics, StepStatus, Thresholds};
    use crate::testing::sample_run;

    fn status(exit: bool, remaining: &[&str]) -> StatusBlock {
        StatusBlock {
            exit_signal: exit,
            needs_user_input: false,
            blocking_questions: vec![],
            progress_summary: "did things".into(),
            remaining_work: remaining.iter().map(|s| s.to_string()).collect(),
            completion_evidence: vec!["report.md".into()],
            criteria_evidence: vec![],
            next_action_hint: None,
            confidence: None,
        }
    }

    /// The claim's evidence with every document it names written by iteration 1.
    fn claim_of(st: &StatusBlock) -> ClaimEvidence {
        let mut claim = ClaimEvidence::of(&st.completion_evidence, &st.criteria_evidence);
        claim.docs = claim
            .doc_paths()
            .into_iter()
            .map(|p| {
                let found = DocFound::Present {
                    blank: false,
                    updated_iteration: 1,
                };
                (p, found)
            })
            .collect();
        claim
    }

    fn facts(iteration: u32, st: StatusBlock) -> IterationFacts {
        IterationFacts {
            iteration,
            claim: claim_of(&st),
            status: Some(st),
            action_fingerprint: Some(format!("a{iteration}")),
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
    fn a_completion_claim_with_empty_evidence_keeps_the_run_going_and_says_why() {
        let mut st = status(true, &[]);
        st.completion_evidence = vec![];
        let f = facts(2, st);

        let v = decide(&sample_run(), &f);

        assert_eq!(v.outcome, Outcome::Continue);
        assert!(
            v.hints[0].contains("completion_evidence names no workspace document"),
            "{:?}",
            v.hints
        );
    }

    #[test]
    fn a_claim_citing_a_missing_doc_is_rejected_with_its_path() {
        let mut f = facts(2, status(true, &[]));
        f.claim.docs.clear();

        let v = decide(&sample_run(), &f);

        assert_eq!(v.outcome, Outcome::Continue);
        assert!(
            v.hints[0].contains("`report.md` does not exist"),
            "{:?}",
            v.hints
        );
    }

    #[test]
    fn a_claim_citing_an_empty_or_stale_doc_is_rejected() {
        for (blank, updated_iteration, reason) in [
            (true, 1, "is empty"),
            (false, 0, "not written or updated by this run"),
        ] {
            let mut f = facts(2, status(true, &[]));
            f.claim.docs[0].1 = DocFound::Present {
                blank,
                updated_iteration,
            };

            let v = decide(&sample_run(), &f);

            assert_eq!(v.outcome, Outcome::Continue);
            assert!(v.hints[0].contains(reason), "{:?}", v.hints);
        }
    }

    #[test]
    fn a_run_with_criteria_completes_only_when_each_is_mapped_to_evidence() {
        let mut run = sample_run();
        run.completion_criteria = vec!["covers three teas".into(), "cites sources".into()];
        let mut st = status(true, &[]);
        st.criteria_evidence = vec![CriterionEvidence {
            criterion: "c1".into(),
            evidence: vec!["report.md".into()],
        }];

        let partial = decide(&run, &facts(2, st.clone()));
        st.criteria_evidence.push(CriterionEvidence {
            criterion: "c2".into(),
            evidence: vec!["sources.md lists them".into()],
        });
        let full = decide(&run, &facts(2, st));

        assert_eq!(partial.outcome, Outcome::Continue);
        assert!(
            partial.hints[0].contains("criterion c2 (\"cites sources\")"),
            "{:?}",
            partial.hints
        );
        assert_eq!(full.outcome.status(), RunStatus::Completed);
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

    /// Decides `n` iterations with the same action set and no progress.
    fn repeat_actions(mut run: Run, n: u32) -> Vec<Verdict> {
        run.thresholds.no_progress_limit = 10;
        let mut verdicts = vec![];
        for i in 1..=n {
            let mut f = facts(i, status(false, &["x"]));
            f.progress = Progress::default();
            f.action_fingerprint = Some("same".into());
            let v = decide(&run, &f);
            run.streaks = v.streaks.clone();
            verdicts.push(v);
        }
        verdicts
    }

    #[test]
    fn the_second_identical_action_set_in_a_row_stops_without_claiming_a_hint() {
        let v = repeat_actions(sample_run(), 2);

        assert_eq!(v[0].outcome, Outcome::Continue);
        let Outcome::Finish(r) = &v[1].outcome else {
            panic!("{:?}", v[1].outcome)
        };
        assert_eq!(r.kind, StopType::NoProgress);
        assert_eq!(
            r.detail,
            "the same action set 2 iterations in a row without progress"
        );
    }

    #[test]
    fn a_higher_repeat_limit_earns_a_hint_first_and_the_stop_says_so() {
        let mut run = sample_run();
        run.thresholds.repeated_action_limit = 2;

        let v = repeat_actions(run, 3);

        assert_eq!(v[1].outcome, Outcome::Continue);
        assert!(v[1].hints.iter().any(|h| h.contains("ANTI-REPETITION")));
        let Outcome::Finish(r) = &v[2].outcome else {
            panic!("{:?}", v[2].outcome)
        };
        assert!(
            r.detail.ends_with("even after an anti-repetition hint"),
            "{}",
            r.detail
        );
    }

    fn unknown_tool(i: u32) -> IterationFacts {
        let mut f = facts(i, status(false, &["x"]));
        f.tool_failure = Some(ToolFailure {
            tool: "rm_rf".into(),
            kind: ToolFailureKind::UnknownTool,
            message: "unknown tool `rm_rf`; available: doc_write".into(),
        });
        f
    }

    #[test]
    fn three_iterations_calling_a_missing_tool_stop_as_repeated_error_naming_it() {
        let mut run = sample_run();
        let mut verdicts = vec![];
        for i in 1..=3 {
            let v = decide(&run, &unknown_tool(i));
            run.streaks = v.streaks.clone();
            verdicts.push(v);
        }

        assert_eq!(verdicts[1].outcome, Outcome::Continue);
        assert!(
            verdicts[1]
                .hints
                .iter()
                .any(|h| h.contains("`rm_rf` was refused"))
        );
        let Outcome::Finish(r) = &verdicts[2].outcome else {
            panic!("{:?}", verdicts[2].outcome)
        };
        assert_eq!(r.kind, StopType::RepeatedError);
        assert!(
            r.detail
                .starts_with("3 iterations in a row called tool `rm_rf`"),
            "{}",
            r.detail
        );
        assert!(r.detail.contains("unknown tool `rm_rf`"), "{}", r.detail);
    }

    #[test]
    fn the_tool_failure_limit_is_per_run_and_a_clean_iteration_resets_it() {
        let mut run = sample_run();
        run.thresholds.repeated_tool_failure_limit = 2;
        let first = decide(&run, &unknown_tool(1));
        run.streaks = first.streaks.clone();
        let clean = decide(&run, &facts(2, status(false, &["x"])));
        run.streaks = clean.streaks.clone();
        let again = decide(&run, &unknown_tool(3));
        run.streaks = again.streaks.clone();
        let mut bad_args = unknown_tool(4);
        if let Some(f) = bad_args.tool_failure.as_mut() {
            f.kind = ToolFailureKind::InvalidArguments;
        }

        let stop = decide(&run, &bad_args);

        assert_eq!(clean.streaks.tool_failure, 0);
        assert_eq!(again.outcome, Outcome::Continue);
        assert!(
            matches!(stop.outcome, Outcome::Finish(ref r) if r.kind == StopType::RepeatedError
                && r.detail.contains("arguments its schema refuses")),
            "{:?}",
            stop.outcome
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
        run.lease = crate::testing::lease("w", 1, 0);
        let mut f = facts(1, status(false, &["x"]));
        f.progress = Progress::default();
        assert!(
            matches!(decide(&run, &f).outcome, Outcome::Finish(ref r) if r.kind == StopType::NoProgress)
        );
    }
}
