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
    /// Research-only: `longrun agent perplexity` asks Perplexity's OpenAI-compatible API (web
    /// search with sources) and writes the answer to output.md.
    Perplexity,
    /// Any program: an argv template, the prompt on stdin or as an argument.
    Command,
}

impl BackendKind {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "claude" => Self::Claude,
            "codex" => Self::Codex,
            "gemini" => Self::Gemini,
            "perplexity" => Self::Perplexity,
            "command" => Self::Command,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
            Self::Gemini => "gemini",
            Self::Perplexity => "perplexity",
            Self::Command => "command",
        }
    }

    /// The default program (longrun itself drives Perplexity: it is first on an agent's PATH).
    pub fn program(self) -> &'static str {
        match self {
            Self::Command => "false",
            Self::Perplexity => "longrun",
            k => k.as_str(),
        }
    }

    fn default_token_env(self) -> &'static str {
        match self {
            Self::Claude => "ANTHROPIC_API_KEY",
            Self::Codex => "OPENAI_API_KEY",
            Self::Gemini => "GEMINI_API_KEY",
            Self::Perplexity => "PERPLEXITY_API_KEY",
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
            if let Some(id) = resume {
                argv.extend(["--resume".to_string(), id.to_string()]);
            }
        }
        BackendKind::Perplexity => {
            argv.extend(backend.command.iter().cloned());
            argv.extend(["agent", "perplexity"].map(String::from));
            prompt_on_stdin = true;
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

/// Spend one run reported, summed over its events, counted as the platform counts a model
/// call's spend: `input_tokens` is all the input, cache reads and writes included, and
/// `cached_input_tokens` the cache reads among it; `output_tokens` includes reasoning.
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

    /// What one process of a resumed session added, from the session's running total
    /// before it (`previous`) and after it (`self`). A CLI reports some figures over the
    /// whole session: Claude Code its cost, Codex its tokens; the others (Claude's and
    /// Gemini's tokens) stay per process.
    pub fn since(&self, previous: &Usage, kind: BackendKind) -> Usage {
        let mut added = self.clone();
        match kind {
            BackendKind::Claude => {
                if let (Some(now), Some(before)) = (self.cost_usd, previous.cost_usd) {
                    added.cost_usd = Some((now - before).max(0.0));
                }
            }
            BackendKind::Codex => {
                added.input_tokens = self.input_tokens.saturating_sub(previous.input_tokens);
                added.output_tokens = self.output_tokens.saturating_sub(previous.output_tokens);
                added.cached_input_tokens = self
                    .cached_input_tokens
                    .saturating_sub(previous.cached_input_tokens);
            }
            BackendKind::Gemini | BackendKind::Perplexity | BackendKind::Command => {}
        }
        added
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

/// Why a run failed, read from the error events of the CLI's structured output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// The key is missing, wrong or expired: no restart fixes it.
    Auth,
    /// Billing or a daily quota is used up: waiting minutes does not fix it either.
    Quota,
    /// The provider or the network failed for a moment (5xx, overloaded, a dropped stream).
    Transient,
    /// The program could not be started (not installed, not executable).
    CannotStart,
}

impl FailureKind {
    /// The kind [`FailureKind::as_str`] names.
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Auth, Self::Quota, Self::Transient, Self::CannotStart]
            .into_iter()
            .find(|k| k.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Auth => "authentication failed",
            FailureKind::Quota => "quota or billing exhausted",
            FailureKind::Transient => "transient provider error",
            FailureKind::CannotStart => "could not start",
        }
    }

    /// No restart of the same backend can fix it: the task fails with the cause.
    pub fn is_fatal(self) -> bool {
        !matches!(self, FailureKind::Transient)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub kind: FailureKind,
    /// The CLI's own words (its error event's message), shortened.
    pub cause: String,
}

/// An error event: the HTTP status when the CLI gave one, a machine code, the message.
struct ErrorEvent {
    status: Option<u64>,
    code: String,
    message: String,
}

