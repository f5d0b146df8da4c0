//! `longrun`: serve the embedded platform, start and follow runs. Its arguments and exit codes
//! are the `longrun` library (`args`, `exit`); every line it prints goes through `out`.
#![allow(clippy::print_stderr)]

#[macro_use]
mod out;
mod archive;
mod http;
mod remote;
mod research;
mod runner;

mod console {
    include!(concat!(env!("OUT_DIR"), "/console_assets.rs"));
}

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{CommandFactory, Parser};
use longrun::args::{BudgetFlags, Cli, Command, LogFormat, ServeArgs};
use longrun::exit;
use longrun_domain::criteria::{Criterion, Grading};
use longrun_domain::report::{EntityType, NarrativeSource, Relationship, Report};
use longrun_domain::run::{PermissionMode, Run, RunStatus};
use longrun_http::{
    AppConfig, Console, CreateRun, Platform, Tokens, create_run, router_with_console,
};
use longrun_llm::ModelLimits;
use longrun_service::{RetentionPolicy, WorkerConfig};
use longrun_wiring::{Adapters, Embedded, init_tracing};
use tokio::sync::watch;

const DEMO_SCRIPT: &str = include_str!("../../examples/demo.json");
const DEMO_CRITERION: &str = "gives a brewing temperature and time for each tea";
const DEMO_OBJECTIVE: &str = "Write a short field guide to green, black and oolong tea: how each is made, how it tastes, how to brew it.";

// glibc's allocator was a fifth of the embedded engine's CPU (many short-lived strings and
// JSON values per iteration, across worker threads); mimalloc roughly halves that.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(exit::ERROR);
        }
    };
    match runtime.block_on(run_command(cli)) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(exit::ERROR)
        }
    }
}

/// Runs the command; its exit code (`longrun::exit`) when it did what was asked.
async fn run_command(cli: Cli) -> Result<u8> {
    let quiet = cli.json;
    // `serve` says what it does (each committed iteration, each outcome) unless RUST_LOG says
    // otherwise; the other commands only warn (only errors with --json).
    let level = match (&cli.command, quiet) {
        (Command::Serve(_), _) => "info",
        (_, true) => "error",
        (_, false) => "warn",
    };
    init_tracing(cli.log_format == LogFormat::Json, level);
    match cli.command {
        Command::Serve(args) => serve(args, cli.json).await.map(|()| 0),
        Command::Run {
            objective,
            budgets,
            models,
            embedded: true,
            data_dir,
            tools,
            mode,
            agent,
            criteria,
            no_grading,
            grader_model,
            ..
        } => {
            let dir;
            let data_dir = match data_dir {
                Some(d) => d,
                None => {
                    dir = tempfile::tempdir().context("creating a temporary data dir")?;
                    dir.path().to_path_buf()
                }
            };
            let models = if models.is_empty() {
                vec![write_demo_script(&data_dir)?]
            } else {
                models
            };
            let mode = mode.map(|m| parse_mode(&m)).transpose()?;
            let run = RunFlags {
                budgets: &budgets,
                models: &models,
                mode,
                tools: &tools,
                agent,
                criteria: &criteria,
                grading: grading(no_grading, grader_model),
            };
            let report = run_embedded(&data_dir, &objective, run, quiet).await?;
            print_report(&report, cli.json)?;
            Ok(exit::for_status(report.status))
        }
        Command::Openapi => {
            let doc = serde_json::to_string_pretty(&longrun_http::openapi::document())?;
            outln!("{doc}");
            Ok(0)
        }
        Command::Demo { data_dir } => demo(&data_dir, cli.json).await,
        Command::Export {
            run_id,
            data_dir,
            out,
        } => archive::export(&data_dir, &run_id, out.as_deref())
            .await
            .map(|()| 0),
        Command::Import { file, data_dir } => {
            let id = archive::import(&data_dir, &file).await?;
            if cli.json {
                outln!("{}", serde_json::json!({"imported": id}));
            } else {
                outln!("imported run {id}");
            }
            Ok(0)
        }
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "longrun", &mut script);
            out::bytes(&script);
            Ok(0)
        }
        Command::Man { command } => {
            let mut page = Vec::new();
            clap_mangen::Man::new(man_command(&command)?)
                .render(&mut page)
                .context("writing the man page")?;
            out::bytes(&page);
            Ok(0)
        }
        // Blocking by design (processes, files, sleeps): one job or loop per invocation.
        Command::Runner(cmd) => tokio::task::block_in_place(|| runner::run(cmd, quiet)),
        other => remote::run(other, &cli.api_url, cli.token, cli.json).await,
    }
}

