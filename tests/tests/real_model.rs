//! A real model in the loop: SmolLM2-135M behind llama.cpp's OpenAI-compatible server
//! (`scripts/with-llm`, part of `make test`). Its answers are poor; what is checked is that
//! real output flows through the client, parsing, repair and accounting, and that the run
//! ends legitimately with a report whose token count is exactly what the server reported.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use longrun_domain::StopType;
use longrun_domain::run::{BudgetsInput, RunStatus};
use longrun_engine::EngineConfig;
use longrun_http::{CreateRun, create_run};
use longrun_llm::{LlmSettings, ModelRouter};
use longrun_ports::NoFaults;
use longrun_tests::platform_with_engine;

/// What the server itself reported, read from the raw bodies on their way to the client.
#[derive(Clone, Default)]
struct Tally {
    upstream: String,
    http: reqwest::Client,
    calls: Arc<AtomicU64>,
    tokens: Arc<AtomicU64>,
}

async fn relay(State(t): State<Tally>, body: String) -> (StatusCode, String) {
    let resp = t
        .http
        .post(format!("{}/chat/completions", t.upstream))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = StatusCode::from_u16(resp.status().as_u16()).unwrap();
    let text = resp.text().await.unwrap();
    if status.is_success() {
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let u = &v["usage"];
        t.calls.fetch_add(1, Ordering::SeqCst);
        t.tokens.fetch_add(
            u["prompt_tokens"].as_u64().unwrap() + u["completion_tokens"].as_u64().unwrap(),
            Ordering::SeqCst,
        );
    }
    (status, text)
}

async fn tally(upstream: &str) -> (String, Tally) {
    let t = Tally {
        upstream: upstream.trim_end_matches('/').to_string(),
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(600))
            .build()
            .unwrap(),
        ..Default::default()
    };
    let app = Router::new()
        .route("/v1/chat/completions", post(relay))
        .with_state(t.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/v1"), t)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_small_model_drives_a_run_to_a_legitimate_end_with_exact_token_books() {
    let Ok(upstream) = std::env::var("LONGRUN_TEST_LLM_URL") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs `make test`, which serves a real model (scripts/with-llm)"
        );
        eprintln!("skipped: no LONGRUN_TEST_LLM_URL (run through scripts/with-llm or make test)");
        return;
    };
    // Arrange
    let served = std::env::var("LONGRUN_TEST_LLM_MODEL").unwrap_or_else(|_| "smollm2".into());
    let spec = format!("openai:{served}");
    let (base, server) = tally(&upstream).await;
    let settings = LlmSettings {
        openai_base_url: base,
        timeout: Duration::from_secs(300),
        ..Default::default()
    };
    let router = Arc::new(ModelRouter::build(std::slice::from_ref(&spec), &settings).unwrap());
    let t = platform_with_engine(
        router,
        Arc::new(NoFaults),
        &[],
        5,
        |c| {
            c.models = vec![spec.clone()];
            c.priced_models.clear();
        },
        EngineConfig {
            lease_ms: 30 * 60_000,
            max_output_tokens: 384,
            max_executor_tasks: 1,
            ..Default::default()
        },
    );
    let req = CreateRun {
        agent: None,
        objective: "Write a three-line note about green tea to notes/tea.md.".into(),
        completion_criteria: vec![],
        grading: None,
        budgets: BudgetsInput {
            max_iterations: Some(3),
            ..Default::default()
        },
        thresholds: None,
        model: Some(spec.clone()),
        models: vec![],
        permission_mode: None,
        allowed_tools: None,
        context: None,
        scope: None,
        project_ids: None,
    };
    let id = create_run(t.p(), "alice", req).await.unwrap().id;

    // Act
    let run = t.drive(&id, 50).await;

    // Assert: a legitimate end, with a report.
    let reason = run.stopping_reason.clone().unwrap();
    assert!(
        matches!(
            *run.status,
            RunStatus::Completed | RunStatus::Stopped | RunStatus::WaitingOnUser
        ),
        "{:?} {reason:?}",
        run.status
    );
    assert_ne!(reason.kind, StopType::Error, "{reason:?}");
    assert!(run.iteration >= 1 && run.iteration <= 3);
    assert!(run.report.is_some(), "a report was written");

    // Assert: the books are exactly what the server reported, call for call.
    assert!(server.calls.load(Ordering::SeqCst) >= 1);
    assert_eq!(run.metrics.llm_calls, server.calls.load(Ordering::SeqCst));
    assert_eq!(run.metrics.tokens(), server.tokens.load(Ordering::SeqCst));
    assert_eq!(run.metrics.by_model[&spec].calls, run.metrics.llm_calls);
    eprintln!(
        "real model: {} iteration(s), {} call(s), {} tokens, ended {:?}: {}",
        run.iteration,
        run.metrics.llm_calls,
        run.metrics.tokens(),
        reason.kind,
        reason.detail
    );
}
