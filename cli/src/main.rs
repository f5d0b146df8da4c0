//! `longrun`: serve the embedded platform, start and follow runs.
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod archive;
mod http;
mod remote;
mod runner;

mod console {
    include!(concat!(env!("OUT_DIR"), "/console_assets.rs"));
}

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand};
use longrun_domain::report::{ChangeAction, ChangeKind, NarrativeSource, Report};
use longrun_domain::run::{BudgetsInput, PermissionMode, Run, RunStatus};
use longrun_http::{
    AppConfig, Console, CreateRun, Embedded, Platform, Tokens, create_run, init_tracing,
    router_with_console,
};
use longrun_llm::ModelLimits;
use longrun_service::{RetentionPolicy, WorkerConfig};
use tokio::sync::watch;

const DEMO_SCRIPT: &str = include_str!("../../examples/demo.json");
const DEMO_OBJECTIVE: &str = "Write a short field guide to green, black and oolong tea: how each is made, how it tastes, how to brew it.";

#[derive(Parser)]
#[command(
    name = "longrun",
    version,
    about = "Long-running LLM agent runs, one bounded iteration at a time"
)]
struct Cli {
    /// API base URL for the client commands.
    #[arg(
        long,
        global = true,
        env = "LONGRUN_API_URL",
        default_value = "http://127.0.0.1:8080"
    )]
    api_url: String,
    /// Bearer token (default: LONGRUN_TOKEN, else the token `serve` wrote to ./.longrun/token).
    #[arg(long, global = true, env = "LONGRUN_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
    /// How logs are written to stderr: `text` (coloured only on a terminal without NO_COLOR)
    /// or `json` (one object a line, for a log collector). RUST_LOG sets what is logged.
    #[arg(
        long,
        global = true,
        env = "LONGRUN_LOG_FORMAT",
        value_enum,
        default_value_t = LogFormat::Text
    )]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Args, Clone, Default)]
struct BudgetFlags {
    #[arg(long, allow_negative_numbers = true)]
    max_iterations: Option<i64>,
    /// Running-time budget in seconds (waiting time does not count).
    #[arg(long, value_name = "SECS", allow_negative_numbers = true)]
    max_running_time: Option<i64>,
    #[arg(long, allow_negative_numbers = true)]
    max_tokens: Option<i64>,
    /// Cost budget in USD.
    #[arg(long, value_name = "USD", allow_negative_numbers = true)]
    max_cost: Option<f64>,
    /// Tool calls over the whole run.
    #[arg(long, allow_negative_numbers = true)]
    max_tool_calls: Option<i64>,
}

impl BudgetFlags {
    fn input(&self) -> BudgetsInput {
        BudgetsInput {
            max_iterations: self.max_iterations,
            max_running_ms: self.max_running_time.map(|s| s.saturating_mul(1000)),
            max_tokens: self.max_tokens,
            max_cost_usd: self.max_cost,
            max_tool_calls: self.max_tool_calls,
        }
    }
}

/// What `serve --help` says after the flags: the environment it reads.
const SERVE_ENV: &str = "\
Environment (flags above show theirs in [env: …]):
  LONGRUN_TOKENS=token:user,…       bearer tokens and their users; none: one token for user
                                    `local` is made and kept in DATA_DIR/token
  LONGRUN_APP_BASE_URL              base of the deep links in notifications (default: the
                                    listening address; APP_BASE_URL is a deprecated alias)
  LONGRUN_FETCH=off                 turn the http_fetch tool off
  LONGRUN_FETCH_ALLOW, _DENY        comma-separated hosts http_fetch may / may not reach
  LONGRUN_FETCH_TRUSTED_PRIVATE     hosts that may resolve to private addresses (an intranet
                                    wiki, `localhost`), or IP literals such as 127.0.0.1; also
                                    allows http:// for tool, webhook and MCP server URLs there
  LONGRUN_SEARCH=tavily|brave|exa   the web_search tool, with TAVILY_API_KEY, BRAVE_API_KEY
                                    or EXA_API_KEY (LONGRUN_SEARCH_BASE_URL: another endpoint)
  OPENAI_BASE_URL, OPENAI_API_KEY   openai:… models (any OpenAI-compatible server);
                                    OPENAI_STRUCTURED_OUTPUT=json_schema|json_object
  ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY
                                    anthropic:… models
  LONGRUN_LLM_TIMEOUT_SECS, LONGRUN_LLM_COOLDOWN_SECS
                                    a model call's timeout; how long a failing model is skipped
  LONGRUN_MAX_RUN_DEPTH             how deep runs may nest through spawn_run (default 16)
  LONGRUN_SQLITE_SYNCHRONOUS        FULL (default), NORMAL or OFF: SQLite's durability

