//! OpenAI-compatible Chat Completions (OpenAI, OpenRouter, vLLM, Ollama, llama.cpp).

use std::time::{Duration, Instant};

use async_trait::async_trait;
use longrun_ports::{ChatRequest, ChatResponse, LlmClient, LlmError, LlmErrorKind, Usage};
use serde_json::{Value, json};

use crate::Secret;
use crate::anthropic::ANSWER_TOOL;

/// How a structured answer is asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Structured {
    /// A forced call of one function whose parameters are the contract: the most portable.
    #[default]
    Tool,
    /// `response_format: {type: json_schema}` (OpenAI, llama.cpp, vLLM).
    JsonSchema,
    /// `response_format: {type: json_object}` for servers that know nothing else.
    JsonObject,
}

pub struct OpenAiClient {
    http: reqwest::Client,
    base_url: String,
    api_key: Option<Secret>,
    model: String,
    structured: Structured,
    /// The price table's provider: OpenAI-compatible servers price their own models.
    provider: String,
}

impl OpenAiClient {
    /// `http` is built once at start-up, with its timeouts.
    pub fn new(
        http: reqwest::Client, base_url: &str, api_key: Option<Secret>, model: &str,
    ) -> Self {
        OpenAiClient {
            http,
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key,
            model: model.to_string(),
            structured: Structured::Tool,
            provider: "openai".into(),
        }
    }

    pub fn provider(mut self, provider: &str) -> Self {
        self.provider = provider.to_string();
        self
    }

    pub fn structured(mut self, structured: Structured) -> Self {
        self.structured = structured;
        self
    }

    pub fn body(&self, req: &ChatRequest) -> Value {
        let messages: Vec<Value> = req
            .messages
            .iter()
            .map(|m| json!({"role": m.role, "content": m.content}))
            .collect();
        let mut body = json!({"model": self.model, "messages": messages});
        // OpenAI caches prompt prefixes by itself; a key per run keeps one run's calls on the
        // same cache. Other OpenAI-compatible servers may refuse unknown fields.
        if self.base_url.starts_with("https://api.openai.com") {
            body["prompt_cache_key"] = json!(req.run_id);
        }
        if let Some(max) = req.max_output_tokens {
            body["max_tokens"] = json!(max);
        }
        if let Some(schema) = req.json_schema.as_deref() {
            match self.structured {
                Structured::Tool => {
                    body["tools"] = json!([{"type": "function", "function": {
                        "name": ANSWER_TOOL,
                        "description": "Give your answer; its arguments are the whole answer.",
                        "parameters": schema,
                    }}]);
                    body["tool_choice"] =
                        json!({"type": "function", "function": {"name": ANSWER_TOOL}});
                }
                Structured::JsonSchema => {
                    body["response_format"] = json!({"type": "json_schema", "json_schema": {
                        "name": ANSWER_TOOL, "schema": schema, "strict": false,
                    }});
                }
                Structured::JsonObject => {
                    body["response_format"] = json!({"type": "json_object"});
                }
            }
        }
        body
    }
}

/// The answer text: the forced function's arguments (a JSON *string* on the wire; some
/// servers send an object), else the message content.
pub fn content_of(v: &Value) -> Result<String, LlmError> {
    let message = v["choices"]
        .as_array()
        .and_then(|c| c.first())
        .map(|c| &c["message"])
        .ok_or_else(|| LlmError::new(LlmErrorKind::Malformed, "response has no choices"))?;
    let call = message["tool_calls"].as_array().and_then(|calls| {
        calls
            .iter()
            .find(|c| c["function"]["name"] == ANSWER_TOOL)
            .map(|c| &c["function"]["arguments"])
    });
    Ok(match (call, &message["content"]) {
        (Some(Value::String(args)), _) => args.clone(),
        (Some(args @ Value::Object(_)), _) => args.to_string(),
        (_, Value::String(s)) => s.clone(),
        (_, Value::Null) => String::new(),
        (_, other) => other.to_string(),
    })
}

