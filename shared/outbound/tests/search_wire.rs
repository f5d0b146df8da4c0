//! `web_search` against canned servers shaped like each provider's API, started by the test.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::any;
use longrun_outbound::search::{SearchArgs, SearchError};
use longrun_outbound::{SearchProvider, SearchSettings, WebSearch};
use longrun_ports::Tool;
use serde_json::{Value, json};

/// A request as the server saw it: headers, query string, JSON body.
type Seen = (HeaderMap, Option<String>, Value);

/// An answer to give: status, extra headers, body.
type Answer = (u16, Vec<(&'static str, &'static str)>, String);

#[derive(Clone, Default)]
struct Canned {
    answers: Arc<Mutex<Vec<Answer>>>,
    seen: Arc<Mutex<Vec<Seen>>>,
}

async fn answer(
    State(c): State<Canned>, headers: HeaderMap, RawQuery(query): RawQuery, body: Bytes,
) -> impl IntoResponse {
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    c.seen.lock().unwrap().push((headers, query, body));
    let (status, headers, text) = {
        let mut answers = c.answers.lock().unwrap();
        if answers.len() > 1 {
            answers.remove(0)
        } else {
            answers[0].clone()
        }
    };
    let mut res = (StatusCode::from_u16(status).unwrap(), text).into_response();
    for (k, v) in headers {
        res.headers_mut().insert(k, v.parse().unwrap());
    }
    res
}

async fn serve(provider: SearchProvider, answers: Vec<Answer>) -> (WebSearch, Canned) {
    let canned = Canned {
        answers: Arc::new(Mutex::new(answers)),
        seen: Arc::default(),
    };
    let app = Router::new()
        .fallback(any(answer))
        .with_state(canned.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let mut settings = SearchSettings::new(provider, "key-for-tests".into());
    settings.base_url = base;
    settings.retry_budget = Duration::from_secs(5);
    (WebSearch::new(settings).unwrap(), canned)
}

fn args(query: &str, recency_days: Option<u32>) -> SearchArgs {
    SearchArgs {
        query: query.into(),
        max_results: Some(2),
        recency_days,
    }
}

const TAVILY: &str = r#"{"query": "green tea", "results": [
  {"title": "Green tea - Wikipedia", "url": "https://en.wikipedia.org/wiki/Green_tea", "content": "Green tea is a type of tea...", "score": 0.9, "published_date": "2025-01-02"},
  {"title": "How to brew", "url": "https://example.com/brew", "content": "Use water at 80 °C.", "score": 0.8},
  {"title": "Third", "url": "https://example.com/3", "content": "x", "score": 0.1}]}"#;

const BRAVE: &str = r#"{"type": "search", "web": {"type": "search", "results": [
  {"title": "Green tea", "url": "https://en.wikipedia.org/wiki/Green_tea", "description": "Green tea is a type of <strong>tea</strong>.", "page_age": "2025-01-02T00:00:00"},
  {"title": "No URL"}]}}"#;

const EXA: &str = r#"{"requestId": "r1", "results": [
  {"id": "https://example.com/brew", "title": "How to brew", "url": "https://example.com/brew", "publishedDate": "2025-03-04T00:00:00.000Z", "text": "Use water at 80 °C."}]}"#;

#[tokio::test]
async fn tavily_is_asked_with_a_bearer_key_and_its_results_are_mapped_and_bounded() {
    // Arrange
    let (search, canned) = serve(SearchProvider::Tavily, vec![(200, vec![], TAVILY.into())]).await;

    // Act
    let hits = search.search(&args("green tea", Some(7))).await.unwrap();

    // Assert
    assert_eq!(hits.len(), 2, "max_results bounds the list");
    assert_eq!(hits[0].url, "https://en.wikipedia.org/wiki/Green_tea");
    assert_eq!(hits[0].published.as_deref(), Some("2025-01-02"));
    assert_eq!(hits[1].snippet, "Use water at 80 °C.");
    let seen = canned.seen.lock().unwrap();
    let (headers, _, body) = &seen[0];
    assert_eq!(headers["authorization"], "Bearer key-for-tests");
    assert_eq!(body["query"], "green tea");
    assert_eq!(body["max_results"], 2);
    assert_eq!(body["days"], 7);
}