Without --model, runs use the built-in demo script (script:DATA_DIR/demo-script.json): a
scripted agent that needs no API key. Pass --model openai:gpt-4.1-mini (etc.) for a real one.";

#[derive(Args)]
struct ServeArgs {
    /// Default `.longrun` (or `data_dir` in the config file's `serve` block, as for the
    /// options below: flags and environment > config file > defaults).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Default 8080.
    #[arg(long)]
    port: Option<u16>,
    /// Default 127.0.0.1.
    #[arg(long)]
    host: Option<String>,
    /// provider:model; repeat to allow several (the first is the default). None: the built-in
    /// demo script, a scripted agent that needs no API key.
    #[arg(long = "model")]
    models: Vec<String>,
    /// Active runs one user may have at once.
    #[arg(long, env = "LONGRUN_ACTIVE_LIMIT")]
    active_limit: Option<u32>,
    /// Iterations worked on at once; each mostly waits on a model, so thousands are cheap.
    #[arg(long, env = "LONGRUN_MAX_INFLIGHT")]
    max_inflight: Option<usize>,
    /// MODEL=concurrency:N,rpm:N,tpm:N — a model's capacity, shared by every run; repeatable
    /// (`;`-separated in the environment).
    #[arg(
        long = "model-limit",
        env = "LONGRUN_MODEL_LIMITS",
        value_delimiter = ';'
    )]
    model_limits: Vec<String>,
    /// Base URL for deep links in notifications (default: the listening address).
    #[arg(long, env = "LONGRUN_APP_BASE_URL")]
    app_base_url: Option<String>,
    /// Seconds a client may take to send a request's headers, or between pieces of its body;
    /// also how long an idle keep-alive connection stays open.
    #[arg(long, env = "LONGRUN_READ_TIMEOUT")]
    read_timeout: Option<u64>,
    /// Seconds a client may take to send a whole request body, however steadily it sends:
    /// a request still arriving then gets a 408.
    #[arg(long, env = "LONGRUN_REQUEST_TIMEOUT", default_value_t = 60)]
    request_timeout: u64,
    /// Seconds a new connection may take to send its first byte (at most the read timeout):
    /// one that has sent nothing by then is closed, so idle sockets do not hold slots.
    #[arg(long, env = "LONGRUN_FIRST_BYTE_TIMEOUT", default_value_t = 5)]
    first_byte_timeout: u64,
    /// Connections open at once; one more is answered 503 (problem+json) and closed, but for
    /// `GET /healthz`, which is still answered. Keep it under the file-descriptor limit.
    #[arg(long, env = "LONGRUN_MAX_CONNECTIONS", default_value_t = 768)]
    max_connections: usize,
    /// Connections one client (an IP address; an IPv6 /64) may have open at once; one more is
    /// answered 429 (problem+json) and closed. Behind a reverse proxy every client is the
    /// proxy: raise it to --max-connections there.
    #[arg(long, env = "LONGRUN_MAX_CONNECTIONS_PER_CLIENT", default_value_t = 64)]
    max_connections_per_client: usize,
    /// Seconds iterations in flight get to finish after SIGTERM; the rest are handed back to
    /// the next start (under the 30 s most orchestrators wait before SIGKILL).
    #[arg(long, env = "LONGRUN_DRAIN_GRACE")]
    drain_grace: Option<u64>,
    /// Delete ended runs this many days after they ended (never one with a webhook delivery
    /// still pending, nor a child whose parent runs). Default: keep every run.
    #[arg(long, env = "LONGRUN_RETENTION_DAYS")]
    retention_days: Option<u32>,
    /// With a retention policy: write each run to DIR/<run-id>.json (`longrun import` restores
    /// it) before deleting it.
    #[arg(long, env = "LONGRUN_RETENTION_EXPORT_DIR", value_name = "DIR")]
    retention_export_dir: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the API, the worker loop and the notifier in one process on SQLite.
    #[command(after_help = SERVE_ENV)]
    Serve(ServeArgs),
    /// Start a run (through the API, or in-process with --embedded).
    Run {
        objective: String,
        #[command(flatten)]
        budgets: BudgetFlags,
        /// provider:model; repeat to rotate over several (failing over past degraded ones).
        #[arg(long = "model")]
        models: Vec<String>,
        /// Run the whole loop in this process on a temporary data dir; no server needed.
        #[arg(long)]
        embedded: bool,
        /// Tail the run live until it ends.
        #[arg(long)]
        follow: bool,
        /// autopilot (default), approve_plan (the first plan waits for your approval) or
        /// per_write (every write waits for your approval; answer with `respond --approve`).
        #[arg(long, value_parser = ["autopilot", "approve_plan", "per_write"])]
        mode: Option<String>,
        /// Keep the embedded run's data here instead of a temporary dir.
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Only this tool (built-in or registered); repeat for several. Default: every tool.
        #[arg(long = "tool", value_name = "NAME")]
        tools: Vec<String>,
        /// Run this coding agent (claude, codex, gemini, command, or a backend of the runner
        /// config) as the run's iterations instead of the planner.
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
    },
    /// Print the OpenAPI document the API serves at /v1/openapi.json.
    Openapi,
    /// A real multi-iteration embedded run with a built-in script; prints the report.
    Demo {
        #[arg(long, default_value = ".longrun/demo")]
        data_dir: PathBuf,
    },
    /// Show a run.
    Status { run_id: String },
    /// List your runs.
    List {
        #[arg(long)]
        status: Option<String>,
    },
    /// Print a run's events.
    Events {
        run_id: String,
        #[arg(long, default_value_t = 0)]
        after: u64,
        #[arg(long)]
        follow: bool,
    },
    /// Cancel a run.
    Cancel { run_id: String },
    /// Pause a run after its current iteration (`continue` resumes it).
    Pause { run_id: String },
    /// Edit a run's objective or plan; takes effect at its next iteration.
    Edit {
        run_id: String,
        /// The new objective.
        #[arg(long)]
        objective: Option<String>,
        /// A plan step to add or change: `id:status:title` (status: pending, in_progress,
        /// done, blocked). Repeatable.
        #[arg(long = "step")]
        steps: Vec<String>,
    },
    /// Answer a run that waits on you, and approve or reject what waits for approval.
    Respond {
        run_id: String,
        #[arg(default_value = "")]
        answer: String,
        /// Approve the plan or the held writes.
        #[arg(long, conflicts_with = "reject")]
        approve: bool,
        /// Reject the held writes (the answer, if any, is the reason).
        #[arg(long)]
        reject: bool,
    },
    /// Tell a run that has not ended something: its next iteration's planner reads it.
    Message { run_id: String, text: String },
    /// Continue a stopped run with raised budgets, or resume a paused one.
    Continue {
        run_id: String,
        #[command(flatten)]
        budgets: BudgetFlags,
    },
    /// Ask a run that ended (completed, stopped or failed) a follow-up question: it runs
    /// again on the budgets it has left (raise them with the budget flags) and writes a new
    /// report.
    FollowUp {
        run_id: String,
        question: String,
        #[command(flatten)]
        budgets: BudgetFlags,
    },
    /// Print a run's report.
    Report { run_id: String },
    /// List a run's workspace, or print one document.
    Workspace {
        run_id: String,
        path: Option<String>,
    },
    /// Write a run of a data directory (serve stopped) as one JSON document.
    Export {
        run_id: String,
        #[arg(long, default_value = ".longrun")]
        data_dir: PathBuf,
        /// Write here instead of to stdout.
        #[arg(long, short)]
        out: Option<PathBuf>,
    },
    /// Restore an exported run into a data directory (serve stopped), with the same ids; a run
    /// that exists there is an error.
    Import {
        file: PathBuf,
        #[arg(long, default_value = ".longrun")]
        data_dir: PathBuf,
    },
    #[command(flatten)]
    Runner(runner::RunnerCommand),
}

