//! Bedrock Converse (`aws-sdk-bedrockruntime`): IAM-signed, so nothing to store in Lambda. A
//! structured answer is a forced call of one tool whose input schema is the contract.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use aws_config::SdkConfig;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_sdk_bedrockruntime::Client;
use aws_sdk_bedrockruntime::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_bedrockruntime::operation::converse::{ConverseError, ConverseOutput};
use aws_sdk_bedrockruntime::types::{
    CachePointBlock, CachePointType, ContentBlock, ConversationRole, ConverseOutput as Output,
    InferenceConfiguration, Message, SpecificToolChoice, SystemContentBlock, TokenUsage, Tool,
    ToolChoice, ToolConfiguration, ToolInputSchema, ToolSpecification,
};
use aws_smithy_types::{Document, Number};
use longrun_llm::ProviderFactory;
use longrun_llm::anthropic::{ANSWER_TOOL, joined, segments, turns};
use longrun_ports::{
    ChatRequest, ChatResponse, Clock, LlmClient, LlmError, LlmErrorKind, SystemClock, Usage,
};
use serde_json::Value;

pub const PROVIDER: &str = "bedrock";
const DEFAULT_MAX_TOKENS: i32 = 4_096;

/// The Bedrock runtime client for model calls: the SDK's own retries off (the model router
/// retries, fails over and respects the invocation's deadline), the model's timeout rather
/// than the short one of the storage clients.
pub fn runtime_client(config: &SdkConfig, timeout: Duration) -> Client {
    let conf = aws_sdk_bedrockruntime::config::Builder::from(config)
        .retry_config(RetryConfig::disabled())
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(3))
                .operation_timeout(timeout)
                .build(),
        )
        .build();
    Client::from_conf(conf)
}

/// The `bedrock` provider for the model router: `bedrock:<model id or inference profile>`.
pub fn provider(client: Client) -> ProviderFactory {
    Arc::new(move |model: &str| -> Result<Arc<dyn LlmClient>, String> {
        Ok(Arc::new(BedrockClient::new(client.clone(), model)))
    })
}

pub struct BedrockClient {
    client: Client,
    model: String,
}

impl BedrockClient {
    pub fn new(client: Client, model: &str) -> Self {
        BedrockClient {
            client,
            model: model.to_string(),
        }
    }
}

fn bad_request(what: impl std::fmt::Display) -> LlmError {
    LlmError::new(LlmErrorKind::BadRequest, what.to_string())
}

/// JSON as a Smithy document (tool schemas go out as one).
pub fn to_document(v: &Value) -> Document {
    match v {
        Value::Null => Document::Null,
        Value::Bool(b) => Document::Bool(*b),
        Value::Number(n) => Document::Number(match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Number::PosInt(u),
            (None, Some(i)) => Number::NegInt(i),
            _ => Number::Float(n.as_f64().unwrap_or(0.0)),
        }),
        Value::String(s) => Document::String(s.clone()),
        Value::Array(a) => Document::Array(a.iter().map(to_document).collect()),
        Value::Object(o) => {
            Document::Object(o.iter().map(|(k, v)| (k.clone(), to_document(v))).collect())
        }
    }
}

/// A Smithy document as JSON (a tool call's input comes back as one).
pub fn to_json(d: &Document) -> Value {
    match d {
        Document::Null => Value::Null,
        Document::Bool(b) => Value::Bool(*b),
        Document::Number(Number::PosInt(u)) => Value::from(*u),
        Document::Number(Number::NegInt(i)) => Value::from(*i),
        Document::Number(Number::Float(f)) => {
            serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number)
        }
        Document::String(s) => Value::String(s.clone()),
        Document::Array(a) => Value::Array(a.iter().map(to_json).collect()),
        Document::Object(o) => {
            // Sorted, so the same answer always serializes the same way.
            let sorted: BTreeMap<_, _> = o.iter().collect();
            Value::Object(
                sorted
                    .into_iter()
                    .map(|(k, v)| (k.clone(), to_json(v)))
                    .collect(),
            )
        }
    }
}

