//! How `longrun` exits: one table, shown by `--help` and the README. A command that waits for a
//! run to settle (`run --follow`, `run --embedded`, `events --follow`, `demo`) says by its code
//! how the run ended, so a script can branch on it as it would on `temporal workflow execute`.

use longrun_domain::run::RunStatus;

/// Bad input, an unreadable file, an unreachable server or an API error (one line on stderr).
pub const ERROR: u8 = 1;
/// clap's own usage errors: an unknown flag, a missing argument (and the runner commands'
/// input and config errors).
pub const USAGE: u8 = 2;
pub const FAILED: u8 = 3;
pub const STOPPED: u8 = 4;
pub const CANCELED: u8 = 5;
pub const WAITING_ON_USER: u8 = 6;
pub const WAITING_ON_CHILDREN: u8 = 7;

/// The code for a run that settled as `status`. A wait never settles on the others (queued,
/// running, paused): reaching one is an error.
pub fn for_status(status: RunStatus) -> u8 {
    match status {
        RunStatus::Completed => 0,
        RunStatus::Failed => FAILED,
        RunStatus::Stopped => STOPPED,
        RunStatus::Canceled => CANCELED,
        RunStatus::WaitingOnUser => WAITING_ON_USER,
        RunStatus::WaitingOnChildren => WAITING_ON_CHILDREN,
        RunStatus::Queued | RunStatus::Running | RunStatus::Paused => ERROR,
    }
}

/// What `longrun --help` says after the commands.
pub const HELP: &str = "\
Exit codes:
  0  success; a run waited for (run --follow, run --embedded, events --follow, demo) completed
  1  error: bad input, a file, the server or the API refused (one line on stderr)
  2  usage error (unknown flag, missing argument); for task/job/bus/stop/config: bad input or config
  3  the run failed                      (task: out of restarts)
  4  the run stopped: a budget, no progress or repeated errors   (task: out of time)
  5  the run was canceled                (task: its root was stopped)
  6  the run waits on you: `longrun respond`
  7  the run waits on its children
`longrun job` exits with its agent's own code.
A closed stdout (`longrun list | head -1`) ends a command quietly with 0.";