/// The command `path` names (`["bus", "post"]`), built, so its page is titled
/// `longrun-bus-post`; the whole CLI for an empty path.
fn man_command(path: &[String]) -> Result<clap::Command> {
    let mut cmd = Cli::command();
    cmd.build();
    for name in path {
        let Some(sub) = cmd.find_subcommand(name).cloned() else {
            let known: Vec<&str> = cmd.get_subcommands().map(|c| c.get_name()).collect();
            bail!("no command `{name}` here; one of: {}", known.join(", "));
        };
        cmd = sub;
    }
    Ok(cmd)
}

/// `longrun demo`: the built-in script's run, its report, and where to look next (with
/// `--json`, the report alone).
async fn demo(data_dir: &Path, json: bool) -> Result<u8> {
    let model = write_demo_script(data_dir)?;
    if !json {
        outln!(
            "longrun demo — a scripted agent writes a small tea guide, one bounded iteration at a time.\n"
        );
    }
    // One criterion, graded: the demo shows a claim the grader turns down, then passes.
    let criteria = [Criterion::Text(DEMO_CRITERION.into())];
    let run = RunFlags {
        budgets: &BudgetFlags::default(),
        models: std::slice::from_ref(&model),
        mode: None,
        tools: &[],
        agent: None,
        criteria: &criteria,
        grading: None,
    };
    let report = run_embedded(data_dir, DEMO_OBJECTIVE, run, json).await?;
    print_report(&report, json)?;
    let code = exit::for_status(report.status);
    if json {
        return Ok(code);
    }
    // Full paths, so each line works pasted into any shell, wherever `longrun` is.
    let dir = std::fs::canonicalize(data_dir).unwrap_or(data_dir.to_path_buf());
    let exe = std::env::current_exe()
        .map(|e| sh_quote(&e.display().to_string()))
        .unwrap_or_else(|_| "longrun".into());
    let token = sh_quote(&dir.join("token").display().to_string());
    let id = &report.run_id;
    outln!("\nWhere to look:");
    outln!(
        "  data (SQLite):  {}",
        dir.join("longrun.sqlite3").display()
    );
    outln!("  the API and the console on this data (leave it running):");
    outln!(
        "    {exe} serve --data-dir {}",
        sh_quote(&dir.display().to_string())
    );
    outln!("  then, in another terminal:");
    outln!("    LONGRUN_TOKEN=$(cat {token}) {exe} report {id}");
    outln!("    LONGRUN_TOKEN=$(cat {token}) {exe} workspace {id}");
    Ok(code)
}

/// `s` as one shell word.
fn sh_quote(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:,@%=".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The local user's token from `token_file`, made on first use. The file is readable by its
/// owner only, as an SSH key is (one made before that rule is tightened).
fn local_token(data_dir: &Path, token_file: &Path) -> Result<String> {
    let mut file = std::fs::OpenOptions::new();
    file.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        file.mode(0o600);
        if token_file.exists() {
            std::fs::set_permissions(token_file, std::fs::Permissions::from_mode(0o600))
                .with_context(|| format!("making {} private", token_file.display()))?;
        }
    }
    if let Ok(t) = std::fs::read_to_string(token_file)
        && !t.trim().is_empty()
    {
        return Ok(t.trim().to_string());
    }
    let t = format!("lr_{}", uuid::Uuid::new_v4().simple());
    longrun_service::files::private_dir(data_dir)?;
    // An empty file left by an earlier start is replaced.
    let _ = std::fs::remove_file(token_file);
    file.open(token_file)
        .and_then(|mut f| std::io::Write::write_all(&mut f, t.as_bytes()))
        .with_context(|| format!("writing {}", token_file.display()))?;
    Ok(t)
}

