//! The cycle's pure decisions: the merge queue's order, whether the cycle made progress, and
//! the stop rule that says what follows its update phase. The engine gathers the facts (from
//! the run and from git) and carries out the verdict.

use super::task::{CheckResult, RepoTask, RepoTaskStatus, all_passed};

/// The tasks the merge queue takes, in order: finished (`done`) with commits to merge, most
/// urgent first, then oldest. A merge conflict or red checks on one never holds up the next.
pub fn merge_order(tasks: &[RepoTask]) -> Vec<&RepoTask> {
    let mut queue: Vec<&RepoTask> = tasks
        .iter()
        .filter(|t| t.status == RepoTaskStatus::Done && !t.commits.is_empty())
        .collect();
    queue.sort_by_key(|t| (t.priority, t.cycle, t.n));
    queue
}

/// What the update phase knows when it applies the stop rule.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CycleFacts<'a> {
    /// The cycle just ended, from 1.
    pub cycle: u32,
    pub max_cycles: Option<u32>,
    /// This cycle's discovery found no task left (and none was carried over).
    pub discovered_nothing: bool,
    /// Every task of the run as the cycle began (before its discovery) and as it ends.
    pub before: &'a [RepoTask],
    pub after: &'a [RepoTask],
    /// Tasks merged onto the working branch in this cycle.
    pub merged: usize,
    /// The checks on the working branch's head after the merge queue.
    pub head_checks: &'a [CheckResult],
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CycleVerdict {
    /// The repository certifies the goal: nothing left, every task finished, checks green.
    /// The run's own completion criteria (the exit gate) still have their say.
    Complete,
    /// Another cycle.
    Next,
    Stop(CycleStop),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CycleStop {
    MaxCycles,
    /// A cycle that merged nothing and changed no task's status: the next would do the same.
    NoProgress,
}

/// Whether the cycle moved anything: a merge, a new task, or a task whose status differs from
/// what it was when the cycle began.
pub fn made_progress(facts: &CycleFacts<'_>) -> bool {
    if facts.merged > 0 {
        return true;
    }
    facts.after.iter().any(|t| {
        facts
            .before
            .iter()
            .find(|b| b.id == t.id)
            .is_none_or(|b| b.status != t.status)
    })
}

/// The stop rule. Complete only when discovery found nothing, every task finished well
/// (merged, or done with nothing to merge) and the checks pass on the working head; otherwise
/// the cycle limit, then no progress, stop the run; else the next cycle. Time, budgets and
/// cancel are the run's own stops, decided as for every run.
pub fn cycle_verdict(facts: &CycleFacts<'_>) -> CycleVerdict {
    let every_task_finished = facts.after.iter().all(RepoTask::is_finished_well);
    if facts.discovered_nothing && every_task_finished && all_passed(facts.head_checks) {
        return CycleVerdict::Complete;
    }
    if facts.max_cycles.is_some_and(|max| facts.cycle >= max) {
        return CycleVerdict::Stop(CycleStop::MaxCycles);
    }
    if !made_progress(facts) {
        return CycleVerdict::Stop(CycleStop::NoProgress);
    }
    CycleVerdict::Next
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repo::task::Priority;

    fn task(n: u32, status: RepoTaskStatus) -> RepoTask {
        let mut t = RepoTask::new("w", 1, n, format!("t{n}"));
        t.status = status;
        t
    }

    fn green() -> Vec<CheckResult> {
        vec![CheckResult {
            command: "make test".into(),
            exit_code: Some(0),
            ..Default::default()
        }]
    }

    #[test]
    fn the_merge_queue_takes_done_tasks_with_commits_most_urgent_first() {
        let mut low = task(1, RepoTaskStatus::Done);
        low.priority = Priority::P2;
        low.commits = vec!["a".into()];
        let mut high = task(2, RepoTaskStatus::Done);
        high.priority = Priority::P0;
        high.commits = vec!["b".into()];
        let empty = task(3, RepoTaskStatus::Done);
        let mut failed = task(4, RepoTaskStatus::Failed);
        failed.commits = vec!["c".into()];
        let tasks = [low, high, empty, failed];

        let order: Vec<_> = merge_order(&tasks).iter().map(|t| t.id.as_str()).collect();

        assert_eq!(order, vec!["task-1-2", "task-1-1"]);
    }

    #[test]
    fn a_cycle_completes_only_when_nothing_is_left_and_the_head_checks_pass() {
        let done = [task(1, RepoTaskStatus::Merged)];
        let red = vec![CheckResult {
            command: "make test".into(),
            exit_code: Some(2),
            ..Default::default()
        }];
        let (checks, before) = (green(), done.clone());
        let facts = CycleFacts {
            cycle: 2,
            discovered_nothing: true,
            before: &before,
            after: &done,
            head_checks: &checks,
            ..Default::default()
        };

        let complete = cycle_verdict(&facts);
        let found_more = cycle_verdict(&CycleFacts {
            discovered_nothing: false,
            merged: 1,
            ..facts.clone()
        });
        let red_head = cycle_verdict(&CycleFacts {
            head_checks: &red,
            merged: 1,
            ..facts.clone()
        });

        assert_eq!(complete, CycleVerdict::Complete);
        assert_eq!(found_more, CycleVerdict::Next);
        assert_eq!(red_head, CycleVerdict::Next);
    }

    #[test]
    fn a_blocked_task_keeps_the_run_from_completing_and_no_progress_stops_it() {
        let before = [task(1, RepoTaskStatus::Blocked)];
        let after = before.clone();
        let checks = green();

        let verdict = cycle_verdict(&CycleFacts {
            cycle: 3,
            discovered_nothing: true,
            before: &before,
            after: &after,
            head_checks: &checks,
            ..Default::default()
        });

        assert_eq!(verdict, CycleVerdict::Stop(CycleStop::NoProgress));
    }

    #[test]
    fn a_status_change_or_a_new_task_is_progress_and_max_cycles_stops_first() {
        let before = [task(1, RepoTaskStatus::Conflict)];
        let changed = [
            task(1, RepoTaskStatus::Merged),
            task(2, RepoTaskStatus::Conflict),
        ];
        let same = [task(1, RepoTaskStatus::Conflict)];
        let new_task = [
            task(1, RepoTaskStatus::Conflict),
            task(2, RepoTaskStatus::Failed),
        ];
        let facts = |after| CycleFacts {
            cycle: 1,
            before: &before,
            after,
            ..Default::default()
        };

        assert!(made_progress(&facts(&changed)));
        assert!(made_progress(&facts(&new_task)));
        assert!(!made_progress(&facts(&same)));
        assert_eq!(
            cycle_verdict(&CycleFacts {
                max_cycles: Some(1),
                ..facts(&changed)
            }),
            CycleVerdict::Stop(CycleStop::MaxCycles)
        );
    }
}
