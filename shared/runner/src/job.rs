//! One agent run (`longrun job`): choose a backend, create `runs/<run_id>/`, start the agent in
//! the task folder in its own process group, watch its output (idle, stuck), and record the end
//! (run-info, output.md, usage, START/STOP/CRASH/CHILD_DONE on the bus). Blocks until it exits.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::backend::{self, BackendKind, Failure, FailureKind, Report, Usage, UsageLimit};
use crate::bus::{MessageType, post_best_effort};
use crate::config::RunnerConfig;
use crate::process::{Activity, AdoptedAgent, AgentProcess, Spawn, stop_group};
pub use crate::runinfo::Ended;
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
    /// (backend, CLI session) to resume: the previous root run's, used only when the same
    /// backend is chosen again.
    pub resume: Option<(String, String)>,
    /// Extra run-info keys (`serve` keys an iteration of an agent run to its one process).
    pub labels: Vec<(String, String)>,
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
    /// The CLI session it ran in, if the CLI reported one.
    pub session: Option<String>,
    /// Why it failed, when its CLI said (authentication, quota, a transient error) or it could
    /// not start.
    pub failure: Option<Failure>,
}

/// Runs one job. A transient provider error runs the same backend again after 1 s, 2 s, 4 s
/// (three retries); a backend that fails otherwise (before any output, or with an
/// authentication, quota or start failure) is marked degraded for every task, and when no agent
/// was named the next backend is tried (each try is its own run, chained by `previous_run_id`).
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
    let mut retries = longrun_domain::Backoff::PROVIDER.iter();
    let mut again: Option<select::Choice> = None;
    loop {
        let choice = match (again.take(), &req.agent) {
            (Some(c), _) => c,
            (None, Some(name)) => named(cfg, name)?,
            (None, None) => {
                let now = chrono::Utc::now().timestamp();
                select::choose(cfg, &req.task_dir, now, &tried).ok_or_else(|| {
                    RunnerError::Invalid(format!("every backend failed: {}", tried.join(", ")))
                })?
            }
        };
        let out = run_once(cfg, procs, req, &choice, previous.as_deref())?;
        previous = Some(out.run_id.clone());
        let post = |kind, said: &str| post_best_effort(&req.task_dir, kind, &out.run_id, said);
        let failure = out.failure.as_ref().filter(|_| out.limit.is_none());
        if let Some(f) = failure.filter(|f| f.kind == FailureKind::Transient)
            && let Some(ms) = retries.next()
        {
            let n = retries.retries();
            let said = format!(
                "backend {}: {} ({}); retry {n} of 3 in {}s",
                out.backend,
                f.kind.as_str(),
                f.cause,
                ms / 1000
            );
            post(MessageType::Warning, &said);
            std::thread::sleep(Duration::from_millis(ms));
            again = Some(select::Choice {
                backend: choice.backend.clone(),
                reason: format!("retry {n} after a transient error"),
            });
            continue;
        }
        if out.ended != Ended::FailedFast && failure.is_none() {
            return Ok(out);
        }
        let until = chrono::Utc::now().timestamp() + cfg.degraded_cooldown.as_secs() as i64;
        select::mark_degraded(cfg, &out.backend, until);
        let why = match failure {
            Some(f) => format!("{}: {}", f.kind.as_str(), f.cause),
            None => format!("failed before any output (exit {:?})", out.exit_code),
        };
        tried.push(out.backend.clone());
        let more = req.agent.is_none() && tried.len() < cfg.agent_order.len();
        let next = if more { ", trying the next one" } else { "" };
        let secs = cfg.degraded_cooldown.as_secs();
        let said = format!("backend {} {why}; degraded for {secs}s{next}", out.backend);
        post(MessageType::Warning, &said);
        if !more {
            return Ok(out);
        }
        retries = longrun_domain::Backoff::PROVIDER.iter();
    }
}

/// The backend the user named, if the config has it.
fn named(cfg: &RunnerConfig, name: &str) -> Result<select::Choice, RunnerError> {
    if !cfg.backends.contains_key(name) {
        return Err(RunnerError::Invalid(format!(
            "unknown agent {name:?}; configured: {}",
            cfg.backends.keys().cloned().collect::<Vec<_>>().join(", ")
        )));
    }
    Ok(select::Choice {
        backend: name.to_string(),
        reason: "named".into(),
    })
}