// glibc's allocator was a fifth of the embedded engine's CPU (many short-lived strings and
// JSON values per iteration, across worker threads); mimalloc roughly halves that.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = runtime.block_on(run_command(cli)) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

async fn run_command(cli: Cli) -> Result<()> {
    let quiet = cli.json;
    // Warnings and errors unless RUST_LOG says otherwise, for `serve` too.
    init_tracing(
        cli.log_format == LogFormat::Json,
        if quiet { "error" } else { "warn" },
    );
    match cli.command {
        Command::Serve(args) => serve(args).await,
        Command::Run {
            objective,
            budgets,
            models,
            embedded: true,
            data_dir,
            tools,
            mode,
            agent,
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
            };
            let report = run_embedded(&data_dir, &objective, run, quiet).await?;
            print_report(&report, cli.json)
        }
        Command::Openapi => {
            use std::io::Write;
            let doc = serde_json::to_string_pretty(&longrun_http::openapi::document())?;
            // A reader that stops early (`| head`) is not an error.
            match writeln!(std::io::stdout(), "{doc}") {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
                _ => Ok(()),
            }
        }
        Command::Demo { data_dir } => {
            let model = write_demo_script(&data_dir)?;
            println!(
                "longrun demo — a scripted agent writes a small tea guide, one bounded iteration at a time.\n"
            );
            let run = RunFlags {
                budgets: &BudgetFlags::default(),
                models: std::slice::from_ref(&model),
                mode: None,
                tools: &[],
                agent: None,
            };
            let report = run_embedded(&data_dir, DEMO_OBJECTIVE, run, false).await?;
            print_report(&report, false)?;
            // Full paths, so each line works pasted into any shell, wherever `longrun` is.
            let dir = std::fs::canonicalize(&data_dir).unwrap_or(data_dir.clone());
            let exe = std::env::current_exe()
                .map(|e| sh_quote(&e.display().to_string()))
                .unwrap_or_else(|_| "longrun".into());
            let token = sh_quote(&dir.join("token").display().to_string());
            let id = &report.run_id;
            println!("\nWhere to look:");
            println!(
                "  data (SQLite):  {}",
                dir.join("longrun.sqlite3").display()
            );
            println!("  the API and the console on this data (leave it running):");
            println!(
                "    {exe} serve --data-dir {}",
                sh_quote(&dir.display().to_string())
            );
            println!("  then, in another terminal:");
            println!("    LONGRUN_TOKEN=$(cat {token}) {exe} report {id}");
            println!("    LONGRUN_TOKEN=$(cat {token}) {exe} workspace {id}");
            Ok(())
        }
        Command::Export {
            run_id,
            data_dir,
            out,
        } => archive::export(&data_dir, &run_id, out.as_deref()).await,
        Command::Import { file, data_dir } => {
            let id = archive::import(&data_dir, &file).await?;
            println!("imported run {id}");
            Ok(())
        }
        // Blocking by design (processes, files, sleeps): one job or loop per invocation.
        Command::Runner(cmd) => tokio::task::block_in_place(|| runner::run(cmd, quiet)),
        other => remote::run(other, &cli.api_url, cli.token, cli.json).await,
    }
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
    std::fs::create_dir_all(data_dir)?;
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

