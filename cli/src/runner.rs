//! `longrun task|job|bus|stop|config`: coding-agent CLIs kept working until done (the
//! `longrun-runner` crate). Bad input prints one line and exits non-zero: 2 for input or config,
//! 3 when a task ran out of restarts, 4 when it ran out of time, 5 when its root was stopped.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, Subcommand};
use longrun_runner::bus::{Bus, MessageType};
use longrun_runner::config::{self, Overrides, RunnerConfig};
use longrun_runner::job::{JobRequest, run_job, stop_run};
use longrun_runner::process::LocalProcess;
use longrun_runner::runinfo::find_run;
use longrun_runner::task::{TASK_FILE, TaskOutcome, TaskRequest, run_task, task_dir};
use longrun_runner::{RunnerError, task};

#[derive(Subcommand)]
pub enum RunnerCommand {
    /// Run a task's root agent until DONE: restarts, children, usage limits.
    Task(TaskArgs),
    /// Run one agent to its end (agents call this to delegate; it blocks).
    Job(JobArgs),
    /// Post to, poll or stream a task's message bus.
    Bus {
        #[command(subcommand)]
        cmd: BusCmd,
    },
    /// Stop a run: SIGTERM to its process group, SIGKILL after the grace period.
    Stop {
        run_id: String,
        #[command(flatten)]
        common: Common,
    },
    /// The runner config (~/.longrun/config.hcl, or LONGRUN_CONFIG).
    Config {
        #[command(subcommand)]
        cmd: ConfigCmd,
    },
}

#[derive(Args, Clone, Default)]
pub struct Common {
    /// Folder holding projects (overrides LONGRUN_PROJECTS_ROOT and the config).
    #[arg(long)]
    projects_root: Option<PathBuf>,
}

#[derive(Args)]
pub struct TaskArgs {
    project: String,
    task: String,
    /// Write this as TASK.md first (otherwise TASK.md must already hold the task).
    #[arg(long)]
    objective: Option<String>,
    /// Always use this backend (default: the selection policy).
    #[arg(long)]
    agent: Option<String>,
    #[arg(long)]
    max_restarts: Option<u32>,
    /// Seconds.
    #[arg(long)]
    time_budget: Option<f64>,
    #[command(flatten)]
    common: Common,
}

#[derive(Args)]
pub struct JobArgs {
    /// The prompt (or --prompt-file, or stdin).
    prompt: Option<String>,
    #[arg(long, conflicts_with = "prompt")]
    prompt_file: Option<PathBuf>,
    #[arg(long)]
    agent: Option<String>,
    #[command(flatten)]
    at: NamedTask,
}

/// `--project P --task T` (both or neither), and where projects live.
#[derive(Args, Clone, Default)]
pub struct NamedTask {
    /// The task's project, where LONGRUN_TASK_DIR does not say (outside an agent).
    #[arg(long, requires = "task")]
    project: Option<String>,
    #[arg(long, requires = "project")]
    task: Option<String>,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Clone, Default)]
pub struct BusWhere {
    /// The task folder (default: LONGRUN_TASK_DIR, or --project/--task).
    #[arg(long)]
    task_dir: Option<PathBuf>,
    #[command(flatten)]
    named: NamedTask,
}

#[derive(Subcommand)]
pub enum BusCmd {
    Post {
        /// INFO, OBSERVATION, QUESTION, ANSWER, FACT, WARNING, CHILD_DONE, START, STOP, CRASH,
        /// SUPERVISOR_RESTART or USER.
        #[arg(long = "type", default_value = "INFO")]
        kind: String,
        message: String,
        #[command(flatten)]
        at: BusWhere,
    },
    /// Print the messages after --after and exit.
    Poll {
        #[arg(long, default_value_t = 0)]
        after: i64,
        #[command(flatten)]
        at: BusWhere,
    },
    /// Print messages as they arrive (Ctrl-C to end).
    Stream {
        #[arg(long, default_value_t = 0)]
        after: i64,
        #[command(flatten)]
        at: BusWhere,
    },
}

#[derive(Subcommand)]
pub enum ConfigCmd {
    /// Print the config schema.
    Schema,
    /// Write a commented config with defaults, or add the keys an existing one lacks.
    Init,
    /// Validate the config and print the effective values.
    Check,
}

/// Runs a runner command and exits with its code.
pub fn run(cmd: RunnerCommand, json: bool) -> ! {
    let code = match run_runner_command(cmd, json) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", e.to_string().replace('\n', " "));
            2
        }
    };
    std::process::exit(code)
}

