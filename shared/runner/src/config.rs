//! The runner config: `~/.longrun/config.hcl` (or `LONGRUN_CONFIG`), its schema, defaults,
//! validation with file:line errors, and `config init`. Owns no process or bus logic.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hcl_edit::Span;
use hcl_edit::expr::Expression;
use hcl_edit::structure::{Attribute, Body};

use crate::backend::BackendKind;

/// A config problem, located: `file:line: key: what is wrong`.
/// A value from the environment or the command line has no line: `line` is 0 there.
#[derive(Debug, thiserror::Error)]
pub struct ConfigError {
    pub file: String,
    pub line: usize,
    pub key: String,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => write!(f, "{}: {}: {}", self.file, self.key, self.message),
            line => write!(f, "{}:{line}: {}: {}", self.file, self.key, self.message),
        }
    }
}

/// The longest duration a setting may hold: ten years, in seconds.
pub const MAX_SECONDS: f64 = 315_360_000.0;

/// `n` seconds as a duration, or the allowed range when `n` is outside it: not a number,
/// infinite, negative, over [`MAX_SECONDS`], or zero where `positive` is asked.
pub fn seconds(n: f64, positive: bool) -> Result<Duration, String> {
    let low_ok = if positive { n > 0.0 } else { n >= 0.0 };
    if n.is_finite() && low_ok && n <= MAX_SECONDS {
        return Ok(Duration::from_secs_f64(n));
    }
    let low = if positive { "> 0" } else { ">= 0" };
    Err(format!(
        "must be a number of seconds {low} and <= {MAX_SECONDS}, got {n}"
    ))
}

/// How the next backend is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection {
    RoundRobin,
    /// Weighted random ("I'm feeling lucky").
    Lucky,
}

/// How a `command` backend receives its prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptVia {
    Stdin,
    /// Substituted for `{prompt}` in the argv template (appended when absent).
    Arg,
}

/// A token that cannot be printed by accident.
#[derive(Clone, Default)]
pub struct Secret(String);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

#[derive(Debug, Clone)]
pub struct BackendConfig {
    pub name: String,
    pub kind: BackendKind,
    /// Program and leading arguments; for `command`, the whole argv template.
    pub command: Vec<String>,
    /// Extra arguments appended after the kind's own (e.g. Codex `-c` provider settings).
    pub args: Vec<String>,
    pub prompt_via: PromptVia,
    pub weight: f64,
    pub token: Option<Secret>,
    /// The variable the token is passed in (defaults per kind).
    pub token_env: Option<String>,
    pub env: BTreeMap<String, String>,
}

#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// Where the config came from, for messages (None = defaults only).
    pub source: Option<PathBuf>,
    pub projects_root: PathBuf,
    pub max_restarts: u32,
    pub time_budget: Duration,
    pub restart_pause: Duration,
    pub child_wait_timeout: Duration,
    pub child_poll_interval: Duration,
    pub idle_threshold: Duration,
    pub stuck_threshold: Duration,
    pub stop_grace: Duration,
    pub degraded_cooldown: Duration,
    /// How long a usage limit without a reset time makes the task wait.
    pub usage_limit_wait: Duration,
    pub selection: Selection,
    pub agent_order: Vec<String>,
    pub max_delegation_depth: u32,
    /// A restarted root resumes its CLI session (Claude `--resume`, Codex `exec resume`).
    pub resume_sessions: bool,
    pub backends: BTreeMap<String, BackendConfig>,
    /// `serve`'s own knobs from the file's `serve { … }` block.
    pub serve: crate::serve_settings::ServeSettings,
}

/// One top-level key of the schema: the single list `schema`, `init` and validation read.
pub struct KeySpec {
    pub key: &'static str,
    pub kind: &'static str,
    pub default: &'static str,
    pub doc: &'static str,
}

