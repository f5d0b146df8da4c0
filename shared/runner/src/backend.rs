//! Agent backends: how each CLI is started, and what its structured JSON output says about usage
//! and usage limits. Reads JSON events only, never free text.

use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use crate::config::{BackendConfig, PromptVia};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    Claude,
    Codex,
    Gemini,
    /// Any program: an argv template, the prompt on stdin or as an argument.
    Command,
}

impl BackendKind {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "claude" => Self::Claude,
            "codex" => Self::Codex,
            "gemini" => Self::Gemini,
            "command" => Self::Command,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
            Self::Gemini => "gemini",
            Self::Command => "command",
        }
    }

    /// The default program.
    pub fn program(self) -> &'static str {
        match self {
            Self::Command => "false",
            k => k.as_str(),
        }
    }

    fn default_token_env(self) -> &'static str {
        match self {
            Self::Claude => "ANTHROPIC_API_KEY",
            Self::Codex => "OPENAI_API_KEY",
            Self::Gemini => "GEMINI_API_KEY",
            Self::Command => "LONGRUN_AGENT_TOKEN",
        }
    }
}

/// What to execute: argv, whether the prompt goes to stdin, extra environment.
#[derive(Debug, Clone)]
pub struct Launch {
    pub argv: Vec<String>,
    pub prompt_on_stdin: bool,
    pub env: Vec<(String, String)>,
}

/// The argv for one run of `backend` with `prompt` (also saved at `prompt_file`), resuming CLI
/// session `resume` where the CLI can.
pub fn launch(
    backend: &BackendConfig, prompt: &str, prompt_file: &Path, resume: Option<&str>,
) -> Launch {
    let mut argv: Vec<String> = Vec::new();
    let mut prompt_on_stdin = false;
    match backend.kind {
        BackendKind::Claude => {
            argv.extend(backend.command.iter().cloned());
            argv.extend(
                [
                    "-p",
                    prompt,
                    "--output-format",
                    "stream-json",
                    "--verbose",
                    // Unattended, like Codex's and Gemini's flags below: nobody is there to
                    // approve a tool call. (As root Claude Code also wants IS_SANDBOX=1.)
                    "--permission-mode",
                    "bypassPermissions",
                ]
                .map(String::from),
            );
            if let Some(id) = resume {
                argv.extend(["--resume".to_string(), id.to_string()]);
            }
        }
        BackendKind::Codex => {
            argv.extend(backend.command.iter().cloned());
            argv.extend(
                [
                    "exec",
                    "--json",
                    "--skip-git-repo-check",
                    "--dangerously-bypass-approvals-and-sandbox",
                ]
                .map(String::from),
            );
        }
        BackendKind::Gemini => {
            argv.extend(backend.command.iter().cloned());
            argv.extend(["-p", prompt, "--yolo", "-o", "stream-json"].map(String::from));
        }
        BackendKind::Command => {
            let file = prompt_file.display().to_string();
            let mut used_prompt = false;
            for a in &backend.command {
                if a.contains("{prompt}") {
                    used_prompt = true;
                }
                argv.push(
                    a.replace("{prompt_file}", &file)
                        .replace("{prompt}", prompt),
                );
            }
            match backend.prompt_via {
                PromptVia::Stdin => prompt_on_stdin = true,
                PromptVia::Arg if !used_prompt => argv.push(prompt.to_string()),
                PromptVia::Arg => {}
            }
        }
    }
    argv.extend(backend.args.iter().cloned());
    // Codex takes the prompt last, after any `-c` settings (and `resume <id>`).
    if backend.kind == BackendKind::Codex {
        if let Some(id) = resume {
            argv.extend(["resume".to_string(), id.to_string()]);
        }
        argv.push(prompt.to_string());
    }
    let mut env: Vec<(String, String)> = backend
        .env
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(t) = &backend.token {
        let var = backend
            .token_env
            .clone()
            .unwrap_or_else(|| backend.kind.default_token_env().to_string());
        env.push((var, t.expose().to_string()));
    }
    Launch {
        argv,
        prompt_on_stdin,
        env,
    }
}

