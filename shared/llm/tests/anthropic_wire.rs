//! The Anthropic Messages client against a real HTTP server started in the test.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use longrun_llm::anthropic::{ANSWER_TOOL, API_VERSION};
use longrun_llm::{AnthropicClient, Backoff, LlmSettings, ModelRouter, Secret};
use longrun_ports::{ChatRequest, LlmClient, LlmErrorKind};
use serde_json::{Value, json};
use support::{Canned, Server, merged_turns_request, serve};

const MODEL: &str = "anthropic:claude-sonnet-4-5";

async fn serve_messages(script: Vec<Canned>) -> (String, Server) {
    serve("/v1/messages", script).await
}

fn req(schema: Option<Value>) -> ChatRequest {
    merged_turns_request(MODEL, schema)
}

/// A forced tool call, with cache reads and writes in the usage.
const TOOL_ANSWER: &str = r#"{"id": "msg_1", "type": "message", "role": "assistant",
  "model": "claude-sonnet-4-5", "stop_reason": "tool_use",
  "content": [{"type": "tool_use", "id": "toolu_1", "name": "answer",
               "input": {"status": {"exit_signal": false}, "tool_calls": []}}],
  "usage": {"input_tokens": 1200, "output_tokens": 300,
            "cache_read_input_tokens": 800, "cache_creation_input_tokens": 100}}"#;

const TEXT_ANSWER: &str = r#"{"id": "msg_2", "type": "message", "role": "assistant",
  "content": [{"type": "text", "text": "hello "}, {"type": "text", "text": "there"}],
  "usage": {"input_tokens": 10, "output_tokens": 2}}"#;

fn client(base: &str, timeout_ms: u64) -> AnthropicClient {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_millis(timeout_ms))
        .build()
        .unwrap();
    AnthropicClient::new(
        http,
        base,
        Some(Secret::new("sk-ant-test")),
        "claude-sonnet-4-5",
    )
}

#[tokio::test]
async fn a_forced_tool_answer_is_the_content_and_usage_keeps_cache_reads_and_writes_apart() {
    // Arrange
    let (base, server) = serve_messages(vec![(200, vec![], TOOL_ANSWER.into(), 0)]).await;
    let settings = LlmSettings {
        anthropic_base_url: base,
        anthropic_api_key: Some(Secret::new("sk-ant-test")),
        ..Default::default()
    };
    let router = ModelRouter::build(&[MODEL.into()], &settings).unwrap();

    // Act
    let resp = router
        .chat(&req(Some(json!({"type": "object"}))))
        .await
        .unwrap();

    // Assert
    let answer: Value = serde_json::from_str(&resp.content).unwrap();
    assert_eq!(answer["status"]["exit_signal"], false);
    assert_eq!(
        resp.usage.input_tokens, 1200,
        "input_tokens already excludes the cache"
    );
    assert_eq!(resp.usage.cache_read_tokens, 800);
    assert_eq!(resp.usage.cache_write_tokens, 100);
    assert_eq!(resp.usage.output_tokens, 300);
    assert_eq!(
        (resp.provider.as_str(), resp.model.as_str()),
        ("anthropic", "claude-sonnet-4-5")
    );
    // claude-sonnet-4-5: 1200 × $3 + 300 × $15 + 800 × $0.30 + 100 × $3.75 per 1M = $0.008715
    assert!(
        (resp.cost_usd.unwrap() - 0.008715).abs() < 1e-12,
        "{:?}",
        resp.cost_usd
    );
    let seen = server.seen.lock().unwrap();
    let (headers, body) = &seen[0];
    assert_eq!(headers["x-api-key"], "sk-ant-test");
    assert_eq!(headers["anthropic-version"], API_VERSION);
    assert!(headers.get("authorization").is_none());
    assert_eq!(body["model"], "claude-sonnet-4-5");
    assert_eq!(body["max_tokens"], 800);
    assert_eq!(body["system"], "You plan.\n\nAnswer with the contract.");
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": "objective: tea\n\niteration 2"}]),
        "consecutive user turns are merged"
    );
    assert_eq!(body["tools"][0]["name"], ANSWER_TOOL);
    assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
    assert_eq!(
        body["tool_choice"],
        json!({"type": "tool", "name": ANSWER_TOOL})
    );
}

#[tokio::test]
async fn a_free_text_answer_joins_its_text_blocks_and_sends_no_tools() {
    let (base, server) = serve_messages(vec![(200, vec![], TEXT_ANSWER.into(), 0)]).await;
    let resp = client(&base, 2_000).chat(&req(None)).await.unwrap();
    assert_eq!(resp.content, "hello there");
    assert_eq!(
        resp.cost_usd, None,
        "the router prices; the client reports none"
    );
    let seen = server.seen.lock().unwrap();
    assert!(seen[0].1.get("tools").is_none() && seen[0].1.get("tool_choice").is_none());
}

