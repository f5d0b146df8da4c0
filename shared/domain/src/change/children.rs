//! Child runs: started once their parent's commit listed them, and their end reported back.

use super::{Rejection, RunChange, create, stop_out_of_budget};
use crate::decide::check_budgets;
use crate::events::RunEvent;
use crate::record::DocMeta;
use crate::run::{ChildRun, Run, RunStatus};

/// The id of the `k`th child (from 1) spawned by `parent_id`'s iteration `iteration`: stable
/// across a redelivered iteration, so a child is created once.
pub fn child_id(parent_id: &str, iteration: u32, k: usize) -> String {
    format!("{}{k}", spawned_prefix(parent_id, iteration))
}

fn spawned_prefix(parent_id: &str, iteration: u32) -> String {
    format!("{parent_id}-c{iteration}-")
}

/// The children `parent`'s iteration `n` spawned that may not exist yet: after its commit
/// (or a redelivery that finds it committed), each is created and started, once.
pub fn children_to_start(parent: &Run, n: u32) -> Vec<ChildRun> {
    let prefix = spawned_prefix(&parent.id, n);
    parent
        .children
        .iter()
        // An ended child has existed: it reported its end.
        .filter(|c| c.id.starts_with(&prefix) && !c.status.is_ended())
        .cloned()
        .collect()
}

/// Creates the child run `spawned` as its parent listed it: the parent's owner, model(s),
/// thresholds, permission mode and tools, one level deeper.
pub fn spawn_child(parent: &Run, spawned: &ChildRun, now: i64) -> RunChange {
    let mut child = Run::new(
        &spawned.id,
        &parent.user_id,
        &spawned.objective,
        &parent.model,
        spawned.budgets.clone(),
        parent.thresholds.clone(),
        now,
    );
    child.parent_run_id = Some(parent.id.clone());
    child.depth = parent.depth + 1;
    child.permission_mode = parent.permission_mode;
    child.models = parent.models.clone();
    child.allowed_tools = parent.allowed_tools.clone();
    // Children are part of their parent's run, not new runs of the user's: no slot limit.
    create(child, u32::MAX)
}

/// A child ended: the parent records its outcome and spend, tells its planner, and wakes when
/// it was waiting and no child is left active. Repeating it changes nothing.
pub fn child_finished(
    parent: &Run, child: &Run, workspace: &[DocMeta], now: i64,
) -> Result<RunChange, Rejection> {
    let Some(pos) = parent.children.iter().position(|c| c.id == child.id) else {
        return Err(Rejection::Conflict(format!(
            "{} is not a child of {}",
            child.id, parent.id
        )));
    };
    if parent.children[pos].status.is_ended() || !child.status.is_ended() {
        return Err(Rejection::Conflict("nothing new to record".into()));
    }
    let summary = child
        .report
        .as_ref()
        .map(|r| r.headline.clone())
        .unwrap_or_default();
    let mut next = parent.clone();
    let entry = &mut next.children[pos];
    entry.status = *child.status;
    entry.summary = Some(summary.clone());
    entry.tokens = child.metrics.tokens() + child.metrics.children_tokens;
    entry.cost_usd = child.metrics.cost_usd + child.metrics.children_cost_usd;
    next.metrics.children_tokens += entry.tokens;
    next.metrics.children_cost_usd += entry.cost_usd;
    // Spend is now known: the reservation becomes the real figure.
    entry.budgets.max_tokens = entry.budgets.max_tokens.map(|_| entry.tokens);
    entry.budgets.max_cost_usd = entry.budgets.max_cost_usd.map(|_| entry.cost_usd);
    next.hints.push(format!(
        "Child run {} ({}) ended {}: {}",
        child.id,
        child.objective.chars().take(120).collect::<String>(),
        child.status,
        summary.chars().take(1_000).collect::<String>()
    ));
    let finished = RunEvent::ChildFinished {
        child_run_id: child.id.clone(),
        status: *child.status,
        summary,
        tokens: next.children[pos].tokens,
        cost_usd: next.children[pos].cost_usd,
    };
    let mut events = vec![finished.into()];
    next.updated_at = now;
    if next.status == RunStatus::WaitingOnChildren && next.active_children() == 0 {
        let running = next.metrics.running_ms;
        let next_n = next.iteration + 1;
        if let Some(spent) = check_budgets(&next.budgets, &next.budget_metrics(), next_n, running) {
            // No iteration left to use what the children found: the parent ends with it.
            return stop_out_of_budget(next, events, spent, workspace, now);
        }
        next.transition_to(RunStatus::Queued, now)?;
        let resumed = RunEvent::RunResumed {
            from_iteration: next.iteration,
            reason: Some("children finished".into()),
        };
        events.push(resumed.into());
    }
    Ok(RunChange::of(next, events))
}

