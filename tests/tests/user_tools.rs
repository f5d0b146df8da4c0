//! Registered tools: a run calls its owner's tool with a signed POST, the tool server verifies
//! the signature, and a redelivered iteration repeats the call with the same idempotency key.
#![allow(clippy::unwrap_used)]

use longrun_ports::CatalogExt;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use longrun_domain::UserTool;
use longrun_domain::run::RunStatus;
use longrun_http::{CreateRun, create_run};
use longrun_outbound::StaticLookup;
use longrun_outbound::user_tool::{IDEMPOTENCY_HEADER, SIGNATURE_HEADER, signature};
use longrun_ports::{FaultPoint, NoFaults};
use longrun_tests::{CrashOnce, TestPlatform, platform_with};
use serde_json::{Value, json};

const SECRET: &str = "tool-secret-0123456789";

#[derive(Clone, Debug)]
struct Call {
    key: String,
    verified: bool,
    body: Value,
}

type Calls = Arc<Mutex<Vec<Call>>>;

/// The user's system: checks the signature and records every call.
async fn tool_server() -> (u16, Calls) {
    let calls: Calls = Arc::default();
    let app = Router::new()
        .route(
            "/price",
            post(
                |State(calls): State<Calls>, headers: HeaderMap, body: Bytes| async move {
                    let sig = headers
                        .get(SIGNATURE_HEADER)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default();
                    let verified = sig == signature(SECRET, &body);
                    let key = headers
                        .get(IDEMPOTENCY_HEADER)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_string();
                    let body: Value = serde_json::from_slice(&body).unwrap_or_default();
                    calls.lock().unwrap().push(Call {
                        key,
                        verified,
                        body,
                    });
                    if !verified {
                        return (
                            StatusCode::UNAUTHORIZED,
                            axum::Json(json!({"error": "bad signature"})),
                        );
                    }
                    (StatusCode::OK, axum::Json(json!({"price_eur": 4.5})))
                },
            ),
        )
        .with_state(calls.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (port, calls)
}

/// The scripted model answers by iteration, so the redelivered iteration 1 gets the same
/// answer again, as a deterministic model would.
const USE_TOOL: &str = r#"{"planner": [
  {"content": {"status": {"exit_signal": false, "needs_user_input": false, "progress_summary": "priced tea",
    "remaining_work": ["write it down"]},
    "tool_calls": [{"name": "price_lookup", "args": {"item": "sencha"}},
                   {"name": "price_lookup", "args": {"item": 7}}]}},
  {"content": {"status": {"exit_signal": true, "needs_user_input": false, "progress_summary": "done",
    "remaining_work": [], "completion_evidence": ["price.md"]},
    "tool_calls": [{"name": "doc_write", "args": {"path": "price.md", "content": "sencha: 4.50 EUR"}}]}}]}"#;

fn tool(port: u16) -> UserTool {
    UserTool {
        name: "price_lookup".into(),
        description: "Looks up the price of a tea".into(),
        parameters: json!({"type": "object", "properties": {"item": {"type": "string"}},
                           "required": ["item"], "additionalProperties": false}),
        url: format!("http://tools.test:{port}/price"),
        secret: SECRET.into(),
        write: false,
        created_at: 0,
    }
}

fn with_tools_host(script: &str, faults: Arc<dyn longrun_ports::Faults>) -> TestPlatform {
    platform_with(script, faults, &[("tok-alice", "alice")], 5, |c| {
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        c.fetch.policy.trusted_private = vec!["tools.test".into()];
        c.fetch.lookup = Some(Arc::new(StaticLookup(HashMap::from([(
            "tools.test".to_string(),
            vec![ip],
        )]))));
    })
}

