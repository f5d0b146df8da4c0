//! One agent run (`longrun job`): choose a backend, create `runs/<run_id>/`, start the agent in
//! the task folder in its own process group, watch its output (idle, stuck), and record the end
//! (run-info, output.md, usage, START/STOP/CRASH/CHILD_DONE on the bus). Blocks until it exits.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::backend::{self, Report, Usage, UsageLimit};
use crate::bus::{MessageType, post_best_effort};
use crate::config::RunnerConfig;
use crate::process::{Activity, AgentProcess, Spawn, stop_group};
use crate::runinfo::{RunInfo, create_run_dir};
use crate::{RunnerError, now_rfc3339, select};

/// Marker `longrun stop` leaves in a run folder: the run's end is then the stop's to report.
pub const STOP_REQUESTED: &str = "stop-requested";

#[derive(Debug, Clone)]
pub struct JobRequest {
    pub task_dir: PathBuf,
    pub project: String,
    pub task: String,
    /// A backend name; None = the selection policy (with failover past fast failures).
    pub agent: Option<String>,
    pub prompt: String,
    pub parent_run_id: Option<String>,
    pub previous_run_id: Option<String>,
    /// 0 for the root agent; a child's is its parent's + 1.
    pub depth: u32,
    /// Put first on the agent's PATH so it can call `longrun job` and `longrun bus`.
    pub bin_dir: Option<PathBuf>,
    /// When the task's time budget ends: a run still going then is stopped.
    pub deadline: Option<std::time::Instant>,
}

/// How the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    Exited,
    /// Exited non-zero before writing any output: the backend is marked degraded.
    FailedFast,
    /// No output for `stuck_threshold`: its group was killed.
    Stuck,
    /// Still running when the task's time budget ended: its group was stopped.
    OutOfTime,
    /// `longrun stop` stopped it.
    Stopped,
}

impl Ended {
    pub fn as_str(self) -> &'static str {
        match self {
            Ended::Exited => "exited",
            Ended::FailedFast => "failed_fast",
            Ended::Stuck => "stuck",
            Ended::OutOfTime => "out_of_time",
            Ended::Stopped => "stopped",
        }
    }
}

#[derive(Debug, Clone)]
pub struct JobOutcome {
    pub run_id: String,
    pub run_dir: PathBuf,
    pub backend: String,
    pub exit_code: Option<i32>,
    pub ended: Ended,
    pub usage: Usage,
    pub limit: Option<UsageLimit>,
}

/// Runs one job; when no agent was named, a backend that fails fast is marked degraded and the
/// next one is tried (each try is its own run, chained by `previous_run_id`).
pub fn run_job(
    cfg: &RunnerConfig, procs: &dyn AgentProcess, req: &JobRequest,
) -> Result<JobOutcome, RunnerError> {
    if req.depth > cfg.max_delegation_depth {
        return Err(RunnerError::Invalid(format!(
            "delegation depth {} exceeds max_delegation_depth {}: finish this work here instead of starting another agent",
            req.depth, cfg.max_delegation_depth
        )));
    }
    let mut tried: Vec<String> = Vec::new();
    let mut previous = req.previous_run_id.clone();
    loop {
        let choice = match &req.agent {
            Some(name) => {
                if !cfg.backends.contains_key(name) {
                    return Err(RunnerError::Invalid(format!(
                        "unknown agent {name:?}; configured: {}",
                        cfg.backends.keys().cloned().collect::<Vec<_>>().join(", ")
                    )));
                }
                select::Choice {
                    backend: name.clone(),
                    reason: "named".into(),
                }
            }
            None => {
                let now = chrono::Utc::now().timestamp();
                match select::choose(cfg, &req.task_dir, now, &tried) {
                    Some(c) => c,
                    None => {
                        return Err(RunnerError::Invalid(format!(
                            "every backend failed fast: {}",
                            tried.join(", ")
                        )));
                    }
                }
            }
        };
        let out = run_once(cfg, procs, req, &choice, previous.as_deref())?;
        if out.ended == Ended::FailedFast && req.agent.is_none() {
            let until = chrono::Utc::now().timestamp() + cfg.degraded_cooldown.as_secs() as i64;
            select::mark_degraded(&req.task_dir, &out.backend, until);
            post_best_effort(
                &req.task_dir,
                MessageType::Warning,
                &out.run_id,
                &format!(
                    "backend {} failed before any output (exit {:?}); degraded for {}s, trying the next one",
                    out.backend,
                    out.exit_code,
                    cfg.degraded_cooldown.as_secs()
                ),
            );
            tried.push(out.backend.clone());
            previous = Some(out.run_id.clone());
            if tried.len() < cfg.agent_order.len() {
                continue;
            }
        }
        return Ok(out);
    }
}

fn path_with(bin_dir: Option<&Path>) -> String {
    let old = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    match bin_dir {
        Some(d) => format!("{}:{old}", d.display()),
        None => old,
    }
}

