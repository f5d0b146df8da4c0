//! A run's event log on the wire: a page by long-poll (`GET /v1/runs/{id}/events`) or every
//! event as it comes (`GET /v1/runs/{id}/stream`, server-sent events resumable by seq).

use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::Stream;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{User, in_range, owned};
use crate::error::{ApiError, ApiQuery};
use longrun_service::Platform;
use longrun_service::reads;

#[derive(Debug, Deserialize)]
pub(super) struct EventsQuery {
    after: Option<u64>,
    wait: Option<u64>,
    limit: Option<usize>,
}

const POLL: Duration = Duration::from_millis(100);

/// Set by the server when it begins to shut down: a long-poll answers with what it has and an
/// event stream ends, so a client gets an answer (and reconnects to the next process) instead of
/// a dropped connection. A router served without it never drains.
#[derive(Clone)]
pub struct Draining(pub tokio::sync::watch::Receiver<bool>);

impl Draining {
    /// Waits `d`; true when the server began draining meanwhile (or had already).
    pub(crate) async fn sleep(this: &Option<axum::Extension<Draining>>, d: Duration) -> bool {
        let Some(axum::Extension(Draining(rx))) = this else {
            tokio::time::sleep(d).await;
            return false;
        };
        let mut rx = rx.clone();
        if *rx.borrow() {
            return true;
        }
        tokio::select! {
            () = tokio::time::sleep(d) => *rx.borrow(),
            changed = rx.changed() => changed.is_ok(),
        }
    }
}

pub(super) async fn events(
    State(p): State<Platform>, user: User, Path(id): Path<String>,
    draining: Option<axum::Extension<Draining>>, ApiQuery(q): ApiQuery<EventsQuery>,
) -> Result<Json<Value>, ApiError> {
    let run = owned(&p, &user, &id).await?;
    let after = q.after.unwrap_or(0);
    let limit = in_range("limit", q.limit, 100, 1, 1000)?;
    // An ended run logs nothing more: there is nothing to wait for.
    let wait = if run.status.is_ended() {
        0
    } else {
        q.wait.unwrap_or(0).min(30)
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(wait);
    loop {
        let events = reads::events(&p, &run, after, limit).await?;
        if !events.is_empty() || tokio::time::Instant::now() >= deadline {
            let next_after = events.last().map_or(after, |e| e.seq);
            return Ok(Json(json!({"events": events, "next_after": next_after})));
        }
        if Draining::sleep(&draining, POLL).await {
            // Nothing new before the shutdown: the client polls again, at the next process.
            return Ok(Json(json!({"events": [], "next_after": after})));
        }
    }
}

pub(super) async fn stream(
    State(p): State<Platform>, user: User, Path(id): Path<String>, headers: HeaderMap,
    draining: Option<axum::Extension<Draining>>, ApiQuery(q): ApiQuery<EventsQuery>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let run = owned(&p, &user, &id).await?;
    // Checked like the long-poll's, though the stream sends every event as it comes.
    in_range("limit", q.limit, 100, 1, 1000)?;
    // A reconnecting EventSource resumes from the last seq it saw.
    let start = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .or(q.after)
        .unwrap_or(0);
    let s = futures_util::stream::unfold(
        (p, run, start, false, draining),
        |(p, run, after, done, draining)| async move {
            if done {
                return None;
            }
            loop {
                let events = match reads::events(&p, &run, after, 100).await {
                    Ok(e) => e,
                    Err(_) => return None,
                };
                if let Some(last) = events.last().map(|e| e.seq) {
                    let items: Vec<Result<SseEvent, Infallible>> = events
                        .iter()
                        .map(|e| {
                            Ok(SseEvent::default()
                                .id(e.seq.to_string())
                                .event(
                                    serde_json::to_value(e.kind)
                                        .ok()
                                        .and_then(|v| v.as_str().map(str::to_string))
                                        .unwrap_or_default(),
                                )
                                .data(serde_json::to_string(e).unwrap_or_default()))
                        })
                        .collect();
                    return Some((
                        futures_util::stream::iter(items),
                        (p, run, last, false, draining),
                    ));
                }
                // A waiting run is not settled: an answer, a message or its children's end
                // brings more events, and the stream delivers them as they come.
                let settled = match reads::refresh(&p, &run).await {
                    Ok(Some(r)) => r.status.is_ended(),
                    _ => true,
                };
                // Ends the stream cleanly at a shutdown: the EventSource reconnects with its
                // Last-Event-ID to the next process.
                if settled || Draining::sleep(&draining, POLL).await {
                    return Some((
                        futures_util::stream::iter(vec![]),
                        (p, run, after, true, draining),
                    ));
                }
            }
        },
    );
    Ok(Sse::new(futures_util::StreamExt::flatten(s)).keep_alive(KeepAlive::default()))
}
