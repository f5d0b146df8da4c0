//! The HTTP API over a real socket, with the embedded worker behind it.
#![allow(clippy::unwrap_used)]

use longrun_ports::CatalogExt;
use std::sync::Arc;
use std::time::Duration;

use longrun_ports::{Clock, NoFaults};
use longrun_tests::{NOTES_SCRIPT, TestPlatform, platform};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::watch;

const ALICE: &str = "tok-alice";
const BOB: &str = "tok-bob";

struct App {
    base: String,
    http: reqwest::Client,
    t: TestPlatform,
    _stop: watch::Sender<bool>,
}

impl App {
    async fn req(
        &self, method: reqwest::Method, path: &str, token: Option<&str>, body: Option<Value>,
    ) -> (StatusCode, Value, String) {
        let mut r = self.http.request(method, format!("{}{path}", self.base));
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        if let Some(b) = body {
            r = r.json(&b);
        }
        let resp = r.send().await.unwrap();
        let status = resp.status();
        let ctype = resp
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        let text = resp.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
            ctype,
        )
    }
    async fn get(&self, path: &str, token: &str) -> (StatusCode, Value) {
        let (s, v, _) = self
            .req(reqwest::Method::GET, path, Some(token), None)
            .await;
        (s, v)
    }
    async fn post(&self, path: &str, token: &str, body: Value) -> (StatusCode, Value) {
        let (s, v, _) = self
            .req(reqwest::Method::POST, path, Some(token), Some(body))
            .await;
        (s, v)
    }

    /// Waits until the run has committed at least `n` iterations.
    async fn wait_iteration(&self, id: &str, n: u64) -> Value {
        for _ in 0..300 {
            let (_, r) = self.get(&format!("/v1/runs/{id}"), ALICE).await;
            if r["iteration"].as_u64().unwrap() >= n {
                return r;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("run {id} never reached iteration {n}");
    }

    async fn wait_status(&self, id: &str, statuses: &[&str]) -> Value {
        for _ in 0..500 {
            let (_, run) = self.get(&format!("/v1/runs/{id}"), ALICE).await;
            if statuses.contains(&run["status"].as_str().unwrap()) {
                return run;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("run {id} never reached {statuses:?}");
    }
}

/// Serves the router on a free loopback port; `worker` starts the background loop.
async fn spawn_app(script: &str, active_limit: u32, worker: bool) -> App {
    let mut t = platform(
        script,
        Arc::new(NoFaults),
        &[(ALICE, "alice"), (BOB, "bob")],
        active_limit,
    );
    let (stop, rx) = watch::channel(false);
    if worker {
        t.running.spawn(rx);
    }
    serve(t, stop).await
}

/// Serves the router over `t` on a free loopback port, with no background loop.
async fn serve_platform(t: TestPlatform) -> App {
    serve(t, watch::channel(false).0).await
}

async fn serve(t: TestPlatform, stop: watch::Sender<bool>) -> App {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = longrun_http::router(t.p().clone());
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    App {
        base: format!("http://{addr}"),
        http: reqwest::Client::new(),
        t,
        _stop: stop,
    }
}

const LOOP: &str = r#"{"planner": [{"content": {"status": {"exit_signal": false, "needs_user_input": false,
    "progress_summary": "note {{iteration}}", "remaining_work": ["more"]},
    "tool_calls": [{"name": "doc_write", "args": {"path": "notes/{{iteration}}.md", "content": "n{{iteration}}"}}]},
    "usage": {"input_tokens": 10, "output_tokens": 5}, "latency_ms": 30}]}"#;

