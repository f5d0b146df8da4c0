//! A scripted model: replays a file of answers per role (see the README for the format).
//! Each run keeps its own cursor per role, so concurrent runs replay the script independently.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use longrun_ports::{ChatRequest, ChatResponse, LlmClient, LlmError, LlmErrorKind, LlmRole, Usage};
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ScriptUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ScriptError {
    pub kind: String,
    #[serde(default)]
    pub message: String,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Step {
    Error {
        error: ScriptError,
    },
    Answer {
        content: serde_json::Value,
        #[serde(default)]
        usage: Option<ScriptUsage>,
        #[serde(default)]
        latency_ms: u64,
    },
}

/// Each list may be left out: a script for the planner alone is common.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct Script {
    pub planner: Vec<Step>,
    pub executor: Vec<Step>,
    pub repair: Vec<Step>,
    /// The narrative summary at a run's end; without it, reports use the records' summary.
    #[serde(default)]
    pub reporter: Vec<Step>,
}

#[derive(Debug, thiserror::Error)]
pub enum ScriptLoadError {
    #[error("cannot read script {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("script {path} is not valid: {message}")]
    Invalid { path: String, message: String },
}

impl Script {
    pub fn parse(text: &str, name: &str) -> Result<Script, ScriptLoadError> {
        let script: Script = serde_json::from_str(text).map_err(|e| ScriptLoadError::Invalid {
            path: name.to_string(),
            message: e.to_string(),
        })?;
        for step in script
            .planner
            .iter()
            .chain(&script.executor)
            .chain(&script.repair)
            .chain(&script.reporter)
        {
            if let Step::Error { error } = step
                && parse_kind(&error.kind).is_none()
            {
                return Err(ScriptLoadError::Invalid {
                    path: name.to_string(),
                    message: format!(
                        "unknown error kind `{}`; use rate_limited, server, auth, timeout, quota or bad_request",
                        error.kind
                    ),
                });
            }
        }
        Ok(script)
    }

    pub fn load(path: &Path) -> Result<Script, ScriptLoadError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScriptLoadError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Script::parse(&text, &path.display().to_string())
    }
}

fn parse_kind(kind: &str) -> Option<LlmErrorKind> {
    Some(match kind {
        "rate_limited" => LlmErrorKind::RateLimited,
        "server" => LlmErrorKind::Server,
        "auth" => LlmErrorKind::Auth,
        "timeout" => LlmErrorKind::Timeout,
        "quota" => LlmErrorKind::Quota,
        "bad_request" => LlmErrorKind::BadRequest,
        _ => return None,
    })
}

pub struct ScriptedLlm {
    name: String,
    script: Script,
    cursors: Mutex<HashMap<(String, LlmRole), usize>>,
}

impl ScriptedLlm {
    pub fn new(name: &str, script: Script) -> Self {
        ScriptedLlm {
            name: name.to_string(),
            script,
            cursors: Mutex::default(),
        }
    }

    fn next_step(&self, run_id: &str, role: LlmRole) -> Option<Step> {
        let steps = match role {
            LlmRole::Planner => &self.script.planner,
            LlmRole::Executor => &self.script.executor,
            LlmRole::Repair => &self.script.repair,
            LlmRole::Reporter => &self.script.reporter,
        };
        if steps.is_empty() {
            return None;
        }
        let mut cursors = self.cursors.lock().unwrap_or_else(|e| e.into_inner());
        let i = cursors.entry((run_id.to_string(), role)).or_insert(0);
        let step = steps[(*i).min(steps.len() - 1)].clone();
        *i += 1;
        Some(step)
    }
}

/// Rough token estimate for steps without usage: about 4 characters per token.
fn estimate(chars: usize) -> u64 {
    (chars as u64).div_ceil(4).max(1)
}

#[async_trait]
impl LlmClient for ScriptedLlm {
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let step = self.next_step(&req.run_id, req.role).ok_or_else(|| {
            LlmError::new(
                LlmErrorKind::BadRequest,
                format!("script {} has no `{}` steps", self.name, req.role.as_str()),
            )
        })?;
        match step {
            Step::Error { error } => {
                let kind = parse_kind(&error.kind).unwrap_or(LlmErrorKind::Server);
                Err(LlmError::new(kind, error.message))
            }
            Step::Answer {
                content,
                usage,
                latency_ms,
            } => {
                if latency_ms > 0 {
                    tokio::time::sleep(Duration::from_millis(latency_ms)).await;
                }
                let text = match content {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                };
                let text = text
                    .replace("{{iteration}}", &req.iteration.to_string())
                    .replace("{{run_id}}", &req.run_id);
                let usage = match usage {
                    Some(u) => Usage {
                        input_tokens: u.input_tokens,
                        output_tokens: u.output_tokens,
                        ..Default::default()
                    },
                    None => Usage {
                        input_tokens: estimate(req.messages.iter().map(|m| m.content.len()).sum()),
                        output_tokens: estimate(text.len()),
                        ..Default::default()
                    },
                };
                Ok(ChatResponse {
                    content: text,
                    usage,
                    provider: "script".into(),
                    model: self.name.clone(),
                    latency_ms,
                    cost_usd: None,
                    queued_ms: 0,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use longrun_ports::ChatMessage;

    fn req(run: &str, role: LlmRole) -> ChatRequest {
        ChatRequest {
            run_id: run.into(),
            iteration: 7,
            role,
            model: "script:t".into(),
            messages: vec![ChatMessage::user("hello")],
            json_schema: None,
            max_output_tokens: None,
            idempotency_key: "k".into(),
            rotation: vec![],
            deadline_ms: None,
        }
    }

    #[tokio::test]
    async fn each_role_consumes_its_list_and_the_last_step_repeats() {
        let script = Script::parse(
            r#"{"planner": [{"content": "a"}, {"content": {"x": "{{iteration}}"}, "usage": {"input_tokens": 3, "output_tokens": 4}}]}"#,
            "t",
        )
        .unwrap();
        let llm = ScriptedLlm::new("t", script);
        let r = |role| req("r1", role);
        assert_eq!(llm.chat(&r(LlmRole::Planner)).await.unwrap().content, "a");
        let second = llm.chat(&r(LlmRole::Planner)).await.unwrap();
        assert_eq!(second.content, r#"{"x":"7"}"#);
        assert_eq!(second.usage.input_tokens, 3);
        assert_eq!(
            llm.chat(&r(LlmRole::Planner)).await.unwrap().content,
            r#"{"x":"7"}"#
        );
        // Another run starts from the beginning.
        assert_eq!(
            llm.chat(&req("r2", LlmRole::Planner))
                .await
                .unwrap()
                .content,
            "a"
        );
        assert_eq!(
            llm.chat(&r(LlmRole::Executor)).await.unwrap_err().kind,
            LlmErrorKind::BadRequest
        );
    }

    #[tokio::test]
    async fn error_steps_become_typed_errors() {
        let script = Script::parse(
            r#"{"planner": [{"error": {"kind": "auth", "message": "bad key"}}]}"#,
            "t",
        )
        .unwrap();
        let err = ScriptedLlm::new("t", script)
            .chat(&req("r", LlmRole::Planner))
            .await
            .unwrap_err();
        assert_eq!(err.kind, LlmErrorKind::Auth);
        assert!(!err.is_retryable());
    }

    #[test]
    fn an_unknown_error_kind_is_refused_at_load() {
        let err = Script::parse(r#"{"planner": [{"error": {"kind": "boom"}}]}"#, "t").unwrap_err();
        assert!(err.to_string().contains("boom"));
    }
}