pub const KEYS: &[KeySpec] = &[
    KeySpec {
        key: "projects_root",
        kind: "string (path; ~ expands)",
        default: "\"~/.longrun/projects\"",
        doc: "Where projects and their task folders live.",
    },
    KeySpec {
        key: "max_restarts",
        kind: "integer >= 0",
        default: "100",
        doc: "Restarts of the root agent before a task gives up without DONE.",
    },
    KeySpec {
        key: "time_budget",
        kind: "seconds > 0",
        default: "86400",
        doc: "Wall-clock budget of a task's restart loop.",
    },
    KeySpec {
        key: "restart_pause",
        kind: "seconds >= 0",
        default: "1",
        doc: "Pause between two starts of the root agent.",
    },
    KeySpec {
        key: "child_wait_timeout",
        kind: "seconds > 0",
        default: "300",
        doc: "After DONE, how long to wait for running children before orphaning them.",
    },
    KeySpec {
        key: "child_poll_interval",
        kind: "seconds > 0",
        default: "1",
        doc: "How often children are checked while waiting for them.",
    },
    KeySpec {
        key: "idle_threshold",
        kind: "seconds > 0",
        default: "300",
        doc: "No output for this long: an OBSERVATION on the bus.",
    },
    KeySpec {
        key: "stuck_threshold",
        kind: "seconds > 0",
        default: "900",
        doc: "No output for this long: the agent's process group is killed.",
    },
    KeySpec {
        key: "stop_grace",
        kind: "seconds >= 0",
        default: "10",
        doc: "Between SIGTERM and SIGKILL when a run is stopped.",
    },
    KeySpec {
        key: "degraded_cooldown",
        kind: "seconds >= 0",
        default: "300",
        doc: "How long a backend that failed fast is skipped.",
    },
    KeySpec {
        key: "usage_limit_wait",
        kind: "seconds > 0",
        default: "300",
        doc: "Wait after a usage limit that names no reset time.",
    },
    KeySpec {
        key: "selection",
        kind: "\"round_robin\" | \"lucky\"",
        default: "\"round_robin\"",
        doc: "round_robin over agent_order, or lucky: random by backend weight.",
    },
    KeySpec {
        key: "agent_order",
        kind: "list of backend names",
        default: "[\"claude\", \"codex\", \"gemini\"]",
        doc: "The backends used, in rotation order.",
    },
    KeySpec {
        key: "max_delegation_depth",
        kind: "integer 1..=16",
        default: "16",
        doc: "How deep `longrun job` may nest.",
    },
    KeySpec {
        key: "resume_sessions",
        kind: "true | false",
        default: "true",
        doc: "A restarted root agent resumes its own CLI session where the CLI can (Claude Code, Codex); a stuck or failed run starts afresh.",
    },
];

/// Keys of a `backend "<name>" { … }` block.
pub const BACKEND_KEYS: &[KeySpec] = &[
    KeySpec {
        key: "type",
        kind: "\"claude\" | \"codex\" | \"gemini\" | \"perplexity\" | \"command\"",
        default: "the block's name",
        doc: "Which CLI this is; `perplexity` is longrun's own research-only agent (Perplexity's API, web search with sources); `command` runs any program.",
    },
    KeySpec {
        key: "command",
        kind: "list of strings",
        default: "[\"<type>\"]",
        doc: "Program and leading args; for `command`, the argv template ({prompt}, {prompt_file}).",
    },
    KeySpec {
        key: "args",
        kind: "list of strings",
        default: "[]",
        doc: "Appended after the CLI's own arguments.",
    },
    KeySpec {
        key: "prompt",
        kind: "\"stdin\" | \"arg\"",
        default: "\"arg\"",
        doc: "command backends: prompt on stdin or as {prompt}.",
    },
    KeySpec {
        key: "weight",
        kind: "number > 0",
        default: "1",
        doc: "Weight in lucky selection.",
    },
    KeySpec {
        key: "token",
        kind: "string, or \"@/path/file\"",
        default: "none",
        doc: "API token, inline or read from a file at load (a missing file is an error).",
    },
    KeySpec {
        key: "token_env",
        kind: "string",
        default: "per type",
        doc: "Variable the token is passed in (ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY).",
    },
    KeySpec {
        key: "env",
        kind: "object of strings",
        default: "{}",
        doc: "Extra environment for the agent process.",
    },
];

/// Values from the command line and the environment, applied over the file (CLI > env > file).
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub projects_root: Option<PathBuf>,
    pub max_restarts: Option<u32>,
    pub time_budget: Option<Duration>,
}

