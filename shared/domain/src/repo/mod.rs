//! Repository runs (ARCHITECTURE.md, "Repository runs"): a goal worked in cycles by coding agents on branches of their
//! own, merged by a queue that never strands work. This module is the pure part: the spec, the
//! cycle and task model, the names git side effects derive from, the discovery answer and the
//! selection, TASKLIST.md, the prompts, the merge order and the stop rule. Git itself is the
//! `Git` port's.

pub mod cycle;
pub mod discovery;
pub mod prompt;
pub mod spec;
pub mod state;
pub mod task;
pub mod tasklist;

pub use cycle::{CycleFacts, CycleStop, CycleVerdict, cycle_verdict, made_progress, merge_order};
pub use discovery::{
    DiscoveredTask, DiscoveryAnswer, Selection, discovery_schema, parse_discovery, select,
};
pub use prompt::{DiscoveryInputs, agent_prompt, discovery_prompt, goal_summary, tail_chars};
pub use spec::{RepoSpec, RepoSpecInput, default_working_branch};
pub use state::{AgentOutcome, RepoState};
pub use task::{
    CheckResult, Cycle, MergeResult, Phase, Priority, RepoTask, RepoTaskStatus, Rework,
    WorktreeKept, may_remove_worktree, merge_branch, task_branch, task_id,
};
