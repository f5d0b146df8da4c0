//! The process-facing seam: start an agent in a folder in its own process group, watch its
//! output, stop the group. Kept behind `AgentProcess` so it can move to `longrun-ports` when
//! agent runs become a run kind of the engine.
//!
//! Signals go through the `kill` utility: the workspace forbids `unsafe`, and std has no
//! `killpg`; one short-lived process per signal is cheap next to an agent run.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant, SystemTime};

use crate::RunnerError;

/// What to start.
#[derive(Debug, Clone)]
pub struct Spawn {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    /// A file given to the process as stdin (None: /dev/null).
    pub stdin: Option<PathBuf>,
    pub stdout: PathBuf,
    pub stderr: PathBuf,
}

/// Starts agents. The local implementation runs processes; a test or a future remote runner
/// can implement it differently.
pub trait AgentProcess {
    fn start(&self, spawn: &Spawn) -> Result<Box<dyn RunningAgent>, RunnerError>;
}

/// One started agent.
pub trait RunningAgent {
    fn pid(&self) -> u32;
    /// The process group (the agent leads its own).
    fn pgid(&self) -> u32;
    /// The exit status once it has exited.
    fn try_wait(&mut self) -> Result<Option<ExitStatus>, RunnerError>;
    /// Bytes written to stdout and stderr so far: growth means activity.
    fn output_len(&self) -> u64;
}

pub struct LocalProcess;

struct LocalRunning {
    child: Child,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl AgentProcess for LocalProcess {
    fn start(&self, s: &Spawn) -> Result<Box<dyn RunningAgent>, RunnerError> {
        use std::os::unix::process::CommandExt;
        let (program, args) = s
            .argv
            .split_first()
            .ok_or_else(|| RunnerError::Invalid("empty command".into()))?;
        let stdin = match &s.stdin {
            Some(p) => Stdio::from(File::open(p)?),
            None => Stdio::null(),
        };
        let child = Command::new(program)
            .args(args)
            .current_dir(&s.cwd)
            .envs(s.env.iter().map(|(k, v)| (k, v)))
            .stdin(stdin)
            .stdout(Stdio::from(File::create(&s.stdout)?))
            .stderr(Stdio::from(File::create(&s.stderr)?))
            // Its own group: `stop` signals the agent and everything it started, and a Ctrl-C
            // at the terminal does not reach it.
            .process_group(0)
            .spawn()
            .map_err(|e| RunnerError::Invalid(format!("cannot start {program}: {e}")))?;
        Ok(Box::new(LocalRunning {
            child,
            stdout: s.stdout.clone(),
            stderr: s.stderr.clone(),
        }))
    }
}

impl RunningAgent for LocalRunning {
    fn pid(&self) -> u32 {
        self.child.id()
    }
    fn pgid(&self) -> u32 {
        self.child.id()
    }
    fn try_wait(&mut self) -> Result<Option<ExitStatus>, RunnerError> {
        Ok(self.child.try_wait()?)
    }
    fn output_len(&self) -> u64 {
        let len = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        len(&self.stdout) + len(&self.stderr)
    }
}

/// An agent started by a loop that has since died (found in run-info after a supervisor
/// restart): not our child, so its exit status cannot be known, only that it is gone.
pub struct AdoptedAgent {
    pub pid: u32,
    pub pgid: u32,
    pub stdout: PathBuf,
    pub stderr: PathBuf,
}

impl RunningAgent for AdoptedAgent {
    fn pid(&self) -> u32 {
        self.pid
    }
    fn pgid(&self) -> u32 {
        self.pgid
    }
    fn try_wait(&mut self) -> Result<Option<ExitStatus>, RunnerError> {
        use std::os::unix::process::ExitStatusExt;
        Ok((!process_alive(self.pid)).then(|| ExitStatus::from_raw(0)))
    }
    fn output_len(&self) -> u64 {
        let len = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        len(&self.stdout) + len(&self.stderr)
    }
}

/// True while process `pid` exists (`kill -0 PID`) and is not a zombie: an agent orphaned by a
/// killed supervisor has exited once nobody but init is left to reap it.
pub fn process_alive(pid: u32) -> bool {
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(") ")
                .map(|(_, rest)| rest.starts_with('Z'))
        })
        .unwrap_or(false);
    pid > 1
        && !zombie
        && Command::new("kill")
            .args(["-0", &pid.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Term,
    Kill,
    /// Probe only.
    Zero,
}

/// Sends `sig` to every process of group `pgid`; true when the group exists.
pub fn signal_group(pgid: u32, sig: Signal) -> bool {
    if pgid <= 1 {
        return false;
    }
    let s = match sig {
        Signal::Term => "-TERM",
        Signal::Kill => "-KILL",
        Signal::Zero => "-0",
    };
    Command::new("kill")
        .args([s, "--", &format!("-{pgid}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|st| st.success())
        .unwrap_or(false)
}

/// The live processes of group `pgid`, read from `/proc` (zombies left out).
pub fn group_members(pgid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // After the command's name: state, ppid, pgrp.
            let mut rest = stat
                .rsplit_once(") ")
                .map(|(_, r)| r)
                .unwrap_or("")
                .split(' ');
            let state = rest.next().unwrap_or("Z");
            let pgrp = rest.nth(1).and_then(|g| g.parse::<u32>().ok());
            state != "Z" && pgrp == Some(pgid)
        })
        .collect()
}

/// Signs of work in process groups, read from `/proc` in one pass: CPU ticks (its own and its
/// reaped children's) and bytes written (to files and pipes alike) by their live processes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Work {
    pub cpu_ticks: u64,
    pub written: u64,
}

pub fn work_of_groups(pgids: &[u32]) -> Work {
    let mut work = Work::default();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return work;
    };
    for pid in entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
    {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // After the command's name: state, ppid, pgrp, ..., utime at 11, stime, cutime, cstime.
        let rest: Vec<&str> = stat
            .rsplit_once(") ")
            .map(|(_, r)| r.split(' ').collect())
            .unwrap_or_default();
        let pgrp = rest.get(2).and_then(|g| g.parse::<u32>().ok());
        if !pgrp.is_some_and(|g| pgids.contains(&g)) {
            continue;
        }
        let ticks = |i: usize| rest.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        work.cpu_ticks += ticks(11) + ticks(12) + ticks(13) + ticks(14);
        let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
        work.written += io
            .lines()
            .find_map(|l| l.strip_prefix("wchar:"))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(0);
    }
    work
}

