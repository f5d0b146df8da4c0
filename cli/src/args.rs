//! Every command, flag and argument of `longrun`, with its help: what `--help`, the man page
//! and the shell completions are made from. Parsing only; nothing here runs a command.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use longrun_domain::criteria::{Check, Criterion};
use longrun_domain::run::BudgetsInput;

#[derive(Parser)]
#[command(
    name = "longrun",
    version,
    about = "Long-running LLM agent runs, one bounded iteration at a time",
    after_help = crate::exit::HELP
)]
pub struct Cli {
    /// API base URL for the client commands.
    #[arg(
        long,
        global = true,
        env = "LONGRUN_API_URL",
        default_value = "http://127.0.0.1:8080"
    )]
    pub api_url: String,
    /// Bearer token (default: LONGRUN_TOKEN, else the token `serve` wrote to ./.longrun/token).
    #[arg(long, global = true, env = "LONGRUN_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Print JSON instead of text: one document, or one object a line for what streams
    /// (`--follow`, `bus stream`); nothing else on stdout.
    #[arg(long, global = true)]
    pub json: bool,
    /// How logs are written to stderr: `text` (coloured only on a terminal without NO_COLOR)
    /// or `json` (one object a line, for a log collector). RUST_LOG sets what is logged.
    #[arg(
        long,
        global = true,
        env = "LONGRUN_LOG_FORMAT",
        value_enum,
        default_value_t = LogFormat::Text
    )]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Args, Clone, Default)]
pub struct BudgetFlags {
    /// Iterations over the whole run.
    #[arg(long, allow_negative_numbers = true)]
    pub max_iterations: Option<i64>,
    /// Running-time budget in seconds (waiting time does not count).
    #[arg(long, value_name = "SECS", allow_negative_numbers = true)]
    pub max_running_time: Option<i64>,
    /// Model tokens (input and output) over the whole run.
    #[arg(long, allow_negative_numbers = true)]
    pub max_tokens: Option<i64>,
    /// Cost budget in USD.
    #[arg(long, value_name = "USD", allow_negative_numbers = true)]
    pub max_cost: Option<f64>,
    /// Tool calls over the whole run.
    #[arg(long, allow_negative_numbers = true)]
    pub max_tool_calls: Option<i64>,
}