impl Overrides {
    /// `LONGRUN_PROJECTS_ROOT`, `LONGRUN_MAX_RESTARTS`, `LONGRUN_TIME_BUDGET` (seconds).
    pub fn from_env() -> Result<Self, ConfigError> {
        let bad = |name: &str, message: String| ConfigError {
            file: "environment".into(),
            line: 0,
            key: name.into(),
            message,
        };
        let var = |name: &str| std::env::var(name).ok().map(|v| v.trim().to_string());
        let max_restarts = match var("LONGRUN_MAX_RESTARTS") {
            Some(v) => Some(v.parse::<u32>().map_err(|_| {
                bad(
                    "LONGRUN_MAX_RESTARTS",
                    format!("must be a whole number from 0 to {}, got {v:?}", u32::MAX),
                )
            })?),
            None => None,
        };
        let time_budget = match var("LONGRUN_TIME_BUDGET") {
            Some(v) => {
                let n = v.parse::<f64>().unwrap_or(f64::NAN);
                Some(seconds(n, true).map_err(|m| bad("LONGRUN_TIME_BUDGET", m))?)
            }
            None => None,
        };
        Ok(Overrides {
            projects_root: std::env::var_os("LONGRUN_PROJECTS_ROOT").map(PathBuf::from),
            max_restarts,
            time_budget,
        })
    }

    /// `self` wins over `lower` where both are set.
    pub fn over(self, lower: Overrides) -> Overrides {
        Overrides {
            projects_root: self.projects_root.or(lower.projects_root),
            max_restarts: self.max_restarts.or(lower.max_restarts),
            time_budget: self.time_budget.or(lower.time_budget),
        }
    }
}

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

pub(crate) fn expand_home(p: &str) -> PathBuf {
    match p.strip_prefix("~/") {
        Some(rest) => home().join(rest),
        None if p == "~" => home(),
        None => PathBuf::from(p),
    }
}

/// `LONGRUN_CONFIG`, else `~/.longrun/config.hcl`.
pub fn default_path() -> PathBuf {
    std::env::var_os("LONGRUN_CONFIG")
        .map(PathBuf::from)
        .unwrap_or_else(|| home().join(".longrun").join("config.hcl"))
}

fn default_backend(name: &str, kind: BackendKind) -> BackendConfig {
    BackendConfig {
        name: name.to_string(),
        kind,
        command: vec![kind.program().to_string()],
        args: Vec::new(),
        prompt_via: PromptVia::Arg,
        weight: 1.0,
        token: None,
        token_env: None,
        env: BTreeMap::new(),
    }
}

impl Default for RunnerConfig {
    fn default() -> Self {
        let backends = [
            ("claude", BackendKind::Claude),
            ("codex", BackendKind::Codex),
            ("gemini", BackendKind::Gemini),
            // Research-only: named (`--agent perplexity`), never in the default rotation.
            ("perplexity", BackendKind::Perplexity),
        ]
        .into_iter()
        .map(|(n, k)| (n.to_string(), default_backend(n, k)))
        .collect();
        RunnerConfig {
            source: None,
            projects_root: home().join(".longrun").join("projects"),
            max_restarts: 100,
            time_budget: Duration::from_secs(86_400),
            restart_pause: Duration::from_secs(1),
            child_wait_timeout: Duration::from_secs(300),
            child_poll_interval: Duration::from_secs(1),
            idle_threshold: Duration::from_secs(300),
            stuck_threshold: Duration::from_secs(900),
            stop_grace: Duration::from_secs(10),
            degraded_cooldown: Duration::from_secs(300),
            usage_limit_wait: Duration::from_secs(300),
            selection: Selection::RoundRobin,
            agent_order: vec!["claude".into(), "codex".into(), "gemini".into()],
            max_delegation_depth: 16,
            resume_sessions: true,
            backends,
            serve: Default::default(),
        }
    }
}

