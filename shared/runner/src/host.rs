//! `serve`'s agent host: iteration n of an agent run is one agent process in the run's task
//! folder (`projects_root/<user>/<run id>/`), keyed to (run, n) in its run-info. A redelivered
//! iteration finds that key: it adopts the live process, or reads the ended one's record,
//! and never starts a second agent for the same iteration.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use longrun_domain::clip;
use longrun_domain::decide::CLAIM_REJECTED;
use longrun_domain::run::Run;
use longrun_domain::{AgentProcessInfo, AgentView, TaskSummary, TaskView};
use longrun_ports::{AgentError, AgentHost, AgentTurn, BusPage, CheckRun, Folder};
use tokio::sync::OnceCell;

use crate::RunnerError;
use crate::bus::{Bus, MessageType, post_best_effort};
use crate::config::RunnerConfig;
use crate::job::{JobRequest, adopt, run_job, stop_run};
use crate::process::{LocalProcess, process_alive};
use crate::runinfo::{RunInfo, list_runs};
use crate::supervise::{self, End, Next};
use crate::task::{DONE_FILE, TASK_FILE, root_prompt, wait_for_children};

pub use crate::runinfo::{ITERATION_KEY, RUN_KEY};

/// At most this much of an agent's output is carried into the run's workspace.
const OUTPUT_CHARS: usize = 20_000;
/// At most this many bus entries of one turn are carried into the run's log.
const SAID_MAX: usize = 50;

type Pending = Arc<OnceCell<Result<AgentTurn, String>>>;

/// The price of a usage at a `provider:model`, from the server's model table; `None` when
/// the table does not know the model.
pub type Pricer = Arc<dyn Fn(&str, &longrun_ports::Usage) -> Option<f64> + Send + Sync>;

pub struct LocalAgentHost {
    cfg: Arc<RunnerConfig>,
    /// Put first on the agents' PATH so they can call `longrun job` and `longrun bus`.
    bin_dir: Option<PathBuf>,
    /// Prices the tokens of CLIs that report no cost (Codex, Gemini CLI).
    prices: Option<Pricer>,
    /// Turns in progress in this process: a second delivery of the same iteration waits for
    /// the first's process instead of watching it twice.
    in_flight: Mutex<HashMap<(String, u32), Pending>>,
}

impl LocalAgentHost {
    pub fn new(cfg: RunnerConfig, bin_dir: Option<PathBuf>) -> Self {
        LocalAgentHost {
            cfg: Arc::new(cfg),
            bin_dir,
            prices: None,
            in_flight: Mutex::new(HashMap::new()),
        }
    }

    pub fn with_prices(mut self, prices: Pricer) -> Self {
        self.prices = Some(prices);
        self
    }

    pub fn config(&self) -> &RunnerConfig {
        &self.cfg
    }

    /// `projects_root/<user>/<run id>/`.
    pub fn task_dir(&self, run: &Run) -> PathBuf {
        task_dir(&self.cfg, run)
    }

    fn pending(&self, key: &(String, u32)) -> Pending {
        let mut map = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(key.clone()).or_default().clone()
    }

    fn forget(&self, key: &(String, u32)) {
        let mut map = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        map.remove(key);
    }
}

fn task_dir(cfg: &RunnerConfig, run: &Run) -> PathBuf {
    cfg.projects_root
        .join(folder_name(&run.user_id))
        .join(folder_name(&run.id))
}

/// The run's folder, created with its marker so the monitor never lists it as a terminal task.
fn make_task_dir(cfg: &RunnerConfig, run: &Run) -> Result<PathBuf, RunnerError> {
    let dir = task_dir(cfg, run);
    std::fs::create_dir_all(&dir)?;
    let marker = dir.join(crate::monitor::RUN_MARKER);
    if !marker.exists() {
        std::fs::write(marker, &run.id)?;
    }
    Ok(dir)
}