fn write_demo_script(dir: &Path) -> Result<String> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join("demo-script.json");
    std::fs::write(&path, DEMO_SCRIPT).with_context(|| format!("writing {}", path.display()))?;
    Ok(format!("script:{}", path.display()))
}

async fn serve(args: ServeArgs, json: bool) -> Result<()> {
    // The runner config: agent runs' backends, and serve's own knobs under the flags.
    let agents = runner::agent_host().map_err(|e| anyhow::anyhow!("{e}"))?;
    let ServeArgs {
        data_dir,
        port,
        host,
        mut models,
        active_limit,
        max_inflight,
        model_limits,
        app_base_url,
        read_timeout,
        request_timeout,
        first_byte_timeout,
        max_connections,
        max_connections_per_client,
        drain_grace,
        retention_days,
        retention_export_dir,
    } = args;
    let file = agents.config().serve.clone();
    let data_dir = data_dir
        .or(file.data_dir)
        .unwrap_or_else(|| PathBuf::from(".longrun"));
    let data_dir = data_dir.as_path();
    let port = port.or(file.port).unwrap_or(8080);
    let host = host.or(file.host).unwrap_or_else(|| "127.0.0.1".into());
    if models.is_empty() {
        models = file.models;
    }
    let active_limit = active_limit
        .or(file.active_limit)
        .unwrap_or(longrun_http::config::DEFAULT_ACTIVE_LIMIT);
    let max_inflight = max_inflight
        .or(file.max_inflight)
        .unwrap_or(longrun_service::DEFAULT_MAX_INFLIGHT);
    let app_base_url = app_base_url.or(file.app_base_url);
    let read_timeout = read_timeout.or(file.read_timeout).unwrap_or(30);
    let drain_grace = drain_grace.or(file.drain_grace).unwrap_or(20);
    let mut retention_text = None;
    let retention = match retention_days.or(file.retention_days) {
        Some(days) => {
            let export = retention_export_dir.or(file.retention_export_dir);
            retention_text = Some(match &export {
                Some(dir) => format!(
                    "ended runs are exported to {} and deleted {days} days after they end",
                    dir.display()
                ),
                None => format!("ended runs are deleted {days} days after they end"),
            });
            Some(
                RetentionPolicy::days(days, export)
                    .map_err(|e| anyhow::anyhow!("--retention-days: {e}"))?,
            )
        }
        None if retention_export_dir.is_some() || file.retention_export_dir.is_some() => {
            bail!("--retention-export-dir needs --retention-days (how old a run must be)")
        }
        None => None,
    };
    let model_limits_spec = model_limits.join("; ");
    let model_limits = ModelLimits::parse(model_limits.iter().map(String::as_str))?;
    if max_inflight == 0 {
        bail!("--max-inflight must be at least 1");
    }
    if read_timeout == 0 || request_timeout == 0 || first_byte_timeout == 0 {
        bail!(
            "--read-timeout, --request-timeout and --first-byte-timeout must be at least 1 second"
        );
    }
    if max_connections == 0 || max_connections_per_client == 0 {
        bail!("--max-connections and --max-connections-per-client must be at least 1");
    }
    let demo = models.is_empty();
    if demo {
        models.push(write_demo_script(data_dir)?);
    }
    let mut tokens = match std::env::var("LONGRUN_TOKENS") {
        Ok(spec) => Tokens::parse(&spec)?,
        Err(_) => Tokens::default(),
    };
    let token_file = data_dir.join("token");
    let local = tokens.is_empty();
    if local {
        let token = local_token(data_dir, &token_file)?;
        // The path, not the token: a terminal's output often ends up in a log.
        if !json {
            outln!(
                "No LONGRUN_TOKENS set; user `local` has the token in {} (the CLI reads it from \
                 there; paste it into the console to sign in)",
                token_file.display()
            );
        }
        tokens.insert(&token, "local");
    }
    let listener = tokio::net::TcpListener::bind((host.as_str(), port))
        .await
        .with_context(|| format!("binding {host}:{port}"))?;
    let addr = listener.local_addr()?;
    let mut started = Started {
        addr,
        data_dir,
        models: models.clone(),
        demo,
        token_file: local.then_some(token_file.as_path()),
        active_limit,
        max_inflight,
        model_limits: model_limits_spec,
        max_connections,
        max_connections_per_client,
        retention: retention_text,
        drain_grace,
        recovered: 0,
    };
    let mut config = AppConfig::new(tokens, models)?;
    config.active_limit = active_limit;
    let mut adapters = Adapters::default().with_search_from_env()?;
    adapters.model_limits = model_limits;
    // The terminal's tasks are the machine user's: shown to `local` on a one-user server, and
    // on a shared one only to whom LONGRUN_TASKS_USER names.
    config.tasks_user = std::env::var("LONGRUN_TASKS_USER")
        .ok()
        .filter(|u| !u.trim().is_empty())
        .or_else(|| local.then(|| "local".to_string()));
    // APP_BASE_URL was serve's name for it; the Lambdas always read LONGRUN_APP_BASE_URL.
    let app_base_url = app_base_url.or_else(|| {
        let old = std::env::var("APP_BASE_URL").ok()?;
        eprintln!("warning: APP_BASE_URL is deprecated; set LONGRUN_APP_BASE_URL instead");
        Some(old)
    });
    config.app_base_url = app_base_url.unwrap_or_else(|| format!("http://{addr}"));
    let opts = Embedded {
        worker: WorkerConfig {
            max_inflight,
            ..WorkerConfig::default()
        },
        agents: Some(Arc::new(agents)),
        adapters,
        ..Embedded::default()
    };
    let mut running = longrun_wiring::embedded(Some(data_dir), config, opts)?;
    if let Some(policy) = retention {
        running.set_retention(policy);
    }
    started.recovered = running.recover().await?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let handles = running.spawn(stop_rx);
    let stop = stop_signal();
    started.say(json);
    let app = router_with_console(running.platform.clone(), Console::local(console::ASSETS));
    let read_timeout = Duration::from_secs(read_timeout);
    let timeouts = http::ReadTimeouts {
        first_byte: Duration::from_secs(first_byte_timeout),
        header: read_timeout,
        body: read_timeout,
        request: Duration::from_secs(request_timeout),
    };
    let limits = http::ConnectionLimits {
        total: max_connections,
        per_client: max_connections_per_client,
    };
    let http_runtime = http::serve_apart(listener, app, timeouts, limits, stop).await?;
    let _ = stop_tx.send(true);
    let drained = tokio::time::timeout(Duration::from_secs(drain_grace), async {
        for h in handles {
            let _ = h.await;
        }
    })
    .await;
    if drained.is_err() {
        // Exiting ends them: their leases and messages are released when the next process
        // starts (`Running::recover`), which redoes those iterations at once.
        if json {
            outln!(
                "{}",
                serde_json::json!({"handed_back_after_s": drain_grace})
            );
        } else {
            outln!(
                "iterations still in flight after {drain_grace} s; handed back to the next start"
            );
        }
    }
    // Dropped from within the engine's runtime it would block on its own tasks: let it go apart.
    http_runtime.shutdown_background();
    Ok(())
}

