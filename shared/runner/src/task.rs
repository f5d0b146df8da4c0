//! `longrun task`: the restart loop. DONE is checked before every (re)start; DONE ends the loop
//! (after waiting for running children, up to `child_wait_timeout`) and the root agent is never
//! restarted after it; otherwise the root agent is restarted, 1 s apart, within `max_restarts`
//! and the time budget. A usage limit waits for its reset instead of costing a restart; a root
//! stopped with `longrun stop` ends the task; a QUESTION left as the bus's last message waits for
//! an ANSWER before the restart.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::RunnerError;
use crate::backend::Usage;
use crate::bus::{Bus, MessageType, post_best_effort};
use crate::config::RunnerConfig;
use crate::job::{Ended, JobOutcome, JobRequest, adopt, run_job};
use crate::process::{AgentProcess, group_alive, process_alive};
use crate::runinfo::{RunInfo, list_runs};
use crate::supervise::{self, End, Next};

#[derive(Debug, Clone)]
pub struct TaskRequest {
    pub project: String,
    pub task: String,
    pub agent: Option<String>,
    pub bin_dir: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TaskOutcome {
    /// DONE, and every child exited (or was orphaned after the timeout: listed here).
    Completed {
        runs: u32,
        orphaned: Vec<String>,
    },
    RestartsExhausted {
        runs: u32,
    },
    BudgetExhausted {
        runs: u32,
    },
    /// `longrun stop` stopped the root agent: the user's word ends the loop, no restart.
    Stopped {
        runs: u32,
    },
    /// The backend failed in a way no restart fixes (authentication, quota, it cannot start),
    /// and no other backend was left to try.
    Failed {
        runs: u32,
        backend: String,
        cause: String,
    },
}

impl TaskOutcome {
    pub fn as_str(&self) -> &'static str {
        match self {
            TaskOutcome::Completed { .. } => "completed",
            TaskOutcome::RestartsExhausted { .. } => "restarts_exhausted",
            TaskOutcome::BudgetExhausted { .. } => "budget_exhausted",
            TaskOutcome::Stopped { .. } => "stopped",
            TaskOutcome::Failed { .. } => "failed",
        }
    }

    pub fn runs(&self) -> u32 {
        match self {
            TaskOutcome::Completed { runs, .. }
            | TaskOutcome::RestartsExhausted { runs }
            | TaskOutcome::BudgetExhausted { runs }
            | TaskOutcome::Stopped { runs }
            | TaskOutcome::Failed { runs, .. } => *runs,
        }
    }
}

pub const TASK_FILE: &str = "TASK.md";
pub const DONE_FILE: &str = "DONE";