fn run_once(
    cfg: &RunnerConfig, procs: &dyn AgentProcess, req: &JobRequest, choice: &select::Choice,
    previous: Option<&str>,
) -> Result<JobOutcome, RunnerError> {
    let b = cfg
        .backends
        .get(&choice.backend)
        .ok_or_else(|| RunnerError::Invalid(format!("unknown agent {:?}", choice.backend)))?;
    let (run_id, run_dir) = create_run_dir(&req.task_dir)?;
    let prompt_file = run_dir.join("prompt.md");
    std::fs::write(&prompt_file, &req.prompt)?;
    let launch = backend::launch(b, &req.prompt, &prompt_file);
    let (stdout, stderr) = (run_dir.join("stdout.txt"), run_dir.join("stderr.txt"));
    let mut env = vec![
        ("PATH".to_string(), path_with(req.bin_dir.as_deref())),
        ("LONGRUN_RUN_ID".into(), run_id.clone()),
        ("LONGRUN_RUN_DIR".into(), run_dir.display().to_string()),
        (
            "LONGRUN_TASK_DIR".into(),
            req.task_dir.display().to_string(),
        ),
        ("LONGRUN_PROJECT".into(), req.project.clone()),
        ("LONGRUN_TASK".into(), req.task.clone()),
        (
            "LONGRUN_PARENT_RUN_ID".into(),
            req.parent_run_id.clone().unwrap_or_default(),
        ),
        ("LONGRUN_DEPTH".into(), req.depth.to_string()),
        ("LONGRUN_AGENT".into(), choice.backend.clone()),
    ];
    if let Some(src) = &cfg.source {
        env.push(("LONGRUN_CONFIG".into(), src.display().to_string()));
    }
    env.extend(launch.env.iter().cloned());
    let spawn = Spawn {
        argv: launch.argv.clone(),
        cwd: req.task_dir.clone(),
        env,
        stdin: launch.prompt_on_stdin.then(|| prompt_file.clone()),
        stdout: stdout.clone(),
        stderr: stderr.clone(),
    };

    let mut info = RunInfo::default();
    info.set("run_id", run_id.clone());
    info.set("project_id", req.project.clone());
    info.set("task_id", req.task.clone());
    info.set(
        "parent_run_id",
        req.parent_run_id.clone().unwrap_or_default(),
    );
    info.set("previous_run_id", previous.unwrap_or_default());
    info.set("agent", choice.backend.clone());
    info.set("agent_type", b.kind.as_str());
    info.set("selection", choice.reason.clone());
    info.set("depth", req.depth);
    info.set("runner_pid", std::process::id());
    info.set("start_time", now_rfc3339());
    info.set("end_time", "");
    info.set("task_dir", req.task_dir.display().to_string());
    info.set("prompt_path", prompt_file.display().to_string());
    info.set("stdout_path", stdout.display().to_string());
    info.set("stderr_path", stderr.display().to_string());
    info.set(
        "output_path",
        run_dir.join("output.md").display().to_string(),
    );
    info.set(
        "commandline",
        shell_words(&redacted_argv(&launch.argv, &req.prompt)),
    );

    let mut agent = match procs.start(&spawn) {
        Ok(a) => a,
        Err(e) => {
            info.set("end_time", now_rfc3339());
            info.set("error", e.to_string());
            info.write(&run_dir)?;
            post_best_effort(
                &req.task_dir,
                MessageType::Crash,
                &run_id,
                &format!("agent {} could not start: {e}", choice.backend),
            );
            return Ok(JobOutcome {
                run_id,
                run_dir,
                backend: choice.backend.clone(),
                exit_code: None,
                ended: Ended::FailedFast,
                usage: Usage::default(),
                limit: None,
            });
        }
    };
    info.set("pid", agent.pid());
    info.set("pgid", agent.pgid());
    info.write(&run_dir)?;
    post_best_effort(
        &req.task_dir,
        MessageType::Start,
        &run_id,
        &format!(
            "agent {} ({}, {}) pid {}{}",
            choice.backend,
            b.kind.as_str(),
            choice.reason,
            agent.pid(),
            req.parent_run_id
                .as_deref()
                .map(|p| format!(", parent {p}"))
                .unwrap_or_default()
        ),
    );

    let mut activity = Activity::new();
    let mut idle_noted = false;
    let mut stuck = false;
    let mut out_of_time = false;
    let status = loop {
        if let Some(st) = agent.try_wait()? {
            break st;
        }
        let quiet = activity.observe(agent.output_len());
        if !stuck && quiet >= cfg.stuck_threshold {
            stuck = true;
            post_best_effort(
                &req.task_dir,
                MessageType::Warning,
                &run_id,
                &format!(
                    "stuck: no output for {}s; killing process group {}",
                    quiet.as_secs(),
                    agent.pgid()
                ),
            );
            stop_group(agent.pgid(), cfg.stop_grace);
        } else if !out_of_time && req.deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            out_of_time = true;
            post_best_effort(
                &req.task_dir,
                MessageType::Warning,
                &run_id,
                &format!("time budget spent; stopping process group {}", agent.pgid()),
            );
            stop_group(agent.pgid(), cfg.stop_grace);
        } else if !idle_noted && quiet >= cfg.idle_threshold {
            idle_noted = true;
            post_best_effort(
                &req.task_dir,
                MessageType::Observation,
                &run_id,
                &format!("idle: no output for {}s", quiet.as_secs()),
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let out_len = agent.output_len();
    activity.observe(out_len);

    let stopped = run_dir.join(STOP_REQUESTED).exists();
    let exit_code = status.code();
    let signal = status.signal();
    let stdout_text = std::fs::read_to_string(&stdout).unwrap_or_default();
    let Report { usage, limit } = backend::parse_output(b.kind, &stdout_text);
    let output_md = run_dir.join("output.md");
    if !output_md.exists() {
        std::fs::write(&output_md, &stdout_text)?;
    }
    let ended = if stopped {
        Ended::Stopped
    } else if stuck {
        Ended::Stuck
    } else if out_of_time {
        Ended::OutOfTime
    } else if !status.success() && out_len == 0 {
        Ended::FailedFast
    } else {
        Ended::Exited
    };

    // `longrun stop` may have written to run-info meanwhile: re-read before the final write.
    let mut info = RunInfo::read(&run_dir).unwrap_or(info);
    info.set("end_time", now_rfc3339());
    info.set("exit_code", exit_code.map(i64::from).unwrap_or(-1));
    if let Some(s) = signal {
        info.set("signal", s);
    }
    info.set("ended", ended.as_str());
    if !usage.is_empty() {
        info.set("usage", serde_json::to_value(&usage).unwrap_or_default());
        std::fs::write(
            run_dir.join("usage.json"),
            serde_json::to_string_pretty(&usage).unwrap_or_default(),
        )?;
    }
    if let Some(l) = &limit {
        info.set("usage_limit_resets_at", l.resets_at.unwrap_or(0));
    }
    info.write(&run_dir)?;

    let how = match (exit_code, signal) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(s)) => format!("signal {s}"),
        _ => "unknown status".into(),
    };
    if !stopped {
        let kind = if status.success() {
            MessageType::Stop
        } else {
            MessageType::Crash
        };
        post_best_effort(
            &req.task_dir,
            kind,
            &run_id,
            &format!("agent {} ended: {how}", choice.backend),
        );
    }
    if req.parent_run_id.is_some() {
        post_best_effort(
            &req.task_dir,
            MessageType::ChildDone,
            &run_id,
            &format!("{how}; output {}", output_md.display()),
        );
    }
    Ok(JobOutcome {
        run_id,
        run_dir,
        backend: choice.backend.clone(),
        exit_code,
        ended,
        usage,
        limit,
    })
}

