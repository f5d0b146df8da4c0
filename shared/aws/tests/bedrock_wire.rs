//! The Bedrock Converse client against a real HTTP server started in the test, reached through
//! the SDK's endpoint override and signed with SigV4 like any AWS call.
#![allow(clippy::unwrap_used)]

#[path = "../../llm/tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use aws_config::{BehaviorVersion, Region, SdkConfig};

use aws_sdk_bedrockruntime::config::{Credentials, SharedCredentialsProvider};
use longrun_aws::bedrock::{self, BedrockClient};
use longrun_llm::anthropic::ANSWER_TOOL;
use longrun_llm::{Backoff, LlmSettings, ModelRouter};
use longrun_ports::{ChatRequest, LlmClient, LlmErrorKind};
use serde_json::{Value, json};
use support::{Canned, Server, merged_turns_request, serve};

const MODEL_ID: &str = "anthropic.claude-sonnet-4-5-20250929-v1:0";
const SPEC: &str = "bedrock:anthropic.claude-sonnet-4-5-20250929-v1:0";
const SECRET_KEY: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

async fn sdk_config(base: &str) -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .http_client(longrun_aws::https_client())
        .region(Region::new("us-east-1"))
        .endpoint_url(base)
        .credentials_provider(SharedCredentialsProvider::new(Credentials::new(
            "AKIDEXAMPLE",
            SECRET_KEY,
            None,
            None,
            "test",
        )))
        .load()
        .await
}

async fn serve_converse(script: Vec<Canned>) -> (String, Server) {
    serve("/model/{model}/converse", script).await
}

async fn client(base: &str, timeout_ms: u64) -> BedrockClient {
    BedrockClient::new(
        bedrock::runtime_client(&sdk_config(base).await, Duration::from_millis(timeout_ms)),
        MODEL_ID,
    )
}

fn req(schema: Option<Value>) -> ChatRequest {
    merged_turns_request(SPEC, schema)
}

/// A forced tool call, with cache reads and writes in the usage (recorded shape).
const TOOL_ANSWER: &str = r#"{"output": {"message": {"role": "assistant", "content": [
    {"toolUse": {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "name": "answer",
                 "input": {"status": {"exit_signal": false}, "tool_calls": []}}}]}},
  "stopReason": "tool_use",
  "usage": {"inputTokens": 1200, "outputTokens": 300, "totalTokens": 2400,
            "cacheReadInputTokens": 800, "cacheWriteInputTokens": 100},
  "metrics": {"latencyMs": 812}}"#;

const TEXT_ANSWER: &str = r#"{"output": {"message": {"role": "assistant", "content": [
    {"text": "hello "}, {"text": "there"}]}},
  "stopReason": "end_turn",
  "usage": {"inputTokens": 10, "outputTokens": 2, "totalTokens": 12},
  "metrics": {"latencyMs": 95}}"#;