impl RunnerConfig {
    /// Loads `path` if it exists (defaults otherwise), then applies the overrides.
    pub fn load(path: &Path, overrides: Overrides) -> Result<Self, ConfigError> {
        let mut cfg = if path.exists() {
            let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
                file: path.display().to_string(),
                line: 0,
                key: "-".into(),
                message: format!("cannot read: {e}"),
            })?;
            Self::parse(&text, &path.display().to_string())?
        } else {
            RunnerConfig::default()
        };
        if path.exists() {
            cfg.source = Some(path.to_path_buf());
        }
        if let Some(p) = overrides.projects_root {
            cfg.projects_root = p;
        }
        if let Some(n) = overrides.max_restarts {
            cfg.max_restarts = n;
        }
        if let Some(d) = overrides.time_budget {
            cfg.time_budget = d;
        }
        Ok(cfg)
    }

    /// Parses and validates config text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Self, ConfigError> {
        let body = hcl_edit::parser::parse_body(text).map_err(|e| ConfigError {
            file: file.to_string(),
            line: e.location().line(),
            key: "-".into(),
            message: format!("not valid HCL: {}", e.message()),
        })?;
        let p = Parser { text, file };
        let mut cfg = RunnerConfig::default();
        let mut backends_seen = false;
        for attr in body.attributes() {
            p.top_attribute(&mut cfg, attr)?;
        }
        for block in body.blocks() {
            let line = p.line(block.span());
            let ident = block.ident.value().as_str();
            if ident == "serve" && block.labels.is_empty() {
                cfg.serve = p.serve(&block.body)?;
                continue;
            }
            if ident != "backend" {
                return Err(p.err(
                    line,
                    ident,
                    "unknown block (only `backend \"name\" { … }` and `serve { … }`)",
                ));
            }
            let [label] = block.labels.as_slice() else {
                return Err(p.err(
                    line,
                    "backend",
                    "needs exactly one name: backend \"name\" { … }",
                ));
            };
            if !backends_seen {
                cfg.backends.clear();
                backends_seen = true;
            }
            let b = p.backend(label.as_str(), &block.body, line)?;
            cfg.backends.insert(b.name.clone(), b);
        }
        for name in &cfg.agent_order {
            if !cfg.backends.contains_key(name) {
                let line = body
                    .get_attribute("agent_order")
                    .map(|a| p.line(a.span()))
                    .unwrap_or(0);
                return Err(p.err(
                    line,
                    "agent_order",
                    &format!("names backend {name:?}, which no backend block defines"),
                ));
            }
        }
        if cfg.agent_order.is_empty() {
            return Err(p.err(0, "agent_order", "must name at least one backend"));
        }
        Ok(cfg)
    }

    /// The schema as text, for `longrun config schema`.
    pub fn schema() -> String {
        let mut out = String::from("# longrun runner config (HCL). Durations are seconds.\n");
        for k in KEYS {
            out.push_str(&format!(
                "{:<22} {}  (default {})\n    {}\n",
                k.key, k.kind, k.default, k.doc
            ));
        }
        out.push_str("\nbackend \"<name>\" { … }  (repeatable; replaces the default backends)\n");
        for k in BACKEND_KEYS {
            out.push_str(&format!(
                "  {:<20} {}  (default {})\n      {}\n",
                k.key, k.kind, k.default, k.doc
            ));
        }
        out.push_str("\nserve { … }  (longrun serve; its flags and environment win over it)\n");
        for k in crate::serve_settings::SERVE_KEYS {
            out.push_str(&format!(
                "  {:<20} {}  (default {})\n      {}\n",
                k.key, k.kind, k.default, k.doc
            ));
        }
        out
    }
}

/// A commented config with every top-level key at its default.
pub fn init_text() -> String {
    let mut out = String::from(
        "# longrun runner config. `longrun config schema` lists every key.\n\
         # Precedence: command line > environment > this file > defaults.\n\n",
    );
    for k in KEYS {
        out.push_str(&format!("# {}\n{} = {}\n\n", k.doc, k.key, k.default));
    }
    out.push_str(
        "# Backends replace the defaults (claude, codex, gemini, perplexity) when any is given, e.g.\n\
         # backend \"claude\" {\n\
         #   command = [\"claude\"]\n\
         #   token   = \"@/home/me/.secrets/anthropic\"\n\
         # }\n\n\
         # longrun serve's own settings (its flags and environment win), e.g.\n\
         # serve {\n\
         #   port   = 8080\n\
         #   models = [\"anthropic:claude-sonnet-4-5\"]\n\
         # }\n",
    );
    out
}

