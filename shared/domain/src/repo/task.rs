//! A repository run's cycles and tasks as the run stores them (ARCHITECTURE.md, "Repository runs"), and the names every
//! git side effect derives from (run, cycle, task), so a redelivered phase finds in git what an
//! earlier attempt already did instead of doing it again.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The phases of a cycle, in order. Each ends in one commit of the run; a resumed run goes on
/// from the phase after the last one completed.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// One model call over the repository's state: the tasks to do now.
    #[default]
    Discovery,
    /// A child agent run per selected task, each in its own worktree and branch.
    Execution,
    /// Waiting for the agents (bounded); their summaries, files and commits collected.
    Convergence,
    /// Task by task in priority order: merge --no-ff, checks on the merge, advance or keep out.
    Merge,
    /// TASKLIST.md committed, checks on the working head, the stop rule.
    Update,
}

impl Phase {
    /// The phase after this one; `None` after `Update` (the next cycle's discovery follows).
    pub fn next(self) -> Option<Phase> {
        match self {
            Phase::Discovery => Some(Phase::Execution),
            Phase::Execution => Some(Phase::Convergence),
            Phase::Convergence => Some(Phase::Merge),
            Phase::Merge => Some(Phase::Update),
            Phase::Update => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Discovery => "discovery",
            Phase::Execution => "execution",
            Phase::Convergence => "convergence",
            Phase::Merge => "merge",
            Phase::Update => "update",
        }
    }
}

/// The seed's P0 (critical), P1 (important), P2 (nice to have); ordered most urgent first.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
pub enum Priority {
    P0,
    #[default]
    P1,
    P2,
}

impl Priority {
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::P0 => "P0",
            Priority::P1 => "P1",
            Priority::P2 => "P2",
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RepoTaskStatus {
    /// Selected for a cycle, its agent not started yet.
    #[default]
    Pending,
    /// Its agent is at work.
    Running,
    /// Its agent finished; waiting for the merge queue (or nothing to merge).
    Done,
    /// The agent failed, or the checks failed on its merge: retried once, then blocked.
    Failed,
    /// Failed again after its retry, or refused by the agent: left with its error.
    Blocked,
    /// Its merge conflicted with the working branch: a resolution task comes next cycle.
    Conflict,
    /// Merged onto the working branch with the checks green.
    Merged,
}

impl RepoTaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RepoTaskStatus::Pending => "pending",
            RepoTaskStatus::Running => "running",
            RepoTaskStatus::Done => "done",
            RepoTaskStatus::Failed => "failed",
            RepoTaskStatus::Blocked => "blocked",
            RepoTaskStatus::Conflict => "conflict",
            RepoTaskStatus::Merged => "merged",
        }
    }

    pub fn parse(s: &str) -> Option<RepoTaskStatus> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "pending" => RepoTaskStatus::Pending,
            "running" => RepoTaskStatus::Running,
            "done" => RepoTaskStatus::Done,
            "failed" => RepoTaskStatus::Failed,
            "blocked" => RepoTaskStatus::Blocked,
            "conflict" => RepoTaskStatus::Conflict,
            "merged" => RepoTaskStatus::Merged,
            _ => return None,
        })
    }
}

/// One check command's run: what certifies a merge or the working head.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CheckResult {
    pub command: String,
    /// `None` when the command did not exit by itself (timed out, killed by a signal).
    #[serde(default)]
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub timed_out: bool,
    /// The last part of its combined stdout and stderr.
    #[serde(default)]
    pub output_tail: String,
    #[serde(default)]
    pub duration_ms: u64,
}

impl CheckResult {
    pub fn passed(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }
}

/// Whether every check passed (vacuously true with no checks).
pub fn all_passed(checks: &[CheckResult]) -> bool {
    checks.iter().all(CheckResult::passed)
}

/// What the merge queue made of a task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum MergeResult {
    /// The merge commit the working branch advanced to.
    Merged { commit: String },
    /// The branch was already in the working branch (a redelivered merge phase).
    AlreadyMerged,
    /// The merge stopped on these files and was aborted.
    Conflict { files: Vec<String> },
    /// The merge was made in the merge worktree but its checks failed: the working branch
    /// stayed where it was.
    ChecksFailed { commit: String },
    /// The branch holds no commit beyond where it started.
    NothingToMerge,
}

/// Why a task left by an earlier cycle runs again: its agent gets told what to fix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Rework {
    /// Merge the working branch into the task's branch and resolve these files.
    Conflict { files: Vec<String> },
    /// The checks failed on the task's merge: their failures.
    Checks { failures: Vec<CheckResult> },
    /// The agent failed: its error.
    Retry { error: String },
}