/// What `serve` tells at start, once it listens: where (the API and the console), on what data,
/// with which models and limits. The line with "listening on http://ADDR" comes first: scripts
/// and tests read the address from it.
struct Started<'a> {
    addr: std::net::SocketAddr,
    data_dir: &'a Path,
    models: Vec<String>,
    /// No --model: the built-in demo script.
    demo: bool,
    /// Where user `local`'s token is, when LONGRUN_TOKENS names none.
    token_file: Option<&'a Path>,
    active_limit: u32,
    max_inflight: usize,
    model_limits: String,
    max_connections: usize,
    max_connections_per_client: usize,
    retention: Option<String>,
    drain_grace: u64,
    recovered: usize,
}

impl Started<'_> {
    fn say(&self, json: bool) {
        let base = format!("http://{}", self.addr);
        let console = !console::ASSETS.is_empty();
        let data = std::fs::canonicalize(self.data_dir).unwrap_or(self.data_dir.to_path_buf());
        if json {
            let v = serde_json::json!({
                "listening": base,
                "console": console.then(|| format!("{base}/")),
                "api": format!("{base}/v1"),
                "data_dir": data,
                "token_file": self.token_file,
                "models": self.models,
                "demo_script": self.demo,
                "active_limit": self.active_limit,
                "max_inflight": self.max_inflight,
                "model_limits": self.model_limits,
                "max_connections": self.max_connections,
                "max_connections_per_client": self.max_connections_per_client,
                "retention": self.retention,
                "drain_grace_s": self.drain_grace,
                "recovered_runs": self.recovered,
            });
            outln!("{v}");
            return;
        }
        if self.recovered > 0 {
            outln!(
                "recovered {} run(s) left behind by an earlier crash",
                self.recovered
            );
        }
        outln!(
            "longrun listening on {base} (data in {})",
            self.data_dir.display()
        );
        if console {
            outln!("  console    {base}/  (sign in with a token)");
        } else {
            outln!("  console    not in this build (install npm and build again, or `make web`)");
        }
        outln!("  API        {base}/v1  (its OpenAPI document: {base}/v1/openapi.json)");
        outln!("  data       {} (SQLite)", data.display());
        let demo = if self.demo {
            "  (the built-in demo script; --model openai:… for a real model)"
        } else {
            ""
        };
        outln!("  models     {}{demo}", self.models.join(", "));
        let model_limits = match self.model_limits.as_str() {
            "" => "no model limits".to_string(),
            l => format!("model limits {l}"),
        };
        outln!(
            "  limits     {} active runs per user · {} iterations in flight · {} connections, {} \
             per client · {model_limits}",
            self.active_limit,
            self.max_inflight,
            self.max_connections,
            self.max_connections_per_client
        );
        outln!(
            "  retention  {}",
            self.retention.as_deref().unwrap_or("keep every run")
        );
        outln!("  logs       on stderr, info and up (RUST_LOG=warn for less)");
        outln!(
            "Ctrl-C or SIGTERM stops it; iterations in flight get {} s to finish.",
            self.drain_grace
        );
    }
}

