//! The keys' schema: every key with its kind, default and doc, the single list that
//! `longrun config schema`, `config init` and validation read.

use std::path::Path;

use super::{ConfigError, RunnerConfig};

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

impl RunnerConfig {
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::config::Overrides;

    use super::*;

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