/// The wait for children timed out (`children_wait_until` passed): the run goes on without
/// the children still running, which are left running on their own (detached: no longer
/// waited for, nor ended with it); the event and the next prompt name them. With no iteration
/// left, the run ends as out of budget instead.
pub fn child_wait_timed_out(
    run: &Run, workspace: &[DocMeta], now: i64,
) -> Result<RunChange, Rejection> {
    let due = run.children_wait_until.filter(|at| *at <= now);
    let (RunStatus::WaitingOnChildren, Some(deadline)) = (*run.status, due) else {
        return Err(Rejection::Conflict("no wait for children is due".into()));
    };
    let waited_ms = (run.thresholds.child_wait_timeout_s * 1_000) as i64;
    let mut next = run.clone();
    let mut still_running = vec![];
    let mut named = vec![];
    for c in next
        .children
        .iter_mut()
        .filter(|c| c.is_attached_and_active())
    {
        c.detached = true;
        still_running.push(c.id.clone());
        named.push(format!(
            "{} ({})",
            c.id,
            c.objective.chars().take(120).collect::<String>()
        ));
    }
    next.hints.push(format!(
        "You waited {} s for your child runs and the wait timed out (child_wait_timeout_s); \
         still running: {}. Go on without them: they run on their own, and their reports reach \
         you here if they end while this run is active.",
        waited_ms / 1_000,
        named.join(", ")
    ));
    next.updated_at = now;
    let timed_out = RunEvent::ChildWaitTimedOut {
        waited_ms: now - deadline + waited_ms,
        still_running,
    };
    let events = vec![timed_out.into()];
    let next_n = next.iteration + 1;
    let running = next.metrics.running_ms;
    if let Some(spent) = check_budgets(&next.budgets, &next.budget_metrics(), next_n, running) {
        return stop_out_of_budget(next, events, spent, workspace, now);
    }
    next.transition_to(RunStatus::Queued, now)?;
    Ok(RunChange::of(next, events))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::change::ActiveDelta;
    use crate::testing::sample_run;

    fn listed(id: &str, status: RunStatus) -> ChildRun {
        ChildRun {
            id: id.into(),
            objective: "part".into(),
            status,
            budgets: crate::run::Budgets::default(),
            summary: None,
            tokens: 0,
            cost_usd: 0.0,
            detached: false,
        }
    }

    #[test]
    fn the_children_to_start_are_those_the_iteration_spawned_and_not_yet_ended() {
        // Arrange
        let mut parent = sample_run();
        parent.children = vec![
            listed("run-1-c1-1", RunStatus::Queued),
            listed("run-1-c2-1", RunStatus::Queued),
            listed("run-1-c2-2", RunStatus::Completed),
            listed("run-1-c20-1", RunStatus::Queued),
        ];

        // Act
        let ids: Vec<_> = children_to_start(&parent, 2)
            .into_iter()
            .map(|c| c.id)
            .collect();

        // Assert
        assert_eq!(ids, vec!["run-1-c2-1"]);
    }

    #[test]
    fn a_spawned_child_inherits_its_parent_and_takes_no_slot() {
        // Arrange
        let mut parent = sample_run();
        parent.depth = 1;
        parent.allowed_tools = Some(vec!["write_doc".into()]);

        // Act
        let change = spawn_child(&parent, &listed("run-1-c1-1", RunStatus::Queued), 9);

        // Assert
        let child = &change.run;
        assert_eq!(child.parent_run_id.as_deref(), Some("run-1"));
        assert_eq!((child.depth, child.user_id.as_str()), (2, "alice"));
        assert_eq!(child.allowed_tools, parent.allowed_tools);
        assert_eq!(child.status, RunStatus::Queued);
        assert_eq!(change.active, ActiveDelta::Acquire { limit: u32::MAX });
    }

    #[test]
    fn children_ending_for_a_parent_with_no_iteration_left_end_the_parent() {
        let mut parent = crate::testing::out_of_iterations(RunStatus::WaitingOnChildren, 3);
        let mut child = sample_run();
        child.id = "run-1-c3-1".into();
        child = child.with_status_for_tests(RunStatus::Completed);
        parent.children.push(ChildRun {
            id: child.id.clone(),
            objective: "part".into(),
            status: RunStatus::Running,
            budgets: crate::run::Budgets::default(),
            summary: None,
            tokens: 0,
            cost_usd: 0.0,
            detached: false,
        });

        let change = child_finished(&parent, &child, &[], 9).unwrap();

        assert_eq!(change.run.status, RunStatus::Stopped);
        assert_eq!(change.run.iteration, 3);
        assert_eq!(change.active, ActiveDelta::Release);
    }

    fn waiting_parent(timeout_s: u64) -> Run {
        let mut parent = sample_run();
        parent.thresholds.child_wait_timeout_s = timeout_s;
        parent.children = vec![
            listed("run-1-c1-1", RunStatus::Running),
            listed("run-1-c1-2", RunStatus::Completed),
        ];
        parent
            .transition_to(RunStatus::WaitingOnChildren, 1_000)
            .unwrap();
        parent
    }

    #[test]
    fn a_detached_child_is_neither_waited_for_nor_counted_as_active() {
        // Arrange
        let mut parent = sample_run();
        parent.children = vec![listed("run-1-c1-1", RunStatus::Running)];
        parent.children[0].detached = true;

        // Act
        let active = parent.active_children();

        // Assert
        assert_eq!(active, 0);
        assert_eq!(
            parent.children.len(),
            1,
            "still listed in the parent's lineage"
        );
    }

    #[test]
    fn a_wait_for_children_gets_its_deadline_from_the_runs_timeout_and_loses_it_on_leaving() {
        // Arrange
        let mut parent = waiting_parent(60);
        let deadline = parent.children_wait_until;

        // Act
        parent.transition_to(RunStatus::Queued, 2_000).unwrap();

        // Assert
        assert_eq!(deadline, Some(61_000));
        assert_eq!(parent.children_wait_until, None);
    }

    #[test]
    fn a_timed_out_wait_queues_the_parent_and_leaves_its_running_children_on_their_own() {
        // Arrange
        let parent = waiting_parent(60);

        // Act
        let early = child_wait_timed_out(&parent, &[], 60_999);
        let change = child_wait_timed_out(&parent, &[], 61_500).unwrap();

        // Assert
        assert!(
            matches!(early, Err(Rejection::Conflict(_))),
            "not before its deadline"
        );
        let next = &change.run;
        assert_eq!(next.status, RunStatus::Queued);
        assert_eq!(next.active_children(), 0);
        assert!(next.children[0].detached && !next.children[1].detached);
        assert_eq!(
            change.events[0].kind,
            crate::record::EventKind::ChildWaitTimedOut
        );
        assert_eq!(
            change.events[0].payload["still_running"],
            serde_json::json!(["run-1-c1-1"])
        );
        assert_eq!(change.events[0].payload["waited_ms"], 60_500);
        let hint = next.hints.last().unwrap();
        assert!(
            hint.contains("run-1-c1-1 (part)") && hint.contains("timed out"),
            "{hint}"
        );
    }

    #[test]
    fn a_timed_out_wait_with_no_iteration_left_ends_the_parent() {
        // Arrange
        let mut parent = crate::testing::out_of_iterations(RunStatus::WaitingOnChildren, 3);
        parent.children_wait_until = Some(10);

        // Act
        let change = child_wait_timed_out(&parent, &[], 10).unwrap();

        // Assert
        assert_eq!(change.run.status, RunStatus::Stopped);
        assert_eq!(change.active, ActiveDelta::Release);
    }
}
