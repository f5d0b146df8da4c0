//! A provider stand-in for wire tests: canned responses, in order, on a real HTTP server.
#![allow(clippy::unwrap_used, dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use longrun_ports::ChatMessage;
use longrun_ports::{ChatRequest, LlmRole};
use serde_json::Value;

/// (status, headers, body, delay in ms)
pub type Canned = (u16, Vec<(&'static str, &'static str)>, String, u64);

#[derive(Clone)]
pub struct Server {
    /// Responses served in order; the last repeats.
    pub script: Arc<Vec<Canned>>,
    pub hits: Arc<AtomicUsize>,
    pub seen: Arc<std::sync::Mutex<Vec<(HeaderMap, Value)>>>,
}

async fn handler(State(s): State<Server>, headers: HeaderMap, body: String) -> Response {
    let i = s
        .hits
        .fetch_add(1, Ordering::SeqCst)
        .min(s.script.len() - 1);
    s.seen
        .lock()
        .unwrap()
        .push((headers, serde_json::from_str(&body).unwrap_or(Value::Null)));
    let (status, hdrs, body, delay) = s.script[i].clone();
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    let mut resp = (StatusCode::from_u16(status).unwrap(), body).into_response();
    for (k, v) in hdrs {
        resp.headers_mut().insert(k, v.parse().unwrap());
    }
    resp
}

/// Serves `script` on `route` of a free loopback port; returns `http://addr`.
pub async fn serve(route: &str, script: Vec<Canned>) -> (String, Server) {
    let s = Server {
        script: Arc::new(script),
        hits: Arc::default(),
        seen: Arc::default(),
    };
    let app = Router::new()
        .route(route, post(handler))
        .with_state(s.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}"), s)
}

/// A planner call with two system prompts and two user turns: the shape that providers with a
/// separate system prompt (Anthropic, Bedrock) must merge.
pub fn merged_turns_request(model: &str, schema: Option<Value>) -> ChatRequest {
    ChatRequest {
        run_id: "run_1".into(),
        iteration: 2,
        role: LlmRole::Planner,
        model: model.into(),
        messages: vec![
            ChatMessage::system("You plan."),
            ChatMessage::system("Answer with the contract."),
            ChatMessage::user("objective: tea"),
            ChatMessage::user("iteration 2"),
        ],
        json_schema: schema.map(std::sync::Arc::new),
        max_output_tokens: Some(800),
        idempotency_key: "run_1#2#1".into(),
        role_call: 1,
        attempt: 0,
        rotation: vec![],
        deadline_ms: None,
    }
}