#[tokio::test]
async fn status_codes_map_to_typed_errors() {
    let err_body =
        |t: &str, m: &str| json!({"type": "error", "error": {"type": t, "message": m}}).to_string();
    let cases: Vec<(u16, String, LlmErrorKind, bool)> = vec![
        (
            401,
            err_body("authentication_error", "invalid x-api-key"),
            LlmErrorKind::Auth,
            false,
        ),
        (
            403,
            err_body("permission_error", "no access"),
            LlmErrorKind::Auth,
            false,
        ),
        (
            400,
            err_body("invalid_request_error", "Your credit balance is too low"),
            LlmErrorKind::Quota,
            false,
        ),
        (
            400,
            err_body("invalid_request_error", "bad"),
            LlmErrorKind::BadRequest,
            false,
        ),
        (
            429,
            err_body("rate_limit_error", "slow down"),
            LlmErrorKind::RateLimited,
            true,
        ),
        (
            529,
            err_body("overloaded_error", "Overloaded"),
            LlmErrorKind::Server,
            true,
        ),
        (500, "oops".into(), LlmErrorKind::Server, true),
        (
            200,
            "{\"content\": [{\"type\": \"te".into(),
            LlmErrorKind::Malformed,
            true,
        ),
        (200, "{\"usage\": {}}".into(), LlmErrorKind::Malformed, true),
    ];
    for (status, body, kind, retryable) in cases {
        let (base, _) =
            serve_messages(vec![(status, vec![("retry-after", "3")], body.clone(), 0)]).await;
        let err = client(&base, 2_000).chat(&req(None)).await.unwrap_err();
        assert_eq!(err.kind, kind, "{status} {body}");
        assert_eq!(err.is_retryable(), retryable, "{status} {body}");
        assert!(
            !err.message.contains("sk-ant-test"),
            "the key never appears in errors"
        );
        if status == 429 {
            assert_eq!(err.retry_after_ms, Some(3_000));
        }
    }
}

#[tokio::test]
async fn a_slow_server_is_a_timeout() {
    let (base, _) = serve_messages(vec![(200, vec![], TEXT_ANSWER.into(), 500)]).await;
    let err = client(&base, 100).chat(&req(None)).await.unwrap_err();
    assert_eq!(err.kind, LlmErrorKind::Timeout);
}

#[tokio::test]
async fn the_router_retries_overload_honouring_retry_after_but_never_auth() {
    let fast = Backoff {
        first_ms: 1,
        max_ms: 200,
        max_retries: Some(3),
        jitter: 0.2,
    };
    let (base, server) = serve_messages(vec![
        (529, vec![], "{}".into(), 0),
        (429, vec![("retry-after", "0.05")], "{}".into(), 0),
        (200, vec![], TEXT_ANSWER.into(), 0),
    ])
    .await;
    let router = ModelRouter::build(&[], &LlmSettings::default())
        .unwrap()
        .with_client(MODEL, Arc::new(client(&base, 2_000)), fast);
    let started = std::time::Instant::now();
    assert!(router.chat(&req(None)).await.is_ok());
    assert_eq!(server.hits.load(Ordering::SeqCst), 3);
    assert!(
        started.elapsed() >= Duration::from_millis(50),
        "Retry-After was honoured"
    );

    let (base, server) = serve_messages(vec![(401, vec![], "{}".into(), 0)]).await;
    let router = ModelRouter::build(&[], &LlmSettings::default())
        .unwrap()
        .with_client(MODEL, Arc::new(client(&base, 2_000)), fast);
    assert_eq!(
        router.chat(&req(None)).await.unwrap_err().kind,
        LlmErrorKind::Auth
    );
    assert_eq!(server.hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn the_stable_prefix_is_marked_for_caching_and_the_state_is_not() {
    // Arrange: system and objective marked stable, the iteration's state after them.
    let (base, server) = serve_messages(vec![(200, vec![], TOOL_ANSWER.into(), 0)]).await;
    let mut request = req(Some(json!({"type": "object"})));
    request.messages = vec![
        longrun_ports::ChatMessage::system("You plan.").cached(),
        longrun_ports::ChatMessage::user("objective: tea").cached(),
        longrun_ports::ChatMessage::user("iteration 2"),
    ];

    // Act
    client(&base, 5_000).chat(&request).await.unwrap();

    // Assert
    let seen = server.seen.lock().unwrap();
    let body = &seen[0].1;
    let ephemeral = json!({"type": "ephemeral"});
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "You plan.", "cache_control": ephemeral}]),
        "tools and system are one cached prefix"
    );
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "objective: tea", "cache_control": ephemeral},
            {"type": "text", "text": "iteration 2"}]}]),
        "the objective extends the prefix; the state is not cached"
    );
}