/// Spend one run reported, summed over its events.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_input_tokens: u64,
    /// Only Claude reports a cost.
    pub cost_usd: Option<f64>,
    pub turns: u64,
}

impl Usage {
    pub fn is_empty(&self) -> bool {
        *self == Usage::default()
    }

    pub fn add(&mut self, o: &Usage) {
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
        self.cached_input_tokens += o.cached_input_tokens;
        self.turns += o.turns;
        if let Some(c) = o.cost_usd {
            self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + c);
        }
    }

    /// `in 1200, out 80 tokens, $0.0130` (cost only when a CLI reported one).
    pub fn summary(&self) -> String {
        let cost = self
            .cost_usd
            .map(|c| format!(", ${c:.4}"))
            .unwrap_or_default();
        format!(
            "in {}, out {} tokens{cost}",
            self.input_tokens, self.output_tokens
        )
    }
}

/// A usage limit the CLI reported: the task waits until `resets_at` (unix seconds) when known.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageLimit {
    pub resets_at: Option<i64>,
}

/// What a run's stdout said, parsed from its JSON lines.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    pub usage: Usage,
    pub limit: Option<UsageLimit>,
    /// The CLI's own session id (Claude's `session_id`, Codex's `thread_id`), to resume it.
    pub session: Option<String>,
}