#[tokio::test]
async fn a_forced_tool_answer_is_the_content_and_usage_keeps_cache_reads_and_writes_apart() {
    // Arrange
    let (base, server) = serve_converse(vec![(200, vec![], TOOL_ANSWER.into(), 0)]).await;
    let mut settings = LlmSettings::default();
    settings.providers.insert(
        bedrock::PROVIDER,
        bedrock::provider(bedrock::runtime_client(
            &sdk_config(&base).await,
            Duration::from_secs(5),
        )),
    );
    let router = ModelRouter::build(&[SPEC.into()], &settings).unwrap();

    // Act
    let resp = router
        .chat(&req(Some(json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": -1, "maximum": 2.5}}}))))
        .await
        .unwrap();

    // Assert
    let answer: Value = serde_json::from_str(&resp.content).unwrap();
    assert_eq!(answer["status"]["exit_signal"], false);
    assert_eq!(
        resp.usage.input_tokens, 1200,
        "inputTokens already excludes the cache"
    );
    assert_eq!(resp.usage.cache_read_tokens, 800);
    assert_eq!(resp.usage.cache_write_tokens, 100);
    assert_eq!(resp.usage.output_tokens, 300);
    assert_eq!(resp.usage.extra["totalTokens"], 2400, "kept, not dropped");
    assert_eq!(
        (resp.provider.as_str(), resp.model.as_str()),
        ("bedrock", MODEL_ID)
    );
    // Claude Sonnet 4.5 on Bedrock: 1200 × $3 + 300 × $15 + 800 × $0.30 + 100 × $3.75 per 1M
    assert!(
        (resp.cost_usd.unwrap() - 0.008715).abs() < 1e-12,
        "{:?}",
        resp.cost_usd
    );
    let seen = server.seen.lock().unwrap();
    let (headers, body) = &seen[0];
    let auth = headers["authorization"].to_str().unwrap();
    assert!(
        auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
            && auth.contains("/us-east-1/bedrock/aws4_request"),
        "SigV4 for the bedrock service: {auth}"
    );
    assert!(!auth.contains(SECRET_KEY));
    assert_eq!(
        body["system"],
        json!([{"text": "You plan.\n\nAnswer with the contract."}])
    );
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [{"text": "objective: tea\n\niteration 2"}]}]),
        "consecutive user turns are merged"
    );
    assert_eq!(body["inferenceConfig"], json!({"maxTokens": 800}));
    let tool = &body["toolConfig"]["tools"][0]["toolSpec"];
    assert_eq!(tool["name"], ANSWER_TOOL);
    assert_eq!(
        tool["inputSchema"]["json"],
        json!({"type": "object", "properties": {"n": {"type": "integer", "minimum": -1, "maximum": 2.5}}}),
        "the schema goes out unchanged"
    );
    assert_eq!(
        body["toolConfig"]["toolChoice"],
        json!({"tool": {"name": ANSWER_TOOL}})
    );
}

#[tokio::test]
async fn a_free_text_answer_joins_its_text_blocks_and_sends_no_tools() {
    let (base, server) = serve_converse(vec![(200, vec![], TEXT_ANSWER.into(), 0)]).await;
    let resp = client(&base, 2_000).await.chat(&req(None)).await.unwrap();
    assert_eq!(resp.content, "hello there");
    assert_eq!(
        resp.cost_usd, None,
        "the router prices; the client reports none"
    );
    let seen = server.seen.lock().unwrap();
    assert!(seen[0].1.get("toolConfig").is_none());
}

#[tokio::test]
async fn service_errors_map_to_typed_errors() {
    let cases: Vec<(u16, &'static str, &str, LlmErrorKind, bool)> = vec![
        (
            403,
            "AccessDeniedException",
            "You don't have access to the model with the specified model ID.",
            LlmErrorKind::Auth,
            false,
        ),
        (
            403,
            "UnrecognizedClientException",
            "The security token included in the request is invalid.",
            LlmErrorKind::Auth,
            false,
        ),
        (
            400,
            "ValidationException",
            "The provided model identifier is invalid.",
            LlmErrorKind::BadRequest,
            false,
        ),
        (
            400,
            "ServiceQuotaExceededException",
            "Your request exceeds the service quota for your account.",
            LlmErrorKind::Quota,
            false,
        ),
        (
            429,
            "ThrottlingException",
            "Too many requests, please wait before trying again.",
            LlmErrorKind::RateLimited,
            true,
        ),
        (
            429,
            "ModelNotReadyException",
            "Model is not ready to serve inference requests.",
            LlmErrorKind::RateLimited,
            true,
        ),
        (
            503,
            "ServiceUnavailableException",
            "Bedrock is unable to process your request.",
            LlmErrorKind::Server,
            true,
        ),
        (
            500,
            "InternalServerException",
            "An internal server error occurred.",
            LlmErrorKind::Server,
            true,
        ),
        (
            408,
            "ModelTimeoutException",
            "Model has timed out in processing the request.",
            LlmErrorKind::Timeout,
            true,
        ),
    ];
    for (status, code, message, kind, retryable) in cases {
        let body = json!({ "message": message }).to_string();
        let (base, _) = serve_converse(vec![(
            status,
            vec![("x-amzn-errortype", code), ("retry-after", "3")],
            body,
            0,
        )])
        .await;
        let err = client(&base, 2_000)
            .await
            .chat(&req(None))
            .await
            .unwrap_err();
        assert_eq!(err.kind, kind, "{status} {code}");
        assert_eq!(err.is_retryable(), retryable, "{status} {code}");
        assert!(err.message.contains(message), "{}", err.message);
        assert!(!err.message.contains(SECRET_KEY));
        assert_eq!(err.retry_after_ms, Some(3_000), "{code}");
    }
}

