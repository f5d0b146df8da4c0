//! The runner: coding-agent CLIs (Claude Code, Codex, Gemini, any command) run as processes in a
//! task folder and kept working until the task is really done — one run (`job`), the restart
//! loop (`task`), `stop`, the task's message bus and the runner config. `supervise` decides what
//! follows an agent process's end, for the loop and for `host` alike. Depends on no adapter
//! and on no engine: it starts processes and reads files in the task folder. `host` is the
//! `AgentHost` port's adapter, by which `serve` runs agent runs.

pub mod backend;
pub mod bus;
pub mod check;
pub mod config;
pub mod host;
pub mod job;
pub mod monitor;
pub mod process;
pub mod runinfo;
pub mod select;
pub mod serve_settings;
pub mod supervise;
pub mod task;

pub use config::{ConfigError, RunnerConfig};

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// Bad input or state the user can fix; the message says how.
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("message bus: {0}")]
    Bus(#[from] rusqlite::Error),
}

pub(crate) fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
