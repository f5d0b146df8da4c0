//! `/v1/tasks`: the tasks a terminal started with `longrun task` on this machine, read-only,
//! and the live message bus of those tasks and of agent runs, as server-sent events.

use std::convert::Infallible;
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::Stream;
use longrun_domain::{TaskSummary, TaskView};
use longrun_service::Platform;
use longrun_service::tasks::{BusOf, bus_after, list_tasks, task_view};
use serde::{Deserialize, Serialize};

use crate::api::{Draining, User};
use crate::error::{ApiError, ApiQuery};

/// How often a quiet bus is looked at again.
const BUS_POLL: Duration = Duration::from_millis(500);

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct TaskList {
    pub tasks: Vec<TaskSummary>,
}

pub(crate) async fn get_tasks(
    State(p): State<Platform>, user: User,
) -> Result<Json<TaskList>, ApiError> {
    Ok(Json(TaskList {
        tasks: list_tasks(&p, &user.0).await?,
    }))
}

pub(crate) async fn get_task(
    State(p): State<Platform>, user: User, Path((project, task)): Path<(String, String)>,
) -> Result<Json<TaskView>, ApiError> {
    Ok(Json(task_view(&p, &user.0, &project, &task).await?))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BusQuery {
    after: Option<u64>,
}

pub(crate) async fn task_stream(
    State(p): State<Platform>, user: User, Path((project, task)): Path<(String, String)>,
    headers: HeaderMap, draining: Option<axum::Extension<Draining>>,
    ApiQuery(q): ApiQuery<BusQuery>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    bus_stream(p, user, BusOf::Task { project, task }, headers, q, draining).await
}

pub(crate) async fn run_agent_stream(
    State(p): State<Platform>, user: User, Path(id): Path<String>, headers: HeaderMap,
    draining: Option<axum::Extension<Draining>>, ApiQuery(q): ApiQuery<BusQuery>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    bus_stream(p, user, BusOf::Run(id), headers, q, draining).await
}

/// The bus from a seq on: every message as one event (its seq the SSE id, its type the event
/// name); the stream ends once nothing of the folder runs and every message was sent, or at a
/// shutdown (an EventSource reconnects with Last-Event-ID and misses nothing).
async fn bus_stream(
    p: Platform, user: User, of: BusOf, headers: HeaderMap, q: BusQuery,
    draining: Option<axum::Extension<Draining>>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let start = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .or(q.after)
        .unwrap_or(0);
    let start = i64::try_from(start).unwrap_or(i64::MAX);
    // The first page is read here, so a missing task or run is a 404 rather than an empty stream.
    let first = bus_after(&p, &user.0, &of, start).await?;
    let s = futures_util::stream::unfold(
        (p, user.0, of, start, Some(first), false, draining),
        |(p, user, of, after, page, done, draining)| async move {
            if done {
                return None;
            }
            let mut page = page;
            loop {
                let current = match page.take() {
                    Some(pg) => pg,
                    None => bus_after(&p, &user, &of, after).await.ok()?,
                };
                if let Some(last) = current.messages.last().map(|m| m.seq) {
                    let items: Vec<Result<SseEvent, Infallible>> = current
                        .messages
                        .iter()
                        .map(|m| {
                            Ok(SseEvent::default()
                                .id(m.seq.to_string())
                                .event(m.kind.clone())
                                .data(serde_json::to_string(m).unwrap_or_default()))
                        })
                        .collect();
                    let next = (p, user, of, last, None, false, draining);
                    return Some((futures_util::stream::iter(items), next));
                }
                if !current.live || Draining::sleep(&draining, BUS_POLL).await {
                    let next = (p, user, of, after, None, true, draining);
                    return Some((futures_util::stream::iter(vec![]), next));
                }
            }
        },
    );
    Ok(Sse::new(futures_util::StreamExt::flatten(s)).keep_alive(KeepAlive::default()))
}
