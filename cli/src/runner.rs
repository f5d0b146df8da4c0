//! `longrun task|job|bus|stop|config`: coding-agent CLIs kept working until done (the
//! `longrun-runner` crate). Bad input prints one line and exits non-zero: 2 for input or config,
//! 3 when a task ran out of restarts, 4 when it ran out of time, 5 when its root was stopped, 6
//! when its backend failed in a way no restart fixes (authentication, quota, cannot start).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use longrun::args::{
    AgentCmd, BusCmd, BusWhere, Common, ConfigCmd, JobArgs, RunnerCommand, TaskArgs,
};
use longrun_runner::bus::{Bus, MessageType};
use longrun_runner::config::{self, Overrides, RunnerConfig};
use longrun_runner::job::{JobRequest, run_job, stop_run};
use longrun_runner::process::LocalProcess;
use longrun_runner::runinfo::find_run;
use longrun_runner::task::{TASK_FILE, TaskOutcome, TaskRequest, run_task, task_dir};
use longrun_runner::{RunnerError, task};
use serde_json::{Map, Value, json};

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
        RunnerCommand::Agent {
            cmd: AgentCmd::Perplexity { model },
        } => Ok(crate::research::perplexity(&model)),
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
            let said = stop_run(&cfg, &dir)?;
            if json {
                outln!("{}", json!({"run_id": run_id, "stopped": said}));
            } else {
                outln!("{said}");
            }
            Ok(0)
        }
        RunnerCommand::Config { cmd } => {
            let path = config::default_path();
            match cmd {
                ConfigCmd::Schema if json => {
                    let keys: Vec<Value> = config::KEYS
                        .iter()
                        .map(|k| json!({"key": k.key, "kind": k.kind, "default": k.default, "doc": k.doc}))
                        .collect();
                    outln!("{}", json!({"keys": keys}));
                }
                ConfigCmd::Schema => out!("{}", RunnerConfig::schema()),
                ConfigCmd::Init => {
                    let added = config::init(&path)?;
                    if json {
                        outln!("{}", json!({"path": path, "added": added}));
                    } else if added.is_empty() {
                        outln!("{}: complete, nothing added", path.display());
                    } else {
                        outln!("{}: added {}", path.display(), added.join(", "));
                    }
                }
                ConfigCmd::Check => {
                    let cfg = load(&Common::default())?;
                    let values = effective(&cfg);
                    if json {
                        outln!(
                            "{}",
                            serde_json::to_string_pretty(&values).unwrap_or_default()
                        );
                    } else {
                        out!("{}", effective_text(&values));
                    }
                }
            }
            Ok(0)
        }
    }
}

fn cmd_task(a: TaskArgs, json: bool) -> Result<i32, RunnerError> {
    let time_budget = match a.time_budget {
        Some(s) => Some(
            config::seconds(s, true).map_err(|message| config::ConfigError {
                file: "command line".into(),
                line: 0,
                key: "--time-budget".into(),
                message,
            })?,
        ),
        None => None,
    };
    let cfg = load_with(
        &a.common,
        Overrides {
            projects_root: None,
            max_restarts: a.max_restarts,
            time_budget,
        },
    )?;
    if let Some(text) = &a.objective {
        let dir = task_dir(&cfg, &a.project, &a.task)?;
        std::fs::write(dir.join(TASK_FILE), text)?;
    }
    let (project, task_name) = (a.project.clone(), a.task.clone());
    let dir = task_dir(&cfg, &project, &task_name)?;
    let follow = FollowBus::start(&dir);
    let out = run_task(
        &cfg,
        &LocalProcess,
        &TaskRequest {
            project: a.project,
            task: a.task,
            agent: a.agent,
            bin_dir: bin_dir(),
        },
    );
    follow.finish();
    let out = out?;
    let spent = task::task_usage(&dir);
    let usage = spent.summary();
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
        TaskOutcome::Failed {
            runs,
            backend,
            cause,
        } => (
            6,
            format!("agent {backend} failed after {runs} run(s): {cause}"),
        ),
    };
    if json {
        let mut v = json!({
            "outcome": out.as_str(),
            "runs": out.runs(),
            "code": code,
            "message": text,
            "task_dir": dir,
            "usage": spent,
        });
        match &out {
            TaskOutcome::Completed { orphaned, .. } => v["orphaned"] = json!(orphaned),
            TaskOutcome::Failed { backend, cause, .. } => {
                v["backend"] = json!(backend);
                v["cause"] = json!(cause);
            }
            _ => {}
        }
        outln!("{v}");
    } else if code == 0 {
        outln!("{text}");
    } else {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "error: {text}");
    }
    Ok(code)
}