impl BudgetFlags {
    pub fn input(&self) -> BudgetsInput {
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
  LONGRUN_TASKS_USER=user           who sees the tasks `longrun task` started under the
                                    projects root (default: `local` when no LONGRUN_TOKENS)
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
  RUST_LOG                          what is logged to stderr (default: info)

Without --model, runs use the built-in demo script (script:DATA_DIR/demo-script.json): a
scripted agent that needs no API key. Pass --model openai:gpt-4.1-mini (etc.) for a real one.";

#[derive(Args)]
pub struct ServeArgs {
    /// Default `.longrun` (or `data_dir` in the config file's `serve` block, as for the
    /// options below: flags and environment > config file > defaults).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Default 8080.
    #[arg(long)]
    pub port: Option<u16>,
    /// Default 127.0.0.1.
    #[arg(long)]
    pub host: Option<String>,
    /// provider:model; repeat to allow several (the first is the default). None: the built-in
    /// demo script, a scripted agent that needs no API key.
    #[arg(long = "model")]
    pub models: Vec<String>,
    /// Active runs one user may have at once.
    #[arg(long, env = "LONGRUN_ACTIVE_LIMIT")]
    pub active_limit: Option<u32>,
    /// Iterations worked on at once; each mostly waits on a model, so thousands are cheap.
    #[arg(long, env = "LONGRUN_MAX_INFLIGHT")]
    pub max_inflight: Option<usize>,
    /// MODEL=concurrency:N,rpm:N,tpm:N — a model's capacity, shared by every run; repeatable
    /// (`;`-separated in the environment).
    #[arg(
        long = "model-limit",
        env = "LONGRUN_MODEL_LIMITS",
        value_delimiter = ';'
    )]
    pub model_limits: Vec<String>,
    /// Base URL for deep links in notifications (default: the listening address).
    #[arg(long, env = "LONGRUN_APP_BASE_URL")]
    pub app_base_url: Option<String>,
    /// Seconds a client may take to send a request's headers, or between pieces of its body;
    /// also how long an idle keep-alive connection stays open.
    #[arg(long, env = "LONGRUN_READ_TIMEOUT")]
    pub read_timeout: Option<u64>,
    /// Seconds a client may take to send a whole request body, however steadily it sends:
    /// a request still arriving then gets a 408.
    #[arg(long, env = "LONGRUN_REQUEST_TIMEOUT", default_value_t = 60)]
    pub request_timeout: u64,
    /// Seconds a new connection may take to send its first byte (at most the read timeout):
    /// one that has sent nothing by then is closed, so idle sockets do not hold slots.
    #[arg(long, env = "LONGRUN_FIRST_BYTE_TIMEOUT", default_value_t = 5)]
    pub first_byte_timeout: u64,
    /// Connections open at once; one more is answered 503 (problem+json) and closed, but for
    /// `GET /healthz`, which is still answered. Keep it under the file-descriptor limit.
    #[arg(long, env = "LONGRUN_MAX_CONNECTIONS", default_value_t = 768)]
    pub max_connections: usize,
    /// Connections one client (an IP address; an IPv6 /64) may have open at once; one more is
    /// answered 429 (problem+json) and closed. Behind a reverse proxy every client is the
    /// proxy: raise it to --max-connections there.
    #[arg(long, env = "LONGRUN_MAX_CONNECTIONS_PER_CLIENT", default_value_t = 64)]
    pub max_connections_per_client: usize,
    /// Seconds iterations in flight get to finish after SIGTERM; the rest are handed back to
    /// the next start (under the 30 s most orchestrators wait before SIGKILL).
    #[arg(long, env = "LONGRUN_DRAIN_GRACE")]
    pub drain_grace: Option<u64>,
    /// Delete ended runs this many days after they ended (never one with a webhook delivery
    /// still pending, nor a child whose parent runs). Default: keep every run.
    #[arg(long, env = "LONGRUN_RETENTION_DAYS")]
    pub retention_days: Option<u32>,
    /// With a retention policy: write each run to DIR/<run-id>.json (`longrun import` restores
    /// it) before deleting it.
    #[arg(long, env = "LONGRUN_RETENTION_EXPORT_DIR", value_name = "DIR")]
    pub retention_export_dir: Option<PathBuf>,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run the API, the worker loop and the notifier in one process on SQLite.
    #[command(after_help = SERVE_ENV)]
    Serve(ServeArgs),
    /// Start a run (through the API, or in-process with --embedded).
    Run {
        /// What the run is to achieve, in plain language.
        objective: String,
        #[command(flatten)]
        budgets: BudgetFlags,
        /// provider:model; repeat to rotate over several (failing over past degraded ones).
        #[arg(long = "model")]
        models: Vec<String>,
        /// Run the whole loop in this process on a temporary data dir; no server needed.
        /// Prints progress, then the report; exits with the code for how the run ended.
        #[arg(long)]
        embedded: bool,
        /// Tail the run live until it ends; exits with the code for how it ended.
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
        /// A condition the result must meet; repeat for several. Plain text (graded), or a
        /// check the platform runs: `contains:DOC:TEXT`, `matches:DOC:REGEX`,
        /// `command:SHELL` (agent runs) or `grader:RUBRIC`; `text:…` for a plain text that
        /// starts with one of those words.
        #[arg(long = "criterion", value_name = "CRITERION", value_parser = parse_criterion)]
        criteria: Vec<Criterion>,
        /// Do not grade plain-text criteria (checks still run): the claim's mapping is enough.
        #[arg(long)]
        no_grading: bool,
        /// provider:model the grader uses (default: the run's model).
        #[arg(long, value_name = "MODEL")]
        grader_model: Option<String>,
    },
    /// Print the OpenAPI document the API serves at /v1/openapi.json.
    Openapi,
    /// A real multi-iteration embedded run with a built-in script; prints the report.
    Demo {
        /// Where the demo's database and script are kept (serve it afterwards to browse).
        #[arg(long, default_value = ".longrun/demo")]
        data_dir: PathBuf,
    },
    /// Show a run.
    Status {
        /// The run's id (run_…).
        run_id: String,
    },
    /// List your runs.
    List {
        /// Only runs with this status (queued, running, waiting_on_user, completed, …).
        #[arg(long)]
        status: Option<String>,
    },
    /// Print a run's events.
    Events {
        /// The run's id (run_…).
        run_id: String,
        /// Only events after this sequence number.
        #[arg(long, default_value_t = 0)]
        after: u64,
        /// Keep printing events as they happen until the run ends or waits; exits with the
        /// code for how it ended.
        #[arg(long)]
        follow: bool,
    },
    /// Cancel a run.
    Cancel {
        /// The run's id (run_…).
        run_id: String,
    },
    /// Pause a run after its current iteration (`continue` resumes it).
    Pause {
        /// The run's id (run_…).
        run_id: String,
    },
    /// Edit a run's objective or plan; takes effect at its next iteration.
    Edit {
        /// The run's id (run_…).
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
        /// The run's id (run_…).
        run_id: String,
        /// Your answer to the run's questions (with --reject: the reason).
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
    Message {
        /// The run's id (run_…).
        run_id: String,
        /// What to tell it.
        text: String,
    },
    /// Continue a stopped run with raised budgets, or resume a paused one.
    Continue {
        /// The run's id (run_…).
        run_id: String,
        #[command(flatten)]
        budgets: BudgetFlags,
    },
    /// Ask a run that ended (completed, stopped or failed) a follow-up question: it runs
    /// again on the budgets it has left (raise them with the budget flags) and writes a new
    /// report.
    FollowUp {
        /// The run's id (run_…).
        run_id: String,
        /// The question.
        question: String,
        #[command(flatten)]
        budgets: BudgetFlags,
    },
    /// Print a run's report.
    Report {
        /// The run's id (run_…).
        run_id: String,
    },
    /// List a run's workspace, or print one document.
    Workspace {
        /// The run's id (run_…).
        run_id: String,
        /// A document's path: print it instead of the list.
        path: Option<String>,
    },
    /// Write a run of a data directory (serve stopped) as one JSON document.
    Export {
        /// The run's id (run_…).
        run_id: String,
        /// The data directory `serve` used.
        #[arg(long, default_value = ".longrun")]
        data_dir: PathBuf,
        /// Write here instead of to stdout.
        #[arg(long, short)]
        out: Option<PathBuf>,
    },
    /// Restore an exported run into a data directory (serve stopped), with the same ids; a run
    /// that exists there is an error.
    Import {
        /// A document `longrun export` wrote.
        file: PathBuf,
        /// The data directory to restore into.
        #[arg(long, default_value = ".longrun")]
        data_dir: PathBuf,
    },
    /// Print a completion script: `longrun completions bash > ~/.local/share/bash-completion/
    /// completions/longrun`, `… zsh > ~/.zfunc/_longrun`, `… fish > ~/.config/fish/completions/
    /// longrun.fish`.
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): `longrun man > ~/.local/share/man/man1/longrun.1`; a
    /// command's own page with its name (`longrun man serve > …/longrun-serve.1`).
    Man {
        /// The command whose page to print (`serve`, `bus post`); none: the top page.
        command: Vec<String>,
    },
    #[command(flatten)]
    Runner(RunnerCommand),
}

