//! What an agent run's task folder shows: its agent processes (the chain of restarts and the
//! children they delegated to), the message bus, `TASK_STATE.md`, the latest output and the
//! live tail of the newest process.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AgentView {
    /// The task folder on the server (`projects_root/<user>/<run id>/`).
    pub task_dir: String,
    /// Every agent process of the run, oldest first: the root's restarts chained by
    /// `previous_run_id`, children naming their parent in `parent_run_id`.
    pub processes: Vec<AgentProcessInfo>,
    /// `TASK_STATE.md`, the agent's short status (clipped).
    pub task_state: String,
    /// The newest root process's `output.md` (clipped).
    pub output: String,
    /// The last lines of the newest process's stdout and stderr.
    pub tail: String,
    /// The task's message bus, oldest first (the last 200 messages).
    pub bus: Vec<BusMessage>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AgentProcessInfo {
    /// `YYYYMMDD-HHMMSSMMMM-PID`.
    pub run_id: String,
    /// The longrun iteration this process is (root processes only).
    pub iteration: Option<u32>,
    pub previous_run_id: Option<String>,
    pub parent_run_id: Option<String>,
    /// The backend that ran (`claude`, `codex`, `gemini`, or a configured command).
    pub agent: String,
    pub pid: Option<i64>,
    /// RFC 3339.
    pub start_time: String,
    /// RFC 3339; absent while the process runs.
    pub end_time: Option<String>,
    pub exit_code: Option<i64>,
    /// `exited`, `stuck`, `stopped`, `out_of_time` or `failed_fast`.
    pub ended: Option<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BusMessage {
    pub seq: i64,
    /// RFC 3339.
    pub at: String,
    /// INFO, OBSERVATION, QUESTION, ANSWER, FACT, WARNING, CHILD_DONE, START, STOP, CRASH,
    /// SUPERVISOR_RESTART or USER.
    #[serde(rename = "type")]
    pub kind: String,
    /// The agent process that posted it; empty for the loop's and the user's messages.
    pub run_id: String,
    pub body: String,
}

/// How a task started from a terminal (`longrun task`) stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Its loop or one of its agent processes is alive.
    Running,
    /// DONE is in the task folder and nothing of it runs.
    Done,
    /// Nothing of it runs and there is no DONE: stopped, out of restarts or budget, or failed.
    #[default]
    Ended,
}

/// A task under the projects root that a terminal started (`projects_root/<project>/<task>/`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskSummary {
    pub project: String,
    pub task: String,
    pub status: TaskStatus,
    /// The first line of TASK.md (clipped).
    pub title: String,
    /// Agent processes so far: the root's runs and every child.
    pub processes: u32,
    /// The newest root process's backend.
    pub agent: String,
    /// RFC 3339: the first process's start; absent before one started.
    pub started: Option<String>,
    /// RFC 3339: the newest start or end of any of its processes.
    pub updated: Option<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: Option<f64>,
}

/// One terminal task: its summary, TASK.md and its folder as an agent run's is shown.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskView {
    pub summary: TaskSummary,
    /// TASK.md (clipped).
    pub objective: String,
    pub folder: AgentView,
}