/// Maps Converse usage: `inputTokens` already excludes cache reads and writes.
pub fn usage_from(u: Option<&TokenUsage>) -> Usage {
    let Some(u) = u else {
        return Usage::default();
    };
    let n = |v: i32| u64::try_from(v).unwrap_or(0);
    let mut extra = BTreeMap::new();
    extra.insert("totalTokens".to_string(), Value::from(u.total_tokens()));
    for d in u.cache_details() {
        extra.insert(
            format!("cacheDetails.{}", d.ttl().as_str()),
            Value::from(d.input_tokens()),
        );
    }
    Usage {
        input_tokens: n(u.input_tokens()),
        output_tokens: n(u.output_tokens()),
        cache_read_tokens: u.cache_read_input_tokens().map_or(0, n),
        cache_write_tokens: u.cache_write_input_tokens().map_or(0, n),
        reasoning_tokens: 0,
        extra,
    }
}

/// The answer text: the forced tool's input as JSON, else the text blocks joined.
pub fn content_of(out: &ConverseOutput) -> Result<String, LlmError> {
    let Some(Output::Message(message)) = out.output() else {
        return Err(LlmError::new(
            LlmErrorKind::Malformed,
            "Converse answered without a message",
        ));
    };
    let blocks = message.content();
    if let Some(tool) = blocks.iter().find_map(|b| match b {
        ContentBlock::ToolUse(t) if t.name() == ANSWER_TOOL => Some(t),
        _ => None,
    }) {
        return Ok(to_json(tool.input()).to_string());
    }
    Ok(blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect())
}

/// Service errors by code; transport failures by what broke.
pub fn error_from(e: &SdkError<ConverseError>) -> LlmError {
    let retry_after = e
        .raw_response()
        .and_then(|r| r.headers().get("retry-after"))
        .and_then(|v| longrun_transport::parse_retry_after(v, SystemClock.now_ms()));
    let mut err = match e {
        SdkError::ServiceError(se) => {
            let code = se.err().code().unwrap_or("unknown");
            let message = se.err().message().unwrap_or_default();
            let status = se.raw().status().as_u16();
            let kind = match se.err() {
                ConverseError::ThrottlingException(_)
                | ConverseError::ModelNotReadyException(_) => LlmErrorKind::RateLimited,
                ConverseError::AccessDeniedException(_) => LlmErrorKind::Auth,
                ConverseError::ModelTimeoutException(_) => LlmErrorKind::Timeout,
                ConverseError::InternalServerException(_)
                | ConverseError::ServiceUnavailableException(_)
                | ConverseError::ModelErrorException(_) => LlmErrorKind::Server,
                ConverseError::ValidationException(_)
                | ConverseError::ResourceNotFoundException(_) => LlmErrorKind::BadRequest,
                _ => match (code, status) {
                    ("ServiceQuotaExceededException", _) => LlmErrorKind::Quota,
                    (
                        "UnrecognizedClientException"
                        | "InvalidSignatureException"
                        | "ExpiredTokenException"
                        | "MissingAuthenticationTokenException",
                        _,
                    )
                    | (_, 401 | 403) => LlmErrorKind::Auth,
                    (_, 429) => LlmErrorKind::RateLimited,
                    (_, 408) => LlmErrorKind::Timeout,
                    (_, 500..=599) => LlmErrorKind::Server,
                    // A body the SDK could not read as an error is not the caller's fault.
                    ("unknown", 200..=299) => LlmErrorKind::Malformed,
                    _ => LlmErrorKind::BadRequest,
                },
            };
            LlmError::new(kind, format!("HTTP {status} {code}: {message}"))
        }
        SdkError::TimeoutError(_) => LlmError::new(LlmErrorKind::Timeout, "Converse timed out"),
        SdkError::DispatchFailure(d) if d.is_timeout() => {
            LlmError::new(LlmErrorKind::Timeout, "Converse timed out")
        }
        SdkError::DispatchFailure(_) => LlmError::new(
            LlmErrorKind::Server,
            format!("Converse unreachable: {}", DisplayErrorContext(e)),
        ),
        SdkError::ResponseError(_) => LlmError::new(
            LlmErrorKind::Malformed,
            format!("Converse answer unreadable: {}", DisplayErrorContext(e)),
        ),
        _ => LlmError::new(LlmErrorKind::BadRequest, DisplayErrorContext(e).to_string()),
    };
    err.retry_after_ms = retry_after;
    err
}

