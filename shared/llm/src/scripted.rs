//! A scripted model: replays a file of answers per role (see the README for the format), each
//! chosen by the request alone, as a stateless provider answers: a run replays its script
//! wherever and however often its iterations are delivered. It keeps no state per run.

use std::path::Path;
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
    /// The grader's answers (`{"pass": …, "reasons": …}`); without them every grade passes.
    #[serde(default)]
    pub grader: Vec<Step>,
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
            .chain(&script.grader)
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

/// A scripted answer, as a turn ends in one.
#[derive(Clone, Debug)]
struct Answer {
    content: serde_json::Value,
    usage: Option<ScriptUsage>,
    latency_ms: u64,
}

/// One place in a role's list: the error steps written before an answer, and that answer. A
/// call's first try meets the turn's first error, the router's k-th retry of it the k-th; once
/// the errors are used up it gets the answer. A list that ends in errors ends in a turn with
/// no answer, whose last error answers every further try.
#[derive(Clone, Debug, Default)]
struct Turn {
    errors: Vec<ScriptError>,
    answer: Option<Answer>,
}

fn turns(steps: &[Step]) -> Vec<Turn> {
    let mut out = vec![];
    let mut turn = Turn::default();
    for step in steps {
        match step {
            Step::Error { error } => turn.errors.push(error.clone()),
            Step::Answer {
                content,
                usage,
                latency_ms,
            } => {
                turn.answer = Some(Answer {
                    content: content.clone(),
                    usage: usage.clone(),
                    latency_ms: *latency_ms,
                });
                out.push(std::mem::take(&mut turn));
            }
        }
    }
    if !turn.errors.is_empty() {
        out.push(turn);
    }
    out
}

/// The turn of `req`'s role that answers it, by the call's place in its run (see the README's
/// "The scripted model file"): planner, repair and reporter turn n answer iteration n, a
/// corrective retry of the planner the next one; executor turn k answers an iteration's k-th
/// executor task. Past a list's end its last turn repeats.
fn place(req: &ChatRequest) -> usize {
    let iteration = req.iteration.saturating_sub(1) as usize;
    let of_role = req.role_call.saturating_sub(1) as usize;
    match req.role {
        LlmRole::Planner => iteration + of_role,
        LlmRole::Executor => of_role,
        LlmRole::Repair | LlmRole::Reporter | LlmRole::Grader => iteration,
    }
}

/// Replays a script. Each answer is a function of the request alone — its run's iteration, its
/// role, its place among the role's calls and its attempt — so a run redelivered, or carried on
/// by another process after a restart, gets what it got before, and nothing is kept per run.
pub struct ScriptedLlm {
    name: String,
    planner: Vec<Turn>,
    executor: Vec<Turn>,
    repair: Vec<Turn>,
    reporter: Vec<Turn>,
    grader: Vec<Turn>,
}

/// What a script without grader steps answers every grade: criteria then rest on the claim's
/// evidence, as before grading.
const PASSING_GRADE: &str =
    r#"{"pass": true, "reasons": "the script has no grader steps, so every grade passes"}"#;

impl ScriptedLlm {
    pub fn new(name: &str, script: Script) -> Self {
        ScriptedLlm {
            name: name.to_string(),
            planner: turns(&script.planner),
            executor: turns(&script.executor),
            repair: turns(&script.repair),
            reporter: turns(&script.reporter),
            grader: match script.grader.is_empty() {
                true => turns(&[Step::Answer {
                    content: serde_json::Value::String(PASSING_GRADE.into()),
                    usage: None,
                    latency_ms: 0,
                }]),
                false => turns(&script.grader),
            },
        }
    }

