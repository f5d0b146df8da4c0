//! Fixtures for tests of pure logic.

use crate::run::*;

/// A run that is already running, as the engine sees it mid-iteration.
pub fn sample_run() -> Run {
    let mut run = Run::new(
        "run-1",
        "alice",
        "write a report",
        "script:test",
        Budgets::default(),
        Thresholds::default(),
        0,
    );
    run.transition_to(RunStatus::Running, 0)
        .expect("a queued run may start");
    run
}

/// A lease on iteration `iteration` held by `owner` until `expires_at`.
pub fn lease(owner: &str, iteration: u32, expires_at: i64) -> Option<Lease> {
    Some(Lease {
        owner: owner.into(),
        iteration,
        expires_at,
    })
}

/// A run in `status` that has used all `n` iterations its budget allows.
pub fn out_of_iterations(status: RunStatus, n: u32) -> Run {
    let mut run = sample_run().with_status_for_tests(status);
    run.iteration = n;
    run.budgets.max_iterations = n;
    run
}

/// Iteration `n`'s scratchpad entry, empty but for its number.
pub fn sample_pad(n: u32) -> crate::PadEntry {
    crate::PadEntry {
        n,
        at: 0,
        summary: String::new(),
        actions: vec![],
        results: vec![],
        artifacts: vec![],
        plan_changes: vec![],
        remaining_work: vec![],
        sources: vec![],
    }
}

/// Iteration `n`'s record, empty but for its number.
pub fn sample_record(n: u32) -> crate::IterationRecord {
    crate::IterationRecord {
        run_id: String::new(),
        n,
        outcome: RunStatus::Running,
        summary: String::new(),
        status_block: None,
        tool_results: vec![],
        executor_results: vec![],
        created_docs: vec![],
        updated_docs: vec![],
        metrics: Default::default(),
        error: None,
        progress: true,
        hints: vec![],
        criteria: vec![],
        stopping_reason: None,
        started_at: 0,
        committed_at: 0,
    }
}

/// A document's entry in a run's index, written in iteration 1.
pub fn sample_doc_meta(path: &str) -> crate::DocMeta {
    crate::DocMeta {
        path: path.into(),
        title: format!("about {path}"),
        bytes: 10,
        created_iteration: 1,
        updated_iteration: 1,
        version: 1,
        sources: vec![],
        tags: vec![],
        updated_at: 5,
    }
}
