//! The runner config: `~/.longrun/config.hcl` (or `LONGRUN_CONFIG`), its schema, defaults,
//! validation with file:line errors, and `config init`. Owns no process or bus logic.

mod load;
mod overrides;
mod schema;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::backend::BackendKind;

pub(crate) use self::load::Parser;
pub use self::overrides::Overrides;
pub use self::schema::{BACKEND_KEYS, KEYS, KeySpec, init, init_text};

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