async fn start(t: &TestPlatform) -> String {
    let req = CreateRun {
        agent: None,
        objective: "price some tea".into(),
        completion_criteria: vec![],
        grading: None,
        budgets: Default::default(),
        thresholds: None,
        model: None,
        permission_mode: None,
        models: vec![],
        allowed_tools: None,
        context: None,
        scope: None,
        project_ids: None,
    };
    create_run(t.p(), "alice", req).await.unwrap().id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registered_tool_is_called_signed_and_a_redelivery_repeats_its_idempotency_key() {
    // Arrange: the worker crashes after iteration 1's tool call, before its commit.
    let (port, calls) = tool_server().await;
    let t = with_tools_host(
        USE_TOOL,
        Arc::new(CrashOnce::new(vec![(FaultPoint::BeforeCommit, 1)])),
    );
    t.p().store.put_tool("alice", &tool(port)).await.unwrap();
    let id = start(&t).await;

    // Act
    let run = t.drive(&id, 200).await;

    // Assert
    assert_eq!(
        run.status,
        RunStatus::Completed,
        "{:?}",
        run.stopping_reason
    );
    let calls = calls.lock().unwrap().clone();
    assert_eq!(
        calls.len(),
        2,
        "one call per delivery of iteration 1: {calls:?}"
    );
    assert!(
        calls.iter().all(|c| c.verified),
        "every call carries a valid signature"
    );
    assert_eq!(calls[0].key, calls[1].key, "the redelivery repeats the key");
    assert!(
        calls[0].key.starts_with(&format!("{id}#1#price_lookup.")),
        "{}",
        calls[0].key
    );
    assert_eq!(calls[0].body["args"], json!({"item": "sencha"}));
    assert_eq!(calls[0].body["run_id"], json!(id));
    let price = t.p().store.doc(&id, "price.md").await.unwrap().unwrap();
    assert_eq!(
        price.sources,
        vec!["tool:price_lookup"],
        "the doc cites the tool result in the planner's view"
    );
    let it1 = t.p().store.iterations(&id, 0, 1).await.unwrap().remove(0);
    let results: Vec<(bool, &str)> = it1
        .tool_results
        .iter()
        .map(|r| (r.ok, r.result.as_str()))
        .collect();
    assert!(results[0].0 && results[0].1.contains("4.5"), "{results:?}");
    assert!(
        !results[1].0 && results[1].1.contains("do not match its schema"),
        "the schema is enforced before the call: {results:?}"
    );
}

#[tokio::test]
async fn another_users_runs_cannot_see_the_tool() {
    let (port, calls) = tool_server().await;
    let t = with_tools_host(USE_TOOL, Arc::new(NoFaults));
    t.p().store.put_tool("bob", &tool(port)).await.unwrap();
    let id = start(&t).await;

    let run = t.drive(&id, 200).await;

    let it1 = t.p().store.iterations(&id, 0, 1).await.unwrap().remove(0);
    assert!(
        it1.tool_results[0]
            .result
            .contains("unknown tool `price_lookup`")
    );
    assert!(calls.lock().unwrap().is_empty());
    assert!(run.status.is_ended());
}

#[tokio::test]
async fn registration_checks_name_schema_url_and_secret_and_never_returns_the_secret() {
    // Arrange
    let t = with_tools_host(USE_TOOL, Arc::new(NoFaults));
    let good = json!({"name": "price_lookup", "description": "prices",
        "parameters": {"type": "object"}, "url": "http://tools.test:9/price",
        "secret": SECRET});
    let with = |k: &str, v: Value| {
        let mut b = good.clone();
        b[k] = v;
        b
    };

    // Act
    let (created, _, _) = t
        .api("tok-alice", "POST", "/v1/tools", Some(good.clone()))
        .await;
    let (replaced, _, _) = t
        .api("tok-alice", "POST", "/v1/tools", Some(good.clone()))
        .await;
    let (_, _, list) = t.api("tok-alice", "GET", "/v1/tools", None).await;
    let refusals = [
        ("builtin", with("name", json!("doc_write"))),
        ("bad name", with("name", json!("Bad Name"))),
        (
            "schema",
            with("parameters", json!({"type": "object", "properties": 3})),
        ),
        ("not object", with("parameters", json!({"type": "string"}))),
        ("http", with("url", json!("http://example.com/x"))),
        (
            "metadata",
            with("url", json!("https://169.254.169.254/latest")),
        ),
        ("short secret", with("secret", json!("short"))),
    ];
    let mut statuses = vec![];
    for (what, body) in refusals {
        let (s, _, problem) = t.api("tok-alice", "POST", "/v1/tools", Some(body)).await;
        statuses.push((
            what,
            s,
            problem["detail"].as_str().unwrap_or("").to_string(),
        ));
    }
    let (deleted, _, _) = t
        .api("tok-alice", "DELETE", "/v1/tools/price_lookup", None)
        .await;
    let (again, _, _) = t
        .api("tok-alice", "DELETE", "/v1/tools/price_lookup", None)
        .await;

    // Assert
    assert_eq!(created, StatusCode::CREATED);
    assert_eq!(replaced, StatusCode::OK);
    assert_eq!(list["tools"][0]["name"], "price_lookup");
    assert!(
        !list.to_string().contains(SECRET),
        "the secret is never returned"
    );
    for (what, s, detail) in &statuses {
        assert!(
            *s == StatusCode::UNPROCESSABLE_ENTITY || *s == StatusCode::CONFLICT,
            "{what}: {s} {detail}"
        );
        assert!(!detail.is_empty(), "{what} says why");
    }
    assert_eq!(deleted, StatusCode::NO_CONTENT);
    assert_eq!(again, StatusCode::NOT_FOUND);
}
