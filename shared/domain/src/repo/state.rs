//! A repository run's state as the run stores it: its spec, its cycles and every task, with the
//! changes each phase makes to them as pure functions (the engine commits what they return).
//! The rules: a failed task runs once more and is blocked after that; a conflict queues its
//! resolution next cycle; a merge whose checks fail is kept out and counts as a failure.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::discovery::{DiscoveryAnswer, MAX_RETRIES, Selection, carried_over, select};
use super::spec::RepoSpec;
use super::task::{CheckResult, Cycle, MergeResult, Phase, RepoTask, RepoTaskStatus};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RepoState {
    pub spec: RepoSpec,
    /// Oldest first; the last is the current one.
    #[serde(default)]
    pub cycles: Vec<Cycle>,
    /// Every task of every cycle, in the order they were made.
    #[serde(default)]
    pub tasks: Vec<RepoTask>,
}

/// How a task's agent session ended, as convergence collected it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AgentOutcome {
    /// The agent finished its session (DONE, or exited cleanly).
    pub finished: bool,
    pub summary: String,
    /// Why it did not finish.
    pub error: Option<String>,
    pub files_modified: Vec<String>,
    /// Its branch's commits beyond where the branch started, oldest first.
    pub commits: Vec<String>,
}

impl RepoState {
    pub fn new(spec: RepoSpec) -> RepoState {
        RepoState {
            spec,
            cycles: vec![],
            tasks: vec![],
        }
    }

    pub fn current(&self) -> Option<&Cycle> {
        self.cycles.last()
    }

    pub fn current_mut(&mut self) -> Option<&mut Cycle> {
        self.cycles.last_mut()
    }

    pub fn task(&self, id: &str) -> Option<&RepoTask> {
        self.tasks.iter().find(|t| t.id == id)
    }

    fn task_mut(&mut self, id: &str) -> Option<&mut RepoTask> {
        self.tasks.iter_mut().find(|t| t.id == id)
    }

    /// The current cycle's tasks, in selection order.
    pub fn cycle_tasks(&self) -> Vec<&RepoTask> {
        self.current()
            .map(|c| c.tasks.iter().filter_map(|id| self.task(id)).collect())
            .unwrap_or_default()
    }

    /// Opens the next cycle, unless the current one has not ended; returns its number.
    pub fn start_cycle(&mut self) -> u32 {
        match self.current() {
            Some(c) if c.resume_phase().is_some() => c.n,
            last => {
                let n = last.map_or(1, |c| c.n + 1);
                self.cycles.push(Cycle::new(n));
                n
            }
        }
    }

    /// Marks `phase` of the current cycle done and moves it to the next.
    pub fn complete_phase(&mut self, phase: Phase) {
        if let Some(c) = self.current_mut()
            && !c.completed.contains(&phase)
        {
            c.completed.push(phase);
            c.phase = phase.next().unwrap_or(phase);
        }
    }

    /// Applies the discovery answer to the current cycle: selects its tasks (carried over
    /// first), sets the carried ones up to run again with their rework and a retry counted,
    /// adds the new ones, and records the reasoning and blockers.
    pub fn apply_discovery(&mut self, answer: &DiscoveryAnswer) -> Selection {
        let Some(cycle) = self.current().map(|c| c.n) else {
            return Selection::default();
        };
        let selection = select(
            &self.tasks,
            answer,
            &self.spec.working_branch,
            cycle,
            self.spec.max_parallel,
        );
        let reworks: Vec<(String, _)> = carried_over(&self.tasks)
            .into_iter()
            .filter(|(t, _)| selection.carried.contains(&t.id))
            .map(|(t, r)| (t.id.clone(), r))
            .collect();
        for (id, rework) in reworks {
            if let Some(t) = self.task_mut(&id) {
                if t.status == RepoTaskStatus::Failed {
                    t.retry_count += 1;
                }
                t.status = RepoTaskStatus::Pending;
                t.rework = Some(rework);
                t.last_cycle = cycle;
                t.merge = None;
                t.checks.clear();
                t.error = None;
            }
        }
        self.tasks.extend(selection.new.iter().cloned());
        if let Some(c) = self.current_mut() {
            c.tasks = selection
                .carried
                .iter()
                .cloned()
                .chain(selection.new.iter().map(|t| t.id.clone()))
                .collect();
            c.discovered_nothing = selection.is_empty();
            c.reasoning = answer.reasoning.clone();
            c.blockers = answer.blockers.clone();
        }
        selection
    }

    /// The task's agent was started as child run `agent_run`.
    pub fn task_started(&mut self, id: &str, agent_run: &str) {
        if let Some(t) = self.task_mut(id) {
            t.status = RepoTaskStatus::Running;
            t.agent_run = Some(agent_run.to_string());
        }
    }

    /// What convergence collected of the task's agent: done, or failed (then blocked once it
    /// has had its retry).
    pub fn agent_finished(&mut self, id: &str, outcome: AgentOutcome) {
        let Some(t) = self.task_mut(id) else {
            return;
        };
        t.summary = outcome.summary;
        t.files_modified = outcome.files_modified;
        t.commits = outcome.commits;
        if outcome.finished {
            t.status = RepoTaskStatus::Done;
            t.error = None;
        } else {
            let error = outcome
                .error
                .unwrap_or_else(|| "the agent did not finish".into());
            fail(t, error);
        }
    }