#[tokio::test]
async fn brave_is_asked_with_its_token_header_and_freshness() {
    // Arrange
    let (search, canned) = serve(SearchProvider::Brave, vec![(200, vec![], BRAVE.into())]).await;

    // Act
    let hits = search.search(&args("green tea", Some(30))).await.unwrap();

    // Assert
    assert_eq!(hits.len(), 1, "a result without a URL is dropped");
    assert_eq!(hits[0].title, "Green tea");
    let seen = canned.seen.lock().unwrap();
    let (headers, query, _) = &seen[0];
    assert_eq!(headers["x-subscription-token"], "key-for-tests");
    let query = query.as_deref().unwrap();
    assert!(
        query.contains("q=green+tea") || query.contains("q=green%20tea"),
        "{query}"
    );
    assert!(
        query.contains("count=2") && query.contains("freshness=pm"),
        "{query}"
    );
}

#[tokio::test]
async fn exa_is_asked_with_its_key_header_and_a_start_date() {
    // Arrange
    let (search, canned) = serve(SearchProvider::Exa, vec![(200, vec![], EXA.into())]).await;

    // Act
    let hits = search.search(&args("brewing", Some(10))).await.unwrap();

    // Assert
    assert_eq!(hits[0].url, "https://example.com/brew");
    assert_eq!(
        hits[0].published.as_deref(),
        Some("2025-03-04T00:00:00.000Z")
    );
    let seen = canned.seen.lock().unwrap();
    let (headers, _, body) = &seen[0];
    assert_eq!(headers["x-api-key"], "key-for-tests");
    assert_eq!(body["numResults"], 2);
    let since = body["startPublishedDate"].as_str().unwrap();
    assert!(
        since.ends_with("T00:00:00.000Z") && since.len() == 24,
        "{since}"
    );
}

#[tokio::test]
async fn a_refused_key_fails_at_once_without_a_retry() {
    // Arrange
    let (search, canned) = serve(
        SearchProvider::Tavily,
        vec![(401, vec![], r#"{"detail": "bad key"}"#.into())],
    )
    .await;

    // Act
    let err = search.search(&args("tea", None)).await.unwrap_err();

    // Assert
    assert!(matches!(err, SearchError::Auth(401)), "{err}");
    assert_eq!(
        canned.seen.lock().unwrap().len(),
        1,
        "auth is never retried"
    );
}

#[tokio::test]
async fn a_rate_limit_is_retried_after_its_retry_after_and_then_answers() {
    // Arrange
    let (search, canned) = serve(
        SearchProvider::Brave,
        vec![
            (429, vec![("retry-after", "0")], "slow down".into()),
            (503, vec![], "busy".into()),
            (200, vec![], BRAVE.into()),
        ],
    )
    .await;

    // Act
    let hits = search.search(&args("tea", None)).await.unwrap();

    // Assert
    assert_eq!(hits.len(), 1);
    assert_eq!(canned.seen.lock().unwrap().len(), 3);
}

/// The identity of the iteration a tool call belongs to; outbound tools see nothing more.
struct Call;

impl longrun_ports::ToolContext for Call {
    fn run_id(&self) -> &str {
        "run-search"
    }
    fn iteration(&self) -> u32 {
        1
    }
    fn staging(&self) -> &dyn std::any::Any {
        self
    }
}

#[tokio::test]
async fn the_tool_fences_results_as_untrusted_data_and_lists_their_urls() {
    // Arrange
    let (search, _) = serve(SearchProvider::Tavily, vec![(200, vec![], TAVILY.into())]).await;
    let staging = Call;

    // Act
    let out = search
        .call(&staging, json!({"query": "green tea", "max_results": 2}))
        .await
        .unwrap();
    let empty = search.call(&staging, json!({"query": "  "})).await;

    // Assert
    assert_eq!(
        out["urls"],
        json!([
            "https://en.wikipedia.org/wiki/Green_tea",
            "https://example.com/brew"
        ])
    );
    let results = out["results"].as_str().unwrap();
    assert!(results.starts_with("UNTRUSTED web content"), "{results}");
    assert!(results.contains("Use water at 80 °C."));
    assert!(empty.unwrap_err().contains("query"));
}
