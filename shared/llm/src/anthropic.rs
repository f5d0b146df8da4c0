//! Anthropic Messages (`POST {base}/v1/messages`). A structured answer is a forced call of one
//! tool whose input schema is the contract: the most portable way to get schema-shaped JSON.

use std::time::Instant;

use async_trait::async_trait;
use longrun_ports::ChatMessage;
use longrun_ports::{ChatRequest, ChatResponse, LlmClient, LlmError, LlmErrorKind, Usage};
use serde_json::{Value, json};

use crate::Secret;
use crate::openai::send_json;

pub const API_VERSION: &str = "2023-06-01";
/// The tool a structured answer is forced through.
pub const ANSWER_TOOL: &str = "answer";
const DEFAULT_MAX_TOKENS: u32 = 4_096;

pub struct AnthropicClient {
    http: reqwest::Client,
    base_url: String,
    api_key: Option<Secret>,
    model: String,
}

impl AnthropicClient {
    /// `http` is built once at start-up, with its timeouts.
    pub fn new(
        http: reqwest::Client, base_url: &str, api_key: Option<Secret>, model: &str,
    ) -> Self {
        AnthropicClient {
            http,
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key,
            model: model.to_string(),
        }
    }

    /// The wire body: system prompts lifted out, turns alternating from `user`, the stable
    /// prefix marked for caching (tools and system, then the objective).
    pub fn body(&self, req: &ChatRequest) -> Value {
        let (system, turns) = turns(&req.messages);
        let mut body = json!({
            "model": self.model,
            "max_tokens": req.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            "messages": turns.iter().map(|(r, c)| json!({"role": r, "content": content(c)})).collect::<Vec<_>>(),
        });
        if let Some(system) = system {
            body["system"] = content(std::slice::from_ref(&system));
        }
        if let Some(schema) = req.json_schema.as_deref() {
            body["tools"] = json!([{
                "name": ANSWER_TOOL,
                "description": "Give your answer; its input is the whole answer.",
                "input_schema": schema,
            }]);
            body["tool_choice"] = json!({"type": "tool", "name": ANSWER_TOOL});
        }
        body
    }
}

/// A piece of a turn's text; `cache` marks the end of a prefix the provider may cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    pub text: String,
    pub cache: bool,
}

/// A turn: its role and its pieces, one per message merged into it.
pub type Turn = (&'static str, Vec<Piece>);

/// The conversation as providers with a separate system prompt want it (Anthropic, Bedrock
/// Converse): system messages joined (cached if any of them asks to be), the rest merged into
/// turns alternating from `user`.
pub fn turns(messages: &[ChatMessage]) -> (Option<Piece>, Vec<Turn>) {
    let system: Vec<&ChatMessage> = messages.iter().filter(|m| m.role == "system").collect();
    let mut turns: Vec<Turn> = vec![];
    for m in messages.iter().filter(|m| m.role != "system") {
        let role = if m.role == "assistant" {
            "assistant"
        } else {
            "user"
        };
        let piece = Piece {
            text: m.content.clone(),
            cache: m.cache,
        };
        match turns.last_mut() {
            Some((r, pieces)) if *r == role => pieces.push(piece),
            _ => turns.push((role, vec![piece])),
        }
    }
    if turns.first().is_none_or(|(r, _)| *r != "user") {
        let begin = Piece {
            text: "Begin.".into(),
            cache: false,
        };
        turns.insert(0, ("user", vec![begin]));
    }
    let system = (!system.is_empty()).then(|| Piece {
        text: system
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n\n"),
        cache: system.iter().any(|m| m.cache),
    });
    (system, turns)
}

/// A turn's pieces as one text, for providers that cache nothing.
pub fn joined(pieces: &[Piece]) -> String {
    pieces
        .iter()
        .map(|p| p.text.as_str())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// A turn's pieces joined up to each cache mark: one text per cacheable prefix, and the rest.
pub fn segments(pieces: &[Piece]) -> Vec<Piece> {
    let mut out: Vec<Piece> = vec![];
    for p in pieces {
        match out.last_mut() {
            Some(last) if !last.cache => {
                last.text.push_str("\n\n");
                last.text.push_str(&p.text);
                last.cache = p.cache;
            }
            _ => out.push(p.clone()),
        }
    }
    out
}

const EPHEMERAL: &str = "ephemeral";

/// Anthropic content: a plain string, or text blocks with `cache_control` where marked.
fn content(pieces: &[Piece]) -> Value {
    let segments = segments(pieces);
    if let [only] = segments.as_slice()
        && !only.cache
    {
        return json!(only.text);
    }
    segments
        .iter()
        .map(|p| {
            let mut block = json!({"type": "text", "text": p.text});
            if p.cache {
                block["cache_control"] = json!({"type": EPHEMERAL});
            }
            block
        })
        .collect()
}

/// Maps the wire usage: `input_tokens` already excludes cache reads and writes.
pub fn usage_from(v: &Value) -> Usage {
    let u = &v["usage"];
    let n = |k: &str| u[k].as_u64().unwrap_or(0);
    let known = [
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    ];
    Usage {
        input_tokens: n("input_tokens"),
        output_tokens: n("output_tokens"),
        cache_read_tokens: n("cache_read_input_tokens"),
        cache_write_tokens: n("cache_creation_input_tokens"),
        reasoning_tokens: 0,
        extra: crate::extra_usage(u, &known),
    }
}

fn error_for_status(status: u16, body: &str) -> LlmError {
    let v: Value = serde_json::from_str(body).unwrap_or_default();
    let detail = v["error"]["message"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| body.chars().take(300).collect());
    let kind = match status {
        401 | 403 => LlmErrorKind::Auth,
        400 if detail.contains("credit balance") => LlmErrorKind::Quota,
        429 => LlmErrorKind::RateLimited,
        408 => LlmErrorKind::Timeout,
        // 529 is Anthropic's "overloaded".
        500..=599 => LlmErrorKind::Server,
        _ => LlmErrorKind::BadRequest,
    };
    LlmError::new(kind, format!("HTTP {status}: {detail}"))
}

/// The answer text: the forced tool's input as JSON, else the text blocks.
fn content_of(v: &Value) -> Result<String, LlmError> {
    let blocks = v["content"]
        .as_array()
        .ok_or_else(|| LlmError::new(LlmErrorKind::Malformed, "response has no content blocks"))?;
    if let Some(tool) = blocks
        .iter()
        .find(|b| b["type"] == "tool_use" && b["name"] == ANSWER_TOOL)
    {
        return Ok(tool["input"].to_string());
    }
    Ok(blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join(""))
}

#[async_trait]
impl LlmClient for AnthropicClient {
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut http = self
            .http
            .post(format!("{}/v1/messages", self.base_url))
            .header("anthropic-version", API_VERSION)
            .json(&self.body(req));
        if let Some(key) = &self.api_key {
            http = http.header("x-api-key", key.expose());
        }
        let started = Instant::now();
        let v = send_json(http, error_for_status).await?;
        Ok(ChatResponse {
            content: content_of(&v)?,
            usage: usage_from(&v),
            provider: "anthropic".into(),
            model: self.model.clone(),
            latency_ms: started.elapsed().as_millis() as u64,
            cost_usd: None,
            queued_ms: 0,
        })
    }
}