/// A user or run id as one plain folder name.
fn folder_name(s: &str) -> String {
    let name: String = s
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                true => c,
                false => '_',
            },
        )
        .collect();
    match name.is_empty() || name.starts_with('.') {
        true => format!("u{name}"),
        false => name,
    }
}

/// A turn's tokens at the model its CLI ran, priced as the model table says.
fn price(
    prices: &dyn Fn(&str, &longrun_ports::Usage) -> Option<f64>, turn: &AgentTurn,
) -> Option<f64> {
    let model = turn.model.as_deref()?;
    let usage = longrun_ports::Usage {
        input_tokens: turn.input_tokens.saturating_sub(turn.cached_tokens),
        output_tokens: turn.output_tokens,
        cache_read_tokens: turn.cached_tokens,
        ..Default::default()
    };
    prices(model, &usage)
}

/// `provider:model` of the CLI's run: the model its command line names (`-m`, `--model`).
fn model_of(kind: &str, commandline: &str) -> Option<String> {
    let provider = match kind {
        "claude" => "anthropic",
        "codex" => "openai",
        "gemini" => "gemini",
        _ => return None,
    };
    let words: Vec<&str> = commandline.split_whitespace().collect();
    let named = words.iter().enumerate().find_map(|(i, w)| match *w {
        "-m" | "--model" => words.get(i + 1).map(|m| m.trim_matches('\'').to_string()),
        w => w.strip_prefix("--model=").map(str::to_string),
    })?;
    Some(format!("{provider}:{named}"))
}

/// Runs `f` where blocking is allowed: the runner's file and process work is synchronous.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, RunnerError> + Send + 'static,
) -> Result<T, AgentError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| AgentError::Io(e.to_string()))?
        .map_err(agent_error)
}

fn agent_error(e: RunnerError) -> AgentError {
    match e {
        RunnerError::Invalid(m) => AgentError::Invalid(m),
        e @ RunnerError::Config(_) => AgentError::Invalid(e.to_string()),
        other => AgentError::Io(other.to_string()),
    }
}

#[async_trait::async_trait]
impl AgentHost for LocalAgentHost {
    fn agents(&self) -> Vec<String> {
        self.cfg.backends.keys().cloned().collect()
    }

    async fn turn(&self, run: &Run, n: u32) -> Result<AgentTurn, AgentError> {
        let key = (run.id.clone(), n);
        let pending = self.pending(&key);
        let (cfg, bin_dir, run2) = (self.cfg.clone(), self.bin_dir.clone(), run.clone());
        let prices = self.prices.clone();
        let result = pending
            .get_or_init(|| async move {
                tokio::task::spawn_blocking(move || {
                    let mut turn = turn(&cfg, bin_dir, &run2, n)?;
                    if turn.cost_usd.is_none() {
                        turn.cost_usd = prices.and_then(|p| price(&*p, &turn));
                    }
                    Ok::<_, RunnerError>(turn)
                })
                .await
                .map_err(|e| format!("agent turn panicked: {e}"))
                .and_then(|r| r.map_err(|e| e.to_string()))
            })
            .await
            .clone();
        self.forget(&key);
        result.map_err(AgentError::Io)
    }

    async fn check(&self, run: &Run, command: &str) -> Result<CheckRun, AgentError> {
        let (cfg, run, command) = (self.cfg.clone(), run.clone(), command.to_string());
        blocking(move || {
            let dir = make_task_dir(&cfg, &run)?;
            Ok(crate::check::run_check(
                &dir,
                &command,
                crate::check::CHECK_TIMEOUT,
            )?)
        })
        .await
    }

    async fn stop(&self, run: &Run) -> Result<(), AgentError> {
        let (cfg, dir, id) = (self.cfg.clone(), self.task_dir(run), run.id.clone());
        blocking(move || {
            for (run_dir, info) in list_runs(&dir) {
                if info.serves_run(&id) && !info.has_ended() {
                    stop_run(&cfg, &run_dir)?;
                }
            }
            Ok(())
        })
        .await
    }