    /// What the merge queue made of the task, with the checks run on its merge.
    pub fn merged(&mut self, id: &str, result: MergeResult, checks: Vec<CheckResult>) {
        let Some(t) = self.task_mut(id) else {
            return;
        };
        t.checks = checks;
        match &result {
            MergeResult::Merged { .. } | MergeResult::AlreadyMerged => {
                t.status = RepoTaskStatus::Merged;
                t.error = None;
            }
            MergeResult::Conflict { files } => {
                t.status = RepoTaskStatus::Conflict;
                t.error = Some(format!("merge conflict in {}", files.join(", ")));
            }
            MergeResult::ChecksFailed { .. } => {
                let failed: Vec<&str> = t
                    .checks
                    .iter()
                    .filter(|c| !c.passed())
                    .map(|c| c.command.as_str())
                    .collect();
                let error = format!("checks failed on the merge: {}", failed.join(", "));
                fail(t, error);
            }
            MergeResult::NothingToMerge => t.status = RepoTaskStatus::Done,
        }
        t.merge = Some(result);
    }

    /// The failed checks of the last cycle, on its head and on its tasks' merges: what the
    /// next discovery is shown.
    pub fn last_check_failures(&self) -> Vec<CheckResult> {
        let Some(cycle) = self.current() else {
            return vec![];
        };
        let head = cycle.head_checks.iter();
        let merges = self.cycle_tasks().into_iter().flat_map(|t| t.checks.iter());
        head.chain(merges)
            .filter(|c| !c.passed())
            .cloned()
            .collect()
    }
}

fn fail(t: &mut RepoTask, error: String) {
    t.status = if t.retry_count < MAX_RETRIES {
        RepoTaskStatus::Failed
    } else {
        RepoTaskStatus::Blocked
    };
    t.error = Some(error);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repo::discovery::parse_discovery;
    use crate::repo::spec::RepoSpecInput;
    use crate::repo::task::Rework;

    fn state() -> RepoState {
        let spec = RepoSpec::parse(
            RepoSpecInput {
                path: "/r".into(),
                base_branch: "main".into(),
                working_branch: Some("w".into()),
                max_parallel: Some(2),
                ..Default::default()
            },
            "run_1",
        )
        .unwrap();
        RepoState::new(spec)
    }

    fn two_tasks() -> DiscoveryAnswer {
        parse_discovery(r#"{"tasks":[{"description":"a"},{"description":"b"}]}"#).unwrap()
    }

    fn red() -> Vec<CheckResult> {
        vec![CheckResult {
            command: "make test".into(),
            exit_code: Some(1),
            output_tail: "1 failed".into(),
            ..Default::default()
        }]
    }

    #[test]
    fn a_failed_task_runs_once_more_with_its_error_and_is_blocked_after() {
        let mut s = state();
        s.start_cycle();
        s.apply_discovery(&two_tasks());
        let failed = AgentOutcome {
            error: Some("agent crashed".into()),
            ..Default::default()
        };
        s.agent_finished("task-1-1", failed.clone());
        let after_first = s.task("task-1-1").unwrap().status;
        s.complete_phase(Phase::Discovery);
        for p in [
            Phase::Execution,
            Phase::Convergence,
            Phase::Merge,
            Phase::Update,
        ] {
            s.complete_phase(p);
        }

        assert_eq!(s.start_cycle(), 2);
        let selection = s.apply_discovery(&DiscoveryAnswer::default());
        let rerun = s.task("task-1-1").unwrap().clone();
        s.agent_finished("task-1-1", failed);

        assert_eq!(after_first, RepoTaskStatus::Failed);
        assert_eq!(selection.carried, vec!["task-1-1"]);
        assert_eq!(rerun.status, RepoTaskStatus::Pending);
        assert_eq!(rerun.retry_count, 1);
        assert_eq!(
            rerun.rework,
            Some(Rework::Retry {
                error: "agent crashed".into()
            })
        );
        assert_eq!(s.task("task-1-1").unwrap().status, RepoTaskStatus::Blocked);
        assert_eq!(s.current().unwrap().tasks, vec!["task-1-1"]);
        assert!(!s.current().unwrap().discovered_nothing);
    }

    #[test]
    fn merge_results_set_the_tasks_status_and_red_checks_reach_the_next_discovery() {
        let mut s = state();
        s.start_cycle();
        s.apply_discovery(&two_tasks());
        let done = AgentOutcome {
            finished: true,
            summary: "did it".into(),
            commits: vec!["c1".into()],
            ..Default::default()
        };
        s.agent_finished("task-1-1", done.clone());
        s.agent_finished("task-1-2", done);

        s.merged(
            "task-1-1",
            MergeResult::Conflict {
                files: vec!["a.rs".into()],
            },
            vec![],
        );
        s.merged(
            "task-1-2",
            MergeResult::ChecksFailed {
                commit: "m1".into(),
            },
            red(),
        );

        let (conflict, checks) = (s.task("task-1-1").unwrap(), s.task("task-1-2").unwrap());
        assert_eq!(conflict.status, RepoTaskStatus::Conflict);
        assert_eq!(conflict.error.as_deref(), Some("merge conflict in a.rs"));
        assert_eq!(checks.status, RepoTaskStatus::Failed);
        assert_eq!(
            checks.error.as_deref(),
            Some("checks failed on the merge: make test")
        );
        assert_eq!(s.last_check_failures(), red());
    }

    #[test]
    fn a_cycle_in_progress_is_not_started_again() {
        let mut s = state();

        let first = s.start_cycle();
        s.complete_phase(Phase::Discovery);
        let again = s.start_cycle();

        assert_eq!((first, again), (1, 1));
        assert_eq!(s.cycles.len(), 1);
        assert_eq!(s.current().unwrap().phase, Phase::Execution);
    }
}