/// A task of a repository run, from its discovery to its merge.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RepoTask {
    /// `task-{cycle}-{n}`: also its worktree's directory name.
    pub id: String,
    /// The cycle that discovered it (its branch carries this number, however often it reruns).
    pub cycle: u32,
    /// Its number in that cycle, from 1.
    pub n: u32,
    pub description: String,
    /// Files it will likely touch, as discovery guessed.
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default = "yes")]
    pub parallel: bool,
    #[serde(default)]
    pub priority: Priority,
    #[serde(default)]
    pub context: String,
    #[serde(default)]
    pub success_criteria: Vec<String>,
    #[serde(default)]
    pub status: RepoTaskStatus,
    /// `{working}-task-{cycle}-{n}`.
    pub branch: String,
    /// The child agent run working it (its latest attempt).
    #[serde(default)]
    pub agent_run: Option<String>,
    #[serde(default)]
    pub retry_count: u32,
    /// The cycle it last ran in (its discovery cycle, or a later one for rework).
    #[serde(default)]
    pub last_cycle: u32,
    #[serde(default)]
    pub rework: Option<Rework>,
    #[serde(default)]
    pub summary: String,
    #[serde(default)]
    pub files_modified: Vec<String>,
    /// Commit ids on its branch beyond its start, oldest first.
    #[serde(default)]
    pub commits: Vec<String>,
    /// The checks run on its merge.
    #[serde(default)]
    pub checks: Vec<CheckResult>,
    #[serde(default)]
    pub merge: Option<MergeResult>,
    /// Why it failed or is blocked.
    #[serde(default)]
    pub error: Option<String>,
}

fn yes() -> bool {
    true
}

impl RepoTask {
    /// A pending task for cycle `cycle`, number `n`, on the run's working branch `working`.
    pub fn new(working: &str, cycle: u32, n: u32, description: impl Into<String>) -> RepoTask {
        RepoTask {
            id: task_id(cycle, n),
            cycle,
            n,
            description: description.into(),
            parallel: true,
            branch: task_branch(working, cycle, n),
            last_cycle: cycle,
            ..Default::default()
        }
    }

    /// Finished with nothing left to do: merged, or done with no commit to merge.
    pub fn is_finished_well(&self) -> bool {
        match self.status {
            RepoTaskStatus::Merged => true,
            RepoTaskStatus::Done => self.commits.is_empty(),
            _ => false,
        }
    }
}

/// One cycle as the run records it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Cycle {
    /// From 1.
    pub n: u32,
    /// The phase in progress (or, once `completed`, the last one).
    #[serde(default)]
    pub phase: Phase,
    /// Phases finished, so a resume knows where to go on.
    #[serde(default)]
    pub completed: Vec<Phase>,
    /// The tasks this cycle runs, in selection order: carried over first, then new.
    #[serde(default)]
    pub tasks: Vec<String>,
    /// Discovery found nothing left to do.
    #[serde(default)]
    pub discovered_nothing: bool,
    #[serde(default)]
    pub reasoning: String,
    #[serde(default)]
    pub blockers: Vec<String>,
    /// The working branch's head when the cycle began and after its merge queue.
    #[serde(default)]
    pub start_head: Option<String>,
    #[serde(default)]
    pub end_head: Option<String>,
    /// Checks on the working head in the update phase.
    #[serde(default)]
    pub head_checks: Vec<CheckResult>,
    #[serde(default)]
    pub summary: String,
}

impl Cycle {
    pub fn new(n: u32) -> Cycle {
        Cycle {
            n,
            ..Default::default()
        }
    }

    /// The phase a (re)started step works on: the one after the last completed, or `None`
    /// when the cycle is over.
    pub fn resume_phase(&self) -> Option<Phase> {
        match self.completed.last() {
            None => Some(Phase::Discovery),
            Some(last) => last.next(),
        }
    }
}

/// `task-{cycle}-{n}`: the task's id and its worktree's directory name under the run's
/// worktrees folder.
pub fn task_id(cycle: u32, n: u32) -> String {
    format!("task-{cycle}-{n}")
}

/// The seed's `{working}/task-{cycle}-{n}` cannot exist next to `{working}`: git keeps
/// `refs/heads/{working}` as a file, so no ref may live below it. A dash keeps the name beside
/// the working branch and sorting with it.
pub fn task_branch(working: &str, cycle: u32, n: u32) -> String {
    format!("{working}-task-{cycle}-{n}")
}

/// The branch of the run's merge worktree, where merges are made and tested before the
/// working branch advances to them.
pub fn merge_branch(working: &str) -> String {
    format!("{working}-merge")
}

/// The merge worktree's directory name.
pub const MERGE_WORKTREE: &str = "merge";

/// The file the run keeps its task list in, at the root of the working branch.
pub const TASKLIST_PATH: &str = "TASKLIST.md";