/// `projects_root/<project>/<task>/`, created if needed; project and task must be plain names.
pub fn task_dir(cfg: &RunnerConfig, project: &str, task: &str) -> Result<PathBuf, RunnerError> {
    for (what, v) in [("project", project), ("task", task)] {
        if v.is_empty() || v.starts_with('.') || v.contains('/') {
            return Err(RunnerError::Invalid(format!(
                "{what} must be a plain folder name, got {v:?}"
            )));
        }
    }
    let dir = cfg.projects_root.join(project).join(task);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// The root orchestrator prompt: the contract, then TASK.md.
pub fn root_prompt(task_dir: &Path, task_text: &str) -> String {
    format!(
        "You are the root agent of a longrun task. Task folder: {dir}\n\
         \n\
         Rules:\n\
         - On start, read TASK_STATE.md and TASK-MESSAGE-BUS.md in the task folder.\n\
         - Communicate only through the message bus: `longrun bus post --type INFO \"…\"`; read it with `longrun bus poll`.\n\
         - Write facts as FACT-<name>.md with YAML front matter; keep TASK_STATE.md as a short free-text status.\n\
         - Delegate sub-tasks with `longrun job \"…\"` (it blocks until the child ends; run it in the background to work in parallel).\n\
         - If you delegate and need the results, wait for the children (CHILD_DONE on the bus) and aggregate BEFORE writing DONE.\n\
         - Write your final result to output.md in your run folder ($LONGRUN_RUN_DIR).\n\
         - Create the file DONE in the task folder ONLY when the whole task is complete, and post an INFO when you do.\n\
         - You may be restarted: if DONE is absent when you exit, you start again with this prompt.\n\
         \n\
         TASK.md:\n\n{task_text}\n",
        dir = task_dir.display()
    )
}

/// Spend over every run of the task (root, restarts and children), from their run-info.
pub fn task_usage(task_dir: &Path) -> Usage {
    let mut total = Usage::default();
    for (_, info) in list_runs(task_dir) {
        total.add(&info.usage());
    }
    total
}

/// Children still running: runs with a parent, no end time, and a live process group.
pub fn active_children(task_dir: &Path) -> Vec<String> {
    list_runs(task_dir)
        .into_iter()
        .filter(|(_, i)| !i.is_root() && !i.has_ended())
        .filter(|(_, i)| i.pgid.is_some_and(group_alive))
        .map(|(_, i)| i.run_id)
        .collect()
}

pub fn run_task(
    cfg: &RunnerConfig, procs: &dyn AgentProcess, req: &TaskRequest,
) -> Result<TaskOutcome, RunnerError> {
    let dir = task_dir(cfg, &req.project, &req.task)?;
    let task_text = std::fs::read_to_string(dir.join(TASK_FILE)).unwrap_or_default();
    if task_text.trim().is_empty() {
        return Err(RunnerError::Invalid(format!(
            "{} is missing or empty: write the task there first",
            dir.join(TASK_FILE).display()
        )));
    }
    let _lock = TaskLock::take(&dir)?;
    let mut task = TaskLoop {
        cfg,
        req,
        prompt: root_prompt(&dir, &task_text),
        dir,
        started: Instant::now(),
        runs: 0,
        previous: None,
        root_pgid: None,
        fast_failures: 0,
        session: None,
    };
    if let Some((run_dir, info)) = unended_root(&task.dir)
        && let Some(outcome) = task.adopt(run_dir, &info)?
    {
        return Ok(outcome);
    }
    loop {
        if let Some(outcome) = task.ended() {
            return Ok(outcome);
        }
        task.announce_restart();
        let out = task.start_root(procs)?;
        if let Some(outcome) = task.follow(&out)? {
            return Ok(outcome);
        }
    }
}

/// The restart loop's state between (re)starts of the root agent.
struct TaskLoop<'a> {
    cfg: &'a RunnerConfig,
    req: &'a TaskRequest,
    dir: PathBuf,
    prompt: String,
    started: Instant,
    runs: u32,
    previous: Option<String>,
    /// The root agent's group: background `longrun job`s it started stay in it until their own
    /// run-info exists, so a live group counts as a child being started.
    root_pgid: Option<u32>,
    /// Runs in a row that failed before any output: the pause doubles with each (capped), so a
    /// broken backend or a missing key does not become a restart storm.
    fast_failures: u32,
    /// (backend, CLI session) the next start resumes; cleared by a stuck or failed run, so a
    /// session that went wrong is not carried on.
    session: Option<(String, String)>,
}

