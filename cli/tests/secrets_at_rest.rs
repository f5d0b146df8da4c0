//! Secrets at rest and in error text: `serve`'s data dir and files are its owner's only, the
//! catalog's secrets are sealed, and a provider, a tool or an MCP server that echoes a secret in
//! its error has it scrubbed before anything stores or sends it.
#![allow(clippy::unwrap_used)]
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

mod support;

const TOKEN: &str = "lr_secrets_test_token_0123456789";
const PROVIDER_KEY: &str = "sk-test-provider-key-echoed-by-its-proxy-4242";
const TOOL_SECRET: &str = "tool-hmac-secret-quoted-in-its-error-7777";
const MCP_SECRET: &str = "mcp-bearer-secret-quoted-in-its-error-8888";
const HOOK_SECRET: &str = "webhook-secret-quoted-in-its-error-9999";

/// A planner answer that calls the registered tool `crm`.
fn planner_calling_the_tool() -> String {
    json!({
        "status": {"exit_signal": false, "needs_user_input": false,
                   "progress_summary": "Looked the customer up.", "remaining_work": ["report"],
                   "next_action_hint": "execute", "confidence": "medium"},
        "plan_updates": [{"id": "s1", "title": "Look the customer up", "status": "in_progress"}],
        "tool_calls": [{"name": "crm", "args": {"customer": "acme"}}]
    })
    .to_string()
}