/// Agents longrun itself is (a backend starts them, with the prompt on stdin).
#[derive(Subcommand)]
pub enum AgentCmd {
    /// Research-only: asks Perplexity (PERPLEXITY_API_KEY, PERPLEXITY_BASE_URL) the prompt,
    /// writes the answer with its sources to output.md, and prints a result event.
    Perplexity {
        /// Perplexity's model (sonar, sonar-pro, sonar-reasoning-pro, …).
        #[arg(long, default_value = "sonar")]
        model: String,
    },
}

#[derive(Subcommand)]
pub enum RunnerCommand {
    /// An agent longrun runs itself, started by its backend (`type = "perplexity"`).
    #[command(hide = true)]
    Agent {
        #[command(subcommand)]
        cmd: AgentCmd,
    },
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
        /// The agent run's id (YYYYMMDD-HHMMSSMMMM-PID).
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
    pub projects_root: Option<PathBuf>,
}

#[derive(Args)]
pub struct TaskArgs {
    /// The project: a folder under the projects root.
    pub project: String,
    /// The task: a folder under the project, holding TASK.md.
    pub task: String,
    /// Write this as TASK.md first (otherwise TASK.md must already hold the task).
    #[arg(long)]
    pub objective: Option<String>,
    /// Always use this backend (default: the selection policy).
    #[arg(long)]
    pub agent: Option<String>,
    /// Restarts of the root agent before the task gives up (exit 3).
    #[arg(long)]
    pub max_restarts: Option<u32>,
    /// Seconds the task may take before it gives up (exit 4).
    #[arg(long)]
    pub time_budget: Option<f64>,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args)]