/// `--mode` as the API takes it (`autopilot`, `approve_plan`, `per_write`).
fn parse_mode(mode: &str) -> Result<PermissionMode> {
    serde_json::from_value(serde_json::Value::String(mode.to_string()))
        .with_context(|| format!("--mode `{mode}` must be autopilot, approve_plan or per_write"))
}

/// SIGINT or SIGTERM (what `kill`, systemd and container runtimes send): shut down cleanly.
/// The SIGTERM handler is installed when this is called, not when the future is first polled:
/// `serve` calls it before it says it is listening, so a SIGTERM right after that line is caught.
fn stop_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    async move {
        #[cfg(unix)]
        if let Some(mut term) = term {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// What `run` asks of the run besides its objective: the same in both modes.
struct RunFlags<'a> {
    budgets: &'a BudgetFlags,
    models: &'a [String],
    mode: Option<PermissionMode>,
    tools: &'a [String],
    agent: Option<String>,
    criteria: &'a [Criterion],
    grading: Option<Grading>,
}

/// `--no-grading` and `--grader-model` as the request's `grading`; `None` for the default.
pub(crate) fn grading(no_grading: bool, model: Option<String>) -> Option<Grading> {
    (no_grading || model.is_some()).then_some(Grading {
        text: !no_grading,
        model,
    })
}

/// Runs the loop in-process until the run settles, printing progress unless `quiet`.
async fn run_embedded(
    data_dir: &Path, objective: &str, run: RunFlags<'_>, quiet: bool,
) -> Result<Report> {
    let config = AppConfig::new(Tokens::default(), run.models.to_vec())?;
    let opts = Embedded {
        adapters: Adapters::default().with_search_from_env()?,
        worker: WorkerConfig {
            idle_sleep: Duration::from_millis(5),
            ..WorkerConfig::default()
        },
        agents: match run.agent {
            Some(_) => Some(Arc::new(
                runner::agent_host().map_err(|e| anyhow::anyhow!("{e}"))?,
            )),
            None => None,
        },
        ..Embedded::default()
    };
    let mut running = longrun_wiring::embedded(Some(data_dir), config, opts)?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let handles = running.spawn(stop_rx);
    let p = running.platform.clone();
    let req = CreateRun {
        objective: objective.to_string(),
        completion_criteria: run.criteria.to_vec(),
        grading: run.grading.clone(),
        budgets: run.budgets.input(),
        thresholds: None,
        model: None,
        agent: run.agent.clone(),
        models: run.models.to_vec(),
        permission_mode: run.mode,
        allowed_tools: (!run.tools.is_empty()).then(|| run.tools.to_vec()),
        context: None,
        scope: None,
        project_ids: None,
    };
    let models = run.models.join(", ");
    let run = create_run(&p, "local", req)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if !quiet {
        outln!("run {} started (model {models})", run.id);
    }
    let settled = wait_settled(&p, &run.id, quiet).await;
    let _ = stop_tx.send(true);
    for h in handles {
        let _ = h.await;
    }
    let run = settled?;
    run.report
        .clone()
        .context("the run settled without a report")
}

async fn wait_settled(p: &Platform, run_id: &str, quiet: bool) -> Result<Run> {
    let store = Arc::clone(&p.store);
    let mut shown = 0;
    loop {
        // Committed state, as the API shows it: the run is never ahead of its iterations.
        let Some(run) = store.get_committed_run(run_id).await? else {
            bail!("run {run_id} disappeared");
        };
        if !quiet && run.iteration > shown {
            for it in store.iterations(run_id, shown, 100).await? {
                let tools = it.tool_results.len()
                    + it.executor_results
                        .iter()
                        .map(|e| e.tool_results.len())
                        .sum::<usize>();
                outln!(
                    "  iteration {:>3} · {} · {:>2} tool calls · {:>3} executors · {}",
                    it.n,
                    out::status(it.outcome.as_str(), 16),
                    tools,
                    it.executor_results.len(),
                    truncate(&it.summary, 70)
                );
                for line in iteration_notes(&it) {
                    outln!("        {line}");
                }
                shown = shown.max(it.n);
            }
        }
        let waiting =
            run.status == RunStatus::WaitingOnUser || run.status == RunStatus::WaitingOnChildren;
        if (run.status.is_ended() || waiting) && run.report.is_some() {
            return Ok(run);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// What the loop caught in an iteration: tool calls refused by their schema and the repair
/// pass's corrected calls, and a "done" the exit gate rejected (with its reason).
fn iteration_notes(it: &longrun_domain::IterationRecord) -> Vec<String> {
    let mut notes = vec![];
    for t in &it.tool_results {
        let result = truncate(t.result.lines().next().unwrap_or(""), 80);
        match (t.repaired, t.ok) {
            (true, true) => notes.push(format!("↻ repaired call {} ran: {result}", t.name)),
            (true, false) => notes.push(format!("↻ repaired call {} failed: {result}", t.name)),
            (false, false) => notes.push(format!("✗ call {} refused: {result}", t.name)),
            (false, true) => {}
        }
    }
    // What the gate found of each criterion: a check's or the grader's verdict.
    for v in &it.criteria {
        let kind = serde_json::to_value(v.kind).unwrap_or_default();
        notes.push(format!(
            "{} criterion {} ({}) {}: {}",
            if v.passed { "✓" } else { "✗" },
            v.id,
            kind.as_str().unwrap_or("check"),
            if v.passed { "passed" } else { "failed" },
            truncate(&v.reason, 120)
        ));
    }
    let claimed = it.status_block.as_ref().is_some_and(|s| s.exit_signal);
    if claimed && it.outcome != RunStatus::Completed {
        let why = it
            .hints
            .iter()
            .find(|h| h.starts_with(longrun_domain::decide::CLAIM_REJECTED))
            .map(|h| {
                h.trim_start_matches(longrun_domain::decide::CLAIM_REJECTED)
                    .trim_start_matches(':')
                    .trim()
                    .trim_end_matches(" Fix these before claiming completion again.")
                    .to_string()
            })
            .unwrap_or_else(|| "the exit gate's conditions are not met".into());
        notes.push(format!(
            "✗ premature \"done\" rejected by the exit gate: {}",
            truncate(&why, 160)
        ));
    }
    notes
}

fn truncate(s: &str, n: usize) -> String {
    let mut out: String = s.chars().take(n).collect();
    if s.chars().count() > n {
        out.push('…');
    }
    out
}

/// `text` in lines of at most about `width` characters, broken at spaces.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![];
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

fn print_report(report: &Report, json: bool) -> Result<()> {
    if json {
        outln!("{}", serde_json::to_string_pretty(report)?);
        return Ok(());
    }
    let m = &report.metrics;
    outln!("\n== Report: {} ==", report.title);
    outln!(
        "status:      {} ({:?}: {})",
        out::status(report.status.as_str(), 0),
        report.stopping_reason.kind,
        report.stopping_reason.detail
    );
    outln!("headline:    {}", report.headline);
    let by = match report.summary_source {
        NarrativeSource::Model => "written by the model".to_string(),
        NarrativeSource::Records => format!(
            "built from the iteration records: {}",
            report
                .summary_note
                .as_deref()
                .unwrap_or("no model wrote it")
        ),
    };
    outln!("summary:     ({by})");
    for line in wrap(&report.summary, 90) {
        outln!("  {line}");
    }
    outln!(
        "metrics:     {} iterations · {} LLM calls · {} tokens · ${:.6} · running {} ms of {} ms",
        m.iterations,
        m.llm_calls,
        m.total_tokens,
        m.total_cost_usd,
        m.running_ms,
        m.duration_ms
    );
    for (model, mm) in &m.by_model {
        outln!(
            "  {model}: {} calls, {} in / {} out tokens, ${:.6}",
            mm.calls,
            mm.input_tokens,
            mm.output_tokens,
            mm.cost_usd
        );
    }
    outln!("changes:");
    let kind = |t: EntityType| match t {
        EntityType::Document => "document ",
        EntityType::PlanStep => "plan step",
        EntityType::Run => "run      ",
    };
    let changes = [
        ("created", &report.what_changed.created),
        ("updated", &report.what_changed.updated),
    ];
    for (change, list) in changes {
        for c in list {
            outln!(
                "  {} {:<18} {change} (iteration {:>2})  {}",
                kind(c.kind),
                c.id,
                c.iteration,
                c.title
            );
        }
    }
    for l in &report.what_changed.linked {
        let rel = match l.relationship {
            Relationship::DerivedFrom => "derived from",
            Relationship::Supports => "supports",
        };
        outln!("  link      {} {rel} {}", l.from_id, l.to_id);
    }
    for p in &report.artifacts.plans {
        let done = p
            .steps
            .iter()
            .filter(|s| s.status == longrun_domain::run::StepStatus::Done)
            .count();
        outln!(
            "plan:        {}, {done} of {} step(s) done",
            p.status.as_str(),
            p.steps.len()
        );
    }
    if !report.criteria.is_empty() {
        outln!("criteria:");
    }
    for v in &report.criteria {
        outln!(
            "  {} {} {}: {}",
            if v.passed { "✓" } else { "✗" },
            v.id,
            v.criterion,
            truncate(&v.reason, 120)
        );
    }
    if !report.questions.is_empty() {
        outln!("questions:   {}", report.questions.join(" | "));
    }
    Ok(())
}