    async fn view(&self, run: &Run) -> Result<AgentView, AgentError> {
        let dir = self.task_dir(run);
        blocking(move || view(&dir)).await
    }

    async fn post(&self, run: &Run, text: &str) -> Result<(), AgentError> {
        let (cfg, run, text) = (self.cfg.clone(), run.clone(), text.to_string());
        blocking(move || {
            let dir = make_task_dir(&cfg, &run)?;
            Bus::open(&dir)?
                .post(MessageType::User, "", &text)
                .map(|_| ())
        })
        .await
    }

    async fn tasks(&self) -> Result<Vec<TaskSummary>, AgentError> {
        let root = self.cfg.projects_root.clone();
        blocking(move || Ok(crate::monitor::list_tasks(&root))).await
    }

    async fn task(&self, project: &str, task: &str) -> Result<Option<TaskView>, AgentError> {
        let (root, project, task) = (
            self.cfg.projects_root.clone(),
            project.to_string(),
            task.to_string(),
        );
        blocking(move || crate::monitor::task_view(&root, &project, &task)).await
    }

    async fn bus(&self, folder: Folder<'_>, after: i64) -> Result<BusPage, AgentError> {
        let dir = match folder {
            Folder::Run(run) => Some(self.task_dir(run)),
            Folder::Task { project, task } => {
                crate::monitor::task_folder(&self.cfg.projects_root, project, task)
            }
        };
        let Some(dir) = dir else {
            return Err(AgentError::Invalid("no such task".into()));
        };
        blocking(move || crate::monitor::bus_page(&dir, after)).await
    }
}

/// At most this many bus messages in a view, and this much of each file.
const VIEW_BUS: usize = 200;
const VIEW_CHARS: usize = 8_000;
const TAIL_BYTES: u64 = 4_000;

pub(crate) fn view(dir: &Path) -> Result<AgentView, RunnerError> {
    let runs = list_runs(dir);
    let processes = runs.iter().map(|(_, i)| process_info(i)).collect();
    let newest_root = runs.iter().rev().find(|(_, i)| i.is_root());
    let read = |p: PathBuf| clip(&std::fs::read_to_string(p).unwrap_or_default(), VIEW_CHARS);
    let bus = match dir.join(crate::bus::BUS_DB).exists() {
        true => Bus::open(dir)?.poll(0)?,
        false => vec![],
    };
    let skip = bus.len().saturating_sub(VIEW_BUS);
    Ok(AgentView {
        task_dir: dir.display().to_string(),
        processes,
        task_state: read(dir.join("TASK_STATE.md")),
        output: newest_root.map_or(String::new(), |(d, _)| read(d.join("output.md"))),
        tail: runs.last().map_or(String::new(), |(_, i)| {
            [&i.stdout_path, &i.stderr_path]
                .iter()
                .map(|p| tail(p))
                .filter(|t| !t.is_empty())
                .collect::<Vec<_>>()
                .join("\n")
        }),
        bus: bus.into_iter().skip(skip).collect(),
    })
}

fn process_info(i: &RunInfo) -> AgentProcessInfo {
    let usage = i.usage();
    AgentProcessInfo {
        run_id: i.run_id.clone(),
        iteration: i.serve_iteration,
        previous_run_id: i.previous_run_id.clone(),
        parent_run_id: i.parent_run_id.clone(),
        agent: i.agent.clone(),
        pid: i.pid.map(i64::from),
        start_time: i.start_time.clone(),
        end_time: i.end_time.clone(),
        exit_code: i.known_exit_code(),
        ended: i.ended.map(|e| e.as_str().to_string()),
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cost_usd: usage.cost_usd,
    }
}