/// Writes a fresh config, or appends the top-level keys an existing one lacks (with their
/// comments), leaving the user's text as it is. Returns the keys added.
pub fn init(path: &Path) -> Result<Vec<String>, ConfigError> {
    let io_err = |e: std::io::Error| ConfigError {
        file: path.display().to_string(),
        line: 0,
        key: "-".into(),
        message: e.to_string(),
    };
    if !path.exists() {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io_err)?;
        }
        std::fs::write(path, init_text()).map_err(io_err)?;
        return Ok(KEYS.iter().map(|k| k.key.to_string()).collect());
    }
    let text = std::fs::read_to_string(path).map_err(io_err)?;
    // Validates first: never append to a file that does not parse.
    RunnerConfig::parse(&text, &path.display().to_string())?;
    let body = hcl_edit::parser::parse_body(&text).map_err(|e| ConfigError {
        file: path.display().to_string(),
        line: e.location().line(),
        key: "-".into(),
        message: e.message().to_string(),
    })?;
    let missing: Vec<&KeySpec> = KEYS.iter().filter(|k| !body.has_attribute(k.key)).collect();
    if missing.is_empty() {
        return Ok(Vec::new());
    }
    let mut add = String::new();
    if !text.ends_with('\n') && !text.is_empty() {
        add.push('\n');
    }
    add.push_str("\n# Added by `longrun config init`:\n");
    for k in &missing {
        add.push_str(&format!("# {}\n{} = {}\n", k.doc, k.key, k.default));
    }
    std::fs::write(path, format!("{text}{add}")).map_err(io_err)?;
    Ok(missing.iter().map(|k| k.key.to_string()).collect())
}

pub(crate) struct Parser<'a> {
    text: &'a str,
    file: &'a str,
}

