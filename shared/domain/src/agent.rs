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
