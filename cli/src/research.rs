//! `longrun agent perplexity`: the research-only agent the `perplexity` backend runs. It asks
//! Perplexity's OpenAI-compatible API the prompt (one call: Perplexity searches the web and
//! answers with its sources), writes the answer to `output.md` in its run folder, and prints
//! one result event the way the CLIs do, so the runner reads its usage, cost and failures like
//! theirs. As a task's root it also writes DONE: its one answer is the whole research task.

use std::io::{Read, Write};
use std::path::PathBuf;

use longrun_llm::{Backoff, LlmSettings, ModelRouter};
use longrun_ports::llm::{ChatMessage, ChatRequest, LlmClient, LlmError, LlmErrorKind, LlmRole};
use longrun_runner::bus::{MessageType, post_best_effort};
use serde_json::json;

const SYSTEM: &str = "You are a research agent. Answer the request with what you find on the \
web: precise, complete, in Markdown. End with a \"Sources\" list of the URLs you used. You \
cannot run tools or change files; say so if the request asks for that.";

/// Runs the agent; returns its exit code (0 answered, 1 failed, 2 bad input).
pub fn perplexity(model: &str) -> i32 {
    let mut prompt = String::new();
    if std::io::stdin().read_to_string(&mut prompt).is_err() || prompt.trim().is_empty() {
        return fail(None, "", "the prompt (on stdin) is empty", 2);
    }
    let mut settings = LlmSettings::from_env();
    if settings.perplexity_api_key.is_none() {
        let said = "PERPLEXITY_API_KEY is not set (the backend's `token` sets it)";
        return fail(Some(401), "authentication_failed", said, 1);
    }
    // The runner retries a transient failure of the whole agent; one policy, not two nested.
    settings.retry = Backoff {
        max_retries: Some(0),
        ..Backoff::PROVIDER
    };
    let spec = format!("perplexity:{model}");
    let router = match ModelRouter::build(std::slice::from_ref(&spec), &settings) {
        Ok(r) => r,
        Err(e) => return fail(None, "", &e.to_string(), 2),
    };
    let run_id = std::env::var("LONGRUN_RUN_ID").unwrap_or_default();
    let req = ChatRequest {
        run_id: run_id.clone(),
        iteration: 0,
        role: LlmRole::Executor,
        model: spec,
        messages: vec![ChatMessage::system(SYSTEM), ChatMessage::user(prompt)],
        json_schema: None,
        max_output_tokens: None,
        idempotency_key: format!("{run_id}#research"),
        role_call: 1,
        attempt: 0,
        rotation: vec![],
        deadline_ms: None,
    };
    let answer = match tokio::runtime::Handle::try_current() {
        Ok(h) => h.block_on(router.chat(&req)),
        Err(_) => match tokio::runtime::Runtime::new() {
            Ok(rt) => rt.block_on(router.chat(&req)),
            Err(e) => return fail(None, "", &e.to_string(), 1),
        },
    };
    match answer {
        Ok(resp) => {
            let run_dir = std::env::var_os("LONGRUN_RUN_DIR").map(PathBuf::from);
            if let Some(dir) = &run_dir
                && let Err(e) = std::fs::write(dir.join("output.md"), &resp.content)
            {
                return fail(None, "", &format!("cannot write output.md: {e}"), 1);
            }
            event(&json!({
                "type": "result",
                "subtype": "success",
                "is_error": false,
                "result": resp.content,
                "num_turns": 1,
                "usage": {
                    "input_tokens": resp.usage.input_tokens,
                    "output_tokens": resp.usage.output_tokens,
                    "cache_read_input_tokens": resp.usage.cache_read_tokens,
                },
                "total_cost_usd": resp.cost_usd,
            }));
            finish_as_root(&run_id);
            0
        }
        Err(e) => {
            let (status, code) = status_of(&e);
            let mut said = e.message.clone();
            if let Some(ms) = e.retry_after_ms {
                said.push_str(&format!(" (retry in {}s)", ms.div_ceil(1000)));
            }
            fail(Some(status), code, &said, 1)
        }
    }
}

/// The HTTP status and error code the runner's failure reading knows.
fn status_of(e: &LlmError) -> (u64, &'static str) {
    match e.kind {
        LlmErrorKind::Auth => (401, "authentication_failed"),
        LlmErrorKind::Quota => (429, "billing_error"),
        LlmErrorKind::RateLimited => (429, "rate_limit"),
        LlmErrorKind::Server => (503, "server_error"),
        LlmErrorKind::Timeout => (504, "server_error"),
        LlmErrorKind::Malformed => (502, "server_error"),
        LlmErrorKind::BadRequest => (400, "invalid_request"),
    }
}

/// A root agent (no parent) finished the task with its answer; a child leaves DONE to its root.
fn finish_as_root(run_id: &str) {
    let parent = std::env::var("LONGRUN_PARENT_RUN_ID").unwrap_or_default();
    let Some(task_dir) = std::env::var_os("LONGRUN_TASK_DIR").map(PathBuf::from) else {
        return;
    };
    if parent.is_empty() && std::fs::write(task_dir.join("DONE"), "").is_ok() {
        let said = "research answered in output.md; DONE written";
        post_best_effort(&task_dir, MessageType::Info, run_id, said);
    }
}

fn fail(status: Option<u64>, code: &str, message: &str, exit: i32) -> i32 {
    event(&json!({
        "type": "result",
        "subtype": code,
        "is_error": true,
        "api_error_status": status,
        "result": message,
    }));
    exit
}

fn event(v: &serde_json::Value) {
    let _ = writeln!(std::io::stdout(), "{v}");
}