async fn serve(args: ServeArgs) -> Result<()> {
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
    let retention = match retention_days.or(file.retention_days) {
        Some(days) => Some(
            RetentionPolicy::days(days, retention_export_dir.or(file.retention_export_dir))
                .map_err(|e| anyhow::anyhow!("--retention-days: {e}"))?,
        ),
        None if retention_export_dir.is_some() || file.retention_export_dir.is_some() => {
            bail!("--retention-export-dir needs --retention-days (how old a run must be)")
        }
        None => None,
    };
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
    if models.is_empty() {
        models.push(write_demo_script(data_dir)?);
    }
    let mut tokens = match std::env::var("LONGRUN_TOKENS") {
        Ok(spec) => Tokens::parse(&spec)?,
        Err(_) => Tokens::default(),
    };
    let token_file = data_dir.join("token");
    if tokens.is_empty() {
        let token = local_token(data_dir, &token_file)?;
        // The path, not the token: a terminal's output often ends up in a log.
        println!(
            "No LONGRUN_TOKENS set; user `local` has the token in {} (the CLI reads it from \
             there; paste it into the console to sign in)",
            token_file.display()
        );
        tokens.insert(&token, "local");
    }
    let listener = tokio::net::TcpListener::bind((host.as_str(), port))
        .await
        .with_context(|| format!("binding {host}:{port}"))?;
    let addr = listener.local_addr()?;
    let mut config = AppConfig::new(tokens, models)?.with_search_from_env()?;
    config.active_limit = active_limit;
    config.model_limits = model_limits;
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
        ..Embedded::default()
    };
    let mut running = Platform::embedded(Some(data_dir), config, opts)?;
    if let Some(policy) = retention {
        running.set_retention(policy);
    }
    let healed = running.recover().await?;
    if healed > 0 {
        println!("recovered {healed} run(s) left behind by an earlier crash");
    }
    let (stop_tx, stop_rx) = watch::channel(false);
    let handles = running.spawn(stop_rx);
    let stop = stop_signal();
    println!(
        "longrun listening on http://{addr} (data in {})",
        data_dir.display()
    );
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
        println!("iterations still in flight after {drain_grace} s; handed back to the next start");
    }
    // Dropped from within the engine's runtime it would block on its own tasks: let it go apart.
    http_runtime.shutdown_background();
    Ok(())
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
}