/// The error an event reports, per CLI: Claude's `result` with `is_error` and its assistant
/// `error` codes; Codex's `error` and `turn.failed`; Gemini's `error` and failed `result`.
fn error_event(kind: BackendKind, ty: &str, ev: &Value) -> Option<ErrorEvent> {
    let s = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
    let num = |v: Option<&Value>| {
        v.and_then(|v| {
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        })
    };
    match (kind, ty) {
        (BackendKind::Claude | BackendKind::Perplexity | BackendKind::Command, "result")
            if ev.get("is_error").and_then(Value::as_bool) == Some(true) =>
        {
            Some(ErrorEvent {
                status: num(ev.get("api_error_status")),
                code: s(ev.get("subtype")),
                message: s(ev.get("result")),
            })
        }
        (BackendKind::Claude | BackendKind::Command, "assistant") => {
            let code = s(ev.get("error"));
            (!code.is_empty()).then(|| ErrorEvent {
                status: None,
                message: s(ev.pointer("/message/content/0/text")),
                code,
            })
        }
        (BackendKind::Codex, "error") => Some(ErrorEvent {
            status: None,
            code: String::new(),
            message: s(ev.get("message")),
        }),
        (BackendKind::Codex, "turn.failed") => Some(ErrorEvent {
            status: None,
            code: String::new(),
            message: s(ev.pointer("/error/message")),
        }),
        (BackendKind::Gemini, "error") => Some(ErrorEvent {
            status: num(ev.get("status")).or_else(|| num(ev.get("code"))),
            code: s(ev.get("severity")),
            message: s(ev.get("message")),
        }),
        (BackendKind::Gemini, "result") if s(ev.get("status")) == "error" => Some(ErrorEvent {
            status: num(ev.pointer("/error/code")).or_else(|| num(ev.pointer("/error/status"))),
            code: s(ev.pointer("/error/type")),
            message: s(ev.pointer("/error/message")),
        }),
        _ => None,
    }
}

/// What an error event means for the loop: wait for a limit's reset, or a failure.
enum Verdict {
    Limit(UsageLimit),
    Failed(FailureKind),
}

fn classify(e: &ErrorEvent, now: i64) -> Option<Verdict> {
    let text = format!("{} {}", e.code, e.message).to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| text.contains(w));
    let auth = matches!(e.status, Some(401 | 403))
        || has(&[
            "authentication_failed",
            "invalid api key",
            "invalid x-api-key",
            "api key not valid",
            "incorrect api key",
            "unauthorized",
            "please run /login",
            "not logged in",
            "fatalauthenticationerror",
        ]);
    if auth {
        return Some(Verdict::Failed(FailureKind::Auth));
    }
    let quota = has(&[
        "billing_error",
        "insufficient_quota",
        "exceeded your current quota",
        "credit balance",
        "terminalquotaerror",
        "per day",
        "daily limit",
    ]);
    if quota {
        return Some(Verdict::Failed(FailureKind::Quota));
    }
    let limited = e.status == Some(429)
        || has(&[
            "rate_limit",
            "rate limit",
            "usage limit",
            "too many requests",
            "resource_exhausted",
            "quota",
            "429",
        ]);
    if limited {
        let resets_at = retry_in_seconds(&text)
            .map(|secs| now + secs)
            .or_else(|| retry_at(&text, now, local_offset(now)));
        return Some(Verdict::Limit(UsageLimit { resets_at }));
    }
    let transient = e.status.is_some_and(|st| st >= 500)
        || has(&[
            "server_error",
            "overloaded",
            "internal server error",
            "service unavailable",
            "bad gateway",
            "gateway timeout",
            "timed out",
            "timeout",
            "stream disconnected",
            "connection",
            "network",
            "econnreset",
            " 500",
            " 502",
            " 503",
            " 504",
            " 529",
        ]);
    transient.then_some(Verdict::Failed(FailureKind::Transient))
}

/// "try again in 3 hours 5 minutes", "retry in 20s", "resets in 90 seconds": the wait the
/// message names, in seconds.
fn retry_in_seconds(text: &str) -> Option<i64> {
    let at = ["try again in ", "retry in ", "retry after ", "resets in "]
        .iter()
        .find_map(|k| text.find(k).map(|i| i + k.len()))?;
    let mut total = 0_i64;
    let mut found = false;
    let words: Vec<&str> = text[at..].split_whitespace().take(8).collect();
    let mut i = 0;
    while i < words.len() {
        let w = words[i].trim_end_matches([',', '.', ';']);
        let digits: String = w.chars().take_while(|c| c.is_ascii_digit()).collect();
        let Ok(n) = digits.parse::<i64>() else {
            break;
        };
        let unit = match &w[digits.len()..] {
            "" => words.get(i + 1).copied().unwrap_or("s"),
            u => u,
        };
        if w.len() == digits.len() {
            i += 1;
        }
        let per = match unit.trim_end_matches([',', '.', ';']) {
            u if u.starts_with('h') => 3600,
            u if u.starts_with("mi") || u == "m" => 60,
            u if u.starts_with('s') => 1,
            u if u.starts_with('d') => 86_400,
            _ => break,
        };
        total += n * per;
        found = true;
        i += 1;
        if words.get(i) == Some(&"and") {
            i += 1;
        }
    }
    found.then_some(total)
}

