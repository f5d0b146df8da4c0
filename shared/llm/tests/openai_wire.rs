//! The OpenAI-compatible client against a real HTTP server started in the test.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use longrun_llm::{Backoff, LlmSettings, ModelRouter, OpenAiClient, Secret, Structured};
use longrun_ports::ChatMessage;
use longrun_ports::{ChatRequest, LlmClient, LlmErrorKind, LlmRole};
use serde_json::json;
use support::serve;

async fn serve_openai(script: Vec<support::Canned>) -> (String, support::Server) {
    let (addr, s) = serve("/v1/chat/completions", script).await;
    (format!("{addr}/v1"), s)
}

fn req(model: &str) -> ChatRequest {
    ChatRequest {
        run_id: "run_1".into(),
        iteration: 3,
        role: LlmRole::Planner,
        model: model.into(),
        messages: vec![
            ChatMessage::system("answer in JSON"),
            ChatMessage::user("hi"),
        ],
        json_schema: Some(std::sync::Arc::new(json!({"type": "object"}))),
        max_output_tokens: Some(100),
        idempotency_key: "run_1#3#1".into(),
        role_call: 1,
        attempt: 0,
        rotation: vec![],
        deadline_ms: None,
    }
}

const OK: &str = r#"{"id": "c1", "object": "chat.completion", "model": "gpt-4.1",
  "choices": [{"index": 0, "message": {"role": "assistant", "content": "{\"status\": {}}"}, "finish_reason": "stop"}],
  "usage": {"prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500,
            "prompt_tokens_details": {"cached_tokens": 1000}, "completion_tokens_details": {"reasoning_tokens": 50}}}"#;

fn client(base: &str, timeout_ms: u64) -> OpenAiClient {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_millis(timeout_ms))
        .build()
        .unwrap();
    OpenAiClient::new(http, base, Some(Secret::new("sk-test")), "gpt-4.1")
}

#[tokio::test]
async fn a_success_maps_usage_with_cached_tokens_split_out_and_is_priced() {
    let (base, server) = serve_openai(vec![(200, vec![], OK.into(), 0)]).await;
    let settings = LlmSettings {
        openai_base_url: base,
        openai_api_key: Some(Secret::new("sk-test")),
        ..Default::default()
    };
    let router = ModelRouter::build(&["openai:gpt-4.1".into()], &settings).unwrap();
    let resp = router.chat(&req("openai:gpt-4.1")).await.unwrap();
    assert_eq!(resp.content, r#"{"status": {}}"#);
    assert_eq!(
        resp.usage.input_tokens, 200,
        "prompt_tokens includes the cached ones"
    );
    assert_eq!(resp.usage.cache_read_tokens, 1000);
    assert_eq!(resp.usage.output_tokens, 300);
    assert_eq!(resp.usage.reasoning_tokens, 50);
    // gpt-4.1: 200 × $2 + 1000 × $0.50 + 300 × $8 per 1M = $0.0033
    assert!(
        (resp.cost_usd.unwrap() - 0.0033).abs() < 1e-12,
        "{:?}",
        resp.cost_usd
    );
    let seen = server.seen.lock().unwrap();
    let (headers, body) = &seen[0];
    assert_eq!(headers["authorization"], "Bearer sk-test");
    assert_eq!(headers["idempotency-key"], "run_1#3#1");
    assert_eq!(body["model"], "gpt-4.1");
    assert_eq!(body["messages"][1]["content"], "hi");
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "function": {"name": "answer"}}),
        "a structured answer is a forced call of one function"
    );
    assert_eq!(
        body["tools"][0]["function"]["parameters"],
        json!({"type": "object"})
    );
    assert!(body.get("response_format").is_none());
}

const TOOL_CALL: &str = r#"{"id": "c2", "object": "chat.completion", "model": "gpt-4.1",
  "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
    "tool_calls": [{"id": "call_1", "type": "function",
      "function": {"name": "answer", "arguments": "{\"status\": {\"exit_signal\": false}}"}}]}}],
  "usage": {"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 7},
            "completion_tokens_details": {"reasoning_tokens": 0, "accepted_prediction_tokens": 3}}}"#;