fn error_for_status(status: u16, body: &str) -> LlmError {
    let detail: String = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
        .unwrap_or_else(|| body.chars().take(300).collect());
    let quota = body.contains("insufficient_quota");
    let kind = match status {
        401 | 403 => LlmErrorKind::Auth,
        429 if quota => LlmErrorKind::Quota,
        429 => LlmErrorKind::RateLimited,
        408 => LlmErrorKind::Timeout,
        500..=599 => LlmErrorKind::Server,
        _ => LlmErrorKind::BadRequest,
    };
    LlmError::new(kind, format!("HTTP {status}: {detail}"))
}

/// Maps the wire usage: `prompt_tokens` includes `cached_tokens`, ours excludes them.
pub fn usage_from(v: &Value) -> Usage {
    let u = &v["usage"];
    let prompt = u["prompt_tokens"].as_u64().unwrap_or(0);
    let known = [
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "prompt_tokens_details.cached_tokens",
        "completion_tokens_details.reasoning_tokens",
        "cost",
    ];
    let cached = u["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap_or(0);
    Usage {
        input_tokens: prompt.saturating_sub(cached),
        output_tokens: u["completion_tokens"].as_u64().unwrap_or(0),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
        reasoning_tokens: u["completion_tokens_details"]["reasoning_tokens"]
            .as_u64()
            .unwrap_or(0),
        extra: crate::extra_usage(u, &known),
    }
}

#[async_trait]
impl LlmClient for OpenAiClient {
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut http = self
            .http
            .post(format!("{}/chat/completions", self.base_url))
            .header("Idempotency-Key", &req.idempotency_key)
            .json(&self.body(req));
        if let Some(key) = &self.api_key {
            http = http.bearer_auth(key.expose());
        }
        let started = Instant::now();
        let v = send_json(http, error_for_status).await?;
        Ok(ChatResponse {
            content: content_of(&v)?,
            usage: usage_from(&v),
            provider: self.provider.clone(),
            model: self.model.clone(),
            latency_ms: started.elapsed().as_millis() as u64,
            cost_usd: v["usage"]["cost"].as_f64(),
            queued_ms: 0,
        })
    }
}

/// Sends a provider request and returns its JSON body; transport failures, non-2xx answers
/// (typed by `error_for_status`, with `Retry-After`) and non-JSON bodies become `LlmError`s.
pub async fn send_json(
    request: reqwest::RequestBuilder, error_for_status: fn(u16, &str) -> LlmError,
) -> Result<Value, LlmError> {
    // A timeout is named as one; otherwise a failed send is the server's, a body that
    // breaks off is malformed.
    let transport = |kind: LlmErrorKind, what: &str, e: reqwest::Error| {
        let kind = if e.is_timeout() {
            LlmErrorKind::Timeout
        } else {
            kind
        };
        LlmError::new(
            kind,
            format!("{what} failed: {}", longrun_transport::describe(&e)),
        )
    };
    let resp = request
        .send()
        .await
        .map_err(|e| transport(LlmErrorKind::Server, "request", e))?;
    let status = resp.status().as_u16();
    let retry_after = longrun_transport::retry_after_ms(resp.headers());
    let text = resp
        .text()
        .await
        .map_err(|e| transport(LlmErrorKind::Malformed, "reading the response", e))?;
    if !(200..300).contains(&status) {
        let mut err = error_for_status(status, &text);
        err.retry_after_ms = retry_after;
        return Err(err);
    }
    serde_json::from_str(&text).map_err(|e| {
        LlmError::new(
            LlmErrorKind::Malformed,
            format!("response is not JSON: {e}"),
        )
    })
}

pub fn http_client(timeout: Duration) -> Result<reqwest::Client, LlmError> {
    reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| {
            LlmError::new(
                LlmErrorKind::BadRequest,
                format!("cannot build HTTP client: {e}"),
            )
        })
}