pub struct JobArgs {
    /// The prompt (or --prompt, --prompt-file, or stdin).
    pub prompt: Option<String>,
    /// The prompt, as a flag (the same as the argument).
    #[arg(long = "prompt", value_name = "PROMPT", conflicts_with = "prompt")]
    pub prompt_flag: Option<String>,
    /// Read the prompt from this file.
    #[arg(long, conflicts_with_all = ["prompt", "prompt_flag"])]
    pub prompt_file: Option<PathBuf>,
    /// Always use this backend (default: the selection policy).
    #[arg(long)]
    pub agent: Option<String>,
    #[command(flatten)]
    pub at: NamedTask,
}

/// `--project P --task T` (both or neither), and where projects live.
#[derive(Args, Clone, Default)]
pub struct NamedTask {
    /// The task's project, where LONGRUN_TASK_DIR does not say (outside an agent).
    #[arg(long, requires = "task")]
    pub project: Option<String>,
    /// The task, with --project.
    #[arg(long, requires = "project")]
    pub task: Option<String>,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args, Clone, Default)]
pub struct BusWhere {
    /// The task folder (default: LONGRUN_TASK_DIR, or --project/--task).
    #[arg(long)]
    pub task_dir: Option<PathBuf>,
    #[command(flatten)]
    pub named: NamedTask,
}

#[derive(Subcommand)]
pub enum BusCmd {
    /// Post a message; prints its sequence number.
    Post {
        /// INFO, OBSERVATION, QUESTION, ANSWER, FACT, WARNING, CHILD_DONE, START, STOP, CRASH,
        /// SUPERVISOR_RESTART or USER.
        #[arg(long = "type", default_value = "INFO")]
        kind: String,
        /// The message's text.
        message: String,
        #[command(flatten)]
        at: BusWhere,
    },
    /// Print the messages after --after and exit.
    Poll {
        /// Only messages after this sequence number.
        #[arg(long, default_value_t = 0)]
        after: i64,
        #[command(flatten)]
        at: BusWhere,
    },
    /// Print messages as they arrive (Ctrl-C to end).
    Stream {
        /// Only messages after this sequence number.
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

/// `--criterion`: plain text, or `KIND:…` for a check the platform runs.
pub fn parse_criterion(s: &str) -> Result<Criterion, String> {
    let doc_and = |rest: &str, what: &str| -> Result<(String, String), String> {
        match rest.split_once(':') {
            Some((doc, x)) if !doc.trim().is_empty() && !x.is_empty() => {
                Ok((doc.trim().to_string(), x.to_string()))
            }
            _ => Err(format!("expected DOC:{what} after the check's kind")),
        }
    };
    let (kind, rest) = s.split_once(':').unwrap_or(("", s));
    let c = match kind {
        "contains" => {
            let (doc, text) = doc_and(rest, "TEXT")?;
            Criterion::Check(Check::Contains { doc, text })
        }
        "matches" => {
            let (doc, pattern) = doc_and(rest, "REGEX")?;
            Criterion::Check(Check::Matches { doc, pattern })
        }
        "command" => Criterion::Check(Check::Command {
            run: rest.trim().to_string(),
        }),
        "grader" => Criterion::Check(Check::Grader {
            rubric: rest.trim().to_string(),
        }),
        "text" => Criterion::Text(rest.trim().to_string()),
        _ => Criterion::Text(s.trim().to_string()),
    };
    // A command is checked against the run's agent by the server, which knows it.
    match c.problem(true) {
        Some(problem) => Err(problem),
        None => Ok(c),
    }
}