/// The local time zone's offset at `now`: the CLI, started by longrun, formats times in it.
fn local_offset(now: i64) -> chrono::FixedOffset {
    use chrono::{Local, Offset, TimeZone};
    Local
        .timestamp_opt(now, 0)
        .single()
        .map(|t| t.offset().fix())
        .unwrap_or_else(|| chrono::FixedOffset::east_opt(0).expect("UTC"))
}

/// "try again at 2:29 pm" or "try again at dec 5th, 2026 2:29 pm" (Codex's usage limit, in the
/// local time at `offset`, the date today's when it names none): the END of the minute it
/// names, in unix seconds, so the wait never ends before the reset.
fn retry_at(text: &str, now: i64, offset: chrono::FixedOffset) -> Option<i64> {
    let at = text.find("try again at ")? + "try again at ".len();
    let words: Vec<&str> = text[at..]
        .split_whitespace()
        .take(5)
        .map(|w| w.trim_end_matches([',', '.', ';', ')']))
        .collect();
    let today = chrono::DateTime::from_timestamp(now, 0)?
        .with_timezone(&offset)
        .date_naive();
    let (date, rest) = match words.first() {
        Some(w) if w.contains(':') => (today, &words[..]),
        _ => {
            const MONTHS: [&str; 12] = [
                "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
            ];
            let month = MONTHS
                .iter()
                .position(|m| words.first().is_some_and(|w| w.starts_with(m)))?;
            let day: String = words
                .get(1)?
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            let year = words.get(2)?.parse().ok()?;
            let date = chrono::NaiveDate::from_ymd_opt(year, month as u32 + 1, day.parse().ok()?)?;
            (date, words.get(3..)?)
        }
    };
    let (h, m) = rest.first()?.split_once(':')?;
    let (h, m): (u32, u32) = (h.parse().ok()?, m.get(..2)?.parse().ok()?);
    let hour = match (h, *rest.get(1)?) {
        (12, "am") => 0,
        (12, "pm") => 12,
        (h @ 1..=11, "am") => h,
        (h @ 1..=11, "pm") => h + 12,
        _ => return None,
    };
    let start = date
        .and_hms_opt(hour, m, 0)?
        .and_local_timezone(offset)
        .single()?;
    Some(start.timestamp() + 60)
}

/// What a run's stdout said, parsed from its JSON lines.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    pub usage: Usage,
    pub limit: Option<UsageLimit>,
    /// The CLI's own session id (Claude's `session_id`, Codex's `thread_id`, Gemini's
    /// `init` event's `session_id`), to resume it.
    pub session: Option<String>,
    /// The agent's final answer, for the CLIs that stream JSON events (Claude's `result`,
    /// Codex's last agent message, Gemini's assistant text after its last tool call).
    pub answer: Option<String>,
    /// The last error event that names an authentication, quota or transient failure.
    pub failure: Option<Failure>,
}