/// The last `TAIL_BYTES` of a file, from a line start.
fn tail(path: &Path) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let from = len.saturating_sub(TAIL_BYTES);
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(from)).is_err() || f.read_to_end(&mut buf).is_err() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&buf).into_owned();
    match (from > 0, text.split_once('\n')) {
        (true, Some((_, rest))) => rest.to_string(),
        _ => text,
    }
}

/// The one process of iteration `n`: found (ended or live) or started, then read.
fn turn(
    cfg: &RunnerConfig, bin_dir: Option<PathBuf>, run: &Run, n: u32,
) -> Result<AgentTurn, RunnerError> {
    let dir = make_task_dir(cfg, run)?;
    // TASK.md is the agent's objective: an edit of the run's reaches it at the next start.
    let task_md = dir.join(TASK_FILE);
    if std::fs::read_to_string(&task_md).ok().as_deref() != Some(run.objective.as_str()) {
        std::fs::write(&task_md, &run.objective)?;
    }
    let said_before = Bus::open(&dir)?.poll(0)?.last().map_or(0, |m| m.seq);
    let runs = list_runs(&dir);
    let now = chrono::Utc::now().timestamp();
    // A process that hit a usage limit ended the attempt, not the iteration: once the limit
    // has reset, the iteration starts a new one.
    let mine = runs
        .iter()
        .rev()
        .find(|(_, i)| i.serves(&run.id, n) && i.usage_limit_resets_at.is_none_or(|at| at > now));
    let run_dir = match mine {
        Some((run_dir, info)) if info.has_ended() => run_dir.clone(),
        Some((run_dir, info)) if info.pid.is_some() => {
            // Live, or ended while nobody watched (the server was killed): either way it is
            // this iteration's process, and adopting it records its end.
            let live = match process_alive(info.pid.unwrap_or(0)) {
                true => "live",
                false => "ended, unrecorded,",
            };
            let said = format!(
                "iteration {n} was redelivered; adopting its {live} agent run {} instead of starting another",
                info.run_id
            );
            post_best_effort(&dir, MessageType::SupervisorRestart, &info.run_id, &said);
            adopt(cfg, &dir, run_dir.clone(), info, None)?.run_dir
        }
        _ => {
            // The gate turned the last DONE down: it goes, and the agent is told why.
            let rejected: Vec<&str> = run
                .hints
                .iter()
                .map(String::as_str)
                .filter(|h| h.starts_with(CLAIM_REJECTED))
                .collect();
            if !rejected.is_empty() && dir.join(DONE_FILE).exists() {
                std::fs::remove_file(dir.join(DONE_FILE))?;
                for hint in &rejected {
                    post_best_effort(&dir, MessageType::Warning, "", hint);
                }
            }
            if dir.join(DONE_FILE).exists() {
                return Ok(AgentTurn {
                    ended: "done_before_start".into(),
                    done: true,
                    orphaned: wait_for_children(cfg, &dir, None),
                    ..AgentTurn::default()
                });
            }
            tell_agent(&dir, run);
            let last = runs.iter().rev().find(|(_, i)| i.serves_run(&run.id));
            let previous = last.map(|(_, i)| i.run_id.clone());
            // Resumed as `longrun task` resumes its root: the supervisor's one rule.
            let resume =
                last.and_then(|(_, i)| supervise::resume(&End::recorded(i), cfg.resume_sessions));
            let req = JobRequest {
                task_dir: dir.clone(),
                project: folder_name(&run.user_id),
                task: folder_name(&run.id),
                agent: run.agent.clone(),
                prompt: match rejected.is_empty() {
                    true => root_prompt(&dir, &run.objective),
                    false => format!(
                        "{}\n\nThe platform did not accept your last DONE. {}\nFix what it names, then write DONE again.",
                        root_prompt(&dir, &run.objective),
                        rejected.join("\n")
                    ),
                },
                parent_run_id: None,
                previous_run_id: previous,
                depth: 0,
                bin_dir,
                // The run's running-time budget ends a process that outlives it.
                deadline: Some(
                    std::time::Instant::now()
                        + std::time::Duration::from_millis(
                            run.budgets
                                .max_running_ms
                                .saturating_sub(run.metrics.running_ms),
                        ),
                ),
                resume,
                labels: RunInfo::serve_labels(&run.id, n),
            };
            run_job(cfg, &LocalProcess, &req)?.run_dir
        }
    };
    read_turn(cfg, &dir, &run_dir, said_before)
}