fn path_with(bin_dir: Option<&Path>) -> String {
    let old = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    match bin_dir {
        Some(d) => format!("{}:{old}", d.display()),
        None => old,
    }
}

/// One try of one backend: prepare the run folder, start the agent, watch it, record its end.
fn run_once(
    cfg: &RunnerConfig, procs: &dyn AgentProcess, req: &JobRequest, choice: &select::Choice,
    previous: Option<&str>,
) -> Result<JobOutcome, RunnerError> {
    let b = cfg
        .backends
        .get(&choice.backend)
        .ok_or_else(|| RunnerError::Invalid(format!("unknown agent {:?}", choice.backend)))?;
    let run = prepare(cfg, req, choice, b, previous)?;
    let mut agent = match procs.start(&run.spawn) {
        Ok(a) => a,
        Err(e) => return failed_to_start(req, choice, run, &e.to_string()),
    };
    let mut info = run.info.clone();
    info.pid = Some(agent.pid());
    info.pgid = Some(agent.pgid());
    info.write(&run.dir)?;
    let parent = req.parent_run_id.as_deref();
    let parent = parent.map(|p| format!(", parent {p}")).unwrap_or_default();
    let said = format!(
        "agent {} ({}, {}) pid {}{parent}",
        choice.backend,
        b.kind.as_str(),
        choice.reason,
        agent.pid()
    );
    post_best_effort(&req.task_dir, MessageType::Start, &run.id, &said);
    let watched = watch(cfg, req, &run.id, agent.as_mut())?;
    record_end(req, choice, b.kind, run, info, watched)
}

/// Watches a root agent a dead loop started (its run-info says where its output goes) to its
/// end, and records that end like any other run's.
pub fn adopt(
    cfg: &RunnerConfig, task_dir: &Path, run_dir: PathBuf, info: &RunInfo,
    deadline: Option<std::time::Instant>,
) -> Result<JobOutcome, RunnerError> {
    let id = info.run_id.clone();
    let mut agent = AdoptedAgent {
        pid: info.pid.unwrap_or(0),
        pgid: info.pgid.unwrap_or(0),
        stdout: info.stdout_path.clone(),
        stderr: info.stderr_path.clone(),
    };
    let req = JobRequest {
        task_dir: task_dir.to_path_buf(),
        project: info.project_id.clone(),
        task: info.task_id.clone(),
        agent: None,
        prompt: String::new(),
        parent_run_id: None,
        previous_run_id: None,
        depth: 0,
        bin_dir: None,
        deadline,
        resume: None,
        labels: vec![],
    };
    let choice = select::Choice {
        backend: info.agent.clone(),
        reason: "adopted".into(),
    };
    let kind = info.agent_type.unwrap_or(BackendKind::Command);
    let spawn = Spawn {
        argv: Vec::new(),
        cwd: req.task_dir.clone(),
        env: Vec::new(),
        stdin: None,
        stdout: agent.stdout.clone(),
        stderr: agent.stderr.clone(),
    };
    let run = Prepared {
        id,
        dir: run_dir,
        spawn,
        info: info.clone(),
    };
    let mut watched = watch(cfg, &req, &run.id, &mut agent)?;
    watched.adopted = true;
    let info = run.info.clone();
    record_end(&req, &choice, kind, run, info, watched)
}

/// A run folder with its prompt, the process to start, and the run-info written at the start.
struct Prepared {
    id: String,
    dir: PathBuf,
    spawn: Spawn,
    info: RunInfo,
}

