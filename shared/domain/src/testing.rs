//! Fixtures for tests of pure logic.

use crate::run::*;

pub fn sample_run() -> Run {
    Run {
        id: "run-1".into(),
        user_id: "alice".into(),
        objective: "write a report".into(),
        status: RunStatus::Running,
        iteration: 0,
        model: "script:test".into(),
        budgets: Budgets::default(),
        thresholds: Thresholds::default(),
        metrics: Metrics::default(),
        plan: vec![],
        streaks: Streaks::default(),
        lease: None,
        cancel_requested: false,
        event_seq: 0,
        parent_run_id: None,
        depth: 0,
        pending_answers: vec![],
        questions: vec![],
        hints: vec![],
        remaining_work: vec![],
        last_iteration: None,
        stopping_reason: None,
        report: None,
        notified: false,
        created_at: 0,
        updated_at: 0,
        ended_at: None,
    }
}