#[tokio::test]
async fn the_forced_function_arguments_string_is_the_answer_and_unknown_usage_is_kept() {
    let (base, _) = serve_openai(vec![(200, vec![], TOOL_CALL.into(), 0)]).await;
    let resp = client(&base, 2_000)
        .chat(&req("openai:gpt-4.1"))
        .await
        .unwrap();
    assert_eq!(resp.content, r#"{"status": {"exit_signal": false}}"#);
    assert_eq!(
        (resp.usage.input_tokens, resp.usage.output_tokens),
        (900, 40)
    );
    assert_eq!(
        resp.usage.extra["prompt_tokens_details.audio_tokens"],
        json!(7)
    );
    assert_eq!(
        resp.usage.extra["completion_tokens_details.accepted_prediction_tokens"],
        json!(3)
    );
    assert!(!resp.usage.extra.contains_key("total_tokens"));
}

#[tokio::test]
async fn json_schema_mode_sends_the_contract_as_response_format() {
    let (base, server) = serve_openai(vec![(200, vec![], OK.into(), 0)]).await;
    let resp = client(&base, 2_000)
        .structured(Structured::JsonSchema)
        .chat(&req("openai:gpt-4.1"))
        .await
        .unwrap();
    assert_eq!(resp.content, r#"{"status": {}}"#);
    let seen = server.seen.lock().unwrap();
    let body = &seen[0].1;
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(
        body["response_format"]["json_schema"]["schema"],
        json!({"type": "object"})
    );
    assert!(body.get("tools").is_none());
}

#[tokio::test]
async fn provider_reported_cost_wins_over_the_table() {
    let body = OK.replace(
        "\"total_tokens\": 1500,",
        "\"total_tokens\": 1500, \"cost\": 0.42,",
    );
    let (base, _) = serve_openai(vec![(200, vec![], body, 0)]).await;
    let resp = client(&base, 2_000)
        .chat(&req("openai:gpt-4.1"))
        .await
        .unwrap();
    assert_eq!(resp.cost_usd, Some(0.42));
}

#[tokio::test]
async fn status_codes_map_to_typed_errors() {
    let cases: Vec<(u16, &str, LlmErrorKind, bool)> = vec![
        (
            401,
            r#"{"error": {"message": "Incorrect API key"}}"#,
            LlmErrorKind::Auth,
            false,
        ),
        (
            429,
            r#"{"error": {"message": "quota", "code": "insufficient_quota"}}"#,
            LlmErrorKind::Quota,
            false,
        ),
        (
            429,
            r#"{"error": {"message": "slow down"}}"#,
            LlmErrorKind::RateLimited,
            true,
        ),
        (
            400,
            r#"{"error": {"message": "bad"}}"#,
            LlmErrorKind::BadRequest,
            false,
        ),
        (500, "oops", LlmErrorKind::Server, true),
        (200, "{not json", LlmErrorKind::Malformed, true),
        (200, r#"{"choices": []}"#, LlmErrorKind::Malformed, true),
    ];
    for (status, body, kind, retryable) in cases {
        let (base, _) =
            serve_openai(vec![(status, vec![("retry-after", "2")], body.into(), 0)]).await;
        let err = client(&base, 2_000)
            .chat(&req("openai:gpt-4.1"))
            .await
            .unwrap_err();
        assert_eq!(err.kind, kind, "{status} {body}");
        assert_eq!(err.is_retryable(), retryable, "{status} {body}");
        assert!(
            !err.message.contains("sk-test"),
            "the key never appears in errors"
        );
        if status == 429 {
            assert_eq!(err.retry_after_ms, Some(2_000));
        }
    }
}

#[tokio::test]
async fn a_slow_server_is_a_timeout() {
    let (base, _) = serve_openai(vec![(200, vec![], OK.into(), 500)]).await;
    let err = client(&base, 100)
        .chat(&req("openai:gpt-4.1"))
        .await
        .unwrap_err();
    assert_eq!(err.kind, LlmErrorKind::Timeout);
}

#[tokio::test]
async fn the_router_retries_5xx_then_succeeds_but_never_retries_auth() {
    let (base, server) = serve_openai(vec![
        (500, vec![], "x".into(), 0),
        (503, vec![], "x".into(), 0),
        (200, vec![], OK.into(), 0),
    ])
    .await;
    let fast = Backoff {
        first_ms: 1,
        max_ms: 5,
        max_retries: Some(3),
        jitter: 0.2,
    };
    let router = ModelRouter::build(&[], &LlmSettings::default())
        .unwrap()
        .with_client("openai:gpt-4.1", Arc::new(client(&base, 2_000)), fast);
    assert!(router.chat(&req("openai:gpt-4.1")).await.is_ok());
    assert_eq!(server.hits.load(Ordering::SeqCst), 3);

    let (base, server) = serve_openai(vec![(401, vec![], "{}".into(), 0)]).await;
    let router = ModelRouter::build(&[], &LlmSettings::default())
        .unwrap()
        .with_client("openai:gpt-4.1", Arc::new(client(&base, 2_000)), fast);
    assert_eq!(
        router.chat(&req("openai:gpt-4.1")).await.unwrap_err().kind,
        LlmErrorKind::Auth
    );
    assert_eq!(server.hits.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_unconfigured_model_is_refused() {
    let router = ModelRouter::build(&[], &LlmSettings::default()).unwrap();
    assert_eq!(
        router.chat(&req("openai:nope")).await.unwrap_err().kind,
        LlmErrorKind::BadRequest
    );
}

#[test]
fn openai_gets_a_cache_key_per_run_and_no_server_gets_the_cache_marks() {
    // Arrange: a request whose stable prefix is marked, as the planner's is.
    let mut request = req("openai:gpt-4.1");
    request.messages = vec![
        ChatMessage::system("answer in JSON").cached(),
        ChatMessage::user("objective: tea").cached(),
        ChatMessage::user("iteration 3"),
    ];

    // Act
    let openai = client("https://api.openai.com/v1", 1_000).body(&request);
    let compatible = client("http://127.0.0.1:9/v1", 1_000).body(&request);

    // Assert
    assert_eq!(openai["prompt_cache_key"], "run_1");
    assert!(
        compatible.get("prompt_cache_key").is_none(),
        "other servers may refuse unknown fields"
    );
    assert_eq!(
        compatible["messages"],
        json!([{"role": "system", "content": "answer in JSON"},
               {"role": "user", "content": "objective: tea"},
               {"role": "user", "content": "iteration 3"}]),
        "OpenAI caches prefixes by itself: the marks stay ours"
    );
}

#[tokio::test]
async fn perplexity_is_an_openai_compatible_preset_answering_through_a_json_schema() {
    // Arrange: Perplexity serves chat completions at its root, not under /v1.
    let (base, server) = serve("/chat/completions", vec![(200, vec![], OK.into(), 0)]).await;
    let settings = LlmSettings {
        perplexity_base_url: base,
        perplexity_api_key: Some(Secret::new("pplx-test")),
        ..Default::default()
    };
    let router = ModelRouter::build(&["perplexity:sonar".into()], &settings).unwrap();

    // Act
    let resp = router.chat(&req("perplexity:sonar")).await.unwrap();

    // Assert
    assert_eq!(resp.content, r#"{"status": {}}"#);
    // sonar: 200 × $1 + 300 × $1 per 1M (cached input is not billed by this table) = $0.0005,
    // priced as Perplexity's model, not as an OpenAI one.
    assert!(
        (resp.cost_usd.unwrap() - 0.0005).abs() < 1e-12,
        "{:?}",
        resp.cost_usd
    );
    let seen = server.seen.lock().unwrap();
    let (headers, body) = &seen[0];
    assert_eq!(headers["authorization"], "Bearer pplx-test");
    assert_eq!(body["model"], "sonar");
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert!(body.get("tools").is_none(), "no forced tool call");
    assert!(body.get("prompt_cache_key").is_none());
}