const ASK_THEN_FINISH: &str = r#"{"planner": [
  {"content": {"status": {"exit_signal": false, "needs_user_input": true, "blocking_questions": ["Which tea?"],
    "progress_summary": "need a choice", "remaining_work": ["write the note"]}}},
  {"content": {"status": {"exit_signal": true, "needs_user_input": false, "progress_summary": "wrote choice.md",
    "remaining_work": [], "completion_evidence": ["choice.md"]},
    "tool_calls": [{"name": "doc_write", "args": {"path": "choice.md", "content": "the user chose"}}]}}]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_parallel_creates_with_a_limit_of_three_accept_exactly_three() {
    let app = Arc::new(spawn_app(LOOP, 3, false).await);
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let app = app.clone();
            tokio::spawn(async move {
                app.req(
                    reqwest::Method::POST,
                    "/v1/runs",
                    Some(ALICE),
                    Some(json!({"objective": format!("run {i}")})),
                )
                .await
            })
        })
        .collect();
    let mut created = 0;
    let mut limited = 0;
    for t in tasks {
        let (status, body, ctype) = t.await.unwrap();
        match status {
            StatusCode::CREATED => created += 1,
            StatusCode::TOO_MANY_REQUESTS => {
                limited += 1;
                assert_eq!(ctype, "application/problem+json");
                assert_eq!(body["status"], 429);
                assert!(body["detail"].as_str().unwrap().contains("3 active runs"));
            }
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert_eq!((created, limited), (3, 17));
    let (_, list) = app.get("/v1/runs", ALICE).await;
    assert_eq!(list["runs"].as_array().unwrap().len(), 3);
    assert_eq!(list["active"], 3);
}

#[tokio::test]
async fn bad_bodies_get_problem_details_and_write_nothing() {
    let app = spawn_app(LOOP, 3, false).await;
    let raw = |body: &'static str| {
        app.http
            .post(format!("{}/v1/runs", app.base))
            .bearer_auth(ALICE)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let resp = raw("{\"objective\": ").await.unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert_eq!(resp.headers()["content-type"], "application/problem+json");

    let cases = [
        (
            json!({"objective": "x", "colour": "red"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "colour",
        ),
        (
            json!({"objective": "x", "budgets": {"max_tokens": -5}}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "budgets.max_tokens",
        ),
        (
            json!({"objective": "x", "budgets": {"max_iterations": 0}}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "budgets.max_iterations",
        ),
        (
            json!({"objective": "x".repeat(100 * 1024)}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "bytes",
        ),
        (
            json!({"objective": "   "}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "empty",
        ),
        (
            json!({"objective": "x", "model": "openai:gpt-4.1"}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "not available",
        ),
        (
            json!({"budgets": {}}),
            StatusCode::UNPROCESSABLE_ENTITY,
            "objective",
        ),
    ];
    for (body, status, needle) in cases {
        let (s, problem, ctype) = app
            .req(
                reqwest::Method::POST,
                "/v1/runs",
                Some(ALICE),
                Some(body.clone()),
            )
            .await;
        assert_eq!(s, status, "{body}: {problem}");
        assert_eq!(ctype, "application/problem+json");
        for field in ["type", "title", "status", "detail"] {
            assert!(problem.get(field).is_some(), "{field} missing in {problem}");
        }
        assert!(
            problem["detail"].as_str().unwrap().contains(needle),
            "{needle} not in {problem}"
        );
    }
    let (_, list) = app.get("/v1/runs", ALICE).await;
    assert!(
        list["runs"].as_array().unwrap().is_empty(),
        "nothing was written"
    );
    assert_eq!(list["active"], 0);
}

#[tokio::test]
async fn every_v1_route_needs_a_valid_token() {
    let app = spawn_app(LOOP, 3, false).await;
    let (s, _, _) = app.req(reqwest::Method::GET, "/healthz", None, None).await;
    assert_eq!(s, StatusCode::OK);
    for path in [
        "/v1/runs",
        "/v1/runs/x",
        "/v1/runs/x/events",
        "/v1/runs/x/report",
        "/v1/notifications",
        "/v1/config",
        "/v1/schedules",
        "/v1/webhooks",
    ] {
        let (s, body, ctype) = app.req(reqwest::Method::GET, path, None, None).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{path}");
        assert_eq!(ctype, "application/problem+json");
        assert_eq!(body["status"], 401);
        let (s, _, _) = app
            .req(reqwest::Method::GET, path, Some("wrong"), None)
            .await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{path}");
    }
    let (s, _, _) = app
        .req(
            reqwest::Method::POST,
            "/v1/runs",
            None,
            Some(json!({"objective": "x"})),
        )
        .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn another_users_run_is_invisible() {
    let app = spawn_app(ASK_THEN_FINISH, 3, true).await;
    let (s, run) = app
        .post("/v1/runs", ALICE, json!({"objective": "pick a tea"}))
        .await;
    assert_eq!(s, StatusCode::CREATED);
    let id = run["id"].as_str().unwrap().to_string();
    app.wait_status(&id, &["waiting_on_user"]).await;
    for path in [
        "",
        "/events",
        "/iterations",
        "/workspace",
        "/docs/choice.md",
        "/report",
        "/scratchpad",
        "/stream",
    ] {
        let (s, body) = app.get(&format!("/v1/runs/{id}{path}"), BOB).await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{path}: {body}");
    }
    for (path, body) in [
        ("/cancel", json!({})),
        ("/respond", json!({"answer": "green"})),
        ("/continue", json!({})),
    ] {
        let (s, _) = app.post(&format!("/v1/runs/{id}{path}"), BOB, body).await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{path}");
    }
    let (_, list) = app.get("/v1/runs", BOB).await;
    assert!(list["runs"].as_array().unwrap().is_empty());
    let (_, notes) = app.get("/v1/notifications", BOB).await;
    assert!(notes["notifications"].as_array().unwrap().is_empty());
    let (_, run) = app.get(&format!("/v1/runs/{id}"), ALICE).await;
    assert_eq!(run["status"], "waiting_on_user", "bob changed nothing");
}

#[tokio::test]
async fn an_unknown_query_parameter_is_a_400_naming_it_and_the_ones_the_route_takes() {
    // Arrange
    let app = spawn_app(ASK_THEN_FINISH, 3, true).await;
    let (_, run) = app
        .post("/v1/runs", ALICE, json!({"objective": "pick a tea"}))
        .await;
    let id = run["id"].as_str().unwrap().to_string();
    app.wait_status(&id, &["waiting_on_user"]).await;

    // Act
    let (stream, problem) = app
        .get(&format!("/v1/runs/{id}/stream?since_seq=10"), ALICE)
        .await;
    let (plain, none) = app.get(&format!("/v1/runs/{id}?verbose=1"), ALICE).await;
    let (known, _) = app
        .get(&format!("/v1/runs/{id}/events?after=1&limit=5"), ALICE)
        .await;

    // Assert
    assert_eq!(stream, StatusCode::BAD_REQUEST, "{problem}");
    let detail = problem["detail"].as_str().unwrap();
    assert!(
        detail.contains("`since_seq`") && detail.contains("after"),
        "{detail}"
    );
    assert_eq!(plain, StatusCode::BAD_REQUEST, "{none}");
    assert!(
        none["detail"]
            .as_str()
            .unwrap()
            .contains("takes no query parameters"),
        "{none}"
    );
    assert_eq!(known, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waits_for_the_user_and_completes_after_the_answer() {
    let app = spawn_app(ASK_THEN_FINISH, 3, true).await;
    let (_, run) = app
        .post("/v1/runs", ALICE, json!({"objective": "pick a tea"}))
        .await;
    let id = run["id"].as_str().unwrap().to_string();
    assert!(
        run["link"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/runs/{id}"))
    );

    let waiting = app.wait_status(&id, &["waiting_on_user"]).await;
    assert_eq!(waiting["questions"], json!(["Which tea?"]));
    let (s, report) = app.get(&format!("/v1/runs/{id}/report"), ALICE).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(report["stopping_reason"]["type"], "waiting_on_user");
    let (s, _) = app
        .post(&format!("/v1/runs/{id}/continue"), ALICE, json!({}))
        .await;
    assert_eq!(
        s,
        StatusCode::CONFLICT,
        "a waiting run is answered, not continued"
    );

    let (s, _) = app
        .post(
            &format!("/v1/runs/{id}/respond"),
            ALICE,
            json!({"answer": "green"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let done = app.wait_status(&id, &["completed"]).await;
    assert_eq!(done["iteration"], 2);

    // Long-poll pages are gapless and end where the log ends.
    let mut after = 0;
    let mut seqs = vec![];
    loop {
        let (_, page) = app
            .get(
                &format!("/v1/runs/{id}/events?after={after}&limit=3"),
                ALICE,
            )
            .await;
        let events = page["events"].as_array().unwrap().clone();
        if events.is_empty() {
            break;
        }
        seqs.extend(events.iter().map(|e| e["seq"].as_u64().unwrap()));
        after = page["next_after"].as_u64().unwrap();
    }
    assert_eq!(
        seqs,
        (1..=done["event_seq"].as_u64().unwrap()).collect::<Vec<_>>()
    );
    let kinds: Vec<String> = {
        let (_, page) = app
            .get(&format!("/v1/runs/{id}/events?limit=1000"), ALICE)
            .await;
        page["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["type"].as_str().unwrap().to_string())
            .collect()
    };
    for k in [
        "run_created",
        "run_waiting",
        "user_responded",
        "run_completed",
    ] {
        assert!(kinds.contains(&k.to_string()), "{k} missing from {kinds:?}");
    }

    // SSE replays from Last-Event-ID and closes once the run has settled.
    let sse = app
        .http
        .get(format!("{}/v1/runs/{id}/stream", app.base))
        .bearer_auth(ALICE)
        .header("last-event-id", "2")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(sse.contains("id: 3\n") && !sse.contains("id: 2\n"), "{sse}");
    assert!(sse.contains("event: run_completed"));

    let (_, doc) = app
        .get(&format!("/v1/runs/{id}/docs/choice.md"), ALICE)
        .await;
    assert_eq!(doc["content"], "the user chose");
    let (_, ws) = app.get(&format!("/v1/runs/{id}/workspace"), ALICE).await;
    assert_eq!(ws["tree"]["children"][0]["path"], "choice.md");
    let (_, report) = app.get(&format!("/v1/runs/{id}/report"), ALICE).await;
    assert_eq!(report["status"], "completed");
    let created = &report["what_changed"]["created"];
    assert_eq!(created.as_array().map(Vec::len), Some(1), "{created}");
    assert_eq!(
        (&created[0]["type"], &created[0]["id"]),
        (&json!("document"), &json!("choice.md"))
    );
    assert!(
        report["title"].as_str().unwrap().starts_with("Complete: "),
        "{}",
        report["title"]
    );
    assert_eq!(report["headline"], "wrote choice.md");
    assert!(
        report["summary"]
            .as_str()
            .is_some_and(|s| s.contains("choice.md"))
    );
    assert!(
        report["metrics"]["total_tokens"].is_u64(),
        "{}",
        report["metrics"]
    );
    assert_eq!(
        report["what_changed"]["linked"][0]["relationship"],
        "supports"
    );

    let mut notes = json!(null);
    for _ in 0..100 {
        (_, notes) = app.get("/v1/notifications", ALICE).await;
        if notes["notifications"].as_array().unwrap().len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let statuses: Vec<&str> = notes["notifications"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses.len(), 2, "{notes}");
    assert!(statuses.contains(&"completed") && statuses.contains(&"waiting_on_user"));
    assert!(
        notes["notifications"][0]["link"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/runs/{id}"))
    );

    // Marking read: another user's attempt changes nothing; the owner's sticks, once.
    let first = notes["notifications"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (s, v) = app
        .post("/v1/notifications/read", BOB, json!({"ids": [first]}))
        .await;
    assert_eq!((s, v["updated"].as_u64()), (StatusCode::OK, Some(0)));
    let (_, v) = app
        .post("/v1/notifications/read", ALICE, json!({"ids": [first]}))
        .await;
    assert_eq!(v["updated"], 1);
    let (_, v) = app
        .post("/v1/notifications/read", ALICE, json!({"ids": [first]}))
        .await;
    assert_eq!(v["updated"], 0);
    let (_, notes) = app.get("/v1/notifications", ALICE).await;
    assert_eq!(notes["unread"], 1);
    assert_eq!(notes["notifications"][0]["read"], true);
    let (s, _) = app
        .post("/v1/notifications/read", ALICE, json!({"ids": "all"}))
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_a_running_run_and_frees_its_slot() {
    let app = spawn_app(LOOP, 3, true).await;
    let (_, run) = app
        .post("/v1/runs", ALICE, json!({"objective": "keep writing"}))
        .await;
    let id = run["id"].as_str().unwrap().to_string();
    app.wait_iteration(&id, 2).await;
    let (s, _) = app
        .post(&format!("/v1/runs/{id}/cancel"), ALICE, json!({}))
        .await;
    assert_eq!(s, StatusCode::OK);
    let run = app.wait_status(&id, &["canceled"]).await;
    assert_eq!(run["stopping_reason"]["type"], "canceled");
    let (_, list) = app.get("/v1/runs", ALICE).await;
    assert_eq!(list["active"], 0);
    let (s, _) = app
        .post(&format!("/v1/runs/{id}/cancel"), ALICE, json!({}))
        .await;
    assert_eq!(s, StatusCode::CONFLICT);
    let (_, report) = app.get(&format!("/v1/runs/{id}/report"), ALICE).await;
    assert!(
        report["what_changed"]["created"].as_array().unwrap().len() >= 2,
        "a partial report lists what was done"
    );
}

/// The planner takes 1.5 s and then asks for a write.
const SLOW_WRITE: &str = r#"{"planner": [{"content": {"status": {"exit_signal": false, "needs_user_input": false,
    "progress_summary": "note {{iteration}}", "remaining_work": ["more"]},
    "tool_calls": [{"name": "doc_write", "args": {"path": "notes/{{iteration}}.md", "content": "n{{iteration}}"}}]},
    "usage": {"input_tokens": 10, "output_tokens": 5}, "latency_ms": 1500}]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_during_the_planner_call_writes_nothing_and_ends_in_that_iteration() {
    // Arrange: the run's first planner call in flight.
    let app = spawn_app(SLOW_WRITE, 3, true).await;
    let (_, run) = app
        .post("/v1/runs", ALICE, json!({"objective": "keep writing"}))
        .await;
    let id = run["id"].as_str().unwrap().to_string();
    app.wait_status(&id, &["running"]).await;

    // Act
    let (s, _) = app
        .post(&format!("/v1/runs/{id}/cancel"), ALICE, json!({}))
        .await;
    let run = app.wait_status(&id, &["canceled"]).await;

    // Assert: the write the planner asked for was never made, and no iteration after it.
    assert_eq!(s, StatusCode::OK);
    assert_eq!(run["iteration"], 1, "{run}");
    let (_, ws) = app.get(&format!("/v1/runs/{id}/workspace"), ALICE).await;
    assert_eq!(ws["docs"], json!([]), "{ws}");
    let (_, events) = app
        .get(&format!("/v1/runs/{id}/events?limit=1000"), ALICE)
        .await;
    let started = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "iteration_started")
        .count();
    assert!(started <= 1, "{events}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_paused_during_its_first_planner_call_goes_on_when_continued() {
    // Arrange: the run's first planner call in flight, then paused.
    let app = spawn_app(SLOW_WRITE, 3, true).await;
    let (_, run) = app
        .post(
            "/v1/runs",
            ALICE,
            json!({"objective": "keep writing", "budgets": {"max_iterations": 2}}),
        )
        .await;
    let id = run["id"].as_str().unwrap().to_string();
    app.wait_status(&id, &["running"]).await;
    let (s, _) = app
        .post(&format!("/v1/runs/{id}/pause"), ALICE, json!({}))
        .await;
    assert_eq!(s, StatusCode::OK);
    app.wait_status(&id, &["paused"]).await;

    // Act
    let (s, _) = app
        .post(&format!("/v1/runs/{id}/continue"), ALICE, json!({}))
        .await;

    // Assert: the continue's step is delivered (not dropped as a repeat of the first one),
    // so the run works to its iteration budget.
    assert_eq!(s, StatusCode::OK);
    let run = app.wait_status(&id, &["stopped", "completed"]).await;
    assert_eq!(run["iteration"], 2, "{run}");
}

#[tokio::test]
async fn a_run_whose_first_step_arrived_while_paused_goes_on_when_continued() {
    // Arrange: paused while queued; its first step is then received and dropped (no claim).
    let t = platform(LOOP, Arc::new(NoFaults), &[(ALICE, "alice")], 3);
    let budgets = longrun_domain::BudgetsInput {
        max_iterations: Some(2),
        ..Default::default()
    };
    let req = longrun_tests::run_request("keep writing", budgets);
    let id = longrun_http::create_run(t.p(), "alice", req)
        .await
        .unwrap()
        .id;
    let p = t.p();
    longrun_http::api::pause_run(p, "alice", &id).await.unwrap();
    t.running.worker.poll_once().await.unwrap();

    // Act: continued within the queue's dedup window.
    let more = longrun_domain::BudgetsInput::default();
    longrun_http::api::continue_run_with(p, "alice", &id, &more)
        .await
        .unwrap();
    let run = t.drive(&id, 50).await;

    // Assert: the continue's step got through, and the run worked to its budget.
    assert_eq!(run.iteration, 2, "{:?}", run.status);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_poll_on_an_ended_run_answers_at_once_instead_of_waiting() {
    let app = spawn_app(LOOP, 3, true).await;
    let (_, run) = app
        .post("/v1/runs", ALICE, json!({"objective": "keep writing"}))
        .await;
    let id = run["id"].as_str().unwrap().to_string();
    app.wait_iteration(&id, 1).await;
    app.post(&format!("/v1/runs/{id}/cancel"), ALICE, json!({}))
        .await;
    let ended = app.wait_status(&id, &["canceled"]).await;
    let last = ended["event_seq"].as_u64().unwrap();

    // Asked to wait 30 s for events that can never come; a client giving up after 10 s
    // would fail the request.
    let resp = app
        .http
        .get(format!(
            "{}/v1/runs/{id}/events?after={last}&wait=30",
            app.base
        ))
        .bearer_auth(ALICE)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .unwrap();

    assert_eq!(resp.status(), StatusCode::OK);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["events"], json!([]));
    assert_eq!(body["next_after"], last);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_run_continues_only_with_a_raised_budget_and_keeps_its_spend() {
    let app = spawn_app(LOOP, 3, true).await;
    let (_, run) = app
        .post(
            "/v1/runs",
            ALICE,
            json!({"objective": "keep writing", "budgets": {"max_iterations": 2}}),
        )
        .await;
    let id = run["id"].as_str().unwrap().to_string();
    let stopped = app.wait_status(&id, &["stopped"]).await;
    assert_eq!(stopped["stopping_reason"]["type"], "max_iterations");
    let spent = stopped["tokens"].as_u64().unwrap();

    let (s, problem) = app
        .post(&format!("/v1/runs/{id}/continue"), ALICE, json!({}))
        .await;
    assert_eq!(s, StatusCode::CONFLICT);
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("max_iterations")
    );

    let (s, _) = app
        .post(
            &format!("/v1/runs/{id}/continue"),
            ALICE,
            json!({"budgets": {"max_iterations": 4}}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let again = app.wait_status(&id, &["stopped"]).await;
    assert_eq!(again["iteration"], 4);
    assert!(
        again["tokens"].as_u64().unwrap() > spent,
        "spend accumulates, never resets"
    );
}

#[tokio::test]
async fn a_token_budget_stops_the_run_with_a_partial_report() {
    let app = spawn_app(LOOP, 3, true).await;
    let (_, run) = app
        .post(
            "/v1/runs",
            ALICE,
            json!({"objective": "keep writing", "budgets": {"max_tokens": 40}}),
        )
        .await;
    let id = run["id"].as_str().unwrap().to_string();
    let stopped = app.wait_status(&id, &["stopped"]).await;
    assert_eq!(stopped["stopping_reason"]["type"], "budget");
    assert!(
        stopped["stopping_reason"]["detail"]
            .as_str()
            .unwrap()
            .starts_with("max_tokens")
    );
    let (_, report) = app.get(&format!("/v1/runs/{id}/report"), ALICE).await;
    assert_eq!(
        report["metrics"]["total_tokens"], 45,
        "three calls of 15 tokens: the third crossed 40"
    );
    // The run ends in the iteration that spent the budget, not in an empty fourth one.
    assert_eq!(stopped["iteration"], 3);
    let (_, iterations) = app.get(&format!("/v1/runs/{id}/iterations"), ALICE).await;
    let last = iterations["iterations"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["n"], 3);
    assert_eq!(last["created_docs"], json!(["notes/3.md"]));
}

const FINISH_THEN_ANSWER: &str = r#"{"planner": [
  {"content": {"status": {"exit_signal": true, "needs_user_input": false, "progress_summary": "wrote guide.md",
    "remaining_work": [], "completion_evidence": ["guide.md"]},
    "tool_calls": [{"name": "doc_write", "args": {"path": "guide.md", "content": "green, black, oolong"}}]}},
  {"content": {"status": {"exit_signal": true, "needs_user_input": false, "progress_summary": "answered in prices.md",
    "remaining_work": [], "completion_evidence": ["prices.md"]},
    "tool_calls": [{"name": "doc_write", "args": {"path": "prices.md", "content": "sencha is cheapest"}}]}}]}"#;

#[tokio::test]
async fn a_completed_run_asked_a_follow_up_runs_again_with_the_question_and_ends_with_a_new_report()
{
    // Arrange
    let app = spawn_app(FINISH_THEN_ANSWER, 3, true).await;
    let (_, run) = app
        .post("/v1/runs", ALICE, json!({"objective": "a tea field guide"}))
        .await;
    let id = run["id"].as_str().unwrap().to_string();
    app.wait_status(&id, &["completed"]).await;
    let (_, first) = app.get(&format!("/v1/runs/{id}/report"), ALICE).await;

    // Act
    let (s, asked) = app
        .post(
            &format!("/v1/runs/{id}/follow-up"),
            ALICE,
            json!({"question": "Which tea is cheapest?"}),
        )
        .await;
    app.wait_iteration(&id, 2).await;
    let ended = app.wait_status(&id, &["completed"]).await;
    let (_, second) = app.get(&format!("/v1/runs/{id}/report"), ALICE).await;

    // Assert
    assert_eq!(s, StatusCode::OK, "{asked}");
    assert_eq!(asked["status"], "queued");
    assert_eq!(asked["follow_up_question"], "Which tea is cheapest?");
    assert_eq!(ended["iteration"], 2);
    let prompt = app.t.llm.planner_prompt(&id, 2).unwrap();
    assert!(prompt.contains("Which tea is cheapest?"), "{prompt}");
    assert!(prompt.contains("follow_up_question"), "{prompt}");
    assert_eq!(first["metrics"]["iterations"], 1);
    assert_eq!(second["metrics"]["iterations"], 2);
    assert_eq!(second["stopping_reason"]["detail"], "answered in prices.md");
    assert!(second.to_string().contains("prices.md"), "{second}");
    let (_, events) = app.get(&format!("/v1/runs/{id}/events"), ALICE).await;
    let asked_event = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "follow_up_asked")
        .unwrap();
    assert_eq!(asked_event["payload"]["question"], "Which tea is cheapest?");
    assert_eq!(asked_event["payload"]["superseded"]["status"], "completed");
    assert_eq!(
        asked_event["payload"]["superseded"]["stopping_reason"]["detail"],
        "wrote guide.md"
    );
}

#[tokio::test]
async fn a_blank_follow_up_or_one_to_an_active_run_is_a_problem_and_changes_nothing() {
    // Arrange: no worker, so the run stays queued.
    let app = spawn_app(LOOP, 3, false).await;
    let (_, run) = app
        .post("/v1/runs", ALICE, json!({"objective": "tea notes"}))
        .await;
    let id = run["id"].as_str().unwrap().to_string();
    let path = format!("/v1/runs/{id}/follow-up");

    // Act
    let (blank, blank_body, blank_type) = app
        .req(
            reqwest::Method::POST,
            &path,
            Some(ALICE),
            Some(json!({"question": "   "})),
        )
        .await;
    let (active, active_body, active_type) = app
        .req(
            reqwest::Method::POST,
            &path,
            Some(ALICE),
            Some(json!({"question": "and then?"})),
        )
        .await;
    let (others, _) = app.post(&path, BOB, json!({"question": "and then?"})).await;
    let (_, after) = app.get(&format!("/v1/runs/{id}"), ALICE).await;

    // Assert
    assert_eq!(blank, StatusCode::UNPROCESSABLE_ENTITY, "{blank_body}");
    assert_eq!(blank_type, "application/problem+json");
    assert_eq!(active, StatusCode::CONFLICT, "{active_body}");
    assert_eq!(active_type, "application/problem+json");
    assert!(
        active_body["detail"]
            .as_str()
            .unwrap()
            .contains("run is queued"),
        "{active_body}"
    );
    assert_eq!(others, StatusCode::NOT_FOUND);
    assert_eq!(after["status"], "queued");
    assert!(after.get("follow_up_question").is_none());
}

#[tokio::test]
async fn mcp_follow_up_asks_an_ended_run_and_is_a_tool_error_on_an_active_one() {
    // Arrange
    let app = spawn_app(FINISH_THEN_ANSWER, 3, true).await;
    let (_, run) = app
        .post("/v1/runs", ALICE, json!({"objective": "a tea field guide"}))
        .await;
    let id = run["id"].as_str().unwrap().to_string();
    let (_, busy) = app
        .post("/v1/runs", BOB, json!({"objective": "tea notes forever"}))
        .await;
    let busy_id = busy["id"].as_str().unwrap().to_string();
    app.wait_status(&id, &["completed"]).await;
    let call = |run_id: &str, question: &str| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "follow_up",
            "arguments": {"run_id": run_id, "question": question}}})
    };

    // Act
    let (_, asked) = app
        .post("/mcp", ALICE, call(&id, "Which tea is cheapest?"))
        .await;
    let (_, blank) = app.post("/mcp", ALICE, call(&id, " ")).await;
    let (_, foreign) = app.post("/mcp", ALICE, call(&busy_id, "and?")).await;
    let ended = app.wait_status(&id, &["completed"]).await;

    // Assert
    assert_eq!(asked["result"]["isError"], false, "{asked}");
    assert_eq!(
        asked["result"]["structuredContent"]["follow_up_question"],
        "Which tea is cheapest?"
    );
    assert_eq!(blank["result"]["isError"], true, "{blank}");
    assert_eq!(
        foreign["result"]["isError"], true,
        "another user's run: {foreign}"
    );
    let prompt = app.t.llm.planner_prompt(&id, 2).unwrap();
    assert!(prompt.contains("Which tea is cheapest?"), "{prompt}");
    assert_eq!(ended["iteration"], 2);
}

#[tokio::test]
async fn edge_requests_get_problem_json_with_the_right_status() {
    // Arrange
    let app = spawn_app(LOOP, 3, false).await;
    let huge = json!({"objective": "x".repeat(10 * 1024 * 1024)});

    // Act
    let (too_big, body, ctype) = app
        .req(reqwest::Method::POST, "/v1/runs", Some(ALICE), Some(huge))
        .await;
    let (bad_query, qbody, qtype) = app
        .req(reqwest::Method::GET, "/v1/runs?limit=-1", Some(ALICE), None)
        .await;
    let resp = app
        .http
        .delete(format!("{}/v1/runs", app.base))
        .bearer_auth(ALICE)
        .send()
        .await
        .unwrap();

    // Assert
    assert_eq!(too_big, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(ctype, "application/problem+json");
    assert_eq!(body["status"], 413);
    assert_eq!(bad_query, StatusCode::BAD_REQUEST);
    assert_eq!(qtype, "application/problem+json");
    assert!(
        qbody["detail"].as_str().unwrap().contains("limit"),
        "{qbody}"
    );
    assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
    let allow = resp.headers()["allow"].to_str().unwrap().to_string();
    assert!(allow.contains("GET") && allow.contains("POST"), "{allow}");
    assert_eq!(resp.headers()["content-type"], "application/problem+json");
    let problem: Value = resp.json().await.unwrap();
    assert_eq!(problem["status"], 405);
}

#[tokio::test]
async fn the_openapi_document_is_3_1_and_covers_the_routes() {
    let app = spawn_app(LOOP, 3, false).await;
    let (s, doc, _) = app
        .req(reqwest::Method::GET, "/v1/openapi.json", None, None)
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(doc["openapi"], "3.1.0");
    for path in [
        "/v1/runs",
        "/v1/runs/{id}/events",
        "/v1/runs/{id}/respond",
        "/v1/runs/{id}/follow-up",
        "/v1/notifications",
        "/v1/notifications/read",
        "/v1/config",
        "/v1/schedules",
        "/v1/schedules/{id}",
        "/v1/webhooks",
        "/v1/mcp-servers",
        "/v1/mcp-servers/{name}",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path}");
    }
    let create =
        &doc["paths"]["/v1/runs"]["post"]["requestBody"]["content"]["application/json"]["schema"];
    let name = create["$ref"].as_str().unwrap().rsplit('/').next().unwrap();
    assert!(
        doc["components"]["schemas"][name]["properties"]
            .get("objective")
            .is_some()
    );
    // Every $ref resolves inside the document.
    let text = doc.to_string();
    for r in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
        let name = r.split('"').next().unwrap();
        assert!(
            doc["components"]["schemas"].get(name).is_some(),
            "dangling $ref {name}"
        );
    }
}

#[tokio::test]
async fn what_a_client_can_act_on_is_a_conflict_and_a_path_naming_no_document_is_a_404() {
    // Arrange: no worker, so the run stays queued.
    let app = spawn_app(LOOP, 3, false).await;
    let (_, run) = app
        .post("/v1/runs", ALICE, json!({"objective": "tea"}))
        .await;
    let id = run["id"].as_str().unwrap();

    // Act
    let (report, problem) = app.get(&format!("/v1/runs/{id}/report"), ALICE).await;
    let (unknown_tool, tool_problem) = app
        .post(
            "/v1/runs",
            ALICE,
            json!({"objective": "tea", "allowed_tools": ["no_such_tool"]}),
        )
        .await;
    let (escape, _) = app
        .get(&format!("/v1/runs/{id}/docs/a%2F..%2F..%2Fetc"), ALICE)
        .await;
    let (blank, _) = app
        .post(
            &format!("/v1/runs/{id}/respond"),
            ALICE,
            json!({"answer": " \u{1c} "}),
        )
        .await;
    let (wrapping, schedule) = app
        .post(
            "/v1/schedules",
            ALICE,
            json!({"cron": "0 22-2 * * 5-1", "template": {"objective": "night"}}),
        )
        .await;

    // Assert
    assert_eq!(report, StatusCode::CONFLICT, "{problem}");
    assert!(problem["detail"].as_str().unwrap().contains("queued"));
    assert_eq!(unknown_tool, StatusCode::CONFLICT, "{tool_problem}");
    assert_eq!(escape, StatusCode::NOT_FOUND);
    assert_eq!(blank, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(wrapping, StatusCode::CREATED, "{schedule}");
    assert_eq!(schedule["cron"], "0 22-2 * * 5-1");
}

#[tokio::test]
async fn the_served_document_offers_this_deployments_models_and_links_each_create_to_its_uses() {
    // Arrange
    let app = spawn_app(LOOP, 3, false).await;

    // Act
    let (_, doc, _) = app
        .req(reqwest::Method::GET, "/v1/openapi.json", None, None)
        .await;
    let (_, config) = app.get("/v1/config", ALICE).await;

    // Assert: the model is an enum of exactly the models this server runs (or null).
    let template = &doc["components"]["schemas"]["RunTemplate"];
    let mut offered: Vec<Value> = config["models"].as_array().unwrap().clone();
    offered.push(Value::Null);
    assert_eq!(
        template["properties"]["model"]["enum"],
        Value::Array(offered)
    );
    // The cron and URL patterns are the ones the server checks with.
    let cron = &doc["components"]["schemas"]["CreateSchedule"]["properties"]["cron"]["pattern"];
    assert_eq!(cron, longrun_domain::schedule::CRON_PATTERN);
    let url = doc["components"]["schemas"]["Webhook"]["properties"]["url"]["pattern"]
        .as_str()
        .unwrap();
    let url = regex::Regex::new(url).unwrap();
    assert!(url.is_match("https://hooks.example.com:8443/in"));
    assert!(!url.is_match("https://169.254.169.254/latest"));
    // Every link from a create names an operation the document has.
    let mut ids = vec![];
    for item in doc["paths"].as_object().unwrap().values() {
        for op in item.as_object().unwrap().values() {
            ids.push(op["operationId"].as_str().unwrap().to_string());
        }
    }
    let links = &doc["paths"]["/v1/runs"]["post"]["responses"]["201"]["links"];
    assert_eq!(links["GetReport"]["parameters"]["id"], "$response.body#/id");
    let mut linked = 0;
    for (path, method) in [
        ("/v1/runs", "post"),
        ("/v1/schedules", "post"),
        ("/v1/tools", "post"),
        ("/v1/mcp-servers", "post"),
    ] {
        let created = &doc["paths"][path][method]["responses"]["201"];
        for link in created["links"].as_object().unwrap().values() {
            let target = link["operationId"].as_str().unwrap();
            assert!(ids.iter().any(|id| id == target), "{path}: {target}");
            linked += 1;
        }
    }
    assert!(linked >= 12, "{linked} links");
}

#[tokio::test]
async fn a_schedule_starts_one_run_per_occurrence_and_only_its_owner_can_delete_it() {
    // Arrange
    let app = spawn_app(LOOP, 3, false).await;
    let template = json!({"objective": "the hourly digest", "budgets": {"max_iterations": 2}});

    // Act: create, with bad input first.
    let (bad_cron, problem) = app
        .post(
            "/v1/schedules",
            ALICE,
            json!({"cron": "61 * * * *", "template": template}),
        )
        .await;
    let (bad_model, _) = app
        .post(
            "/v1/schedules",
            ALICE,
            json!({"cron": "0 * * * *", "template": {"objective": "x", "model": "nope:nope"}}),
        )
        .await;
    let (created, sched) = app
        .post(
            "/v1/schedules",
            ALICE,
            json!({"cron": "0 * * * *", "template": template}),
        )
        .await;

    // Assert
    assert_eq!(bad_cron, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        problem["detail"].as_str().unwrap().contains("cron"),
        "{problem}"
    );
    assert_eq!(bad_model, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(created, StatusCode::CREATED, "{sched}");
    let now = app.t.clock.now_ms();
    let next_at = sched["next_at"].as_i64().unwrap();
    assert!(next_at > now && next_at <= now + 3_600_000);
    let (_, listed) = app.get("/v1/schedules", ALICE).await;
    assert_eq!(listed["schedules"].as_array().unwrap().len(), 1);
    let (_, bobs) = app.get("/v1/schedules", BOB).await;
    assert_eq!(bobs["schedules"], json!([]));

    // Nothing is due yet; then the hour turns, twice over for two sweeps of one occurrence.
    assert!(
        longrun_http::schedules::start_due(app.t.p(), 10)
            .await
            .unwrap()
            .is_empty()
    );
    app.t.clock.advance(next_at - now);
    let started = longrun_http::schedules::start_due(app.t.p(), 10)
        .await
        .unwrap();
    let again = longrun_http::schedules::start_due(app.t.p(), 10)
        .await
        .unwrap();
    assert_eq!(started.len(), 1);
    assert!(again.is_empty(), "one occurrence starts one run");
    let (_, run) = app.get(&format!("/v1/runs/{}", started[0]), ALICE).await;
    assert_eq!(run["objective"], "the hourly digest");
    assert_eq!(run["budgets"]["max_iterations"], 2);
    let (_, listed) = app.get("/v1/schedules", ALICE).await;
    assert_eq!(listed["schedules"][0]["next_at"], next_at + 3_600_000);
    assert_eq!(listed["schedules"][0]["last_run_id"], started[0].as_str());

    let id = sched["id"].as_str().unwrap();
    let (by_bob, _, _) = app
        .req(
            reqwest::Method::DELETE,
            &format!("/v1/schedules/{id}"),
            Some(BOB),
            None,
        )
        .await;
    let (by_alice, _, _) = app
        .req(
            reqwest::Method::DELETE,
            &format!("/v1/schedules/{id}"),
            Some(ALICE),
            None,
        )
        .await;
    assert_eq!(by_bob, StatusCode::NOT_FOUND);
    assert_eq!(by_alice, StatusCode::NO_CONTENT);
}

#[tokio::test]
async fn webhooks_need_https_and_a_real_secret_and_secrets_are_never_returned() {
    let app = spawn_app(LOOP, 3, false).await;
    let put = |body: Value| {
        app.req(
            reqwest::Method::PUT,
            "/v1/webhooks",
            Some(ALICE),
            Some(body),
        )
    };

    let (plain_http, _, _) =
        put(json!({"webhooks": [{"url": "http://example.com/h", "secret": "0123456789abcdef"}]}))
            .await;
    let (short_secret, _, _) =
        put(json!({"webhooks": [{"url": "https://example.com/h", "secret": "short"}]})).await;
    let (ok, body, _) =
        put(json!({"webhooks": [{"url": "https://example.com/h", "secret": "0123456789abcdef"}]}))
            .await;

    assert_eq!(plain_http, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(short_secret, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(ok, StatusCode::OK);
    assert_eq!(
        body,
        json!({"webhooks": [{"url": "https://example.com/h"}]})
    );
    let (_, got) = app.get("/v1/webhooks", ALICE).await;
    assert!(!got.to_string().contains("0123456789abcdef"));
    let (_, bobs) = app.get("/v1/webhooks", BOB).await;
    assert_eq!(bobs, json!({"webhooks": []}));
}

#[tokio::test]
async fn webhook_urls_the_ssrf_guard_refuses_are_rejected_at_registration() {
    // Arrange
    let app = spawn_app(LOOP, 3, false).await;
    let refused = [
        "https://169.254.169.254/latest/meta-data",
        "https://10.0.0.1/h",
        "https://[::ffff:169.254.169.254]/",
        "https://0x7f.1/h",
        "https://user:pass@example.com/h",
        "https://localhost/h",
        "http://127.0.0.1:8080/h",
        "ftp://example.com/h",
    ];

    for url in refused {
        // Act
        let (status, body, ctype) = app
            .req(
                reqwest::Method::PUT,
                "/v1/webhooks",
                Some(ALICE),
                Some(json!({"webhooks": [{"url": url, "secret": "0123456789abcdef"}]})),
            )
            .await;

        // Assert
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{url}: {body}");
        assert_eq!(ctype, "application/problem+json");
    }
    let (_, got) = app.get("/v1/webhooks", ALICE).await;
    assert_eq!(got, json!({"webhooks": []}), "nothing refused was stored");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_posts_a_signed_webhook_for_each_outcome() {
    // Arrange: a receiver on loopback under the name the deployment trusts.
    let received: Arc<std::sync::Mutex<Vec<(axum::http::HeaderMap, String)>>> = Arc::default();
    let sink = received.clone();
    let receiver = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: axum::http::HeaderMap, body: String| {
            let sink = sink.clone();
            async move {
                sink.lock().unwrap().push((headers, body));
                StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, receiver).await.unwrap() });
    let t = longrun_tests::platform_with(NOTES_SCRIPT, Arc::new(NoFaults), &[], 3, |c| {
        c.fetch.policy.trusted_private = vec![longrun_tests::HOOKS_HOST.into()];
        c.fetch.lookup = Some(longrun_tests::hooks_lookup());
    });
    let secret = "0123456789abcdef-local";
    t.p()
        .store
        .put_webhooks(
            "alice",
            &[longrun_domain::Webhook {
                url: format!("http://{}:{port}/hook", longrun_tests::HOOKS_HOST),
                secret: secret.into(),
            }],
        )
        .await
        .unwrap();
    let id = longrun_http::create_run(t.p(), "alice", notes_request())
        .await
        .unwrap()
        .id;

    // Act
    let run = t.drive(&id, 400).await;
    let outbox = t.running.outbox.clone().unwrap();
    let attempted = outbox.deliver_due().await.unwrap();
    let hooks = received.lock().unwrap().clone();
    let log = outbox_log(&t, &id).await;

    // Assert: the outcome, signed with the owner's secret, with its metrics and delivery id.
    assert_eq!(run.status, longrun_domain::RunStatus::Completed);
    assert_eq!(hooks.len(), 1, "one delivery per outcome");
    let (headers, body) = &hooks[0];
    assert_eq!(
        headers["x-longrun-signature"].to_str().unwrap(),
        longrun_outbound::user_tool::signature(secret, body.as_bytes())
    );
    assert!(headers.contains_key("x-longrun-delivery"));
    let v: Value = serde_json::from_str(body).unwrap();
    assert_eq!(v["run_id"], id);
    assert_eq!(v["status"], "completed");
    assert_eq!(v["metrics"]["iterations"], run.iteration);
    assert_eq!(v["metrics"]["tokens"], run.metrics.tokens());
    assert!(v["metrics"]["duration_ms"].is_u64());
    assert_eq!(attempted, 1);
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].state, longrun_domain::DeliveryState::Delivered);
    assert_eq!(
        headers["x-longrun-delivery"].to_str().unwrap(),
        log[0].id,
        "the delivery id is the one recorded"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_given_up_webhook_delivery_is_listed_on_its_run_with_its_attempts_and_reason() {
    // Arrange: a receiver that fails once (500, retried) and then is gone (410, given up).
    let hits = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let count = hits.clone();
    let receiver = axum::Router::new().route(
        "/hook",
        axum::routing::post(move || {
            let count = count.clone();
            async move {
                match count.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
                    0 => StatusCode::INTERNAL_SERVER_ERROR,
                    _ => StatusCode::GONE,
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, receiver).await.unwrap() });
    let t = longrun_tests::platform_with(
        NOTES_SCRIPT,
        Arc::new(NoFaults),
        &[(ALICE, "alice"), (BOB, "bob")],
        3,
        |c| {
            c.fetch.policy.trusted_private = vec![longrun_tests::HOOKS_HOST.into()];
            c.fetch.lookup = Some(longrun_tests::hooks_lookup());
        },
    );
    let url = format!("http://{}:{port}/hook", longrun_tests::HOOKS_HOST);
    let hook = longrun_domain::Webhook {
        url: url.clone(),
        secret: "0123456789abcdef-local".into(),
    };
    t.p().store.put_webhooks("alice", &[hook]).await.unwrap();
    let id = longrun_http::create_run(t.p(), "alice", notes_request())
        .await
        .unwrap()
        .id;
    t.drive(&id, 400).await;
    let outbox = t.running.outbox.clone().unwrap();
    let app = serve_platform(t).await;

    // Act: the first attempt, then the retry once its wait is over.
    let first = outbox.deliver_due().await.unwrap();
    let (_, pending) = app.get(&format!("/v1/runs/{id}/deliveries"), ALICE).await;
    app.t.clock.advance(60_000);
    let second = outbox.deliver_due().await.unwrap();
    let (status, log) = app.get(&format!("/v1/runs/{id}/deliveries"), ALICE).await;

    // Assert
    assert_eq!((first, second), (1, 1));
    assert_eq!(pending["deliveries"][0]["state"], "pending");
    assert_eq!(
        pending["deliveries"][0]["last_error"],
        "HTTP 500 Internal Server Error"
    );
    assert!(pending["deliveries"][0]["next_attempt_at"].is_i64());
    assert_eq!(status, StatusCode::OK);
    let d = &log["deliveries"].as_array().unwrap()[..];
    assert_eq!(d.len(), 1, "one delivery per outcome and webhook: {log}");
    assert_eq!(d[0]["state"], "given_up");
    assert_eq!(d[0]["attempts"], 2);
    assert_eq!(d[0]["url"], url);
    assert_eq!(d[0]["webhook"], 0);
    assert_eq!(d[0]["last_error"], "HTTP 410 Gone");
    let errors: Vec<&Value> = d[0]["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["error"])
        .collect();
    assert_eq!(
        errors,
        [
            &json!("HTTP 500 Internal Server Error"),
            &json!("HTTP 410 Gone")
        ]
    );
    assert!(
        d[0]["history"][1]["at"].as_i64() > d[0]["history"][0]["at"].as_i64(),
        "each attempt's time"
    );
    assert!(d[0]["next_attempt_at"].is_null());
    assert!(d[0]["settled_at"].is_i64());
    let text = log.to_string();
    assert!(
        !text.contains("signature") && !text.contains("0123456789abcdef"),
        "no secret or signature: {text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_users_run_or_an_unknown_run_has_no_deliveries_to_show() {
    // Arrange
    let app = spawn_app(NOTES_SCRIPT, 3, false).await;
    let (_, run) = app
        .post("/v1/runs", ALICE, json!({"objective": "write notes"}))
        .await;
    let id = run["id"].as_str().unwrap();

    // Act
    let (own, log) = app.get(&format!("/v1/runs/{id}/deliveries"), ALICE).await;
    let (bobs, problem, ctype) = app
        .req(
            reqwest::Method::GET,
            &format!("/v1/runs/{id}/deliveries"),
            Some(BOB),
            None,
        )
        .await;
    let (unknown, _) = app.get("/v1/runs/nope/deliveries", ALICE).await;
    let (anonymous, _, _) = app
        .req(
            reqwest::Method::GET,
            &format!("/v1/runs/{id}/deliveries"),
            None,
            None,
        )
        .await;

    // Assert
    assert_eq!(own, StatusCode::OK);
    assert_eq!(log, json!({"deliveries": []}), "no webhooks, no deliveries");
    assert_eq!(bobs, StatusCode::NOT_FOUND);
    assert_eq!(ctype, "application/problem+json");
    assert_eq!(problem["status"], 404);
    assert_eq!(unknown, StatusCode::NOT_FOUND);
    assert_eq!(anonymous, StatusCode::UNAUTHORIZED);
}

fn notes_request() -> longrun_http::CreateRun {
    longrun_http::CreateRun {
        objective: "write notes".into(),
        completion_criteria: vec![],
        grading: None,
        budgets: Default::default(),
        thresholds: None,
        model: None,
        agent: None,
        models: vec![],
        permission_mode: None,
        allowed_tools: None,
        context: None,
        scope: None,
        project_ids: None,
    }
}

async fn outbox_log(
    t: &longrun_tests::TestPlatform, run_id: &str,
) -> Vec<longrun_domain::WebhookDelivery> {
    use longrun_ports::WebhookOutbox;
    let store = longrun_local::SqliteRunStore::new(t.running.db.clone().unwrap());
    store.deliveries("alice", run_id).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_holds_the_run_after_its_iteration_and_an_edit_reaches_the_next_prompt() {
    // Arrange: a run writing a note per iteration, well under way.
    let app = spawn_app(LOOP, 3, true).await;
    let (_, run) = app
        .post(
            "/v1/runs",
            ALICE,
            json!({"objective": "keep writing tea notes"}),
        )
        .await;
    let id = run["id"].as_str().unwrap().to_string();
    app.wait_iteration(&id, 1).await;

    // Act: pause, then edit while paused.
    let (s, _) = app
        .post(&format!("/v1/runs/{id}/pause"), ALICE, json!({}))
        .await;
    assert_eq!(s, StatusCode::OK);
    let paused = app.wait_status(&id, &["paused"]).await;
    let at = paused["iteration"].as_u64().unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, still) = app.get(&format!("/v1/runs/{id}"), ALICE).await;
    let (s, _, _) = app
        .req(
            reqwest::Method::PATCH,
            &format!("/v1/runs/{id}"),
            Some(ALICE),
            Some(json!({"objective": "write coffee notes instead"})),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let (s, _) = app
        .post(&format!("/v1/runs/{id}/continue"), ALICE, json!({}))
        .await;
    assert_eq!(s, StatusCode::OK);
    app.wait_iteration(&id, at + 1).await;

    // Assert: held where it paused; the edit reached the next planner prompt and the log.
    assert_eq!(still["status"], "paused");
    assert_eq!(
        still["iteration"].as_u64().unwrap(),
        at,
        "no iteration while paused"
    );
    let before = app.t.llm.planner_prompt(&id, at as u32).unwrap();
    let after = app.t.llm.planner_prompt(&id, at as u32 + 1).unwrap();
    assert!(before.contains("keep writing tea notes"));
    assert!(after.contains("write coffee notes instead"), "{after}");
    assert!(after.contains("changed the objective"));
    let (_, events) = app.get(&format!("/v1/runs/{id}/events"), ALICE).await;
    let kinds: Vec<&str> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    let pos = |k: &str| kinds.iter().position(|x| *x == k).unwrap_or(usize::MAX);
    assert!(pos("pause_requested") < pos("run_paused"), "{kinds:?}");
    assert!(pos("run_paused") < pos("run_patched") && pos("run_patched") < pos("run_resumed"));
    let patched = &events["events"].as_array().unwrap()[pos("run_patched")];
    assert_eq!(
        patched["payload"]["changed"]["objective"]["to"],
        "write coffee notes instead"
    );
    let (s, _) = app
        .post(&format!("/v1/runs/{id}/pause"), ALICE, json!({}))
        .await;
    assert_eq!(s, StatusCode::OK, "a resumed run can be paused again");
}

const PLAN_THEN_WRITE: &str = r#"{"planner": [
  {"content": {"status": {"exit_signal": false, "needs_user_input": false, "progress_summary": "planned",
    "remaining_work": ["write the note"]},
    "plan_updates": [{"id": "s1", "title": "write the note", "status": "pending"}],
    "tool_calls": [{"name": "doc_write", "args": {"path": "early.md", "content": "too soon"}}]}},
  {"content": {"status": {"exit_signal": true, "needs_user_input": false, "progress_summary": "wrote note.md",
    "remaining_work": [], "completion_evidence": ["note.md"]},
    "plan_updates": [{"id": "s1", "title": "write the note", "status": "done"}],
    "tool_calls": [{"name": "doc_write", "args": {"path": "note.md", "content": "approved work"}}]}}]}"#;

const TWO_WRITES: &str = r#"{"planner": [
  {"content": {"status": {"exit_signal": false, "needs_user_input": false, "progress_summary": "drafting",
    "remaining_work": ["finish"]},
    "tool_calls": [{"name": "doc_write", "args": {"path": "keep.md", "content": "keep me"}},
                   {"name": "doc_write", "args": {"path": "drop.md", "content": "drop me"}},
                   {"name": "doc_list", "args": {}}]}},
  {"content": {"status": {"exit_signal": true, "needs_user_input": false, "progress_summary": "done",
    "remaining_work": [], "completion_evidence": ["keep.md"]}}}]}"#;

async fn docs_of(app: &App, id: &str) -> Vec<String> {
    let (_, ws) = app.get(&format!("/v1/runs/{id}/workspace"), ALICE).await;
    ws["docs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["path"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_plan_holds_all_work_until_the_plan_is_approved() {
    // Arrange
    let app = spawn_app(PLAN_THEN_WRITE, 3, true).await;
    let (s, run) = app
        .post(
            "/v1/runs",
            ALICE,
            json!({"objective": "write a note", "permission_mode": "approve_plan"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED);
    let id = run["id"].as_str().unwrap().to_string();

    // Act: the first plan waits; then the user approves it.
    let waiting = app.wait_status(&id, &["waiting_on_user"]).await;
    let docs_before = docs_of(&app, &id).await;
    let (s, _) = app
        .post(
            &format!("/v1/runs/{id}/respond"),
            ALICE,
            json!({"approve": true}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let done = app.wait_status(&id, &["completed"]).await;

    // Assert
    let question = waiting["questions"][0].as_str().unwrap();
    assert!(question.starts_with("Approve this plan?"), "{question}");
    assert!(question.contains("- [pending] write the note"));
    assert_eq!(
        waiting["plan"][0]["id"], "s1",
        "the plan is visible while it waits"
    );
    assert!(
        docs_before.is_empty(),
        "nothing ran before approval: {docs_before:?}"
    );
    assert_eq!(done["plan_approved"], true);
    assert_eq!(docs_of(&app, &id).await, vec!["note.md".to_string()]);
    assert!(
        question.contains("The work would start with: doc_write"),
        "{question}"
    );
    let after = app
        .t
        .llm
        .planner_prompt(&id, 2)
        .expect("a second planner call");
    assert!(
        after.contains("The user approved your plan. Nothing of it has run yet"),
        "{after}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_write_holds_each_write_and_a_rejected_one_never_happens() {
    // Arrange
    let app = spawn_app(TWO_WRITES, 3, true).await;
    let (_, run) = app
        .post(
            "/v1/runs",
            ALICE,
            json!({"objective": "draft notes", "permission_mode": "per_write"}),
        )
        .await;
    let id = run["id"].as_str().unwrap().to_string();

    // Act: both writes wait; the user approves one and rejects the other.
    let waiting = app.wait_status(&id, &["waiting_on_user"]).await;
    let docs_before = docs_of(&app, &id).await;
    let (s, _) = app
        .post(
            &format!("/v1/runs/{id}/respond"),
            ALICE,
            json!({"decisions": [
                {"id": "c1.1", "approve": true},
                {"id": "c1.2", "approve": false, "reason": "no drafts to drop"}]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    let done = app.wait_status(&id, &["completed"]).await;

    // Assert
    let pending: Vec<&str> = waiting["pending_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(pending, ["c1.1", "c1.2"], "reads ran, writes were held");
    assert_eq!(waiting["questions"].as_array().unwrap().len(), 2);
    assert!(docs_before.is_empty());
    assert_eq!(docs_of(&app, &id).await, vec!["keep.md".to_string()]);
    let prompt = app.t.llm.planner_prompt(&id, 2).unwrap();
    assert!(
        prompt.contains("rejected by the user: no drafts to drop"),
        "the planner sees the rejection"
    );
    assert_eq!(done["pending_calls"], json!([]));
    let (s, _) = app
        .post(
            &format!("/v1/runs/{id}/respond"),
            ALICE,
            json!({"decisions": [{"id": "c9.9", "approve": true}]}),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "nothing waits on a completed run");
}

#[tokio::test]
async fn the_config_route_offers_the_models_default_budgets_and_limit_a_composer_needs() {
    let app = spawn_app(LOOP, 3, false).await;

    let (s, c) = app.get("/v1/config", ALICE).await;

    assert_eq!(s, StatusCode::OK);
    let models = c["models"].as_array().unwrap();
    assert!(!models.is_empty());
    assert_eq!(c["default_model"], models[0]);
    assert_eq!(c["active_limit"], 3);
    assert_eq!(c["default_budgets"]["max_iterations"], 25);
    assert_eq!(
        c["permission_modes"],
        json!(["autopilot", "approve_plan", "per_write"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_answers_json_rpc_errors_by_code_and_notifications_with_202() {
    // Arrange
    let app = spawn_app(LOOP, 3, false).await;
    let raw = |body: &'static str, origin: Option<&'static str>| {
        let mut r = app
            .http
            .post(format!("{}/mcp", app.base))
            .bearer_auth(ALICE)
            .header("content-type", "application/json")
            .body(body);
        if let Some(o) = origin {
            r = r.header("origin", o);
        }
        r.send()
    };

    // Act
    let garbage: Value = raw("{not json", None).await.unwrap().json().await.unwrap();
    let unknown = app
        .post(
            "/mcp",
            ALICE,
            json!({"jsonrpc": "2.0", "id": 7, "method": "runs/explode"}),
        )
        .await;
    let no_tool = app
        .post(
            "/mcp",
            ALICE,
            json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "teleport"}}),
        )
        .await;
    let notified = raw(
        r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#,
        None,
    )
    .await
    .unwrap()
    .status();
    let batch = app
        .post(
            "/mcp",
            ALICE,
            json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"},
                   {"jsonrpc": "2.0", "method": "notifications/initialized"}]),
        )
        .await;
    let old = app
        .post(
            "/mcp",
            ALICE,
            json!({"jsonrpc": "2.0", "id": 2, "method": "initialize",
                   "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "1"}}}),
        )
        .await;
    let foreign = raw(
        r#"{"jsonrpc": "2.0", "id": 3, "method": "ping"}"#,
        Some("https://evil.example"),
    )
    .await
    .unwrap()
    .status();
    let stream = app.get("/mcp", ALICE).await.0;

    // Assert
    assert_eq!(garbage["error"]["code"], -32700);
    assert_eq!(unknown.1["error"]["code"], -32601);
    assert_eq!(unknown.1["id"], 7);
    assert_eq!(no_tool.1["error"]["code"], -32602);
    assert_eq!(notified, StatusCode::ACCEPTED);
    assert_eq!(batch.1, json!([{"jsonrpc": "2.0", "id": 1, "result": {}}]));
    assert_eq!(old.1["result"]["protocolVersion"], "2024-11-05");
    assert_eq!(old.1["result"]["serverInfo"]["name"], "longrun");
    assert_eq!(
        foreign,
        StatusCode::FORBIDDEN,
        "a page on another origin is refused"
    );
    assert_eq!(stream, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_integer_sent_as_a_whole_float_is_accepted_and_a_fraction_is_refused() {
    // Arrange
    let app = spawn_app(LOOP, 3, false).await;

    // Act: JSON Schema counts 2.0 as an integer, so generated clients may send it.
    let whole = app
        .post(
            "/v1/runs",
            ALICE,
            json!({"objective": "x", "budgets": {"max_iterations": 2.0, "max_tool_calls": 188426.0}}),
        )
        .await;
    let fraction = app
        .post(
            "/v1/runs",
            ALICE,
            json!({"objective": "x", "budgets": {"max_iterations": 2.5}}),
        )
        .await;

    // Assert
    assert_eq!(whole.0, StatusCode::CREATED, "{}", whole.1);
    assert_eq!(whole.1["budgets"]["max_iterations"], 2);
    assert_eq!(whole.1["budgets"]["max_tool_calls"], 188426);
    assert_eq!(fraction.0, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        fraction.1["detail"]
            .as_str()
            .unwrap()
            .contains("budgets.max_iterations"),
        "{}",
        fraction.1
    );
}

/// Iteration 1 claims completion proving only the first criterion; iteration 2 proves both.
const CRITERIA: &str = r#"{"planner": [
  {"content": {"status": {"exit_signal": true, "needs_user_input": false, "progress_summary": "guide written",
    "remaining_work": [], "completion_evidence": ["guide.md"],
    "criteria_evidence": [{"criterion": "c1", "evidence": ["guide.md covers three teas"]}]},
    "tool_calls": [{"name": "doc_write", "args": {"path": "guide.md", "content": "green, black, oolong"}}]}},
  {"content": {"status": {"exit_signal": true, "needs_user_input": false, "progress_summary": "sources added",
    "remaining_work": [], "completion_evidence": ["guide.md", "sources.md"],
    "criteria_evidence": [{"criterion": "c1", "evidence": ["guide.md"]},
                          {"criterion": "cites a source for each", "evidence": ["sources.md"]}]},
    "tool_calls": [{"name": "doc_write", "args": {"path": "sources.md", "content": "three sources"}}]}}]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_with_criteria_completes_only_once_its_claim_proves_every_one() {
    // Arrange
    let app = spawn_app(CRITERIA, 3, true).await;
    let criteria = json!(["covers three teas", "cites a source for each"]);

    // Act
    let (s, run) = app
        .post(
            "/v1/runs",
            ALICE,
            json!({"objective": "a tea guide", "completion_criteria": criteria,
                   "grading": {"text": false}}),
        )
        .await;
    let id = run["id"].as_str().unwrap().to_string();
    let done = app
        .wait_status(&id, &["completed", "stopped", "failed"])
        .await;
    let (_, iterations) = app.get(&format!("/v1/runs/{id}/iterations"), ALICE).await;

    // Assert
    assert_eq!(s, StatusCode::CREATED, "{run}");
    assert_eq!(run["completion_criteria"], criteria);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["iteration"], 2);
    let hints = iterations.to_string();
    assert!(
        hints.contains(r#"criterion c2 (\"cites a source for each\") is not mapped"#),
        "{hints}"
    );
}

#[tokio::test]
async fn criteria_that_are_blank_or_too_many_are_refused_with_the_field_named() {
    let app = spawn_app(LOOP, 3, false).await;
    let many: Vec<String> = (0..21).map(|i| format!("criterion {i}")).collect();
    for (criteria, needle) in [
        (json!(["fine", "  "]), "completion_criteria[1]"),
        (json!(many), "at most 20"),
    ] {
        let (s, problem) = app
            .post(
                "/v1/runs",
                ALICE,
                json!({"objective": "x", "completion_criteria": criteria}),
            )
            .await;

        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{problem}");
        assert!(
            problem["detail"].as_str().unwrap().contains(needle),
            "{needle} not in {problem}"
        );
    }
}

impl App {
    /// A POST carrying `Idempotency-Key: key`: status, content type and body.
    async fn post_keyed(&self, path: &str, key: &str, body: &Value) -> (StatusCode, String, Value) {
        let resp = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(ALICE)
            .header("idempotency-key", key)
            .json(body)
            .send()
            .await
            .unwrap();
        let status = resp.status();
        let ctype = resp
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        (status, ctype, resp.json().await.unwrap())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_with_one_idempotency_key_make_one_run_and_get_one_answer() {
    // Arrange
    let app = Arc::new(spawn_app(LOOP, 3, false).await);
    let body = json!({"objective": "one run, however often it is sent"});

    // Act
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let (app, body) = (app.clone(), body.clone());
            tokio::spawn(async move { app.post_keyed("/v1/runs", "k-parallel", &body).await })
        })
        .collect();
    let mut answers = vec![];
    for t in tasks {
        answers.push(t.await.unwrap());
    }

    // Assert
    let (status, _, first) = &answers[0];
    assert_eq!(*status, StatusCode::CREATED, "{first}");
    assert!(
        answers.iter().all(|a| a == &answers[0]),
        "one answer for all"
    );
    let (_, list) = app.get("/v1/runs", ALICE).await;
    assert_eq!(list["runs"].as_array().unwrap().len(), 1);
    assert_eq!(list["runs"][0]["id"], first["id"]);
    assert_eq!(list["active"], 1);
}

#[tokio::test]
async fn a_create_retried_after_its_response_was_lost_returns_the_run_it_made() {
    // Arrange: the first attempt claimed the key and wrote the run, then its answer was lost
    // (the process died before it stored or sent it).
    let app = spawn_app(LOOP, 3, false).await;
    let body = json!({"objective": "made once"});
    let req: longrun_service::CreateRun = serde_json::from_value(body.clone()).unwrap();
    let p = app.t.p();
    let now = p.clock.now_ms();
    p.store
        .claim_key(&longrun_ports::IdempotencyRecord {
            user_id: "alice".into(),
            key: "k-lost".into(),
            fingerprint: longrun_service::idempotency::request_fingerprint("runs", &req).unwrap(),
            resource_id: "run_lost".into(),
            created_at: now,
            expires_at: now + longrun_ports::IDEMPOTENCY_WINDOW_MS,
            response: None,
        })
        .await
        .unwrap();
    longrun_service::runs::create_run_with_id(p, "alice", req, "run_lost".into())
        .await
        .unwrap();

    // Act
    let retried = app.post_keyed("/v1/runs", "k-lost", &body).await;
    let again = app.post_keyed("/v1/runs", "k-lost", &body).await;

    // Assert
    assert_eq!(retried.0, StatusCode::CREATED, "{}", retried.2);
    assert_eq!(retried.2["id"], "run_lost");
    assert_eq!(again, retried, "the stored first answer, byte for byte");
    let (_, list) = app.get("/v1/runs", ALICE).await;
    assert_eq!(list["runs"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn an_idempotency_key_sent_with_another_body_is_a_409_and_a_malformed_key_a_400() {
    // Arrange
    let app = spawn_app(LOOP, 3, false).await;
    let first = app
        .post_keyed("/v1/runs", "k-reused", &json!({"objective": "first"}))
        .await;

    // Act
    let other_body = app
        .post_keyed("/v1/runs", "k-reused", &json!({"objective": "second"}))
        .await;
    let other_route = app
        .post_keyed(
            "/v1/schedules",
            "k-reused",
            &json!({"cron": "0 9 * * *", "template": {"objective": "first"}}),
        )
        .await;
    let too_long = app
        .post_keyed("/v1/runs", &"k".repeat(256), &json!({"objective": "x"}))
        .await;
    let with_space = app
        .post_keyed("/v1/runs", "two words", &json!({"objective": "x"}))
        .await;

    // Assert
    assert_eq!(first.0, StatusCode::CREATED);
    for (status, ctype, problem) in [&other_body, &other_route] {
        assert_eq!(*status, StatusCode::CONFLICT, "{problem}");
        assert_eq!(ctype, "application/problem+json");
        assert!(problem["detail"].as_str().unwrap().contains("k-reused"));
    }
    for (status, ctype, problem) in [&too_long, &with_space] {
        assert_eq!(*status, StatusCode::BAD_REQUEST, "{problem}");
        assert_eq!(ctype, "application/problem+json");
        assert!(
            problem["detail"]
                .as_str()
                .unwrap()
                .contains("Idempotency-Key")
        );
    }
    let (_, list) = app.get("/v1/runs", ALICE).await;
    assert_eq!(list["runs"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_schedule_and_an_mcp_start_run_sent_twice_under_one_key_are_made_once() {
    // Arrange
    let app = spawn_app(LOOP, 3, false).await;
    let schedule = json!({"cron": "0 9 * * *", "template": {"objective": "daily"}});
    let start = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "start_run", "arguments": {"objective": "via mcp", "idempotency_key": "k-mcp"}}});

    // Act
    let s1 = app.post_keyed("/v1/schedules", "k-sched", &schedule).await;
    let s2 = app.post_keyed("/v1/schedules", "k-sched", &schedule).await;
    let (_, m1) = app.post("/mcp", ALICE, start.clone()).await;
    let (_, m2) = app.post("/mcp", ALICE, start).await;

    // Assert
    assert_eq!(s1.0, StatusCode::CREATED, "{}", s1.2);
    assert_eq!(s2, s1);
    let (_, schedules) = app.get("/v1/schedules", ALICE).await;
    assert_eq!(
        schedules["schedules"].as_array().unwrap().len(),
        1,
        "{schedules}"
    );
    let run = &m1["result"]["structuredContent"];
    assert!(run["id"].as_str().unwrap().starts_with("run_"), "{m1}");
    assert_eq!(m2["result"]["structuredContent"]["id"], run["id"]);
    let (_, list) = app.get("/v1/runs", ALICE).await;
    assert_eq!(list["runs"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn each_hostile_or_out_of_range_input_gets_a_problem_json_answer_and_writes_nothing() {
    // Arrange
    let app = spawn_app(LOOP, 3, false).await;
    let (_, run, _) = app
        .req(
            reqwest::Method::POST,
            "/v1/runs",
            Some(ALICE),
            Some(json!({"objective": "target"})),
        )
        .await;
    let id = run["id"].as_str().unwrap().to_string();
    let steps: Vec<Value> = (0..5000)
        .map(|i| json!({"id": format!("s{i}"), "title": "t", "status": "pending"}))
        .collect();
    let raw = |method: reqwest::Method, path: String, body: &'static str| {
        app.http
            .request(method, format!("{}{path}", app.base))
            .bearer_auth(ALICE)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };

    // Act: (what, status, content type, detail)
    let mut answers = vec![];
    for (what, method, path, body) in [
        (
            "zero-width objective",
            "POST",
            "/v1/runs".to_string(),
            r#"{"objective": "\u200b\u200b\u2060"}"#,
        ),
        (
            "NUL in objective",
            "POST",
            "/v1/runs".to_string(),
            r#"{"objective": "a\u0000b"}"#,
        ),
        (
            "escape in a message",
            "POST",
            format!("/v1/runs/{id}/messages"),
            r#"{"text": "\u001b[2J hi"}"#,
        ),
        (
            "duplicate key",
            "POST",
            "/v1/runs".to_string(),
            r#"{"objective": "a", "objective": "b"}"#,
        ),
        (
            "unknown field in a webhook",
            "PUT",
            "/v1/webhooks".to_string(),
            r#"{"webhooks": [{"url": "https://example.com/h", "secret": "0123456789abcdef", "extra": 1}]}"#,
        ),
    ] {
        let resp = raw(method.parse().unwrap(), path, body).await.unwrap();
        answers.push((
            what,
            resp.status(),
            resp.headers()["content-type"].clone(),
            resp.text().await.unwrap(),
        ));
    }
    let patch = app
        .http
        .patch(format!("{}/v1/runs/{id}", app.base))
        .bearer_auth(ALICE)
        .json(&json!({"plan": steps}))
        .send()
        .await
        .unwrap();
    answers.push((
        "5,000 plan steps",
        patch.status(),
        patch.headers()["content-type"].clone(),
        patch.text().await.unwrap(),
    ));
    for (what, path) in [
        ("limit=0", "/v1/runs?limit=0".to_string()),
        ("limit=201", "/v1/runs?limit=201".to_string()),
        ("inbox limit=201", "/v1/notifications?limit=201".to_string()),
        (
            "events limit=1001",
            format!("/v1/runs/{id}/events?limit=1001"),
        ),
        ("invalid UTF-8 in a path", "/v1/runs/%FF%FE".to_string()),
        ("another method", "/v1/config".to_string()),
    ] {
        let method = if what == "another method" {
            reqwest::Method::DELETE
        } else {
            reqwest::Method::GET
        };
        let resp = app
            .http
            .request(method, format!("{}{path}", app.base))
            .bearer_auth(ALICE)
            .send()
            .await
            .unwrap();
        answers.push((
            what,
            resp.status(),
            resp.headers()["content-type"].clone(),
            resp.text().await.unwrap(),
        ));
    }

    // Assert
    let expected = [
        ("zero-width objective", 422, "objective"),
        ("NUL in objective", 422, "U+0000"),
        ("escape in a message", 422, "U+001B"),
        ("duplicate key", 422, "`objective` appears twice"),
        ("unknown field in a webhook", 422, "extra"),
        ("5,000 plan steps", 422, "at most 50 steps"),
        ("limit=0", 400, "limit must be 1 to 200, got 0"),
        ("limit=201", 400, "limit must be 1 to 200, got 201"),
        ("inbox limit=201", 400, "limit must be 1 to 200"),
        ("events limit=1001", 400, "limit must be 1 to 1000"),
        ("invalid UTF-8 in a path", 400, "UTF-8"),
        ("another method", 405, "method"),
    ];
    assert_eq!(answers.len(), expected.len());
    for ((what, status, ctype, text), (want, code, detail)) in answers.iter().zip(expected) {
        assert_eq!(*what, want);
        assert_eq!(status.as_u16(), code, "{what}: {text}");
        assert_eq!(ctype, "application/problem+json", "{what}");
        let problem: Value = serde_json::from_str(text).unwrap();
        assert_eq!(problem["status"], code, "{what}");
        assert!(
            problem["detail"].as_str().unwrap().contains(detail),
            "{what}: {problem}"
        );
    }
    let (_, list) = app.get("/v1/runs", ALICE).await;
    assert_eq!(
        list["runs"].as_array().unwrap().len(),
        1,
        "only the target run"
    );
    let (_, run) = app.get(&format!("/v1/runs/{id}"), ALICE).await;
    assert!(run["pending_patch"].is_null(), "{run}");
}

#[tokio::test]
async fn the_inbox_pages_by_cursor_through_every_notification_once() {
    // Arrange: five notifications of alice's.
    let app = spawn_app(LOOP, 3, false).await;
    for i in 0..5 {
        app.t
            .p()
            .store
            .put_notification(&longrun_domain::Notification {
                id: format!("n{i}"),
                user_id: "alice".into(),
                run_id: "r".into(),
                status: longrun_domain::RunStatus::Completed,
                title: "t".into(),
                summary: "s".into(),
                link: "http://x".into(),
                at: 1_000 + i,
                read: false,
                metrics: Default::default(),
                questions: vec![],
                message: "m".into(),
                action_url: "http://x".into(),
                data: None,
            })
            .await
            .unwrap();
    }

    // Act
    let mut seen = vec![];
    let mut path = "/v1/notifications?limit=2".to_string();
    let mut pages = 0;
    loop {
        let (status, page) = app.get(&path, ALICE).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        pages += 1;
        seen.extend(
            page["notifications"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n["id"].clone()),
        );
        match page["next_cursor"].as_str() {
            Some(c) => path = format!("/v1/notifications?limit=2&cursor={c}"),
            None => break,
        }
    }
    let (bad, problem) = app.get("/v1/notifications?cursor=nonsense", ALICE).await;

    // Assert
    assert_eq!(seen, ["n4", "n3", "n2", "n1", "n0"]);
    assert_eq!(pages, 3);
    assert_eq!(bad, StatusCode::BAD_REQUEST, "{problem}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_target_or_headers_past_the_api_limits_get_problem_json_414_and_431() {
    // Arrange: targets of exactly the limit and one byte more; headers past theirs.
    let app = spawn_app(LOOP, 3, false).await;
    let path = |len: usize| {
        let prefix = "/v1/runs/";
        format!("{prefix}{}", "r".repeat(len - prefix.len()))
    };
    let max = longrun_http::error::MAX_URI_BYTES;

    // Act
    let (at_limit, _) = app.get(&path(max), ALICE).await;
    let (past, uri_problem, uri_type) = app
        .req(reqwest::Method::GET, &path(max + 1), Some(ALICE), None)
        .await;
    let headers = app
        .http
        .get(format!("{}/v1/runs", app.base))
        .bearer_auth(ALICE)
        .header(
            "x-padding",
            "a".repeat(longrun_http::error::MAX_HEADER_BYTES),
        )
        .send()
        .await
        .unwrap();

    // Assert
    assert_eq!(at_limit, StatusCode::NOT_FOUND, "taken, and no such run");
    assert_eq!(past, StatusCode::URI_TOO_LONG);
    assert_eq!(uri_type, "application/problem+json");
    assert_eq!(
        uri_problem["type"],
        "https://longrun.dev/problems/uri-too-long"
    );
    assert_eq!(
        headers.status(),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
    );
    assert_eq!(
        headers.headers()["content-type"],
        "application/problem+json"
    );
    let problem: Value = headers.json().await.unwrap();
    assert_eq!(problem["status"], 431);
}

#[tokio::test]
async fn a_workspace_search_for_a_control_character_is_a_problem() {
    // Arrange
    let app = spawn_app(LOOP, 3, false).await;
    let (_, run) = app
        .post("/v1/runs", ALICE, json!({"objective": "find things"}))
        .await;
    let id = run["id"].as_str().unwrap();

    // Act
    let (bad, problem) = app
        .get(&format!("/v1/runs/{id}/workspace/search?q=a%10b"), ALICE)
        .await;
    let (good, hits) = app
        .get(&format!("/v1/runs/{id}/workspace/search?q=ab"), ALICE)
        .await;

    // Assert
    assert_eq!(bad, StatusCode::BAD_REQUEST, "{problem}");
    assert!(
        problem["detail"].as_str().unwrap().contains("control"),
        "{problem}"
    );
    assert_eq!(good, StatusCode::OK);
    assert_eq!(hits["hits"], json!([]));
}

#[tokio::test]
async fn an_sse_stream_opened_on_a_waiting_run_delivers_the_events_after_an_answer() {
    // Arrange: the run waits on the user; a stream is opened on it and reads its backlog.
    let app = spawn_app(ASK_THEN_FINISH, 3, true).await;
    let (_, run) = app
        .post("/v1/runs", ALICE, json!({"objective": "pick a tea"}))
        .await;
    let id = run["id"].as_str().unwrap().to_string();
    app.wait_status(&id, &["waiting_on_user"]).await;
    let mut stream = app
        .http
        .get(format!("{}/v1/runs/{id}/stream", app.base))
        .bearer_auth(ALICE)
        .send()
        .await
        .unwrap();
    let mut seen = String::new();
    while !seen.contains("event: run_waiting") {
        let chunk = tokio::time::timeout(Duration::from_secs(10), stream.chunk())
            .await
            .expect("the backlog comes at once")
            .unwrap()
            .expect("the stream is open");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }

    // Act
    let (s, _) = app
        .post(
            &format!("/v1/runs/{id}/respond"),
            ALICE,
            json!({"answer": "green"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK);

    // Assert: the same stream goes on with the answer and the iteration it wakes, and ends
    // only once the run has.
    let read = async {
        while let Some(chunk) = stream.chunk().await.unwrap() {
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
    };
    tokio::time::timeout(Duration::from_secs(20), read)
        .await
        .expect("the stream ends once the run has");
    let after = seen.split("event: run_waiting").nth(1).unwrap();
    assert!(after.contains("event: user_responded"), "{seen}");
    assert!(after.contains("event: run_completed"), "{seen}");
}