fn u(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Reads the JSON events of a run's stdout. Lines that are not JSON objects are ignored, so an
/// agent that merely prints the word "limit" is never taken for a usage limit.
pub fn parse_output(kind: BackendKind, stdout: &str) -> Report {
    let mut r = Report::default();
    for line in stdout.lines() {
        let Ok(ev) = serde_json::from_str::<Value>(line.trim()) else {
            continue;
        };
        let ty = ev.get("type").and_then(Value::as_str).unwrap_or("");
        let session = match (kind, ty) {
            (BackendKind::Claude, _) => ev.get("session_id"),
            (BackendKind::Codex, "thread.started") => ev.get("thread_id"),
            _ => None,
        };
        if let Some(id) = session.and_then(Value::as_str).filter(|s| !s.is_empty()) {
            r.session = Some(id.to_string());
        }
        match (kind, ty) {
            (BackendKind::Claude | BackendKind::Command, "result") => {
                if let Some(usage) = ev.get("usage") {
                    r.usage.input_tokens += u(usage, "input_tokens");
                    r.usage.output_tokens += u(usage, "output_tokens");
                    r.usage.cached_input_tokens += u(usage, "cache_read_input_tokens");
                }
                if let Some(c) = ev.get("total_cost_usd").and_then(Value::as_f64) {
                    r.usage.cost_usd = Some(r.usage.cost_usd.unwrap_or(0.0) + c);
                }
                r.usage.turns += u(&ev, "num_turns");
                if ev.get("api_error_status").and_then(Value::as_u64) == Some(429) {
                    r.limit.get_or_insert(UsageLimit { resets_at: None });
                }
                // Gemini's result carries `stats`.
                if let Some(stats) = ev.get("stats") {
                    add_gemini_stats(&mut r.usage, stats);
                }
            }
            (BackendKind::Claude | BackendKind::Command, "rate_limit_event") => {
                let info = ev.get("rate_limit_info").unwrap_or(&ev);
                if info.get("status").and_then(Value::as_str) == Some("rejected") {
                    let resets_at = info
                        .get("resetsAt")
                        .or_else(|| info.get("resets_at"))
                        .and_then(Value::as_i64);
                    r.limit = Some(UsageLimit { resets_at });
                }
            }
            (BackendKind::Codex, "turn.completed") => {
                if let Some(usage) = ev.get("usage") {
                    r.usage.input_tokens += u(usage, "input_tokens");
                    r.usage.output_tokens +=
                        u(usage, "output_tokens") + u(usage, "reasoning_output_tokens");
                    r.usage.cached_input_tokens += u(usage, "cached_input_tokens");
                }
                r.usage.turns += 1;
            }
            (BackendKind::Gemini, "result") => {
                if let Some(stats) = ev.get("stats") {
                    add_gemini_stats(&mut r.usage, stats);
                }
                r.usage.turns += 1;
            }
            _ => {}
        }
    }
    r
}

fn add_gemini_stats(usage: &mut Usage, stats: &Value) {
    let input = u(stats, "input_tokens").max(u(stats, "input"));
    let output = u(stats, "output_tokens");
    let total = u(stats, "total_tokens");
    usage.input_tokens += input;
    usage.output_tokens += if output == 0 && total > input {
        total - input
    } else {
        output
    };
    usage.cached_input_tokens += u(stats, "cached");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claudes_result_event_gives_cost_and_tokens() {
        let out = r#"{"type":"system","subtype":"init"}
{"type":"result","subtype":"success","total_cost_usd":0.012,"num_turns":2,"usage":{"input_tokens":100,"output_tokens":20,"cache_read_input_tokens":5}}"#;

        let r = parse_output(BackendKind::Claude, out);

        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 100,
                output_tokens: 20,
                cached_input_tokens: 5,
                cost_usd: Some(0.012),
                turns: 2
            }
        );
        assert_eq!(r.limit, None);
    }

    #[test]
    fn the_session_a_cli_reports_is_resumed_by_its_own_flag() {
        let cfg = crate::config::RunnerConfig::default();
        let claude_out = r#"{"type":"system","subtype":"init","session_id":"c-123"}
{"type":"result","subtype":"success","session_id":"c-123","num_turns":1}"#;
        let codex_out = r#"{"type":"thread.started","thread_id":"t-456"}
{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}"#;

        let claude = parse_output(BackendKind::Claude, claude_out).session;
        let codex = parse_output(BackendKind::Codex, codex_out).session;
        let c = launch(
            &cfg.backends["claude"],
            "go on",
            Path::new("/p"),
            claude.as_deref(),
        );
        let x = launch(
            &cfg.backends["codex"],
            "go on",
            Path::new("/p"),
            codex.as_deref(),
        );

        assert_eq!(c.argv[c.argv.len() - 2..], ["--resume", "c-123"]);
        assert_eq!(x.argv[x.argv.len() - 3..], ["resume", "t-456", "go on"]);
        assert_eq!(parse_output(BackendKind::Command, claude_out).session, None);
    }

    #[test]
    fn codex_turns_are_summed() {
        let out = r#"{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":2,"output_tokens":3,"reasoning_output_tokens":1}}
{"type":"turn.completed","usage":{"input_tokens":5,"cached_input_tokens":0,"output_tokens":1,"reasoning_output_tokens":0}}"#;

        let r = parse_output(BackendKind::Codex, out);

        assert_eq!(
            (r.usage.input_tokens, r.usage.output_tokens, r.usage.turns),
            (15, 5, 2)
        );
    }

    #[test]
    fn a_rejected_rate_limit_event_is_a_usage_limit_but_text_about_limits_is_not() {
        let limited = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1700000000}}"#;
        let echoed = "I hit the usage limit yesterday\n{\"type\":\"assistant\",\"message\":\"rate limit rejected 429\"}";

        let a = parse_output(BackendKind::Claude, limited);
        let b = parse_output(BackendKind::Claude, echoed);

        assert_eq!(
            a.limit,
            Some(UsageLimit {
                resets_at: Some(1_700_000_000)
            })
        );
        assert_eq!(b.limit, None);
    }

    #[test]
    fn a_command_template_gets_the_prompt_file_and_stdin() {
        let mut b = crate::config::RunnerConfig::default().backends["claude"].clone();
        b.kind = BackendKind::Command;
        b.command = vec!["sh".into(), "agent.sh".into(), "{prompt_file}".into()];
        b.prompt_via = PromptVia::Stdin;

        let l = launch(&b, "do it", Path::new("/t/prompt.md"), None);

        assert_eq!(l.argv, ["sh", "agent.sh", "/t/prompt.md"]);
        assert!(l.prompt_on_stdin);
    }
}