/// Models whose Converse API takes cache points (others refuse them).
fn caches_prompts(model: &str) -> bool {
    model.contains("anthropic.claude") || model.contains("amazon.nova")
}

fn cache_point() -> Result<CachePointBlock, LlmError> {
    CachePointBlock::builder()
        .r#type(CachePointType::Default)
        .build()
        .map_err(bad_request)
}

#[async_trait]
impl LlmClient for BedrockClient {
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let (system, turns) = turns(&req.messages);
        let caching = caches_prompts(&self.model);
        let mut messages = Vec::with_capacity(turns.len());
        for (role, pieces) in turns {
            let role = if role == "assistant" {
                ConversationRole::Assistant
            } else {
                ConversationRole::User
            };
            let mut content = vec![];
            if caching {
                for p in segments(&pieces) {
                    content.push(ContentBlock::Text(p.text));
                    if p.cache {
                        content.push(ContentBlock::CachePoint(cache_point()?));
                    }
                }
            } else {
                content.push(ContentBlock::Text(joined(&pieces)));
            }
            messages.push(
                Message::builder()
                    .role(role)
                    .set_content(Some(content))
                    .build()
                    .map_err(bad_request)?,
            );
        }
        let max_tokens = req
            .max_output_tokens
            .and_then(|n| i32::try_from(n).ok())
            .unwrap_or(DEFAULT_MAX_TOKENS);
        let mut call = self
            .client
            .converse()
            .model_id(&self.model)
            .set_messages(Some(messages))
            .inference_config(
                InferenceConfiguration::builder()
                    .max_tokens(max_tokens)
                    .build(),
            );
        if let Some(system) = system {
            let cache = caching && system.cache;
            call = call.system(SystemContentBlock::Text(system.text));
            if cache {
                call = call.system(SystemContentBlock::CachePoint(cache_point()?));
            }
        }
        if let Some(schema) = req.json_schema.as_deref() {
            let spec = ToolSpecification::builder()
                .name(ANSWER_TOOL)
                .description("Give your answer; its input is the whole answer.")
                .input_schema(ToolInputSchema::Json(to_document(schema)))
                .build()
                .map_err(bad_request)?;
            let choice = SpecificToolChoice::builder()
                .name(ANSWER_TOOL)
                .build()
                .map_err(bad_request)?;
            call = call.tool_config(
                ToolConfiguration::builder()
                    .tools(Tool::ToolSpec(spec))
                    .tool_choice(ToolChoice::Tool(choice))
                    .build()
                    .map_err(bad_request)?,
            );
        }
        let started = Instant::now();
        let out = call.send().await.map_err(|e| error_from(&e))?;
        Ok(ChatResponse {
            content: content_of(&out)?,
            usage: usage_from(out.usage()),
            provider: PROVIDER.into(),
            model: self.model.clone(),
            latency_ms: started.elapsed().as_millis() as u64,
            cost_usd: None,
            queued_ms: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_survives_the_trip_through_a_document() {
        let v = json!({"a": [1, -2, 2.5, "x", null, true], "b": {"c": {}}});
        assert_eq!(to_json(&to_document(&v)), v);
    }
}