#[tokio::test]
async fn a_truncated_or_empty_answer_is_malformed_and_retryable() {
    for body in [
        r#"{"output": {"message": {"role": "assistant", "content": [{"te"#,
        r#"{"stopReason": "end_turn", "usage": {"inputTokens": 1, "outputTokens": 0, "totalTokens": 1}}"#,
    ] {
        let (base, _) = serve_converse(vec![(200, vec![], body.into(), 0)]).await;
        let err = client(&base, 2_000)
            .await
            .chat(&req(None))
            .await
            .unwrap_err();
        assert_eq!(err.kind, LlmErrorKind::Malformed, "{body}: {}", err.message);
        assert!(err.is_retryable());
    }
}

#[tokio::test]
async fn a_slow_model_is_a_timeout() {
    let (base, _) = serve_converse(vec![(200, vec![], TEXT_ANSWER.into(), 500)]).await;
    let err = client(&base, 100).await.chat(&req(None)).await.unwrap_err();
    assert_eq!(err.kind, LlmErrorKind::Timeout, "{}", err.message);
}

#[tokio::test]
async fn the_router_retries_throttling_honouring_retry_after_but_never_access_denied() {
    let fast = Backoff {
        first_ms: 1,
        max_ms: 200,
        max_retries: Some(3),
        jitter: 0.2,
    };
    let (base, server) = serve_converse(vec![
        (
            503,
            vec![("x-amzn-errortype", "ServiceUnavailableException")],
            "{}".into(),
            0,
        ),
        (
            429,
            vec![
                ("x-amzn-errortype", "ThrottlingException"),
                ("retry-after", "0.05"),
            ],
            "{}".into(),
            0,
        ),
        (200, vec![], TEXT_ANSWER.into(), 0),
    ])
    .await;
    let router = ModelRouter::build(&[], &LlmSettings::default())
        .unwrap()
        .with_client(SPEC, Arc::new(client(&base, 2_000).await), fast);
    let started = std::time::Instant::now();
    assert!(router.chat(&req(None)).await.is_ok());
    assert_eq!(
        server.hits.load(Ordering::SeqCst),
        3,
        "the SDK's own retries are off; the router's are the only ones"
    );
    assert!(started.elapsed() >= Duration::from_millis(50));

    let (base, server) = serve_converse(vec![(
        403,
        vec![("x-amzn-errortype", "AccessDeniedException")],
        "{}".into(),
        0,
    )])
    .await;
    let router = ModelRouter::build(&[], &LlmSettings::default())
        .unwrap()
        .with_client(SPEC, Arc::new(client(&base, 2_000).await), fast);
    assert_eq!(
        router.chat(&req(None)).await.unwrap_err().kind,
        LlmErrorKind::Auth
    );
    assert_eq!(server.hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn claude_on_bedrock_gets_cache_points_after_the_system_prompt_and_the_objective() {
    // Arrange
    let (base, server) = serve_converse(vec![(200, vec![], TOOL_ANSWER.into(), 0)]).await;
    let mut request = req(Some(json!({"type": "object"})));
    request.messages = vec![
        longrun_ports::ChatMessage::system("You plan.").cached(),
        longrun_ports::ChatMessage::user("objective: tea").cached(),
        longrun_ports::ChatMessage::user("iteration 2"),
    ];

    // Act
    client(&base, 5_000).await.chat(&request).await.unwrap();

    // Assert
    let seen = server.seen.lock().unwrap();
    let body = &seen[0].1;
    let point = json!({"cachePoint": {"type": "default"}});
    assert_eq!(body["system"], json!([{"text": "You plan."}, point]));
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [{"text": "objective: tea"}, point, {"text": "iteration 2"}]}])
    );
}