/// Runs the loop in-process until the run settles, printing progress unless `quiet`.
async fn run_embedded(
    data_dir: &Path, objective: &str, run: RunFlags<'_>, quiet: bool,
) -> Result<Report> {
    let config = AppConfig::new(Tokens::default(), run.models.to_vec())?.with_search_from_env()?;
    let opts = Embedded {
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
    let mut running = Platform::embedded(Some(data_dir), config, opts)?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let handles = running.spawn(stop_rx);
    let p = running.platform.clone();
    let req = CreateRun {
        objective: objective.to_string(),
        completion_criteria: vec![],
        budgets: run.budgets.input(),
        thresholds: None,
        model: None,
        agent: run.agent.clone(),
        models: run.models.to_vec(),
        permission_mode: run.mode,
        allowed_tools: (!run.tools.is_empty()).then(|| run.tools.to_vec()),
        context: None,
    };
    let models = run.models.join(", ");
    let run = create_run(&p, "local", req)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if !quiet {
        println!("run {} started (model {models})", run.id);
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
                println!(
                    "  iteration {:>3} · {:<16} · {:>2} tool calls · {:>3} executors · {}",
                    it.n,
                    it.outcome.as_str(),
                    tools,
                    it.executor_results.len(),
                    truncate(&it.summary, 70)
                );
                for line in iteration_notes(&it) {
                    println!("        {line}");
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
    let claimed = it.status_block.as_ref().is_some_and(|s| s.exit_signal);
    if claimed && it.outcome != RunStatus::Completed {
        let why = it
            .hints
            .iter()
            .find(|h| h.contains("completion claim was rejected"))
            .map(|h| {
                h.trim_start_matches("Your completion claim was rejected because")
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
        println!("{}", serde_json::to_string_pretty(report)?);
        return Ok(());
    }
    let m = &report.metrics;
    println!("\n== Report: {} ==", report.title);
    println!(
        "status:      {} ({:?}: {})",
        report.status, report.stopping_reason.kind, report.stopping_reason.detail
    );
    println!("summary:     {}", report.summary);
    let by = match report.narrative.source {
        NarrativeSource::Model => "written by the model".to_string(),
        NarrativeSource::Records => format!(
            "built from the iteration records: {}",
            report
                .narrative
                .note
                .as_deref()
                .unwrap_or("no model wrote it")
        ),
    };
    println!("narrative:   ({by})");
    for line in wrap(&report.narrative.text, 90) {
        println!("  {line}");
    }
    println!(
        "metrics:     {} iterations · {} LLM calls · {} tokens · ${:.6} · running {} ms of {} ms",
        m.iterations, m.llm_calls, m.tokens, m.cost_usd, m.running_ms, m.duration_ms
    );
    for (model, mm) in &m.by_model {
        println!(
            "  {model}: {} calls, {} in / {} out tokens, ${:.6}",
            mm.calls, mm.input_tokens, mm.output_tokens, mm.cost_usd
        );
    }
    println!("changes:");
    for e in &report.what_changed.entries {
        let (kind, name) = match e.kind {
            ChangeKind::Document => ("document ", e.path.as_deref().unwrap_or("")),
            ChangeKind::PlanStep => ("plan step", e.id.as_deref().unwrap_or("")),
        };
        let change = match e.change {
            ChangeAction::Created => "created",
            ChangeAction::Updated => "updated",
        };
        println!(
            "  {kind} {name:<18} {change} (iteration {:>2})  {}",
            e.iteration, e.title
        );
    }
    for l in &report.what_changed.links {
        println!("  link      {} → {}", l.from, l.to);
    }
    if !report.questions.is_empty() {
        println!("questions:   {}", report.questions.join(" | "));
    }
    Ok(())
}