impl Parser<'_> {
    pub(crate) fn line(&self, span: Option<std::ops::Range<usize>>) -> usize {
        span.map(|r| {
            self.text[..r.start.min(self.text.len())]
                .matches('\n')
                .count()
                + 1
        })
        .unwrap_or(0)
    }

    pub(crate) fn err(&self, line: usize, key: &str, message: &str) -> ConfigError {
        ConfigError {
            file: self.file.to_string(),
            line,
            key: key.to_string(),
            message: message.to_string(),
        }
    }

    pub(crate) fn number(&self, attr: &Attribute, min: f64) -> Result<f64, ConfigError> {
        let key = attr.key.value().as_str();
        let line = self.line(attr.span());
        let n = match &attr.value {
            Expression::Number(n) => n.value().as_f64(),
            _ => None,
        }
        .filter(|n| n.is_finite())
        .ok_or_else(|| self.err(line, key, "must be a finite number"))?;
        if n < min {
            return Err(self.err(line, key, &format!("must be >= {min}, got {n}")));
        }
        Ok(n)
    }

    fn secs(&self, attr: &Attribute, positive: bool) -> Result<Duration, ConfigError> {
        let key = attr.key.value().as_str();
        let n = match &attr.value {
            Expression::Number(n) => n.value().as_f64(),
            _ => None,
        }
        .unwrap_or(f64::NAN);
        seconds(n, positive).map_err(|m| self.err(self.line(attr.span()), key, &m))
    }

    fn boolean(&self, attr: &Attribute) -> Result<bool, ConfigError> {
        match &attr.value {
            Expression::Bool(b) => Ok(*b.value()),
            _ => Err(self.err(
                self.line(attr.span()),
                attr.key.value().as_str(),
                "must be true or false",
            )),
        }
    }

    /// The value a string attribute spells; any other spelling is an error naming the two.
    fn one_of<T>(
        &self, attr: &Attribute, key: &str, [(a, va), (b, vb)]: [(&str, T); 2],
    ) -> Result<T, ConfigError> {
        match self.string(attr)? {
            s if s == a => Ok(va),
            s if s == b => Ok(vb),
            other => Err(self.err(
                self.line(attr.span()),
                key,
                &format!("must be {a:?} or {b:?}, got {other:?}"),
            )),
        }
    }

    pub(crate) fn string(&self, attr: &Attribute) -> Result<String, ConfigError> {
        match &attr.value {
            Expression::String(s) => Ok(s.value().to_string()),
            _ => Err(self.err(
                self.line(attr.span()),
                attr.key.value().as_str(),
                "must be a string",
            )),
        }
    }

    pub(crate) fn strings(&self, attr: &Attribute) -> Result<Vec<String>, ConfigError> {
        let bad = || {
            self.err(
                self.line(attr.span()),
                attr.key.value().as_str(),
                "must be a list of strings",
            )
        };
        let Expression::Array(a) = &attr.value else {
            return Err(bad());
        };
        a.iter()
            .map(|e| e.as_str().map(str::to_string).ok_or_else(bad))
            .collect()
    }

    fn top_attribute(&self, cfg: &mut RunnerConfig, attr: &Attribute) -> Result<(), ConfigError> {
        let key = attr.key.value().as_str();
        match key {
            "projects_root" => cfg.projects_root = expand_home(&self.string(attr)?),
            "max_restarts" => {
                let n = self.number(attr, 0.0)?;
                if n.fract() != 0.0 || n > f64::from(u32::MAX) {
                    let line = self.line(attr.span());
                    let m = format!("must be a whole number from 0 to {}, got {n}", u32::MAX);
                    return Err(self.err(line, key, &m));
                }
                cfg.max_restarts = n as u32;
            }
            "time_budget" => cfg.time_budget = self.secs(attr, true)?,
            "restart_pause" => cfg.restart_pause = self.secs(attr, false)?,
            "child_wait_timeout" => cfg.child_wait_timeout = self.secs(attr, true)?,
            "child_poll_interval" => cfg.child_poll_interval = self.secs(attr, true)?,
            "idle_threshold" => cfg.idle_threshold = self.secs(attr, true)?,
            "stuck_threshold" => cfg.stuck_threshold = self.secs(attr, true)?,
            "stop_grace" => cfg.stop_grace = self.secs(attr, false)?,
            "degraded_cooldown" => cfg.degraded_cooldown = self.secs(attr, false)?,
            "usage_limit_wait" => cfg.usage_limit_wait = self.secs(attr, true)?,
            "selection" => {
                let spellings = [
                    ("round_robin", Selection::RoundRobin),
                    ("lucky", Selection::Lucky),
                ];
                cfg.selection = self.one_of(attr, key, spellings)?;
            }
            "agent_order" => cfg.agent_order = self.strings(attr)?,
            "resume_sessions" => cfg.resume_sessions = self.boolean(attr)?,
            "max_delegation_depth" => {
                let n = self.number(attr, 1.0)?;
                if n > 16.0 {
                    return Err(self.err(self.line(attr.span()), key, "must be at most 16"));
                }
                cfg.max_delegation_depth = n as u32;
            }
            _ => {
                return Err(self.err(
                    self.line(attr.span()),
                    key,
                    "unknown key (`longrun config schema` lists the keys)",
                ));
            }
        }
        Ok(())
    }

    fn backend(&self, name: &str, body: &Body, line: usize) -> Result<BackendConfig, ConfigError> {
        if let Some(b) = body.blocks().next() {
            return Err(self.err(
                self.line(b.span()),
                b.ident.value().as_str(),
                "unknown block inside backend",
            ));
        }
        let kind_attr = body.get_attribute("type");
        let kind_name = match kind_attr {
            Some(a) => self.string(a)?,
            None => name.to_string(),
        };
        let kind = BackendKind::parse(&kind_name).ok_or_else(|| {
            self.err(
                kind_attr.map(|a| self.line(a.span())).unwrap_or(line),
                &format!("backend.{name}.type"),
                &format!(
                    "must be claude, codex, gemini, perplexity or command, got {kind_name:?} (set `type` for a custom name)"
                ),
            )
        })?;
        let mut b = default_backend(name, kind);
        for attr in body.attributes() {
            let key = attr.key.value().as_str();
            let at = self.line(attr.span());
            match key {
                "type" => {}
                "command" => b.command = self.strings(attr)?,
                "args" => b.args = self.strings(attr)?,
                "prompt" => {
                    let spellings = [("stdin", PromptVia::Stdin), ("arg", PromptVia::Arg)];
                    b.prompt_via = self.one_of(attr, "prompt", spellings)?;
                }
                "weight" => {
                    b.weight = self.number(attr, 0.0)?;
                    if b.weight <= 0.0 {
                        return Err(self.err(at, "weight", "must be > 0"));
                    }
                }
                "token" => b.token = Some(self.token(attr)?),
                "token_env" => b.token_env = Some(self.string(attr)?),
                "env" => {
                    let Expression::Object(o) = &attr.value else {
                        return Err(self.err(at, "env", "must be an object of strings"));
                    };
                    for (k, v) in o.iter() {
                        let k = match k {
                            hcl_edit::expr::ObjectKey::Ident(i) => i.value().to_string(),
                            hcl_edit::expr::ObjectKey::Expression(e) => e
                                .as_str()
                                .map(str::to_string)
                                .ok_or_else(|| self.err(at, "env", "keys must be names"))?,
                        };
                        let v = v
                            .expr()
                            .as_str()
                            .ok_or_else(|| self.err(at, "env", "values must be strings"))?;
                        b.env.insert(k, v.to_string());
                    }
                }
                _ => {
                    return Err(self.err(
                        at,
                        &format!("backend.{name}.{key}"),
                        "unknown key (`longrun config schema` lists the keys)",
                    ));
                }
            }
        }
        if b.command.is_empty() {
            return Err(self.err(
                line,
                &format!("backend.{name}.command"),
                "must not be empty",
            ));
        }
        Ok(b)
    }

    /// Inline, or `@/path/file` read now: a token that cannot be read fails the load.
    fn token(&self, attr: &Attribute) -> Result<Secret, ConfigError> {
        let raw = self.string(attr)?;
        let Some(path) = raw.strip_prefix('@') else {
            return Ok(Secret(raw));
        };
        let path = expand_home(path);
        std::fs::read_to_string(&path)
            .map(|s| Secret(s.trim().to_string()))
            .map_err(|e| {
                self.err(
                    self.line(attr.span()),
                    "token",
                    &format!("cannot read token file {}: {e}", path.display()),
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_key_is_refused_with_its_file_and_line() {
        let text = "max_restarts = 3\n\nchild_wait_timeot = 5\n";

        let err = RunnerConfig::parse(text, "c.hcl").expect_err("unknown key");

        assert_eq!((err.file.as_str(), err.line), ("c.hcl", 3));
        assert_eq!(err.key, "child_wait_timeot");
    }

    #[test]
    fn a_missing_token_file_is_a_config_error_naming_the_line() {
        let text = "backend \"claude\" {\n  token = \"@/nonexistent/token\"\n}\nagent_order = [\"claude\"]\n";

        let err = RunnerConfig::parse(text, "c.hcl").expect_err("missing token file");

        assert_eq!((err.line, err.key.as_str()), (2, "token"));
    }

    #[test]
    fn the_generated_config_parses_to_the_defaults() {
        let cfg = RunnerConfig::parse(&init_text(), "init").expect("init text parses");

        assert_eq!(cfg.max_restarts, 100);
        assert_eq!(cfg.child_wait_timeout, Duration::from_secs(300));
        assert_eq!(cfg.max_delegation_depth, 16);
        assert_eq!(cfg.backends.len(), 4, "claude, codex, gemini, perplexity");
    }

    #[test]
    fn init_adds_missing_keys_and_keeps_the_users_values() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("config.hcl");
        std::fs::write(&path, "# mine\nmax_restarts = 7\n").expect("write");

        let added = init(&path).expect("init");

        let cfg = RunnerConfig::load(&path, Overrides::default()).expect("load");
        assert_eq!(cfg.max_restarts, 7);
        assert!(added.contains(&"stuck_threshold".to_string()));
        assert!(!added.contains(&"max_restarts".to_string()));
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.starts_with("# mine\nmax_restarts = 7\n"));
    }
}