/// A process's argv, from `/proc` (empty once it is gone).
pub fn cmdline(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|c| *c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// True while any process of the group is alive (`kill -0 -PGID`).
pub fn group_alive(pgid: u32) -> bool {
    signal_group(pgid, Signal::Zero)
}

/// SIGTERM, then SIGKILL if the group outlives `grace`. Returns the last signal sent.
pub fn stop_group(pgid: u32, grace: Duration) -> Option<Signal> {
    if !signal_group(pgid, Signal::Term) {
        return None;
    }
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if !group_alive(pgid) {
            return Some(Signal::Term);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    if group_alive(pgid) {
        signal_group(pgid, Signal::Kill);
        return Some(Signal::Kill);
    }
    Some(Signal::Term)
}

/// Tracks when a run last wrote output.
pub struct Activity {
    last_len: u64,
    last_at: Instant,
    pub last_wall: SystemTime,
}

impl Activity {
    pub fn new() -> Self {
        Activity {
            last_len: 0,
            last_at: Instant::now(),
            last_wall: SystemTime::now(),
        }
    }

    /// Records the current output length; returns how long the output has been quiet.
    pub fn observe(&mut self, len: u64) -> Duration {
        if len != self.last_len {
            self.last_len = len;
            self.last_at = Instant::now();
            self.last_wall = SystemTime::now();
        }
        self.last_at.elapsed()
    }

    pub fn any_output(&self) -> bool {
        self.last_len > 0
    }
}

impl Default for Activity {
    fn default() -> Self {
        Self::new()
    }
}
