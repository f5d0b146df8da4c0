//! Agent runs: a run whose iterations are coding-agent processes (Claude Code, Codex, Gemini,
//! any command) instead of planner calls. The host starts one process per iteration in the
//! run's task folder and reports how it ended; where no process can be started (Lambda) there
//! is no host and creating an agent run is refused.

use longrun_domain::run::Run;
use longrun_domain::{AgentView, BusMessage, TaskSummary, TaskView};

/// What one iteration's agent process came to.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AgentTurn {
    /// The agent run's own id (`YYYYMMDD-HHMMSSMMMM-PID`); empty when no process was started
    /// (DONE was already there).
    pub agent_run_id: String,
    /// The backend that ran (`claude`, `codex`, …).
    pub backend: String,
    /// `provider:model` the CLI ran, when its command line names one.
    pub model: Option<String>,
    pub exit_code: Option<i32>,
    /// `exited`, `stuck`, `stopped`, `out_of_time`, `failed_fast`, or `done_before_start`.
    pub ended: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_tokens: u64,
    pub cost_usd: Option<f64>,
    /// DONE was in the task folder when the process ended (children waited for first).
    pub done: bool,
    /// Children still running when `child_wait_timeout` passed: left running.
    pub orphaned: Vec<String>,
    /// The bus's last entry is a QUESTION: the run waits for the user's answer.
    pub question: Option<String>,
    /// The agent's `output.md` (or its stdout when it wrote none), clipped.
    pub output: String,
    /// A usage or session limit hit: epoch ms when it resets. Nothing is charged for the turn.
    pub limited_until_ms: Option<i64>,
    /// Bus entries the turn posted, oldest first (`TYPE: text`), for the run's log.
    pub said: Vec<String>,
    /// The backend failed in a way no new process fixes (authentication, quota, it cannot
    /// start) and no other backend was left to try: the cause, e.g. `authentication failed:
    /// 401 Unauthorized`. The run fails with it instead of starting the same failure again.
    pub failure: Option<String>,
}

/// How a completion criterion's command ended in an agent run's task folder.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckRun {
    /// `None`: it did not exit on its own (timed out, killed by a signal).
    pub exit_code: Option<i32>,
    /// The end of its output, stdout and stderr as they came.
    pub tail: String,
    /// Why there is no exit code, when there is none.
    pub detail: String,
}

#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The run names an agent the host does not know, or its task folder cannot be used.
    #[error("{0}")]
    Invalid(String),
    #[error("agent host: {0}")]
    Io(String),
}

impl AgentError {
    pub fn is_retryable(&self) -> bool {
        matches!(self, AgentError::Io(_))
    }
}

#[async_trait::async_trait]
pub trait AgentHost: Send + Sync {
    /// The agents runs may name.
    fn agents(&self) -> Vec<String>;

    /// Iteration `n` of an agent run: the one process of that iteration, started once — a
    /// redelivered iteration adopts the live process (or reads the ended one's record) rather
    /// than starting a second. The run's pending answers are posted to the bus as ANSWERs
    /// before a new process starts (messages went there at once, by `post`). Blocks until the
    /// process ends.
    async fn turn(&self, run: &Run, n: u32) -> Result<AgentTurn, AgentError>;

    /// Runs a completion criterion's command (`sh -c`) in the run's task folder, in a process
    /// group of its own, killed with it when it outlives the host's check timeout.
    async fn check(&self, run: &Run, command: &str) -> Result<CheckRun, AgentError>;

    /// Stops the run's live agent processes (SIGTERM, then SIGKILL after the grace).
    async fn stop(&self, run: &Run) -> Result<(), AgentError>;

    /// The run's task folder as it stands: processes, bus, state, output, live tail.
    async fn view(&self, run: &Run) -> Result<AgentView, AgentError>;

    /// Posts the user's message to the run's bus at once, for the agent working now.
    async fn post(&self, run: &Run, text: &str) -> Result<(), AgentError>;

    /// The tasks a terminal started (`longrun task`) under the projects root, most recently
    /// active first; agent runs' folders are not among them. Read-only.
    async fn tasks(&self) -> Result<Vec<TaskSummary>, AgentError>;

    /// One such task; `None` when there is none by that name.
    async fn task(&self, project: &str, task: &str) -> Result<Option<TaskView>, AgentError>;

    /// A run's or a task's bus after `seq`, and whether anything of it still runs.
    async fn bus(&self, folder: Folder<'_>, after: i64) -> Result<BusPage, AgentError>;
}

/// A folder the host keeps: an agent run's, or a terminal task's.
#[derive(Clone, Copy, Debug)]
pub enum Folder<'a> {
    Run(&'a Run),
    Task { project: &'a str, task: &'a str },
}

/// Bus messages after a seq, oldest first, at most a page.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BusPage {
    pub messages: Vec<BusMessage>,
    /// Its loop or one of its agent processes is alive: more may come.
    pub live: bool,
}