/// The command line with the prompt shortened: run-info is read by people, the prompt has its
/// own file.
fn redacted_argv(argv: &[String], prompt: &str) -> Vec<String> {
    argv.iter()
        .map(|a| {
            if !prompt.is_empty() && a == prompt {
                "<prompt.md>".to_string()
            } else {
                a.clone()
            }
        })
        .collect()
}

fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:@,+<>".contains(c))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Stops a run: SIGTERM to its group, SIGKILL after `stop_grace`; recorded in run-info and as
/// STOP on the bus. Returns what was done, for the user.
pub fn stop_run(cfg: &RunnerConfig, run_dir: &Path) -> Result<String, RunnerError> {
    let info = RunInfo::read(run_dir)?;
    let run_id = info.str("run_id").to_string();
    if !info.str("end_time").is_empty() {
        return Ok(format!(
            "run {run_id} already ended at {}",
            info.str("end_time")
        ));
    }
    let pgid = info
        .int("pgid")
        .ok_or_else(|| RunnerError::Invalid(format!("run {run_id} has no process group yet")))?
        as u32;
    std::fs::write(run_dir.join(STOP_REQUESTED), now_rfc3339())?;
    let sent = stop_group(pgid, cfg.stop_grace);
    let signal = match sent {
        Some(crate::process::Signal::Kill) => "SIGKILL",
        Some(_) => "SIGTERM",
        None => "none (group already gone)",
    };
    // Let the job record the exit first, then add the stop to the same file.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let mut info = loop {
        let i = RunInfo::read(run_dir)?;
        if !i.str("end_time").is_empty() || std::time::Instant::now() >= deadline {
            break i;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    if info.str("end_time").is_empty() {
        // No job is left to record the end (it was killed too).
        info.set("end_time", now_rfc3339());
        info.set("ended", "stopped");
    }
    info.set("stopped_at", now_rfc3339());
    info.set("stop_signal", signal);
    info.write(run_dir)?;
    let what = format!("stopped by request: {signal} to process group {pgid}");
    post_best_effort(
        Path::new(info.str("task_dir")),
        MessageType::Stop,
        &run_id,
        &what,
    );
    Ok(format!("run {run_id} {what}"))
}
