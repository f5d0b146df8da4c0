//! Sources: a page the run fetched is cited by the doc written from it, in the same iteration or
//! the next, and the report lists it with the docs that cite it.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use axum::Router;
use axum::http::header;
use axum::routing::get;
use longrun_domain::run::RunStatus;
use longrun_http::create_run;
use longrun_outbound::StaticLookup;
use longrun_ports::NoFaults;
use longrun_tests::{platform_with, run_request};

/// The "public" site, resolved to loopback by a static table the deployment trusts.
async fn site() -> u16 {
    let app = Router::new().route(
        "/tea",
        get(|| async {
            (
                [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                "<html><head><title>Teas</title></head><body><p>Sencha is steamed.</p></body></html>",
            )
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    port
}

/// Iteration 1 writes a plan, then fetches the page; iteration 2 writes notes from the page
/// (its result is in the planner's scratchpad) and ends.
fn script(url: &str) -> String {
    let status = |exit: bool, evidence: &str| {
        format!(
            r#"{{"exit_signal": {exit}, "needs_user_input": false, "progress_summary": "tea",
                "remaining_work": {}, "completion_evidence": [{evidence}]}}"#,
            if exit { "[]" } else { r#"["notes"]"# }
        )
    };
    format!(
        r#"{{"planner": [
  {{"content": {{"status": {s1}, "tool_calls": [
      {{"name": "doc_write", "args": {{"path": "plan.md", "content": "read about tea"}}}},
      {{"name": "http_fetch", "args": {{"url": "{url}"}}}}]}}}},
  {{"content": {{"status": {s2}, "tool_calls": [
      {{"name": "doc_write", "args": {{"path": "notes/tea.md", "content": "Sencha is steamed."}}}}]}}}}]}}"#,
        s1 = status(false, ""),
        s2 = status(true, r#""notes/tea.md""#),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetched_page_is_carried_to_the_doc_written_from_it_and_to_the_report() {
    // Arrange
    let port = site().await;
    let url = format!("http://site.test:{port}/tea");
    let t = platform_with(
        &script(&url),
        Arc::new(NoFaults),
        &[("tok-alice", "alice")],
        5,
        |c| {
            let ip: IpAddr = "127.0.0.1".parse().unwrap();
            c.fetch.enabled = true;
            c.fetch.policy.trusted_private = vec!["site.test".into()];
            c.fetch.lookup = Some(Arc::new(StaticLookup(HashMap::from([(
                "site.test".to_string(),
                vec![ip],
            )]))));
        },
    );
    let id = create_run(
        t.p(),
        "alice",
        run_request("learn about tea", Default::default()),
    )
    .await
    .unwrap()
    .id;

    // Act
    let run = t.drive(&id, 200).await;

    // Assert: the plan was written before the fetch and cites nothing; the notes cite the page.
    assert_eq!(
        run.status,
        RunStatus::Completed,
        "{:?}",
        run.stopping_reason
    );
    let store = &t.p().store;
    let plan = store.doc(&id, "plan.md").await.unwrap().unwrap();
    assert!(plan.sources.is_empty(), "{:?}", plan.sources);
    let notes = store.doc(&id, "notes/tea.md").await.unwrap().unwrap();
    assert_eq!(notes.sources, vec![url.clone()]);
    let report = run.report.unwrap();
    assert_eq!(report.sources.len(), 1);
    assert_eq!(report.sources[0].source, url);
    assert_eq!(report.sources[0].docs, vec!["notes/tea.md"]);
    assert_eq!(report.what_changed.sources["notes/tea.md"], vec![url]);
    assert!(!report.what_changed.sources.contains_key("plan.md"));
}