const RUN_TRAILER: &str = "Longrun-Run: ";
const CYCLE_TRAILER: &str = "Longrun-Cycle: ";
const TASK_TRAILER: &str = "Longrun-Task: ";

/// The TASKLIST commit's message: the cycle in a trailer, so the update phase can tell from
/// the log that this cycle's commit was already made.
pub fn tasklist_commit_message(run_id: &str, cycle: u32) -> String {
    format!(
        "longrun: TASKLIST.md after cycle {cycle}\n\n{RUN_TRAILER}{run_id}\n{CYCLE_TRAILER}{cycle}\n"
    )
}

/// The (run, cycle) a TASKLIST commit's message names; `None` for any other message.
pub fn tasklist_commit_cycle(message: &str) -> Option<(String, u32)> {
    if !message.starts_with("longrun: TASKLIST.md") {
        return None;
    }
    let run = trailer(message, RUN_TRAILER)?;
    let cycle = trailer(message, CYCLE_TRAILER)?.parse().ok()?;
    Some((run.to_string(), cycle))
}

/// The merge commit's message for a task.
pub fn merge_commit_message(run_id: &str, task: &RepoTask) -> String {
    format!(
        "Merge {}: {}\n\n{RUN_TRAILER}{run_id}\n{TASK_TRAILER}{}\n",
        task.id,
        crate::clip(&one_line(&task.description), 60),
        task.id
    )
}

/// The message of the commit made for an agent of what it left uncommitted.
pub fn leftovers_commit_message(run_id: &str, task: &RepoTask) -> String {
    format!(
        "{}: changes the agent left uncommitted\n\n{RUN_TRAILER}{run_id}\n{TASK_TRAILER}{}\n",
        task.id, task.id
    )
}

fn trailer<'a>(message: &'a str, key: &str) -> Option<&'a str> {
    message
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix(key))
        .map(str::trim)
}

/// `s` on one line: newlines and runs of white space as one space.
pub fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Why a worktree is kept rather than removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WorktreeKept {
    #[error("it holds uncommitted changes")]
    Uncommitted,
    #[error("its branch holds commits not merged into the working branch")]
    Unmerged,
}

/// A worktree may go only when nothing in it would be lost: clean, and its head already in the
/// branch it was to be merged into. Adapters consult this before `git worktree remove`.
pub fn may_remove_worktree(clean: bool, head_merged: bool) -> Result<(), WorktreeKept> {
    if !clean {
        Err(WorktreeKept::Uncommitted)
    } else if !head_merged {
        Err(WorktreeKept::Unmerged)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_derive_from_the_working_branch_cycle_and_task() {
        let task = RepoTask::new("longrun/auth", 2, 3, "Add login");

        assert_eq!(task.id, "task-2-3");
        assert_eq!(task.branch, "longrun/auth-task-2-3");
        assert_eq!(merge_branch("longrun/auth"), "longrun/auth-merge");
        assert!(crate::repo::spec::check_branch("b", &task.branch).is_ok());
    }

    #[test]
    fn a_tasklist_commit_message_gives_back_its_run_and_cycle() {
        let message = tasklist_commit_message("run_abc", 4);

        assert_eq!(tasklist_commit_cycle(&message), Some(("run_abc".into(), 4)));
        assert_eq!(
            tasklist_commit_cycle("Merge task-1-1: x\n\nLongrun-Cycle: 4"),
            None
        );
    }

    #[test]
    fn a_resumed_cycle_goes_on_after_its_last_completed_phase() {
        let mut cycle = Cycle::new(1);
        assert_eq!(cycle.resume_phase(), Some(Phase::Discovery));

        cycle.completed = vec![Phase::Discovery, Phase::Execution];
        assert_eq!(cycle.resume_phase(), Some(Phase::Convergence));

        cycle
            .completed
            .extend([Phase::Convergence, Phase::Merge, Phase::Update]);
        assert_eq!(cycle.resume_phase(), None);
    }

    #[test]
    fn a_worktree_with_unmerged_or_uncommitted_work_is_kept() {
        assert_eq!(
            may_remove_worktree(false, true),
            Err(WorktreeKept::Uncommitted)
        );
        assert_eq!(
            may_remove_worktree(true, false),
            Err(WorktreeKept::Unmerged)
        );
        assert_eq!(may_remove_worktree(true, true), Ok(()));
    }

    #[test]
    fn a_stored_task_with_only_its_names_still_reads() {
        let json = r#"{"id":"task-1-1","cycle":1,"n":1,"description":"x","branch":"w-task-1-1"}"#;

        let task: RepoTask = serde_json::from_str(json).unwrap();

        assert_eq!(task.status, RepoTaskStatus::Pending);
        assert!(task.parallel);
        assert_eq!(task.priority, Priority::P1);
    }
}