fn prepare(
    cfg: &RunnerConfig, req: &JobRequest, choice: &select::Choice,
    b: &crate::config::BackendConfig, previous: Option<&str>,
) -> Result<Prepared, RunnerError> {
    let (run_id, run_dir) = create_run_dir(&req.task_dir)?;
    let prompt_file = run_dir.join("prompt.md");
    std::fs::write(&prompt_file, &req.prompt)?;
    let resume = req
        .resume
        .as_ref()
        .filter(|(name, _)| *name == choice.backend);
    let resume = resume.map(|(_, session)| session.as_str());
    let launch = backend::launch(b, &req.prompt, &prompt_file, resume);
    let (stdout, stderr) = (run_dir.join("stdout.txt"), run_dir.join("stderr.txt"));
    let parent = req.parent_run_id.clone().unwrap_or_default();
    let output_path = run_dir.join("output.md");
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
        ("LONGRUN_PARENT_RUN_ID".into(), parent.clone()),
        ("LONGRUN_DEPTH".into(), req.depth.to_string()),
        ("LONGRUN_AGENT".into(), choice.backend.clone()),
    ];
    if let Some(src) = &cfg.source {
        env.push(("LONGRUN_CONFIG".into(), src.display().to_string()));
    }
    env.extend(launch.env.iter().cloned());

    let info = RunInfo {
        run_id: run_id.clone(),
        project_id: req.project.clone(),
        task_id: req.task.clone(),
        task_dir: req.task_dir.clone(),
        parent_run_id: req.parent_run_id.clone(),
        previous_run_id: previous.map(str::to_string),
        agent: choice.backend.clone(),
        agent_type: Some(b.kind),
        selection: choice.reason.clone(),
        depth: req.depth,
        runner_pid: Some(std::process::id()),
        start_time: now_rfc3339(),
        prompt_path: prompt_file.clone(),
        stdout_path: stdout.clone(),
        stderr_path: stderr.clone(),
        output_path,
        commandline: shell_words(&redacted_argv(&launch.argv, &req.prompt)),
        resumed_session: resume.map(str::to_string),
        ..RunInfo::default()
    }
    .with_labels(&req.labels);

    let spawn = Spawn {
        argv: launch.argv.clone(),
        cwd: req.task_dir.clone(),
        env,
        stdin: launch.prompt_on_stdin.then(|| prompt_file.clone()),
        stdout,
        stderr,
    };
    Ok(Prepared {
        id: run_id,
        dir: run_dir,
        spawn,
        info,
    })
}

fn failed_to_start(
    req: &JobRequest, choice: &select::Choice, run: Prepared, error: &str,
) -> Result<JobOutcome, RunnerError> {
    let mut info = run.info;
    info.end_time = Some(now_rfc3339());
    info.error = Some(error.to_string());
    info.write(&run.dir)?;
    let said = format!("agent {} could not start: {error}", choice.backend);
    post_best_effort(&req.task_dir, MessageType::Crash, &run.id, &said);
    Ok(JobOutcome {
        run_id: run.id,
        run_dir: run.dir,
        backend: choice.backend.clone(),
        exit_code: None,
        ended: Ended::FailedFast,
        usage: Usage::default(),
        limit: None,
        session: None,
        failure: Some(Failure {
            kind: FailureKind::CannotStart,
            cause: error.to_string(),
        }),
    })
}

/// What watching the agent until it exited saw.
struct Watched {
    status: std::process::ExitStatus,
    ended_by: Option<Ended>,
    out_len: u64,
    /// Not our child: the exit status is unknown.
    adopted: bool,
}

/// Signs of life of a run beyond its own output: its live descendants' output, the bus, and
/// the work (CPU, bytes written) of its process group and theirs. Sampled once a second, as
/// it reads `/proc` and the run-infos.
struct Signs<'a> {
    task_dir: &'a Path,
    run_id: &'a str,
    bus: Option<crate::bus::Bus>,
    at: Option<std::time::Instant>,
    progress: u64,
    cpu: u64,
}

impl Signs<'_> {
    /// (progress, cpu): any change in either is a sign of life.
    fn sample(&mut self, own_output: u64, pgid: u32) -> (u64, u64) {
        let due = self
            .at
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(1));
        if due {
            self.at = Some(std::time::Instant::now());
            let runs = crate::runinfo::list_runs(self.task_dir);
            let mine = descendants(&runs, self.run_id);
            let mut groups = vec![pgid];
            let mut output = 0_u64;
            for (_, i) in runs
                .iter()
                .filter(|(_, i)| mine.contains(&i.run_id.as_str()))
            {
                groups.extend(i.pgid);
                let len = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
                output += len(&i.stdout_path) + len(&i.stderr_path);
            }
            let bus = self
                .bus
                .as_ref()
                .and_then(|b| b.last_seq().ok())
                .unwrap_or(0);
            let work = crate::process::work_of_groups(&groups);
            self.progress = output.wrapping_add(bus as u64).wrapping_add(work.written);
            self.cpu = work.cpu_ticks;
        }
        (self.progress.wrapping_add(own_output), self.cpu)
    }
}

