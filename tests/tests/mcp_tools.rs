//! MCP tools: a user registers an MCP server and their runs call its tools as `server.tool`,
//! against a real server built with the official MCP TypeScript SDK (`tests/mcp/tool-server.mjs`,
//! started here), and against a hand-made server that answers garbage or stalls.
#![allow(clippy::unwrap_used)]

use longrun_ports::CatalogExt;
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::routing::post;
use longrun_domain::McpServer;
use longrun_domain::run::RunStatus;
use longrun_http::{CreateRun, create_run};
use longrun_outbound::StaticLookup;
use longrun_ports::NoFaults;
use longrun_tests::TestPlatform;
use serde_json::{Value, json};

/// The SDK tool server, killed when dropped.
struct ToolServer {
    child: Child,
    port: u16,
}

impl Drop for ToolServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `npm ci` ran since the lock file last changed (the test as `scripts/node-tests`).
fn installed(dir: &std::path::Path) -> bool {
    let modified = |p: PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    match (
        modified(dir.join("node_modules/.package-lock.json")),
        modified(dir.join("package-lock.json")),
    ) {
        (Some(installed), Some(locked)) => installed >= locked,
        _ => false,
    }
}

impl ToolServer {
    /// Installs the SDK on first use (as `scripts/node-tests` does), then starts the server on
    /// a free loopback port.
    fn start() -> ToolServer {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("mcp");
        // The tests run in parallel; two `npm ci` at once in one folder break each other.
        static INSTALL: std::sync::Mutex<()> = std::sync::Mutex::new(());
        {
            let _one_at_a_time = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
            if !installed(&dir) {
                let status = Command::new("npm")
                    .args(["ci", "--no-audit", "--no-fund"])
                    .current_dir(&dir)
                    .status()
                    .expect("npm is installed (Node 20+)");
                assert!(status.success(), "npm ci in tests/mcp failed");
            }
        }
        let mut child = Command::new("node")
            .arg("tool-server.mjs")
            .current_dir(&dir)
            .env("PORT", "0")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node is installed");
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        let port = line
            .trim()
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("tool server did not start: {line:?}"));
        ToolServer { child, port }
    }

    fn url(&self) -> String {
        format!("http://tools.test:{}/mcp", self.port)
    }

    /// The `tools/call` requests each tool received.
    async fn calls(&self) -> Value {
        reqwest::get(format!("http://127.0.0.1:{}/calls", self.port))
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

/// An embedded platform that trusts `tools.test` (→ 127.0.0.1) as a private host, the way a
/// deployment names an intranet host in `LONGRUN_FETCH_TRUSTED_PRIVATE`; MCP calls time out
/// after 2 s.
fn platform(script: &str) -> TestPlatform {
    let mut adapters = longrun_wiring::Adapters::default();
    adapters.mcp.timeout = Duration::from_secs(2);
    adapters.mcp.list_timeout = Duration::from_secs(2);
    longrun_tests::platform_with_adapters(
        longrun_tests::scripted(script),
        Arc::new(NoFaults),
        &[("tok-alice", "alice")],
        5,
        |c| {
            let ip: IpAddr = "127.0.0.1".parse().unwrap();
            c.fetch.policy.trusted_private = vec!["tools.test".into()];
            c.fetch.lookup = Some(Arc::new(StaticLookup(HashMap::from([(
                "tools.test".to_string(),
                vec![ip],
            )]))));
        },
        longrun_engine::EngineConfig {
            lease_ms: 30_000,
            ..Default::default()
        },
        adapters,
    )
}

fn server(name: &str, url: &str) -> McpServer {
    McpServer {
        name: name.into(),
        url: url.into(),
        secret: None,
        created_at: 0,
    }
}

async fn start(t: &TestPlatform, mode: &str) -> String {
    let req: CreateRun = serde_json::from_value(json!({
        "objective": "write a steeping guide for sencha",
        "permission_mode": mode,
    }))
    .unwrap();
    create_run(t.p(), "alice", req).await.unwrap().id
}

fn planner_step(calls: Value, exit: bool) -> Value {
    json!({"content": {
        "status": {"exit_signal": exit, "needs_user_input": false, "progress_summary": "steeping",
                   "remaining_work": if exit { json!([]) } else { json!(["write it down"]) },
                   "completion_evidence": if exit { json!(["sencha.md"]) } else { json!([]) }},
        "tool_calls": calls}})
}

fn script(first_calls: Value) -> String {
    json!({
        "planner": [
            planner_step(first_calls, false),
            planner_step(json!([{"name": "doc_write",
                "args": {"path": "sencha.md", "content": "Sencha: 1 minute at 75 °C."}}]), true),
        ],
        "repair": [{"content": {"tool_calls": []}}],
    })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_tool_is_offered_to_the_planner_called_and_its_fenced_result_cited_while_a_schema_violation_never_reaches_the_server()
 {
    // Arrange
    let tools = ToolServer::start();
    let t = platform(&script(json!([
        {"name": "tea.lookup", "args": {"term": "sencha"}},
        {"name": "tea.lookup", "args": {"term": 5}},
    ])));
    t.p()
        .store
        .put_mcp_server("alice", &server("tea", &tools.url()))
        .await
        .unwrap();
    let id = start(&t, "autopilot").await;

    // Act
    let run = t.drive(&id, 200).await;

    // Assert
    assert_eq!(
        run.status,
        RunStatus::Completed,
        "{:?}",
        run.stopping_reason
    );
    let prompt1 = t.llm.planner_prompt(&id, 1).unwrap();
    assert!(
        prompt1.contains("- tea.lookup: Looks a tea up") && prompt1.contains("\"term\""),
        "the planner is offered the tool with its input schema"
    );
    assert!(prompt1.contains("- tea.save:"), "{prompt1}");
    let it1 = t.p().store.iterations(&id, 0, 1).await.unwrap().remove(0);
    let (ok, result) = (&it1.tool_results[0].ok, &it1.tool_results[0].result);
    assert!(
        *ok && result.contains("Japanese steamed green tea"),
        "{result}"
    );
    assert!(
        result.contains("UNTRUSTED result of MCP tool tea.lookup"),
        "the result is fenced as data: {result}"
    );
    let (ok, refused) = (&it1.tool_results[1].ok, &it1.tool_results[1].result);
    assert!(
        !ok && refused.contains("do not match its schema"),
        "{refused}"
    );
    let calls = tools.calls().await;
    assert_eq!(
        calls["lookup"],
        json!(1),
        "only the valid call reached the server"
    );
    assert_eq!(calls["sessions"], json!(0), "every session was ended");
    let prompt2 = t.llm.planner_prompt(&id, 2).unwrap();
    assert!(
        prompt2.contains("Japanese steamed green tea"),
        "the next planner call sees the result"
    );
    let doc = t.p().store.doc(&id, "sencha.md").await.unwrap().unwrap();
    assert_eq!(doc.sources, vec!["tool:tea.lookup"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_write_holds_a_call_of_a_tool_the_server_does_not_mark_read_only() {
    // Arrange
    let tools = ToolServer::start();
    let t = platform(&script(json!([
        {"name": "tea.save", "args": {"name": "sencha", "note": "grassy"}},
        {"name": "tea.lookup", "args": {"term": "assam"}},
    ])));
    t.p()
        .store
        .put_mcp_server("alice", &server("tea", &tools.url()))
        .await
        .unwrap();
    let id = start(&t, "per_write").await;

    // Act
    let run = t.drive(&id, 200).await;

    // Assert
    assert_eq!(run.status, RunStatus::WaitingOnUser);
    let held: Vec<&str> = run.pending_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(held, vec!["tea.save"]);
    let calls = tools.calls().await;
    assert_eq!(calls["save"], json!(0), "the write waits for approval");
    assert_eq!(calls["lookup"], json!(1), "the read-only tool runs");
}

#[tokio::test]
async fn registering_an_mcp_server_refuses_private_and_metadata_urls_and_never_returns_the_secret()
{
    // Arrange
    let t = platform(&script(json!([])));
    let secret = "mcp-bearer-0123456789";
    let good = json!({"name": "tea", "url": "http://tools.test:9/mcp", "secret": secret});
    let with = |k: &str, v: Value| {
        let mut b = good.clone();
        b[k] = v;
        b
    };

    // Act
    let (created, _, view) = t
        .api("tok-alice", "POST", "/v1/mcp-servers", Some(good.clone()))
        .await;
    let (replaced, _, _) = t
        .api("tok-alice", "POST", "/v1/mcp-servers", Some(good.clone()))
        .await;
    let (_, _, list) = t.api("tok-alice", "GET", "/v1/mcp-servers", None).await;
    let refusals = [
        (
            "metadata",
            with("url", json!("https://169.254.169.254/latest")),
        ),
        (
            "metadata http",
            with("url", json!("http://169.254.169.254/")),
        ),
        ("private", with("url", json!("http://10.0.0.1/"))),
        ("private https", with("url", json!("https://10.0.0.1/mcp"))),
        ("localhost", with("url", json!("https://localhost/mcp"))),
        ("plain http", with("url", json!("http://example.com/mcp"))),
        ("bad name", with("name", json!("Tea Shop"))),
        ("dotted name", with("name", json!("tea.shop"))),
        ("header injection", with("secret", json!("a\r\nX-Evil: 1"))),
    ];
    let mut answers = vec![];
    for (what, body) in refusals {
        let (s, ct, problem) = t
            .api("tok-alice", "POST", "/v1/mcp-servers", Some(body))
            .await;
        answers.push((
            what,
            s,
            ct,
            problem["detail"].as_str().unwrap_or("").to_string(),
        ));
    }
    let (deleted, _, _) = t
        .api("tok-alice", "DELETE", "/v1/mcp-servers/tea", None)
        .await;
    let (again, _, _) = t
        .api("tok-alice", "DELETE", "/v1/mcp-servers/tea", None)
        .await;

    // Assert
    assert_eq!(created, StatusCode::CREATED);
    assert_eq!(view["has_secret"], json!(true));
    assert_eq!(replaced, StatusCode::OK);
    assert_eq!(list["mcp_servers"][0]["name"], "tea");
    assert_eq!(list["mcp_servers"][0]["url"], "http://tools.test:9/mcp");
    assert!(
        !list.to_string().contains(secret) && !view.to_string().contains(secret),
        "the secret is never returned"
    );
    for (what, s, ct, detail) in &answers {
        assert_eq!(*s, StatusCode::UNPROCESSABLE_ENTITY, "{what}: {detail}");
        assert_eq!(ct, "application/problem+json", "{what}");
        assert!(!detail.is_empty(), "{what} says why");
    }
    assert!(
        answers[0].3.contains("not an IP address"),
        "the registration check says why: {}",
        answers[0].3
    );
    assert_eq!(deleted, StatusCode::NO_CONTENT);
    assert_eq!(again, StatusCode::NOT_FOUND);
}

/// A server that lists two tools and then breaks its word: `brew` answers HTML, `stall`
/// never answers. Every other method answers as the protocol says.
async fn broken_server(listing_too: bool) -> u16 {
    let app = Router::new().route(
        "/mcp",
        post(move |body: Bytes| async move {
            let msg: Value = serde_json::from_slice(&body).unwrap_or_default();
            let id = msg["id"].clone();
            let answer = |result: Value| {
                (
                    StatusCode::OK,
                    [("content-type", "application/json")],
                    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
                )
            };
            match msg["method"].as_str().unwrap_or("") {
                "initialize" => answer(json!({"protocolVersion": "2025-06-18",
                    "capabilities": {"tools": {}}, "serverInfo": {"name": "broken", "version": "0"}})),
                "tools/list" if listing_too => (
                    StatusCode::OK,
                    [("content-type", "application/json")],
                    "{\"jsonrpc\": \"2.0\", \"id\": ".to_string(),
                ),
                "tools/list" => answer(json!({"tools": [
                    {"name": "brew", "inputSchema": {"type": "object"},
                     "annotations": {"readOnlyHint": true}},
                    {"name": "stall", "inputSchema": {"type": "object"},
                     "annotations": {"readOnlyHint": true}}]})),
                "tools/call" if msg["params"]["name"] == "stall" => {
                    tokio::time::sleep(Duration::from_secs(30)).await;
                    answer(json!({}))
                }
                "tools/call" => (
                    StatusCode::OK,
                    [("content-type", "text/html")],
                    "<html>teapot</html>".to_string(),
                ),
                _ => (StatusCode::ACCEPTED, [("content-type", "text/plain")], String::new()),
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_answering_garbage_or_timing_out_is_a_tool_error_the_planner_sees_and_the_run_goes_on()
 {
    // Arrange: `bad` lists tools it cannot call; `mute` cannot even list.
    let bad = broken_server(false).await;
    let mute = broken_server(true).await;
    let t = platform(&script(json!([
        {"name": "bad.brew", "args": {}},
        {"name": "bad.stall", "args": {}},
    ])));
    let store = &t.p().store;
    store
        .put_mcp_server(
            "alice",
            &server("bad", &format!("http://tools.test:{bad}/mcp")),
        )
        .await
        .unwrap();
    store
        .put_mcp_server(
            "alice",
            &server("mute", &format!("http://tools.test:{mute}/mcp")),
        )
        .await
        .unwrap();
    let id = start(&t, "autopilot").await;

    // Act
    let run = t.drive(&id, 200).await;

    // Assert
    assert_eq!(
        run.status,
        RunStatus::Completed,
        "{:?}",
        run.stopping_reason
    );
    let prompt1 = t.llm.planner_prompt(&id, 1).unwrap();
    assert!(prompt1.contains("- bad.brew:"), "{prompt1}");
    assert!(
        !prompt1.contains("mute."),
        "an unlistable server's tools are left out"
    );
    let it1 = t.p().store.iterations(&id, 0, 1).await.unwrap().remove(0);
    let results: Vec<(bool, &str)> = it1
        .tool_results
        .iter()
        .map(|r| (r.ok, r.result.as_str()))
        .collect();
    assert!(
        !results[0].0 && results[0].1.contains("not MCP"),
        "{results:?}"
    );
    assert!(
        !results[1].0 && results[1].1.contains("timed out"),
        "{results:?}"
    );
    let prompt2 = t.llm.planner_prompt(&id, 2).unwrap();
    assert!(
        prompt2.contains("not MCP") && prompt2.contains("timed out"),
        "the planner sees both errors"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_executor_may_call_an_mcp_tool_only_when_its_task_names_it() {
    // Arrange: two tasks whose executors both call tea.lookup; only the first names it.
    let tools = ToolServer::start();
    let task = |title: &str, named: Value| json!({"title": title, "instructions": "look up assam", "tools": named});
    let mut first = planner_step(json!([]), false);
    first["content"]["executor_tasks"] = json!([
        task("with the tool", json!(["tea.lookup", "doc_write"])),
        task("without it", json!([])),
    ]);
    let script = json!({
        "planner": [first, planner_step(json!([{"name": "doc_write",
            "args": {"path": "sencha.md", "content": "Assam: 4 minutes."}}]), true)],
        "executor": [{"content": {"tool_calls": [{"name": "tea.lookup", "args": {"term": "assam"}}],
                                  "summary": "looked assam up"}}],
        "repair": [{"content": {"tool_calls": []}}],
    });
    let t = platform(&script.to_string());
    t.p()
        .store
        .put_mcp_server("alice", &server("tea", &tools.url()))
        .await
        .unwrap();
    let id = start(&t, "autopilot").await;

    // Act
    let run = t.drive(&id, 200).await;

    // Assert
    assert_eq!(
        run.status,
        RunStatus::Completed,
        "{:?}",
        run.stopping_reason
    );
    let it1 = t.p().store.iterations(&id, 0, 1).await.unwrap().remove(0);
    let by_title = |title: &str| {
        let e = it1
            .executor_results
            .iter()
            .find(|e| e.title == title)
            .unwrap();
        (e.tool_results[0].ok, e.tool_results[0].result.clone())
    };
    let (ok, result) = by_title("with the tool");
    assert!(ok && result.contains("Indian black tea"), "{result}");
    let (ok, refused) = by_title("without it");
    assert!(!ok && refused.contains("not allowed"), "{refused}");
    assert_eq!(tools.calls().await["lookup"], json!(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allowed_tools_may_name_a_registered_servers_tool_and_narrow_the_planner_to_it() {
    // Arrange
    let tools = ToolServer::start();
    let t = platform(&script(json!([])));
    t.p()
        .store
        .put_mcp_server("alice", &server("tea", &tools.url()))
        .await
        .unwrap();
    let request = |allowed: Value| -> CreateRun {
        serde_json::from_value(json!({"objective": "steep", "allowed_tools": allowed})).unwrap()
    };

    // Act
    let unknown = create_run(t.p(), "alice", request(json!(["coffee.brew"]))).await;
    let id = create_run(t.p(), "alice", request(json!(["tea.lookup", "doc_write"])))
        .await
        .unwrap()
        .id;
    let run = t.drive(&id, 200).await;

    // Assert
    let err = unknown.unwrap_err().to_string();
    assert!(
        err.contains("coffee.brew") && err.contains("tea.*"),
        "{err}"
    );
    assert_eq!(
        run.status,
        RunStatus::Completed,
        "{:?}",
        run.stopping_reason
    );
    let prompt = t.llm.planner_prompt(&id, 1).unwrap();
    assert!(prompt.contains("- tea.lookup:"), "{prompt}");
    assert!(!prompt.contains("- tea.save:"), "{prompt}");
}
