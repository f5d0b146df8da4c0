//! The `LlmClient` port: one chat call in, content and exact usage out.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LlmRole {
    Planner,
    Executor,
    Repair,
    /// The final call that writes a run's narrative summary.
    Reporter,
    /// A completion criterion judged in a fresh context, apart from the planner's conversation.
    Grader,
}

impl LlmRole {
    pub fn as_str(self) -> &'static str {
        match self {
            LlmRole::Planner => "planner",
            LlmRole::Executor => "executor",
            LlmRole::Repair => "repair",
            LlmRole::Reporter => "reporter",
            LlmRole::Grader => "grader",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
    /// This message ends a prefix that repeats byte for byte from call to call (system prompt,
    /// tools, objective): providers that cache on request (Anthropic, Bedrock) are asked to
    /// cache everything up to here.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cache: bool,
}

impl ChatMessage {
    fn new(role: &str, content: String) -> Self {
        ChatMessage {
            role: role.into(),
            content,
            cache: false,
        }
    }
    pub fn system(content: impl Into<String>) -> Self {
        ChatMessage::new("system", content.into())
    }
    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage::new("user", content.into())
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        ChatMessage::new("assistant", content.into())
    }
    /// Marks the end of a stable prefix.
    pub fn cached(mut self) -> Self {
        self.cache = true;
        self
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ChatRequest {
    pub run_id: String,
    pub iteration: u32,
    pub role: LlmRole,
    /// `provider:model`, e.g. `openai:gpt-4.1-mini` or `script:demo.json`.
    pub model: String,
    pub messages: Vec<ChatMessage>,
    /// JSON Schema the answer must follow, for providers with structured output; shared, as
    /// the planner's is one value for every call.
    pub json_schema: Option<std::sync::Arc<serde_json::Value>>,
    pub max_output_tokens: Option<u32>,
    /// `{run_id}#{iteration}#{call}`: a redelivered iteration repeats the same keys.
    pub idempotency_key: String,
    /// This call's place among its role's calls in the iteration, from 1: the planner's first
    /// call is 1 and its corrective retry 2; the iteration's k-th executor task is k. A
    /// redelivered iteration repeats it; scripted models answer by it.
    pub role_call: u32,
    /// 0 for a call's first try; the router's k-th retry of the same call is k.
    pub attempt: u32,
    /// Other `provider:model`s the call may rotate to or fail over to; empty: only `model`.
    pub rotation: Vec<String>,
    /// Epoch ms by which the iteration must be committed (Lambda's deadline). A retry that
    /// would sleep past it is not made: the error comes back with `requeue_after_ms`.
    pub deadline_ms: Option<i64>,
}

/// Normalized usage of one call. `input_tokens` excludes cache reads and writes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cache_write_tokens: u64,
    pub reasoning_tokens: u64,
    /// Usage fields the provider reported that have no column above (`audio_tokens`, …).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub extra: std::collections::BTreeMap<String, serde_json::Value>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ChatResponse {
    pub content: String,
    pub usage: Usage,
    pub provider: String,
    pub model: String,
    pub latency_ms: u64,
    /// `None` when no price is known for the model.
    pub cost_usd: Option<f64>,
    /// Time spent waiting for the model's capacity (per-model limits) before the call; not
    /// the run's running time.
    pub queued_ms: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LlmErrorKind {
    RateLimited,
    Server,
    Timeout,
    Auth,
    Quota,
    BadRequest,
    /// The provider answered something that is not a valid response.
    Malformed,
}

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{kind:?}: {message}")]
pub struct LlmError {
    pub kind: LlmErrorKind,
    pub message: String,
    pub retry_after_ms: Option<u64>,
    /// Set when retrying stopped only because the iteration's deadline would pass: the step
    /// goes back to the queue and is tried again after this delay.
    pub requeue_after_ms: Option<u64>,
    /// Time the call waited for the model's capacity before it failed: not running time.
    pub queued_ms: u64,
}

impl LlmError {
    pub fn new(kind: LlmErrorKind, message: impl Into<String>) -> Self {
        LlmError {
            kind,
            // Provider error text is made here: a key it echoes is scrubbed before anything
            // can store or send it.
            message: crate::redact::scrubbed(message.into()),
            retry_after_ms: None,
            requeue_after_ms: None,
            queued_ms: 0,
        }
    }

    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind,
            LlmErrorKind::RateLimited
                | LlmErrorKind::Server
                | LlmErrorKind::Timeout
                | LlmErrorKind::Malformed
        )
    }
}

#[async_trait]
pub trait LlmClient: Send + Sync {
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError>;
}
