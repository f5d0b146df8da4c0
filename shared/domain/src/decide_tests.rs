//! Tests of the verdict (`decide`): stop rules, their precedence, hints.

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
    run.grading.text = false;
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
fn a_graded_criterion_completes_only_on_a_passing_grade_and_the_grader_is_asked_only_then() {
    let mut run = sample_run();
    run.completion_criteria = vec!["covers three teas".into()];
    let mut st = status(true, &[]);
    st.criteria_evidence = vec![CriterionEvidence {
        criterion: "c1".into(),
        evidence: vec!["report.md".into()],
    }];
    let grade = |passed: bool| crate::criteria::CriterionVerdict {
        id: "c1".into(),
        kind: crate::criteria::CheckKind::Grader,
        criterion: "covers three teas".into(),
        passed,
        reason: "only two teas".into(),
        looked_at: vec!["report.md".into()],
    };
    let ungraded = facts(2, st.clone());
    let mut failed = facts(2, st.clone());
    failed.claim.verdicts = vec![grade(false)];
    let mut passed = facts(2, st.clone());
    passed.claim.verdicts = vec![grade(true)];
    let mut open = st.clone();
    open.remaining_work = vec!["one more tea".into()];

    assert!(grading_decides(&run, &st, &[], &ungraded.claim, 2));
    assert!(!grading_decides(&run, &open, &[], &ungraded.claim, 2));
    assert_eq!(decide(&run, &ungraded).outcome, Outcome::Continue);
    let rejected = decide(&run, &failed);
    assert_eq!(rejected.outcome, Outcome::Continue);
    assert!(
        rejected.hints[0].contains("only two teas"),
        "{:?}",
        rejected.hints
    );
    assert_eq!(decide(&run, &passed).outcome.status(), RunStatus::Completed);
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
        notes: None,
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
            assert!(matches!(v.outcome, Outcome::Finish(ref r) if r.kind == StopType::NoProgress));
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

/// Decides iterations that each write `notes/a.md` with the given contents, nothing else
/// changing; returns the verdicts.
fn write_versions(mut run: Run, contents: &[&str]) -> Vec<Verdict> {
    let mut committed: Option<&str> = None;
    let mut verdicts = vec![];
    for (i, content) in contents.iter().enumerate() {
        let part = |c: &str| crate::progress::doc_part("notes/a.md", "A", c);
        let delta = part(content) ^ committed.map_or(0, part);
        let mut f = facts(i as u32 + 1, status(false, &["x"]));
        f.workspace = Some(WorkspaceAfter::of(&run, delta, &f.plan));
        f.progress.revisited = f.workspace.as_ref().is_some_and(|w| w.seen_before(&run));
        let v = decide(&run, &f);
        run.streaks = v.streaks.clone();
        run.remaining_work = vec!["x".into()];
        committed = Some(content);
        verdicts.push(v);
    }
    verdicts
}

#[test]
fn a_flipping_document_stops_with_no_progress() {
    // Arrange
    let run = sample_run();

    // Act: v1, v2, then back and forth between them.
    let v = write_versions(run, &["v1", "v2", "v1", "v2", "v1"]);

    // Assert: the first two versions are progress, every return to one of them is not.
    let streaks: Vec<u32> = v.iter().map(|v| v.streaks.no_progress).collect();
    assert_eq!(streaks, [0, 0, 1, 2, 3]);
    let Outcome::Finish(r) = &v[4].outcome else {
        panic!("{:?}", v[4].outcome)
    };
    assert_eq!(r.kind, StopType::NoProgress);
    assert!(
        v[2].streaks.history[2].contains("back to an earlier state"),
        "{:?}",
        v[2].streaks.history
    );
}

#[test]
fn a_document_rewritten_with_new_content_each_time_is_progress() {
    let v = write_versions(sample_run(), &["v1", "v2", "v3", "v4", "v5"]);

    assert!(v.iter().all(|v| v.outcome == Outcome::Continue));
    assert_eq!(v[4].streaks.no_progress, 0);
}

#[test]
fn a_plan_step_toggled_back_to_done_is_no_progress() {
    // Arrange: s1 done, then pending, then done again.
    let mut run = sample_run();
    run.remaining_work = vec!["x".into()];
    let step = |status| PlanStep {
        id: "s1".into(),
        title: "step".into(),
        status,
        iteration_last_touched: 1,
        notes: None,
    };
    let mut verdicts = vec![];

    // Act
    for (i, st) in [StepStatus::Done, StepStatus::Pending, StepStatus::Done]
        .into_iter()
        .enumerate()
    {
        let mut f = facts(i as u32 + 1, status(false, &["x"]));
        f.plan = vec![step(st)];
        f.progress = Progress {
            plan_advanced: st == StepStatus::Done,
            ..Default::default()
        };
        let w = WorkspaceAfter::of(&run, 0, &f.plan);
        f.progress.revisited = w.seen_before(&run);
        f.workspace = Some(w);
        let v = decide(&run, &f);
        run.streaks = v.streaks.clone();
        verdicts.push(v);
    }

    // Assert: the second "done" advanced the step only to where it had been.
    assert_eq!(verdicts[0].streaks.no_progress, 0);
    assert_eq!(verdicts[2].streaks.no_progress, 2);
}

#[test]
fn a_repeated_remaining_work_fires_the_anti_repetition_hint() {
    // Arrange: new calls every time, but the same remaining work and nothing changed.
    let mut run = sample_run();
    run.remaining_work = vec!["find the second source".into()];
    let mut f = facts(2, status(false, &["find the second source"]));
    f.progress = Progress::default();
    let mut moved = f.clone();
    moved.status = Some(status(false, &["write the summary"]));

    // Act
    let same = decide(&run, &f);
    let other = decide(&run, &moved);

    // Assert
    let hint = "remaining_work is the same as the iteration before's";
    assert!(
        same.hints.iter().any(|h| h.contains(hint)),
        "{:?}",
        same.hints
    );
    assert!(
        !other.hints.iter().any(|h| h.contains(hint)),
        "{:?}",
        other.hints
    );
}

fn call(tool: &str, fingerprint: &str) -> CallSeen {
    CallSeen {
        tool: tool.into(),
        fingerprint: fingerprint.into(),
    }
}

#[test]
fn no_progress_with_the_same_tools_again_forces_a_replan_refusing_those_calls() {
    // Arrange: iteration 1 fetched one page; iteration 2 fetches another, and nothing changes.
    let mut run = sample_run();
    run.thresholds.no_progress_limit = 10;
    let mut first = facts(1, status(false, &["x"]));
    first.calls = vec![call("http_fetch", "page-a")];
    run.streaks = decide(&run, &first).streaks;
    let mut second = facts(2, status(false, &["y"]));
    second.progress = Progress::default();
    second.calls = vec![call("http_fetch", "page-b")];
    let mut progressed = second.clone();
    progressed.progress.docs_changed = 1;

    // Act
    let stuck = decide(&run, &second);
    let moving = decide(&run, &progressed);

    // Assert
    assert_eq!(stuck.outcome, Outcome::Continue);
    assert_eq!(stuck.streaks.replan, ["page-b"]);
    assert!(
        stuck
            .hints
            .iter()
            .any(|h| h.starts_with("REPLAN REQUIRED") && h.contains("http_fetch")),
        "{:?}",
        stuck.hints
    );
    assert!(moving.streaks.replan.is_empty());
    assert!(!moving.hints.iter().any(|h| h.starts_with("REPLAN")));
}

#[test]
fn the_recent_history_keeps_the_last_six_iterations_in_a_line_each() {
    let mut run = sample_run();
    run.thresholds.no_progress_limit = 100;
    for i in 1..=9 {
        let mut f = facts(i, status(false, &["x", "y"]));
        f.calls = vec![call("doc_write", &format!("w{i}"))];
        run.streaks = decide(&run, &f).streaks;
    }

    let h = &run.streaks.history;
    assert_eq!(h.len(), 6);
    assert!(h[0].starts_with("4: progress (doc_write)"), "{h:?}");
    assert!(h[5].starts_with("9: "), "{h:?}");
    assert!(h[5].ends_with("2 item(s) of remaining work"), "{h:?}");
}