/// The unended runs started (directly or not) by `run_id`.
fn descendants<'r>(runs: &'r [(PathBuf, RunInfo)], run_id: &str) -> Vec<&'r str> {
    let mut found: Vec<&str> = Vec::new();
    let mut frontier = vec![run_id];
    while let Some(parent) = frontier.pop() {
        for (_, i) in runs {
            let id = i.run_id.as_str();
            if i.parent_run_id.as_deref() == Some(parent) && !found.contains(&id) {
                found.push(id);
                frontier.push(id);
            }
        }
    }
    found.retain(|id| runs.iter().any(|(_, i)| i.run_id == *id && !i.has_ended()));
    found
}

/// Polls the agent until it exits: kills its group when stuck (no progress, however busy),
/// idle (nothing at all) or out of time.
fn watch(
    cfg: &RunnerConfig, req: &JobRequest, run_id: &str,
    agent: &mut dyn crate::process::RunningAgent,
) -> Result<Watched, RunnerError> {
    let (mut progress, mut cpu) = (Activity::new(), Activity::new());
    let mut signs = Signs {
        task_dir: &req.task_dir,
        run_id,
        bus: crate::bus::Bus::open(&req.task_dir).ok(),
        at: None,
        progress: 0,
        cpu: 0,
    };
    let mut ended_by = None;
    let mut poll = Duration::from_millis(5);
    let post = |kind, said: &str| post_best_effort(&req.task_dir, kind, run_id, said);
    let status = loop {
        if let Some(st) = agent.try_wait()? {
            break st;
        }
        let (p, c) = signs.sample(agent.output_len(), agent.pgid());
        let still = progress.observe(p);
        let quiet = still.min(cpu.observe(c));
        let group = agent.pgid();
        if ended_by.is_none() && still >= cfg.stuck_threshold {
            ended_by = Some(Ended::Stuck);
            let secs = still.as_secs();
            let said = format!(
                "stuck: no output, child output, bus message or write for {secs}s; killing process group {group}"
            );
            post(MessageType::Warning, &said);
            stop_group(group, cfg.stop_grace);
        } else if ended_by.is_none() && quiet >= cfg.idle_threshold {
            ended_by = Some(Ended::Idle);
            let secs = quiet.as_secs();
            let said = format!(
                "idle: nothing moved (output, children, bus, CPU, writes) for {secs}s; killing process group {group}"
            );
            post(MessageType::Warning, &said);
            stop_group(group, cfg.stop_grace);
        } else if ended_by.is_none() && req.deadline.is_some_and(|d| std::time::Instant::now() >= d)
        {
            ended_by = Some(Ended::OutOfTime);
            let said = format!("time budget spent; stopping process group {group}");
            post(MessageType::Warning, &said);
            stop_group(group, cfg.stop_grace);
        }
        // 5 ms doubling to 100 ms: an agent that exits at once is seen at once, a long one costs
        // ten checks a second.
        std::thread::sleep(poll);
        poll = (poll * 2).min(Duration::from_millis(100));
    };
    let out_len = agent.output_len();
    Ok(Watched {
        status,
        ended_by,
        out_len,
        adopted: false,
    })
}