/// `serve`'s agent host: the runner config from its file and environment (no CLI flags).
pub fn agent_host() -> Result<longrun_runner::host::LocalAgentHost, RunnerError> {
    let cfg = RunnerConfig::load(&config::default_path(), Overrides::from_env()?)?;
    let table = longrun_llm::PriceTable::default();
    let prices: longrun_runner::host::Pricer = std::sync::Arc::new(move |model, usage| {
        let (provider, model) = model.split_once(':')?;
        table.get(provider, model).map(|p| p.cost(usage))
    });
    Ok(longrun_runner::host::LocalAgentHost::new(cfg, bin_dir()).with_prices(prices))
}

fn load(common: &Common) -> Result<RunnerConfig, RunnerError> {
    load_with(common, Overrides::default())
}

fn load_with(common: &Common, cli: Overrides) -> Result<RunnerConfig, RunnerError> {
    let cli = Overrides {
        projects_root: common.projects_root.clone(),
        ..cli
    };
    let overrides = cli.over(Overrides::from_env()?);
    Ok(RunnerConfig::load(&config::default_path(), overrides)?)
}

fn bin_dir() -> Option<PathBuf> {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn run_runner_command(cmd: RunnerCommand, json: bool) -> Result<i32, RunnerError> {
    match cmd {
        RunnerCommand::Task(a) => cmd_task(a, json),
        RunnerCommand::Job(a) => cmd_job(a, json),
        RunnerCommand::Bus { cmd } => cmd_bus(cmd, json),
        RunnerCommand::Stop { run_id, common } => {
            let cfg = load(&common)?;
            let dir = env_nonempty("LONGRUN_TASK_DIR")
                .map(|d| PathBuf::from(d).join("runs").join(&run_id))
                .filter(|d| d.is_dir())
                .or_else(|| find_run(&cfg.projects_root, &run_id))
                .ok_or_else(|| {
                    RunnerError::Invalid(format!(
                        "no run {run_id} under {}",
                        cfg.projects_root.display()
                    ))
                })?;
            println!("{}", stop_run(&cfg, &dir)?);
            Ok(0)
        }
        RunnerCommand::Config { cmd } => {
            let path = config::default_path();
            match cmd {
                ConfigCmd::Schema => print!("{}", RunnerConfig::schema()),
                ConfigCmd::Init => {
                    let added = config::init(&path)?;
                    if added.is_empty() {
                        println!("{}: complete, nothing added", path.display());
                    } else {
                        println!("{}: added {}", path.display(), added.join(", "));
                    }
                }
                ConfigCmd::Check => {
                    let cfg = load(&Common::default())?;
                    println!("{cfg:#?}");
                }
            }
            Ok(0)
        }
    }
}

fn cmd_task(a: TaskArgs, json: bool) -> Result<i32, RunnerError> {
    let cfg = load_with(
        &a.common,
        Overrides {
            projects_root: None,
            max_restarts: a.max_restarts,
            time_budget: a.time_budget.map(|s| Duration::from_secs_f64(s.max(0.0))),
        },
    )?;
    if let Some(text) = &a.objective {
        let dir = task_dir(&cfg, &a.project, &a.task)?;
        std::fs::write(dir.join(TASK_FILE), text)?;
    }
    let (project, task_name) = (a.project.clone(), a.task.clone());
    let out = run_task(
        &cfg,
        &LocalProcess,
        &TaskRequest {
            project: a.project,
            task: a.task,
            agent: a.agent,
            bin_dir: bin_dir(),
        },
    )?;
    let usage = task::task_usage(&task_dir(&cfg, &project, &task_name)?).summary();
    let (code, text) = match &out {
        TaskOutcome::Completed { runs, orphaned } if orphaned.is_empty() => {
            (0, format!("completed after {runs} run(s); usage {usage}"))
        }
        TaskOutcome::Completed { runs, orphaned } => (
            0,
            format!("completed after {runs} run(s); orphaned children: {orphaned:?}"),
        ),
        TaskOutcome::RestartsExhausted { runs } => {
            (3, format!("no DONE after {runs} run(s): out of restarts"))
        }
        TaskOutcome::BudgetExhausted { runs } => {
            (4, format!("no DONE after {runs} run(s): out of time"))
        }
        TaskOutcome::Stopped { runs } => (5, format!("stopped after {runs} run(s)")),
    };
    if json {
        println!(
            "{}",
            serde_json::json!({"outcome": format!("{out:?}"), "code": code})
        );
    } else if code == 0 {
        println!("{text}");
    } else {
        eprintln!("error: {text}");
    }
    Ok(code)
}

fn cmd_job(a: JobArgs, json: bool) -> Result<i32, RunnerError> {
    let cfg = load(&a.at.common)?;
    let prompt = match (&a.prompt, &a.prompt_file) {
        (Some(p), _) => p.clone(),
        (None, Some(f)) => std::fs::read_to_string(f)?,
        (None, None) => {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s)?;
            s
        }
    };
    if prompt.trim().is_empty() {
        return Err(RunnerError::Invalid(
            "the prompt is empty: pass it as an argument, --prompt-file or on stdin".into(),
        ));
    }
    let (dir, project, task_name) = match (&a.at.project, &a.at.task) {
        (Some(p), Some(t)) => (task_dir(&cfg, p, t)?, p.clone(), t.clone()),
        _ => {
            let d = env_nonempty("LONGRUN_TASK_DIR").ok_or_else(|| {
                RunnerError::Invalid(
                    "no task: run inside a longrun agent, or pass --project and --task".into(),
                )
            })?;
            (
                PathBuf::from(d),
                env_nonempty("LONGRUN_PROJECT").unwrap_or_default(),
                env_nonempty("LONGRUN_TASK").unwrap_or_default(),
            )
        }
    };
    // Started by an agent: that agent's run is the parent, one level deeper.
    let parent = env_nonempty("LONGRUN_RUN_ID");
    let depth = match &parent {
        Some(_) => {
            env_nonempty("LONGRUN_DEPTH")
                .and_then(|d| d.parse::<u32>().ok())
                .unwrap_or(0)
                + 1
        }
        None => 0,
    };
    let out = run_job(
        &cfg,
        &LocalProcess,
        &JobRequest {
            task_dir: dir,
            project,
            task: task_name,
            agent: a.agent,
            prompt,
            parent_run_id: parent,
            previous_run_id: None,
            depth,
            bin_dir: bin_dir(),
            deadline: None,
            resume: None,
            labels: vec![],
        },
    )?;
    if json {
        println!(
            "{}",
            serde_json::json!({"run_id": out.run_id, "run_dir": out.run_dir, "agent": out.backend,
                "exit_code": out.exit_code, "usage": out.usage})
        );
    } else {
        println!("{} {}", out.run_id, out.run_dir.display());
    }
    Ok(out.exit_code.unwrap_or(1))
}