impl TaskLoop<'_> {
    /// Checked before every (re)start: DONE, then the restart cap, then the time budget.
    fn ended(&self) -> Option<TaskOutcome> {
        let (cfg, dir, runs) = (self.cfg, &self.dir, self.runs);
        if dir.join(DONE_FILE).exists() {
            return Some(self.complete());
        }
        if runs > cfg.max_restarts {
            let max = cfg.max_restarts;
            let said = format!("giving up: {runs} runs without DONE (max_restarts {max})");
            post_best_effort(dir, MessageType::Warning, "", &said);
            return Some(TaskOutcome::RestartsExhausted { runs });
        }
        if self.started.elapsed() >= cfg.time_budget {
            let secs = cfg.time_budget.as_secs();
            let said = format!("giving up: time budget of {secs}s spent");
            post_best_effort(dir, MessageType::Warning, "", &said);
            return Some(TaskOutcome::BudgetExhausted { runs });
        }
        None
    }

    /// A loop that died (kill -9, a reboot of the terminal) left its root agent running: this
    /// loop watches that agent to its end instead of starting a second one beside it.
    /// A root that ended while no loop watched it is recorded the same way, at once: its end
    /// (exit status unknown), its output and usage, and the chain to the next root.
    fn adopt(
        &mut self, run_dir: PathBuf, info: &RunInfo,
    ) -> Result<Option<TaskOutcome>, RunnerError> {
        let (id, pid) = (info.run_id.as_str(), info.pid.unwrap_or(0));
        let said = match process_alive(pid) {
            true => format!(
                "the task loop restarted; adopting the live root agent run {id} (pid {pid}) instead of starting another"
            ),
            false => format!(
                "the task loop restarted; root agent run {id} (pid {pid}) ended while no loop watched it: recording its end (exit status unknown)"
            ),
        };
        post_best_effort(&self.dir, MessageType::SupervisorRestart, id, &said);
        let deadline = Some(self.started + self.cfg.time_budget);
        let out = adopt(self.cfg, &self.dir, run_dir, info, deadline)?;
        self.previous = Some(out.run_id.clone());
        self.root_pgid = info.pgid;
        self.follow(&out)
    }

    /// DONE: the children are waited for, then the task is complete.
    fn complete(&self) -> TaskOutcome {
        let (dir, runs) = (&self.dir, self.runs);
        let orphaned = wait_for_children(self.cfg, dir, self.root_pgid);
        let usage = task_usage(dir).summary();
        let said = format!("task complete: DONE after {runs} run(s); usage {usage}");
        post_best_effort(dir, MessageType::Info, "", &said);
        TaskOutcome::Completed { runs, orphaned }
    }

    fn announce_restart(&self) {
        if self.runs > 0 {
            let (runs, max) = (self.runs, self.cfg.max_restarts);
            let said = format!("restarting the root agent (restart {runs} of {max})");
            post_best_effort(&self.dir, MessageType::Info, "", &said);
        }
    }

    fn start_root(
        &mut self, procs: &dyn AgentProcess,
    ) -> Result<crate::job::JobOutcome, RunnerError> {
        let req = self.req;
        let out = run_job(
            self.cfg,
            procs,
            &JobRequest {
                task_dir: self.dir.clone(),
                project: req.project.clone(),
                task: req.task.clone(),
                agent: req.agent.clone(),
                prompt: self.prompt.clone(),
                parent_run_id: None,
                previous_run_id: self.previous.clone(),
                depth: 0,
                bin_dir: req.bin_dir.clone(),
                deadline: Some(self.started + self.cfg.time_budget),
                resume: self.session.clone(),
                labels: vec![],
            },
        )?;
        self.previous = Some(out.run_id.clone());
        self.session = supervise::resume(&End::of(&out), self.cfg.resume_sessions);
        self.root_pgid = RunInfo::read(&out.run_dir).ok().and_then(|i| i.pgid);
        Ok(out)
    }

    /// A usage limit is not charged as a restart: waiting is the cure, restarting would only hit
    /// it again.
    fn wait_for_reset(&self, out: &JobOutcome, resets_at: Option<i64>) {
        let now = chrono::Utc::now().timestamp();
        let wait = supervise::reset_wait(resets_at, now, self.cfg.usage_limit_wait);
        let wait = wait.min(self.cfg.time_budget.saturating_sub(self.started.elapsed()));
        let said = format!(
            "usage limit reached on {}; waiting {}s for the reset",
            out.backend,
            wait.as_secs()
        );
        post_best_effort(&self.dir, MessageType::Warning, &out.run_id, &said);
        std::thread::sleep(wait);
    }

    /// Does what the supervisor's decision says follows the root's end: a usage limit waits,
    /// uncounted; any other end counts as a run. A fatal failure or a stop ends the task, DONE
    /// completes it, anything else pauses before a restart (after the user's answer, when the
    /// root left a question).
    fn follow(&mut self, out: &JobOutcome) -> Result<Option<TaskOutcome>, RunnerError> {
        let next = supervise::next(&End::of(out), self.dir.join(DONE_FILE).exists());
        if let Next::WaitForReset { resets_at } = next {
            self.wait_for_reset(out, resets_at);
            return Ok(None);
        }
        self.runs += 1;
        self.fast_failures = match out.ended {
            Ended::FailedFast => self.fast_failures + 1,
            _ => 0,
        };
        let (dir, runs) = (&self.dir, self.runs);
        let killed = matches!(out.ended, Ended::Stuck | Ended::Idle);
        if killed && matches!(next, Next::Done | Next::Restart { .. }) {
            let said = format!(
                "root agent was {} and killed; the loop recovers by restarting it",
                out.ended.as_str()
            );
            post_best_effort(dir, MessageType::Info, &out.run_id, &said);
        }
        match next {
            Next::WaitForReset { .. } | Next::Restart { .. } => {}
            Next::Fail { cause } => {
                let said = format!("giving up: backend {} {cause}", out.backend);
                post_best_effort(dir, MessageType::Warning, &out.run_id, &said);
                let backend = out.backend.clone();
                return Ok(Some(TaskOutcome::Failed {
                    runs,
                    backend,
                    cause,
                }));
            }
            Next::Stopped => {
                let said = "root agent stopped by request; the task ends without DONE";
                post_best_effort(dir, MessageType::Info, &out.run_id, said);
                return Ok(Some(TaskOutcome::Stopped { runs }));
            }
            Next::Done => return Ok(Some(self.complete())),
        }
        wait_for_answer(self.cfg, dir, self.started)?;
        let pause = backoff(self.cfg.restart_pause, self.fast_failures);
        if self.fast_failures > 1 {
            let said = format!(
                "{} runs in a row failed before any output; next start in {:.1}s",
                self.fast_failures,
                pause.as_secs_f64()
            );
            post_best_effort(dir, MessageType::Info, "", &said);
        }
        std::thread::sleep(pause);
        Ok(None)
    }
}