    /// The answer to `req`, or the error it meets; `None` when its role has no steps.
    fn step(&self, req: &ChatRequest) -> Option<Result<&Answer, &ScriptError>> {
        let turns = match req.role {
            LlmRole::Planner => &self.planner,
            LlmRole::Executor => &self.executor,
            LlmRole::Repair => &self.repair,
            LlmRole::Reporter => &self.reporter,
            LlmRole::Grader => &self.grader,
        };
        let turn = turns.get(place(req)).or(turns.last())?;
        match (turn.errors.get(req.attempt as usize), &turn.answer) {
            (Some(error), _) => Some(Err(error)),
            (None, Some(answer)) => Some(Ok(answer)),
            (None, None) => turn.errors.last().map(Err),
        }
    }
}

/// Rough token estimate for steps without usage: about 4 characters per token.
fn estimate(chars: usize) -> u64 {
    (chars as u64).div_ceil(4).max(1)
}

#[async_trait]
impl LlmClient for ScriptedLlm {
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let step = self.step(req).ok_or_else(|| {
            LlmError::new(
                LlmErrorKind::BadRequest,
                format!("script {} has no `{}` steps", self.name, req.role.as_str()),
            )
        })?;
        let answer = match step {
            Err(error) => {
                let kind = parse_kind(&error.kind).unwrap_or(LlmErrorKind::Server);
                return Err(LlmError::new(kind, error.message.clone()));
            }
            Ok(answer) => answer,
        };
        if answer.latency_ms > 0 {
            tokio::time::sleep(Duration::from_millis(answer.latency_ms)).await;
        }
        let text = match &answer.content {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let text = text
            .replace("{{iteration}}", &req.iteration.to_string())
            .replace("{{run_id}}", &req.run_id);
        let usage = match &answer.usage {
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
            latency_ms: answer.latency_ms,
            cost_usd: None,
            queued_ms: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use longrun_ports::ChatMessage;

    fn call(run: &str, iteration: u32, role: LlmRole, role_call: u32) -> ChatRequest {
        ChatRequest {
            run_id: run.into(),
            iteration,
            role,
            model: "script:t".into(),
            messages: vec![ChatMessage::user("hello")],
            json_schema: None,
            max_output_tokens: None,
            idempotency_key: format!("{run}#{iteration}#{role_call}"),
            role_call,
            attempt: 0,
            rotation: vec![],
            deadline_ms: None,
        }
    }

    fn planner(iteration: u32) -> ChatRequest {
        call("r1", iteration, LlmRole::Planner, 1)
    }

    fn llm(script: &str) -> ScriptedLlm {
        ScriptedLlm::new("t", Script::parse(script, "t").unwrap())
    }

    async fn content(llm: &ScriptedLlm, req: &ChatRequest) -> String {
        llm.chat(req).await.unwrap().content
    }

    const THREE: &str = r#"{"planner": [{"content": "one"}, {"content": "two"}, {"content": "three {{iteration}}"}]}"#;

    #[tokio::test]
    async fn a_fresh_model_as_after_a_restart_answers_iteration_3_with_the_third_planner_step() {
        // Arrange: a model that has answered nothing, as in a process started after a crash.
        let llm = llm(THREE);

        // Act
        let answer = content(&llm, &planner(3)).await;

        // Assert
        assert_eq!(answer, "three 3");
    }

    #[tokio::test]
    async fn a_request_gets_the_same_answer_whatever_was_asked_before_so_nothing_is_kept_per_run() {
        // Arrange: one model that has answered many runs, and one that has answered none.
        let used = llm(THREE);
        for run in 0..100 {
            for n in 1..=3 {
                used.chat(&call(&format!("other-{run}"), n, LlmRole::Planner, 1))
                    .await
                    .unwrap();
            }
        }
        let fresh = llm(THREE);

        // Act: the same call twice (a redelivery), and to each model.
        let first = content(&used, &planner(2)).await;
        let again = content(&used, &planner(2)).await;
        let elsewhere = content(&fresh, &planner(2)).await;

        // Assert
        assert_eq!((first.as_str(), again.as_str()), ("two", "two"));
        assert_eq!(elsewhere, "two");
    }

    #[tokio::test]
    async fn each_role_reads_the_turn_of_its_call_s_place_and_a_list_s_last_turn_repeats() {
        // Arrange
        let llm = llm(r#"{"planner": [{"content": "p1"}, {"content": "p2"}],
                "executor": [{"content": {"x": "{{iteration}}"}, "usage": {"input_tokens": 3, "output_tokens": 4}}, {"content": "e2"}],
                "repair": [{"content": "r1"}, {"content": "r2"}],
                "reporter": [{"content": "n1"}]}"#);

        // Act
        let corrective_retry = content(&llm, &call("r1", 1, LlmRole::Planner, 2)).await;
        let past_the_end = content(&llm, &planner(9)).await;
        let first_task = llm
            .chat(&call("r1", 7, LlmRole::Executor, 1))
            .await
            .unwrap();
        let second_task = content(&llm, &call("r1", 7, LlmRole::Executor, 2)).await;
        let repair = content(&llm, &call("r1", 2, LlmRole::Repair, 1)).await;
        let reporter = content(&llm, &call("r1", 5, LlmRole::Reporter, 1)).await;

        // Assert: a corrective retry takes the next planner turn; executors count within
        // their iteration; repair and reporter go by iteration.
        assert_eq!(corrective_retry, "p2");
        assert_eq!(past_the_end, "p2");
        assert_eq!(first_task.content, r#"{"x":"7"}"#);
        assert_eq!(first_task.usage.input_tokens, 3);
        assert_eq!(second_task, "e2");
        assert_eq!(repair, "r2");
        assert_eq!(reporter, "n1");
        assert_eq!(
            llm.chat(&call("r2", 1, LlmRole::Executor, 3))
                .await
                .unwrap()
                .content,
            "e2"
        );
    }

    #[tokio::test]
    async fn errors_before_an_answer_meet_a_call_s_first_tries_and_its_retry_gets_the_answer() {
        // Arrange: iteration 1 is rate limited once; iteration 2's turn is an answer alone.
        let llm = llm(
            r#"{"planner": [{"error": {"kind": "rate_limited", "message": "slow down"}}, {"content": "a"},
                            {"content": "b"}, {"error": {"kind": "server", "message": "503"}}]}"#,
        );
        let mut retry = planner(1);
        retry.attempt = 1;

        // Act
        let first_try = llm.chat(&planner(1)).await.unwrap_err();
        let retried = content(&llm, &retry).await;
        let next = content(&llm, &planner(2)).await;
        let mut late = planner(3);
        late.attempt = 5;
        let only_errors = llm.chat(&late).await.unwrap_err();

        // Assert: a turn of errors alone repeats its last on every try.
        assert_eq!(first_try.kind, LlmErrorKind::RateLimited);
        assert_eq!(retried, "a");
        assert_eq!(next, "b");
        assert_eq!(only_errors.kind, LlmErrorKind::Server);
    }

    #[tokio::test]
    async fn through_the_router_a_rate_limited_first_try_is_retried_into_its_answer() {
        // Arrange
        let script = r#"{"planner": [{"error": {"kind": "rate_limited", "message": "slow down"}}, {"content": "a"}]}"#;
        let router = crate::ModelRouter::build(&[], &Default::default())
            .unwrap()
            .with_client(
                "script:t",
                std::sync::Arc::new(llm(script)),
                crate::Backoff::SIMULATED,
            );

        // Act
        let answer = router.chat(&planner(1)).await.unwrap();

        // Assert
        assert_eq!(answer.content, "a");
    }

    #[tokio::test]
    async fn a_role_without_steps_answers_a_non_retryable_error() {
        let err = llm(THREE)
            .chat(&call("r", 1, LlmRole::Executor, 1))
            .await
            .unwrap_err();
        assert_eq!(err.kind, LlmErrorKind::BadRequest);
    }

    #[tokio::test]
    async fn error_steps_become_typed_errors() {
        let err = llm(r#"{"planner": [{"error": {"kind": "auth", "message": "bad key"}}]}"#)
            .chat(&planner(1))
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