/// Output, usage, how it ended: into run-info, `output.md`, `usage.json` and the bus.
fn record_end(
    req: &JobRequest, choice: &select::Choice, kind: BackendKind, run: Prepared, info: RunInfo,
    w: Watched,
) -> Result<JobOutcome, RunnerError> {
    let run_dir = run.dir;
    let stopped = run_dir.join(STOP_REQUESTED).exists();
    let (exit_code, signal) = match w.adopted {
        true => (None, None),
        false => (w.status.code(), w.status.signal()),
    };
    let stdout_text = std::fs::read_to_string(&run.spawn.stdout).unwrap_or_default();
    // Some CLIs put their error events on stderr.
    let stderr_text = std::fs::read_to_string(&run.spawn.stderr).unwrap_or_default();
    let Report {
        usage,
        limit,
        session,
        answer,
        failure,
    } = backend::parse_output(kind, &format!("{stdout_text}\n{stderr_text}"));
    // A CLI that retried an error by itself and then succeeded did not fail.
    let failure = failure.filter(|_| w.adopted || !w.status.success());
    // The agent's own output.md, else its final answer, else (a plain command) its stdout.
    let output_md = run_dir.join("output.md");
    if !output_md.exists() {
        std::fs::write(&output_md, answer.as_deref().unwrap_or(&stdout_text))?;
    }
    let ended = if stopped {
        Ended::Stopped
    } else if let Some(by) = w.ended_by {
        by
    } else if !w.status.success() && w.out_len == 0 {
        Ended::FailedFast
    } else {
        Ended::Exited
    };

    // `longrun stop` may have written to run-info meanwhile: re-read before the final write.
    let mut info = RunInfo::read(&run_dir).unwrap_or(info);
    info.end_time = Some(now_rfc3339());
    info.exit_code = Some(exit_code.map(i64::from).unwrap_or(-1));
    if signal.is_some() {
        info.signal = signal;
    }
    info.ended = Some(ended);
    // A resumed session reports (some) figures over the whole session: book what this process
    // added, and keep the running total for the next resume.
    let usage = match session_total_before(&req.task_dir, &info) {
        Some(before) => {
            info.session_usage = Some(usage.clone());
            usage.since(&before, kind)
        }
        None => usage,
    };
    if !usage.is_empty() {
        info.usage = Some(usage.clone());
        let pretty = serde_json::to_string_pretty(&usage).unwrap_or_default();
        std::fs::write(run_dir.join("usage.json"), pretty)?;
    }
    if let Some(l) = &limit {
        info.usage_limit_resets_at = Some(l.resets_at.unwrap_or(0));
    }
    if session.is_some() {
        info.session_id = session.clone();
    }
    if failure.is_some() {
        info.failure = failure.clone();
    }
    info.write(&run_dir)?;

    let how = match (exit_code, signal) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some(s)) => format!("signal {s}"),
        _ if w.adopted => "exit status unknown (adopted after a loop restart)".into(),
        _ => "unknown status".into(),
    };
    if !stopped {
        let kind = match w.status.success() {
            true => MessageType::Stop,
            false => MessageType::Crash,
        };
        let said = format!("agent {} ended: {how}", choice.backend);
        post_best_effort(&req.task_dir, kind, &run.id, &said);
    }
    if req.parent_run_id.is_some() {
        let said = format!("{how}; output {}", output_md.display());
        post_best_effort(&req.task_dir, MessageType::ChildDone, &run.id, &said);
    }
    Ok(JobOutcome {
        run_id: run.id,
        run_dir,
        backend: choice.backend.clone(),
        exit_code,
        ended,
        usage,
        limit,
        session,
        failure,
    })
}

/// The session's running total at the end of the run this one resumed, if it resumed one.
fn session_total_before(task_dir: &Path, info: &RunInfo) -> Option<Usage> {
    let session = info.resumed_session.as_deref().filter(|s| !s.is_empty())?;
    crate::runinfo::list_runs(task_dir)
        .into_iter()
        .rev()
        .find(|(_, i)| i.run_id != info.run_id && i.session_id.as_deref() == Some(session))
        .map(|(_, i)| i.session_usage())
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
    let run_id = info.run_id.clone();
    if let Some(at) = &info.end_time {
        return Ok(format!("run {run_id} already ended at {at}"));
    }
    let pgid = info
        .pgid
        .ok_or_else(|| RunnerError::Invalid(format!("run {run_id} has no process group yet")))?;
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
        if i.has_ended() || std::time::Instant::now() >= deadline {
            break i;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    if !info.has_ended() {
        // No job is left to record the end (it was killed too).
        info.end_time = Some(now_rfc3339());
        info.ended = Some(Ended::Stopped);
    }
    info.stopped_at = Some(now_rfc3339());
    info.stop_signal = Some(signal.to_string());
    info.write(run_dir)?;
    let what = format!("stopped by request: {signal} to process group {pgid}");
    post_best_effort(&info.task_dir, MessageType::Stop, &run_id, &what);
    Ok(format!("run {run_id} {what}"))
}