fn bus_dir(at: &BusWhere) -> Result<PathBuf, RunnerError> {
    if let Some(d) = &at.task_dir {
        return Ok(d.clone());
    }
    if let (Some(p), Some(t)) = (&at.named.project, &at.named.task) {
        let cfg = load(&at.named.common)?;
        return task::task_dir(&cfg, p, t);
    }
    env_nonempty("LONGRUN_TASK_DIR")
        .map(PathBuf::from)
        .ok_or_else(|| {
            RunnerError::Invalid(
                "which task? pass --task-dir or --project/--task (agents get LONGRUN_TASK_DIR)"
                    .into(),
            )
        })
}

fn print_messages(msgs: &[longrun_runner::bus::Message], json: bool) {
    for m in msgs {
        if json {
            println!("{}", serde_json::to_string(m).unwrap_or_default());
        } else {
            let who = if m.run_id.is_empty() { "-" } else { &m.run_id };
            println!("#{} {} {} {who}: {}", m.seq, m.at, m.kind, m.body);
        }
    }
}

fn cmd_bus(cmd: BusCmd, json: bool) -> Result<i32, RunnerError> {
    match cmd {
        BusCmd::Post { kind, message, at } => {
            let t = MessageType::parse(&kind).ok_or_else(|| {
                RunnerError::Invalid(format!(
                    "unknown message type {kind:?}; one of {}",
                    MessageType::ALL.map(|t| t.as_str()).join(", ")
                ))
            })?;
            let dir = bus_dir(&at)?;
            let run_id = env_nonempty("LONGRUN_RUN_ID").unwrap_or_default();
            let seq = Bus::open(&dir)?.post(t, &run_id, &message)?;
            println!("{seq}");
            Ok(0)
        }
        BusCmd::Poll { after, at } => {
            let bus = Bus::open(&bus_dir(&at)?)?;
            print_messages(&bus.poll(after)?, json);
            Ok(0)
        }
        BusCmd::Stream { mut after, at } => {
            let bus = Bus::open(&bus_dir(&at)?)?;
            loop {
                let msgs = bus.poll(after)?;
                if let Some(last) = msgs.last() {
                    after = last.seq;
                }
                print_messages(&msgs, json);
                std::thread::sleep(Duration::from_millis(250));
            }
        }
    }
}