fn u(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Reads the JSON events of a run's stdout. Lines that are not JSON objects are ignored, so an
/// agent that merely prints the word "limit" is never taken for a usage limit.
pub fn parse_output(kind: BackendKind, stdout: &str) -> Report {
    parse_output_at(kind, stdout, chrono::Utc::now().timestamp())
}

/// `parse_output` at unix time `now` (a message's "try again in 2 hours" is read from it).
pub fn parse_output_at(kind: BackendKind, stdout: &str, now: i64) -> Report {
    let mut r = Report::default();
    // Gemini streams its text in chunks: (all of it, the part since the last tool call).
    let (mut gemini_all, mut gemini_last) = (String::new(), String::new());
    // Claude's `result` is its final answer; its last assistant text when there is none.
    let mut claude_result = None;
    for line in stdout.lines() {
        let Ok(ev) = serde_json::from_str::<Value>(line.trim()) else {
            continue;
        };
        let ty = ev.get("type").and_then(Value::as_str).unwrap_or("");
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
        if let Some(e) = error_event(kind, ty, &ev) {
            match classify(&e, now) {
                // A reset time already read (Claude's rate_limit_event) is kept.
                Some(Verdict::Limit(l))
                    if r.limit.as_ref().is_none_or(|o| o.resets_at.is_none()) =>
                {
                    r.limit = Some(l);
                }
                Some(Verdict::Failed(kind)) => {
                    let cause: String = e.message.chars().take(300).collect();
                    r.failure = Some(Failure { kind, cause });
                }
                Some(Verdict::Limit(_)) | None => {}
            }
        }
        match (kind, ty) {
            (BackendKind::Claude, "result") => claude_result = text(ev.get("result")),
            (BackendKind::Claude, "assistant") => {
                let blocks = ev.pointer("/message/content").and_then(Value::as_array);
                let said: String = blocks
                    .into_iter()
                    .flatten()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .collect();
                if !said.is_empty() {
                    r.answer = Some(said);
                }
            }
            (BackendKind::Codex, "item.completed") => {
                let item = ev.get("item").unwrap_or(&Value::Null);
                let item_type = item
                    .get("type")
                    .or_else(|| item.get("item_type"))
                    .and_then(Value::as_str);
                if matches!(item_type, Some("agent_message" | "assistant_message")) {
                    r.answer = text(item.get("text")).or(r.answer.take());
                }
            }
            (BackendKind::Gemini, "message")
                if ev.get("role").and_then(Value::as_str) == Some("assistant") =>
            {
                let chunk = ev.get("content").and_then(Value::as_str).unwrap_or("");
                gemini_all.push_str(chunk);
                gemini_last.push_str(chunk);
            }
            (BackendKind::Gemini, "tool_use" | "tool_result") => gemini_last.clear(),
            _ => {}
        }
        let session = match (kind, ty) {
            (BackendKind::Claude, _) => ev.get("session_id"),
            (BackendKind::Codex, "thread.started") => ev.get("thread_id"),
            (BackendKind::Gemini, "init") => ev.get("session_id"),
            _ => None,
        };
        if let Some(id) = session.and_then(Value::as_str).filter(|s| !s.is_empty()) {
            r.session = Some(id.to_string());
        }
        match (kind, ty) {
            (BackendKind::Claude | BackendKind::Perplexity | BackendKind::Command, "result") => {
                // Anthropic's `input_tokens` leaves out the cache reads and writes; they are
                // input all the same (billed, at their own rates).
                if let Some(usage) = ev.get("usage") {
                    let cache_read = u(usage, "cache_read_input_tokens");
                    r.usage.input_tokens += u(usage, "input_tokens")
                        + u(usage, "cache_creation_input_tokens")
                        + cache_read;
                    r.usage.output_tokens += u(usage, "output_tokens");
                    r.usage.cached_input_tokens += cache_read;
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
                    // Reasoning tokens are part of `output_tokens` (as the provider bills
                    // them), not on top of it.
                    r.usage.output_tokens += u(usage, "output_tokens");
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
    if claude_result.is_some() {
        r.answer = claude_result;
    }
    if kind == BackendKind::Gemini {
        let answer = match gemini_last.trim() {
            "" => gemini_all,
            _ => gemini_last,
        };
        r.answer = Some(answer).filter(|a| !a.trim().is_empty());
    }
    r
}

fn add_gemini_stats(usage: &mut Usage, stats: &Value) {
    let input = u(stats, "input_tokens").max(u(stats, "input"));
    let output = u(stats, "output_tokens");
    let total = u(stats, "total_tokens");
    usage.input_tokens += input;
    // `output_tokens` leaves out the thinking tokens the provider billed; the total has them.
    usage.output_tokens += output.max(total.saturating_sub(input));
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
                input_tokens: 105,
                output_tokens: 20,
                cached_input_tokens: 5,
                cost_usd: Some(0.012),
                turns: 2
            }
        );
        assert_eq!(r.limit, None);
    }

    /// Claude Code 2.1.332's `result` against a fake Messages API that reported, over two
    /// calls, 260 fresh input tokens, 80 written to the cache and 600 read from it.
    #[test]
    fn claudes_cache_reads_and_writes_are_input_tokens() {
        let out = r#"{"duration_api_ms":88,"stop_reason":"end_turn","session_id":"3d925c66-3aec-4220-89a3-176236c2902e","total_cost_usd":0.0018799999999999997,"usage":{"input_tokens":260,"cache_creation_input_tokens":80,"cache_read_input_tokens":600,"output_tokens":16,"output_tokens_details":{"thinking_tokens":0},"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard","cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0},"inference_geo":"","iterations":[],"speed":"standard","fallback_credit":null},"modelUsage":{"claude-opus-5-5":{"inputTokens":260,"outputTokens":16,"cacheReadInputTokens":600,"cacheCreationInputTokens":80,"webSearchRequests":0,"costUSD":0.0018799999999999997,"contextWindow":1000000,"maxOutputTokens":128000,"thinkingTokens":0,"cacheCreationEphemeral5mInputTokens":0,"cacheCreationEphemeral1hInputTokens":0,"canonicalModel":"claude-opus-5-5","provider":"firstParty","costBasis":"list"}},"permission_denials":[],"terminal_reason":"completed","is_error":false,"num_turns":2,"subtype":"success","api_error_status":null,"result":"Done.","type":"result","duration_ms":344}"#;

        let r = parse_output(BackendKind::Claude, out);

        assert_eq!(
            (
                r.usage.input_tokens,
                r.usage.cached_input_tokens,
                r.usage.output_tokens
            ),
            (940, 600, 16)
        );
        assert!((r.usage.cost_usd.unwrap() - 0.00188).abs() < 1e-12);
    }

    /// Codex 0.169's events after a `usage_limit_reached` 429 whose reset was 14:29:02 UTC:
    /// it gives up and names only the minute, in local time.
    #[test]
    fn codexs_usage_limit_waits_to_the_end_of_the_minute_it_names() {
        let out = r#"{"type":"thread.started","thread_id":"01a24175-56c7-73a3-b0e3-6cd2b9b6bd62"}
{"type":"turn.started"}
{"type":"error","message":"You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at 2:29 PM."}
{"type":"turn.failed","error":{"message":"You’ve hit your usage limit. Upgrade to Pro (https://chatgpt.com/explore/pro), visit https://chatgpt.com/settings/usage to purchase more credits or try again at 2:29 PM."}}"#;
        use chrono::TimeZone;
        let local = chrono::Local;
        let today = local.with_ymd_and_hms(2026, 12, 4, 14, 28, 58).unwrap();
        let minute_end = local.with_ymd_and_hms(2026, 12, 4, 14, 30, 0).unwrap();

        let r = parse_output_at(BackendKind::Codex, out, today.timestamp());

        assert_eq!(
            r.limit,
            Some(UsageLimit {
                resets_at: Some(minute_end.timestamp())
            })
        );
        assert_eq!(r.failure, None);
        assert!(r.usage.is_empty(), "a refused turn spent nothing");
    }

    #[test]
    fn a_reset_named_by_time_or_by_date_and_time_is_read_in_the_given_zone() {
        let utc = chrono::FixedOffset::east_opt(0).unwrap();
        let plus2 = chrono::FixedOffset::east_opt(2 * 3600).unwrap();
        let now = 1_796_394_538; // 2026-12-04 14:28:58 UTC

        let at = |t: &str, z| retry_at(t, now, z);

        assert_eq!(at("or try again at 2:29 pm.", utc), Some(now + 62));
        assert_eq!(at("or try again at 4:29 pm.", plus2), Some(now + 62));
        assert_eq!(at("try again at 12:05 am.", utc), Some(1_796_342_760));
        assert_eq!(
            at("try again at dec 5th, 2026 2:29 pm.", utc),
            Some(now + 86_400 + 62)
        );
        assert_eq!(at("try again at noon", utc), None);
        assert_eq!(at("try again later", utc), None);
    }

    /// Codex 0.169 after an API-key 429 (`rate_limit_exceeded`, "try again in 3s"): it drops
    /// the delay, so the configured wait applies.
    #[test]
    fn a_429_codex_gave_up_on_is_a_limit_with_no_known_reset() {
        let out = r#"{"type":"error","message":"exceeded retry limit, last status: 429 Too Many Requests"}
{"type":"turn.failed","error":{"message":"exceeded retry limit, last status: 429 Too Many Requests"}}"#;

        let r = parse_output(BackendKind::Codex, out);

        assert_eq!(r.limit, Some(UsageLimit { resets_at: None }));
        assert_eq!(r.failure, None);
    }

    /// Gemini CLI 0.61's first event names its session; `--resume <uuid>` continues it.
    #[test]
    fn geminis_session_is_resumed_by_its_own_flag() {
        let cfg = crate::config::RunnerConfig::default();
        let out = r#"{"type":"init","timestamp":"2026-12-04T14:30:02.143Z","session_id":"a7366865-d884-41e5-ba96-7585bc8890af","model":"gemini-2.5-pro"}
{"type":"result","timestamp":"2026-12-04T14:30:02.211Z","status":"success","stats":{"total_tokens":172,"input_tokens":160,"output_tokens":7,"cached":50,"input":110,"duration_ms":68,"tool_calls":0}}"#;

        let session = parse_output(BackendKind::Gemini, out).session;
        let g = launch(
            &cfg.backends["gemini"],
            "go on",
            Path::new("/p"),
            session.as_deref(),
        );

        assert_eq!(
            session.as_deref(),
            Some("a7366865-d884-41e5-ba96-7585bc8890af")
        );
        assert!(
            g.argv
                .windows(2)
                .any(|w| w == ["--resume", "a7366865-d884-41e5-ba96-7585bc8890af"]),
            "{:?}",
            g.argv
        );
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
    fn codex_turns_are_summed_and_reasoning_is_inside_the_output_tokens() {
        let out = r#"{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":2,"output_tokens":3,"reasoning_output_tokens":1}}
{"type":"turn.completed","usage":{"input_tokens":5,"cached_input_tokens":0,"output_tokens":1,"reasoning_output_tokens":0}}"#;

        let r = parse_output(BackendKind::Codex, out);

        assert_eq!(
            (r.usage.input_tokens, r.usage.output_tokens, r.usage.turns),
            (15, 4, 2)
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
    fn geminis_thinking_tokens_count_as_output() {
        let out = r#"{"type":"result","status":"success","stats":{"total_tokens":150,"input_tokens":100,"output_tokens":20}}"#;

        let r = parse_output(BackendKind::Gemini, out);

        assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (100, 50));
    }

    #[test]
    fn a_resumed_session_books_only_what_its_process_added() {
        let before = Usage {
            input_tokens: 4444,
            output_tokens: 40,
            cost_usd: Some(0.0102),
            ..Usage::default()
        };
        let after = Usage {
            input_tokens: 8888,
            output_tokens: 80,
            cost_usd: Some(0.0204),
            turns: 1,
            ..Usage::default()
        };

        let claude = after.since(&before, BackendKind::Claude);
        let codex = after.since(&before, BackendKind::Codex);

        assert!((claude.cost_usd.unwrap() - 0.0102).abs() < 1e-9);
        assert_eq!(claude.input_tokens, 8888, "Claude's tokens are per process");
        assert_eq!((codex.input_tokens, codex.output_tokens), (4444, 40));
        assert_eq!(after.since(&before, BackendKind::Gemini), after);
    }

    #[test]
    fn the_final_answer_is_read_from_each_clis_events() {
        let claude = r#"{"type":"assistant","message":{"content":[{"type":"text","text":"thinking aloud"}]}}
{"type":"result","subtype":"success","result":"The answer is 42."}"#;
        let codex = r#"{"type":"item.completed","item":{"id":"1","type":"agent_message","text":"first"}}
{"type":"item.completed","item":{"id":"2","type":"command_execution","command":"ls"}}
{"type":"item.completed","item":{"id":"3","type":"agent_message","text":"Final: done."}}"#;
        let gemini = r#"{"type":"message","role":"user","content":"do it"}
{"type":"message","role":"assistant","content":"Let me look.","delta":true}
{"type":"tool_use","tool_name":"ls"}
{"type":"tool_result","status":"success"}
{"type":"message","role":"assistant","content":"All ","delta":true}
{"type":"message","role":"assistant","content":"done.","delta":true}
{"type":"result","status":"success","stats":{}}"#;

        let answers = [
            parse_output(BackendKind::Claude, claude).answer,
            parse_output(BackendKind::Codex, codex).answer,
            parse_output(BackendKind::Gemini, gemini).answer,
            parse_output(BackendKind::Command, "plain text").answer,
        ];

        assert_eq!(
            answers,
            [
                Some("The answer is 42.".to_string()),
                Some("Final: done.".to_string()),
                Some("All done.".to_string()),
                None
            ]
        );
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