/// Loopback servers that echo what they were sent or hold in their errors, as a proxy or a
/// careless tool does: the model's first call is answered, every later one is a 401 quoting the
/// key it was sent; the tool, the MCP server and the webhook answer 500 quoting their secrets.
async fn echoing_servers() -> (u16, Arc<Mutex<Vec<String>>>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let hooks: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = hooks.clone();
    let app = axum::Router::new()
        .route(
            "/v1/chat/completions",
            axum::routing::post(move |headers: HeaderMap| {
                let calls = calls.clone();
                async move {
                    let key = headers["authorization"].to_str().unwrap().to_string();
                    if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                        let body = json!({
                            "id": "c1", "object": "chat.completion", "model": "gpt-test",
                            "choices": [{"index": 0, "finish_reason": "stop",
                                "message": {"role": "assistant", "content": planner_calling_the_tool()}}],
                            "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}
                        });
                        return (StatusCode::OK, body.to_string());
                    }
                    let body = json!({"error": {"message": format!(
                        "Incorrect API key provided: {}. You sent `{key}`.",
                        key.trim_start_matches("Bearer ")
                    )}});
                    (StatusCode::UNAUTHORIZED, body.to_string())
                }
            }),
        )
        .route(
            "/tool",
            axum::routing::post(|| async {
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("signature check failed: expected HMAC under {TOOL_SECRET}"),
                )
            }),
        )
        .route(
            "/mcp",
            axum::routing::post(|| async {
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("bad token Bearer {MCP_SECRET}"),
                )
            }),
        )
        .route(
            "/hook",
            axum::routing::post(move |body: String| {
                let sink = sink.clone();
                async move {
                    sink.lock().unwrap().push(body);
                    (
                        StatusCode::INTERNAL_SERVER_ERROR,
                        format!("cannot verify with {HOOK_SECRET}"),
                    )
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (port, hooks)
}

async fn api(
    client: &reqwest::Client, method: reqwest::Method, url: String, body: Option<Value>,
) -> (StatusCode, String) {
    let mut req = client.request(method, url).bearer_auth(TOKEN);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.unwrap();
    let status = StatusCode::from_u16(resp.status().as_u16()).unwrap();
    (status, resp.text().await.unwrap())
}

fn secrets() -> [&'static str; 5] {
    [PROVIDER_KEY, TOOL_SECRET, MCP_SECRET, HOOK_SECRET, TOKEN]
}

fn leaked<'a>(text: &[u8], what: &'a str) -> Vec<&'a str> {
    let text = String::from_utf8_lossy(text);
    secrets()
        .into_iter()
        .filter(|s| text.contains(s))
        .map(|_| what)
        .collect()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echoed_secrets_are_scrubbed_and_none_is_stored_or_exported_in_plain_text() {
    // Arrange: serve on a fresh data dir, a model behind a proxy that echoes the key, and a
    // tool, an MCP server and a webhook whose errors quote their secrets.
    let (port, hooks) = echoing_servers().await;
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_longrun"));
    cmd.args([
        "serve",
        "--port",
        "0",
        "--model",
        "openai:gpt-test",
        "--data-dir",
    ])
    .arg(&data)
    .env("LONGRUN_TOKENS", format!("{TOKEN}:alice"))
    .env("LONGRUN_FETCH_TRUSTED_PRIVATE", "localhost")
    .env("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
    .env("OPENAI_API_KEY", PROVIDER_KEY)
    .env("LONGRUN_LLM_COOLDOWN_SECS", "0");
    let (mut child, addr) = support::spawn_serve(cmd);
    let url = |p: &str| format!("http://{addr}{p}");
    let client = reqwest::Client::new();
    let base = format!("http://localhost:{port}");
    let registered = [
        (
            reqwest::Method::POST,
            "/v1/tools",
            json!({"name": "crm", "description": "Looks a customer up.", "write": false,
                   "parameters": {"type": "object"}, "url": format!("{base}/tool"),
                   "secret": TOOL_SECRET}),
        ),
        (
            reqwest::Method::POST,
            "/v1/mcp-servers",
            json!({"name": "docs", "url": format!("{base}/mcp"), "secret": MCP_SECRET}),
        ),
        (
            reqwest::Method::PUT,
            "/v1/webhooks",
            json!({"webhooks": [{"url": format!("{base}/hook"), "secret": HOOK_SECRET}]}),
        ),
    ];
    for (method, path, body) in registered {
        let (status, text) = api(&client, method, url(path), Some(body)).await;
        assert!(status.is_success(), "{path}: {status} {text}");
    }

    // Act: a run whose tool call and next model call fail with the secrets in their errors.
    let (status, created) = api(
        &client,
        reqwest::Method::POST,
        url("/v1/runs"),
        Some(json!({"objective": "Look up acme in the CRM and report."})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let id = serde_json::from_str::<Value>(&created).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, run) = api(
            &client,
            reqwest::Method::GET,
            url(&format!("/v1/runs/{id}")),
            None,
        )
        .await;
        let run: Value = serde_json::from_str(&run).unwrap();
        if ["failed", "stopped", "completed", "canceled"].contains(&run["status"].as_str().unwrap())
        {
            break;
        }
        assert!(Instant::now() < deadline, "the run never ended: {run}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while hooks.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "the webhook was never called");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The failed delivery's error is recorded before the next attempt is due.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut served = String::new();
    for path in [
        format!("/v1/runs/{id}"),
        format!("/v1/runs/{id}/events"),
        format!("/v1/runs/{id}/iterations"),
        format!("/v1/runs/{id}/scratchpad"),
        format!("/v1/runs/{id}/report"),
        format!("/v1/runs/{id}/deliveries"),
        "/v1/runs".to_string(),
        "/v1/notifications".to_string(),
        "/v1/tools".to_string(),
        "/v1/mcp-servers".to_string(),
        "/v1/webhooks".to_string(),
    ] {
        let (status, text) = api(&client, reqwest::Method::GET, url(&path), None).await;
        assert!(status.is_success(), "{path}: {status}");
        served.push_str(&text);
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let export = tmp.path().join("run.json");
    let exported = Command::new(env!("CARGO_BIN_EXE_longrun"))
        .args(["export", &id, "--out"])
        .arg(&export)
        .arg("--data-dir")
        .arg(&data)
        .status()
        .unwrap();
    assert!(exported.success());

    // Assert: the errors were recorded, scrubbed; no secret is served, sent, stored or exported.
    assert!(
        served.contains("[redacted]"),
        "the echoed errors were not recorded: {served}"
    );
    let mut leaks = leaked(served.as_bytes(), "the API");
    for body in hooks.lock().unwrap().iter() {
        leaks.extend(leaked(body.as_bytes(), "a webhook body"));
    }
    let db = data.join("longrun.sqlite3");
    let wal = data.join("longrun.sqlite3-wal");
    for (path, what) in [
        (&db, "the database"),
        (&wal, "its WAL"),
        (&export, "the export"),
    ] {
        if path.exists() {
            leaks.extend(leaked(&std::fs::read(path).unwrap(), what));
        }
    }
    assert!(leaks.is_empty(), "secrets found in: {leaks:?}");
    assert_eq!(mode(&data), 0o700, "the data dir");
    assert_eq!(mode(&db), 0o600, "the database");
    assert_eq!(mode(&data.join("seal.key")), 0o600, "the sealing key");
    assert_eq!(mode(&export), 0o600, "the export");
    if wal.exists() {
        assert_eq!(mode(&wal), 0o600, "the WAL");
    }
}

#[test]
fn a_data_dir_an_older_version_left_open_is_made_private_on_start() {
    // Arrange: a data dir and database as an older version left them, 0755 and 0644.
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    let db = data.join("longrun.sqlite3");
    std::fs::write(&db, b"").unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();

    // Act
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_longrun"));
    cmd.args(["serve", "--port", "0", "--data-dir"])
        .arg(&data)
        .env("LONGRUN_TOKENS", format!("{TOKEN}:alice"));
    let (mut child, _addr) = support::spawn_serve(cmd);
    child.kill().unwrap();
    child.wait().unwrap();

    // Assert
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&db), 0o600);
}