/// One restart loop per task: `runs/.task.lock` holds the loop's pid while it runs. A lock whose
/// process is gone (the loop was killed) is taken over.
struct TaskLock(PathBuf);

impl TaskLock {
    fn take(dir: &Path) -> Result<Self, RunnerError> {
        let runs = dir.join("runs");
        std::fs::create_dir_all(&runs)?;
        let path = runs.join(".task.lock");
        for _ in 0..2 {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(mut f) => {
                    use std::io::Write;
                    write!(f, "{}", std::process::id())?;
                    return Ok(TaskLock(path));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let pid = std::fs::read_to_string(&path).unwrap_or_default();
                    let alive = pid.trim().parse::<u32>().is_ok_and(process_alive);
                    if alive {
                        return Err(RunnerError::Invalid(format!(
                            "task {} is already running (loop pid {}); `longrun stop` its root run first",
                            dir.display(),
                            pid.trim()
                        )));
                    }
                    std::fs::remove_file(&path)?;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(RunnerError::Invalid(format!(
            "cannot take {}: another loop raced for it",
            path.display()
        )))
    }
}

impl Drop for TaskLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `pause`, doubled for each fast failure after the first, at most 60 s (or `pause` if larger).
fn backoff(pause: Duration, fast_failures: u32) -> Duration {
    let first = pause.as_millis().min(u128::from(u64::MAX)) as u64;
    let policy = longrun_domain::Backoff::doubling(first, 60_000);
    Duration::from_millis(policy.delay_ms(fast_failures.saturating_sub(1)))
}

/// A QUESTION as the bus's last message means the task waits on the user: the root is restarted
/// only after an ANSWER or USER message (or when the time budget runs out), not charged.
fn wait_for_answer(cfg: &RunnerConfig, dir: &Path, started: Instant) -> Result<(), RunnerError> {
    let bus = Bus::open(dir)?;
    let Some(question) = bus
        .last_said()
        .filter(|m| m.kind == MessageType::Question.as_str())
    else {
        return Ok(());
    };
    post_best_effort(
        dir,
        MessageType::Info,
        "",
        &format!(
            "waiting for an answer to #{}: `longrun bus post --type ANSWER \"…\"`",
            question.seq
        ),
    );
    while started.elapsed() < cfg.time_budget {
        let answered = bus.poll(question.seq)?.iter().any(|m| {
            m.kind == MessageType::Answer.as_str() || m.kind == MessageType::User.as_str()
        });
        if answered {
            return Ok(());
        }
        std::thread::sleep(cfg.child_poll_interval);
    }
    Ok(())
}

/// The root run a dead loop left behind: no parent, no end (its process alive or not). The
/// task lock is held, so whichever loop started it is gone.
fn unended_root(dir: &Path) -> Option<(PathBuf, RunInfo)> {
    list_runs(dir)
        .into_iter()
        .rev()
        .find(|(_, i)| i.is_root() && !i.has_ended())
}

/// `longrun job` processes the root started (in the background) that have no run-info yet:
/// children being started. Only those count: whatever else the root left in its group (a shell,
/// a CLI's helper) is not a child.
fn starting_jobs(dir: &Path, root_pgid: u32) -> Vec<u32> {
    let members = crate::process::group_members(root_pgid);
    if members.is_empty() {
        return members;
    }
    let recorded: Vec<u32> = list_runs(dir)
        .iter()
        .filter_map(|(_, i)| i.runner_pid)
        .collect();
    members
        .into_iter()
        .filter(|pid| !recorded.contains(pid))
        .filter(|pid| is_job_command(&crate::process::cmdline(*pid)))
        .collect()
}

/// `longrun [global flags] job …`: this program, running its `job` command.
fn is_job_command(argv: &[String]) -> bool {
    let ours = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
    let program = argv.first().and_then(|a| Path::new(a).file_name());
    let named = program.is_some_and(|n| {
        n == "longrun" || ours.as_deref().is_some_and(|o| n.to_string_lossy() == o)
    });
    named && argv.iter().skip(1).any(|a| a == "job")
}

/// After DONE: waits for running children up to `child_wait_timeout`; returns those orphaned.
pub(crate) fn wait_for_children(
    cfg: &RunnerConfig, dir: &Path, root_pgid: Option<u32>,
) -> Vec<String> {
    let pending = |dir: &Path| {
        let mut ids = active_children(dir);
        if let Some(g) = root_pgid {
            ids.extend(
                starting_jobs(dir, g)
                    .iter()
                    .map(|p| format!("starting-job-pid-{p}")),
            );
        }
        ids
    };
    let ids = pending(dir);
    if ids.is_empty() {
        return ids;
    }
    post_best_effort(
        dir,
        MessageType::Info,
        "",
        &format!("Waiting for {} children to complete: {ids:?}", ids.len()),
    );
    let deadline = Instant::now() + cfg.child_wait_timeout;
    loop {
        std::thread::sleep(cfg.child_poll_interval);
        let ids = pending(dir);
        if ids.is_empty() {
            return ids;
        }
        if Instant::now() >= deadline {
            post_best_effort(
                dir,
                MessageType::Warning,
                "",
                &format!(
                    "children still running after {}s; completing without them (orphaned): {ids:?}",
                    cfg.child_wait_timeout.as_secs()
                ),
            );
            return ids;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_restart_pause_doubles_with_fast_failures_up_to_a_minute() {
        let p = Duration::from_secs(1);

        let pauses: Vec<u64> = [0, 1, 2, 3, 10].map(|n| backoff(p, n).as_secs()).to_vec();

        assert_eq!(pauses, [1, 1, 2, 4, 60]);
    }
}