/// The user's answers, on the bus before the agent starts (messages were posted at once).
fn tell_agent(dir: &Path, run: &Run) {
    for a in &run.pending_answers {
        post_best_effort(dir, MessageType::Answer, "", &a.text);
    }
}

/// An ended agent run, as the iteration's result: its usage, DONE (children waited for), a
/// question left on the bus, its output and what it said. What follows the end is the
/// supervisor's decision, carried to the engine: a usage limit defers the iteration to the
/// reset, a fatal failure fails the run; DONE is the engine's exit claim to judge.
fn read_turn(
    cfg: &RunnerConfig, dir: &Path, run_dir: &Path, said_before: i64,
) -> Result<AgentTurn, RunnerError> {
    let info = RunInfo::read(run_dir)?;
    let usage = info.usage();
    let done = dir.join(DONE_FILE).exists();
    let (mut limited_until_ms, mut failure) = (None, None);
    match supervise::next(&End::recorded(&info), done) {
        Next::WaitForReset { resets_at } => {
            let now_ms = chrono::Utc::now().timestamp_millis();
            limited_until_ms = Some(supervise::reset_at_ms(
                resets_at,
                now_ms,
                cfg.usage_limit_wait,
            ));
        }
        Next::Fail { cause } => failure = Some(cause),
        Next::Stopped | Next::Done | Next::Restart { .. } => {}
    }
    let orphaned = match done {
        true => wait_for_children(cfg, dir, info.pgid),
        false => vec![],
    };
    let bus = Bus::open(dir)?;
    let question = bus
        .last_said()
        .filter(|m| m.kind == MessageType::Question.as_str())
        .map(|m| m.body);
    let said = bus
        .poll(said_before)?
        .into_iter()
        .take(SAID_MAX)
        .map(|m| format!("{}: {}", m.kind, clip(&m.body, 500)))
        .collect();
    let output = std::fs::read_to_string(run_dir.join("output.md")).unwrap_or_default();
    Ok(AgentTurn {
        agent_run_id: info.run_id.clone(),
        backend: info.agent.clone(),
        model: info
            .agent_type
            .and_then(|k| model_of(k.as_str(), &info.commandline)),
        exit_code: info.known_exit_code().map(|c| c as i32),
        ended: info.ended.map_or("", |e| e.as_str()).to_string(),
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cached_tokens: usage.cached_input_tokens,
        cost_usd: usage.cost_usd,
        done,
        orphaned,
        question,
        output: clip(&output, OUTPUT_CHARS),
        limited_until_ms,
        said,
        failure,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folder_names_are_one_plain_segment() {
        assert_eq!(folder_name("run_ab12"), "run_ab12");
        assert_eq!(folder_name("../etc"), "___etc");
        assert_eq!(folder_name(""), "u");
        assert_eq!(folder_name("a/b c"), "a_b_c");
    }

    #[test]
    fn the_model_a_cli_runs_is_read_from_its_command_line() {
        assert_eq!(
            model_of("codex", "codex exec --json -m gpt-5 <prompt.md>").as_deref(),
            Some("openai:gpt-5")
        );
        assert_eq!(
            model_of("gemini", "gemini --model=gemini-2.5-pro -p x").as_deref(),
            Some("gemini:gemini-2.5-pro")
        );
        assert_eq!(model_of("codex", "codex exec --json"), None);
        assert_eq!(model_of("command", "my-agent -m x"), None);
    }
}