/// Prints the task's bus on stderr while the loop runs, one line a message (starts, exits,
/// restarts and why, children waited for, questions, usage-limit waits, DONE): stdout keeps
/// only the outcome.
struct FollowBus {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FollowBus {
    fn start(dir: &Path) -> Self {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let Ok(bus) = Bus::open(dir) else {
            return FollowBus { stop, thread: None };
        };
        let mut after = bus.last_seq().unwrap_or(0);
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            loop {
                // Read the flag before polling, so the last poll sees everything posted.
                let last = flag.load(Ordering::Acquire);
                for m in bus.poll(after).unwrap_or_default() {
                    after = m.seq;
                    let time = m.at.get(11..19).unwrap_or(&m.at);
                    let who = match m.run_id.is_empty() {
                        true => String::new(),
                        false => format!(" [{}]", m.run_id),
                    };
                    let line = format!("{time} {}{who}: {}", m.kind, m.body.replace('\n', " "));
                    use std::io::Write;
                    let _ = writeln!(std::io::stderr(), "{line}");
                }
                if last {
                    return;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        });
        FollowBus {
            stop,
            thread: Some(thread),
        }
    }

    fn finish(mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn cmd_job(a: JobArgs, json: bool) -> Result<i32, RunnerError> {
    let cfg = load(&a.at.common)?;
    let prompt = match (a.prompt.as_ref().or(a.prompt_flag.as_ref()), &a.prompt_file) {
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
    let failure = out
        .failure
        .as_ref()
        .map(|f| format!("{}: {}", f.kind.as_str(), f.cause));
    if json {
        outln!(
            "{}",
            serde_json::json!({"run_id": out.run_id, "run_dir": out.run_dir, "agent": out.backend,
                "exit_code": out.exit_code, "usage": out.usage, "failure": failure})
        );
    } else {
        outln!("{} {}", out.run_id, out.run_dir.display());
        if let Some(f) = &failure {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "error: agent {}: {f}", out.backend);
        }
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
            outln!("{}", serde_json::to_string(m).unwrap_or_default());
        } else {
            let who = if m.run_id.is_empty() { "-" } else { &m.run_id };
            outln!("#{} {} {} {who}: {}", m.seq, m.at, m.kind, m.body);
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
            outln!("{seq}");
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

/// The config's effective values (file, environment and defaults merged), for `config check`:
/// durations in seconds, a backend's token only as set or not, its environment by name only.
fn effective(cfg: &RunnerConfig) -> Value {
    let secs = |d: Duration| json!(d.as_secs_f64());
    let backends: Map<String, Value> = cfg
        .backends
        .iter()
        .map(|(name, b)| {
            let prompt = match b.prompt_via {
                config::PromptVia::Stdin => "stdin",
                config::PromptVia::Arg => "argument",
            };
            let v = json!({
                "type": b.kind.as_str(),
                "command": b.command,
                "args": b.args,
                "prompt": prompt,
                "weight": b.weight,
                "token": if b.token.is_some() { "set" } else { "not set" },
                "token_env": b.token_env,
                "env": b.env.keys().collect::<Vec<_>>(),
            });
            (name.clone(), v)
        })
        .collect();
    let serve = &cfg.serve;
    let mut serve_block = Map::new();
    let mut set = |key: &str, v: Value| {
        if !v.is_null() && v != json!([]) {
            serve_block.insert(key.to_string(), v);
        }
    };
    set("data_dir", json!(serve.data_dir));
    set("host", json!(serve.host));
    set("port", json!(serve.port));
    set("models", json!(serve.models));
    set("active_limit", json!(serve.active_limit));
    set("max_inflight", json!(serve.max_inflight));
    set("app_base_url", json!(serve.app_base_url));
    set("read_timeout", json!(serve.read_timeout));
    set("drain_grace", json!(serve.drain_grace));
    set("retention_days", json!(serve.retention_days));
    set("retention_export_dir", json!(serve.retention_export_dir));
    json!({
        "source": cfg.source,
        "projects_root": cfg.projects_root,
        "max_restarts": cfg.max_restarts,
        "time_budget": secs(cfg.time_budget),
        "restart_pause": secs(cfg.restart_pause),
        "child_wait_timeout": secs(cfg.child_wait_timeout),
        "child_poll_interval": secs(cfg.child_poll_interval),
        "idle_threshold": secs(cfg.idle_threshold),
        "stuck_threshold": secs(cfg.stuck_threshold),
        "stop_grace": secs(cfg.stop_grace),
        "degraded_cooldown": secs(cfg.degraded_cooldown),
        "usage_limit_wait": secs(cfg.usage_limit_wait),
        "selection": match cfg.selection {
            config::Selection::RoundRobin => "round_robin",
            config::Selection::Lucky => "lucky",
        },
        "agent_order": cfg.agent_order,
        "max_delegation_depth": cfg.max_delegation_depth,
        "resume_sessions": cfg.resume_sessions,
        "backends": backends,
        "serve": serve_block,
    })
}

/// `effective` for a person: `key  value` a line, durations with their unit, a backend a line.
fn effective_text(values: &Value) -> String {
    const DURATIONS: [&str; 9] = [
        "time_budget",
        "restart_pause",
        "child_wait_timeout",
        "child_poll_interval",
        "idle_threshold",
        "stuck_threshold",
        "stop_grace",
        "degraded_cooldown",
        "usage_limit_wait",
    ];
    let plain = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Array(a) if a.is_empty() => "(none)".into(),
        Value::Array(a) => a
            .iter()
            .map(|x| x.as_str().map_or(x.to_string(), str::to_string))
            .collect::<Vec<_>>()
            .join(" "),
        Value::Null => "(not set)".into(),
        v => v.to_string(),
    };
    let mut out = match values["source"].as_str() {
        Some(file) => format!("{file}: valid\n"),
        None => "no config file: the defaults (and the environment)\n".to_string(),
    };
    let Some(map) = values.as_object() else {
        return out;
    };
    for (key, v) in map {
        match key.as_str() {
            "source" => {}
            "backends" | "serve" => {
                let Some(entries) = v.as_object() else {
                    continue;
                };
                if entries.is_empty() {
                    out.push_str(&format!("{key:<22}(none set)\n"));
                }
                for (name, e) in entries {
                    let line = match e.as_object() {
                        Some(fields) => fields
                            .iter()
                            .filter(|(_, f)| !f.is_null() && *f != &json!([]))
                            .map(|(k, f)| format!("{k}: {}", plain(f)))
                            .collect::<Vec<_>>()
                            .join(" · "),
                        None => plain(e),
                    };
                    let label = format!("{} {name}", key.trim_end_matches('s'));
                    out.push_str(&format!("{label:<22}{line}\n"));
                }
            }
            k if DURATIONS.contains(&k) => out.push_str(&format!("{key:<22}{} s\n", plain(v))),
            _ => out.push_str(&format!("{key:<22}{}\n", plain(v))),
        }
    }
    out
}
