//! The HTTP API under `/v1`. Every route but `/healthz` and `/v1/openapi.json` needs a bearer
//! token; another user's run is indistinguishable from a missing one (404).

use std::collections::BTreeMap;

use axum::extract::{DefaultBodyLimit, FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use longrun_domain::Webhook;
use longrun_domain::change;
use longrun_domain::record::MAX_TAG_CHARS;
use longrun_domain::run::{BudgetsInput, PermissionMode, Run, RunPatch, RunStatus};
use longrun_domain::{DocMeta, is_blank};
use longrun_ports::{ContextFilter, RunQuery};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::{ApiError, ApiJson, ApiQuery};
use longrun_service::Platform;
use longrun_service::idempotency::{MAX_KEY_LEN, check_key, create_run_once};
use longrun_service::reads::{self, INBOX};
use longrun_service::registrations;
pub use longrun_service::registrations::MAX_WEBHOOKS;
pub use longrun_service::runs::{
    CreateRun, MAX_ALLOWED_TOOLS, cancel_run, continue_run_with, create_run, create_run_with_id,
    follow_up_run, patch_run_with, pause_run, post_message, prepare_run, respond_run, run_of,
};

mod events;

pub use events::Draining;
use events::{events, stream};

/// The caller, from `Authorization: Bearer <token>`, or from a [`VerifiedUser`] that the
/// hosting layer attached.
pub struct User(pub String);

/// A user identity established outside the router, e.g. from API Gateway's JWT authorizer
/// claims. Only code can attach it (a request extension), never a client.
#[derive(Clone, Debug)]
pub struct VerifiedUser(pub String);

impl FromRequestParts<Platform> for User {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, p: &Platform) -> Result<Self, Self::Rejection> {
        if let Some(VerifiedUser(user)) = parts.extensions.get::<VerifiedUser>() {
            return Ok(User(user.clone()));
        }
        let token = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer_token)
            .ok_or(ApiError::Unauthorized)?;
        p.config
            .tokens
            .user_for(token)
            .map(|u| User(u.to_string()))
            .ok_or(ApiError::Unauthorized)
    }
}

/// The token of an `Authorization: Bearer <token>` header; the scheme is case-insensitive
/// (RFC 9110 §11.1), so `bearer` and `BEARER` are the same.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim_start().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// An answer, an approval, or decisions: at least one.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("anyOf" = [
    {"required": ["answer"], "properties": {"answer": {"pattern": longrun_domain::NOT_BLANK}}},
    {"required": ["approve"], "properties": {"approve": {"type": "boolean"}}},
    {"required": ["decisions"], "properties": {"decisions": {"minItems": 1}}},
]))]
pub struct RespondBody {
    /// The answer to the run's questions (may be blank when approving or deciding).
    #[serde(default)]
    #[schemars(length(max = 4096), regex(pattern = longrun_domain::NO_CONTROLS))]
    pub answer: String,
    /// Approve (true) or reject (false) what waits: the plan under `approve_plan`, every
    /// held write under `per_write` not decided in `decisions`.
    #[serde(default)]
    pub approve: Option<bool>,
    /// Per held write: `{"id": "c3.1", "approve": false, "reason": "…"}`.
    #[serde(default)]
    pub decisions: Vec<change::CallDecision>,
}

/// A message to a run that has not ended; its next iteration's planner reads it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageBody {
    #[schemars(length(min = 1, max = 4000), extend("pattern" = longrun_domain::NOT_BLANK))]
    pub text: String,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContinueBody {
    #[serde(default)]
    pub budgets: BudgetsInput,
}

/// A follow-up question to an ended run (completed, stopped or failed): the run is queued
/// again and its planner answers the question. It runs on the budgets the run has left;
/// `budgets` raises them (needed when none is left).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FollowUpBody {
    #[schemars(length(min = 1, max = 4096), extend("pattern" = longrun_domain::NOT_BLANK))]
    pub question: String,
    #[serde(default)]
    pub budgets: BudgetsInput,
}

pub fn run_view(p: &Platform, run: &Run) -> Value {
    let mut v = serde_json::to_value(run).unwrap_or_default();
    if let Some(obj) = v.as_object_mut() {
        obj.remove("lease");
        obj.remove("grades");
        obj.insert("link".into(), json!(p.follow_up.link(&run.id)));
        obj.insert("tokens".into(), json!(run.metrics.tokens()));
    }
    v
}

pub(crate) async fn owned(p: &Platform, user: &User, id: &str) -> Result<Run, ApiError> {
    Ok(run_of(p, &user.0, id).await?)
}

/// The `Idempotency-Key` header, checked: absent is fine, malformed is a 400.
pub(crate) fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get(IDEMPOTENCY_KEY) else {
        return Ok(None);
    };
    let key = value
        .to_str()
        .ok()
        .filter(|k| check_key(k).is_ok())
        .ok_or_else(|| {
            ApiError::BadRequest(format!(
                "Idempotency-Key must be 1 to {MAX_KEY_LEN} visible ASCII characters (a UUID will do)"
            ))
        })?;
    Ok(Some(key.to_string()))
}

pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// A 201 with the created resource and its `Location`.
pub(crate) fn created(base: &str, view: Value) -> Response {
    let id = view.get("id").and_then(Value::as_str).unwrap_or_default();
    let location = format!("{base}/{id}");
    (
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(view),
    )
        .into_response()
}

async fn post_run(
    State(p): State<Platform>, user: User, headers: HeaderMap, ApiJson(body): ApiJson<CreateRun>,
) -> Result<Response, ApiError> {
    let view = match idempotency_key(&headers)? {
        Some(key) => create_run_once(&p, &user.0, &key, body, |run| run_view(&p, run)).await?,
        None => run_view(&p, &create_run(&p, &user.0, body).await?),
    };
    Ok(created("/v1/runs", view))
}

/// A query value within its documented range, or `default` when absent: out of range is a 400,
/// not a silent clamp, so a client learns its page is not the size it asked for.
pub(crate) fn in_range(
    name: &str, v: Option<usize>, default: usize, min: usize, max: usize,
) -> Result<usize, ApiError> {
    match v {
        None => Ok(default),
        Some(v) if (min..=max).contains(&v) => Ok(v),
        Some(v) => Err(ApiError::BadRequest(format!(
            "{name} must be {min} to {max}, got {v}"
        ))),
    }
}

/// A `cursor` as `next_cursor` gave it: `{at}_{id}` of the last item of the previous page.
fn parse_cursor(cursor: Option<&str>) -> Result<Option<(i64, String)>, ApiError> {
    match cursor {
        None | Some("") => Ok(None),
        Some(c) => c
            .split_once('_')
            .filter(|(at, _)| !at.starts_with('+'))
            .and_then(|(at, id)| Some((at.parse::<i64>().ok()?, id.to_string())))
            .map(Some)
            .ok_or_else(|| {
                ApiError::BadRequest("cursor is malformed; pass back next_cursor unchanged".into())
            }),
    }
}

/// `next_cursor`: the last run's creation time and id.
pub const CURSOR_PATTERN: &str = r"^(-?[0-9]{1,18}_[\s\S]*)?$";

#[derive(Debug, Deserialize)]
struct ListQuery {
    status: Option<String>,
    context_type: Option<String>,
    entity_id: Option<String>,
    limit: Option<usize>,
    cursor: Option<String>,
}

async fn list_runs(
    State(p): State<Platform>, user: User, ApiQuery(q): ApiQuery<ListQuery>,
) -> Result<Json<Value>, ApiError> {
    let status = match q.status.as_deref() {
        None | Some("") => None,
        Some(s) => Some(
            RunStatus::parse(s)
                .ok_or_else(|| ApiError::BadRequest(format!("unknown status `{s}`")))?,
        ),
    };
    let before = parse_cursor(q.cursor.as_deref())?;
    for (name, v, max) in [
        ("context_type", &q.context_type, 64),
        ("entity_id", &q.entity_id, 256),
    ] {
        if let Some(n) = v.as_ref().map(|v| v.chars().count()).filter(|n| *n > max) {
            return Err(ApiError::BadRequest(format!(
                "{name} must be at most {max} characters, got {n}"
            )));
        }
    }
    let blank = |v: Option<String>| v.filter(|v| !v.trim().is_empty());
    let context = match (blank(q.context_type), blank(q.entity_id)) {
        (None, None) => None,
        (kind, entity_id) => Some(ContextFilter { kind, entity_id }),
    };
    let limit = in_range("limit", q.limit, 50, 1, 200)?;
    let reads::RunPage { runs, active } = reads::list_runs(
        &p,
        &user.0,
        &RunQuery {
            context,
            status,
            before,
            limit,
        },
    )
    .await?;
    let next_cursor = (runs.len() == limit)
        .then(|| runs.last().map(|r| format!("{}_{}", r.created_at, r.id)))
        .flatten();
    let summaries: Vec<Value> = runs
        .iter()
        .map(|r| {
            json!({
                "id": r.id, "objective": r.objective.chars().take(200).collect::<String>(),
                "status": r.status, "iteration": r.iteration, "created_at": r.created_at,
                "updated_at": r.updated_at, "tokens": r.metrics.tokens(), "cost_usd": r.metrics.cost_usd,
                "stopping_reason": r.stopping_reason, "link": p.follow_up.link(&r.id),
                "context": r.context, "parent_run_id": r.parent_run_id,
            })
        })
        .collect();
    Ok(Json(
        json!({"runs": summaries, "next_cursor": next_cursor, "active": active, "active_limit": p.config.active_limit}),
    ))
}

async fn get_run(
    State(p): State<Platform>, user: User, Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let run = owned(&p, &user, &id).await?;
    Ok(Json(run_view(&p, &run)))
}

#[derive(Debug, Deserialize)]
struct PageQuery {
    after: Option<u32>,
    limit: Option<usize>,
    last: Option<usize>,
    q: Option<String>,
}

async fn iterations(
    State(p): State<Platform>, user: User, Path(id): Path<String>, ApiQuery(q): ApiQuery<PageQuery>,
) -> Result<Json<Value>, ApiError> {
    let run = owned(&p, &user, &id).await?;
    let limit = in_range("limit", q.limit, 100, 1, 500)?;
    let items = reads::iterations(&p, &run, q.after.unwrap_or(0), limit).await?;
    Ok(Json(json!({"iterations": items})))
}

fn tree(docs: &[DocMeta]) -> Value {
    #[derive(Default)]
    struct Node {
        children: BTreeMap<String, Node>,
        doc: Option<DocMeta>,
    }
    let mut root = Node::default();
    for d in docs {
        let mut node = &mut root;
        for part in d.path.split('/') {
            node = node.children.entry(part.to_string()).or_default();
        }
        node.doc = Some(d.clone());
    }
    fn render(name: &str, path: &str, n: &Node) -> Value {
        let children: Vec<Value> = n
            .children
            .iter()
            .map(|(k, c)| {
                render(
                    k,
                    &if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}/{k}")
                    },
                    c,
                )
            })
            .collect();
        json!({"name": name, "path": path, "doc": n.doc, "children": children})
    }
    render("", "", &root)
}

#[derive(Debug, Deserialize)]
struct WorkspaceQuery {
    tag: Option<String>,
}

async fn workspace(
    State(p): State<Platform>, user: User, Path(id): Path<String>,
    ApiQuery(q): ApiQuery<WorkspaceQuery>,
) -> Result<Json<Value>, ApiError> {
    let run = owned(&p, &user, &id).await?;
    if let Some(n) = q
        .tag
        .as_ref()
        .map(|t| t.chars().count())
        .filter(|n| *n > MAX_TAG_CHARS)
    {
        return Err(ApiError::BadRequest(format!(
            "tag must be at most {MAX_TAG_CHARS} characters, got {n}"
        )));
    }
    let docs = reads::docs(&p, &run, q.tag.as_deref()).await?;
    Ok(Json(json!({"tree": tree(&docs), "docs": docs})))
}

async fn doc(
    State(p): State<Platform>, user: User, Path((id, path)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    // A control character (an encoded NUL, say) is a malformed request, not a missing document.
    if let Some(c) = path.chars().find(|c| c.is_control()) {
        return Err(ApiError::BadRequest(format!(
            "the document path must not contain control characters (found U+{:04X})",
            c as u32
        )));
    }
    let run = owned(&p, &user, &id).await?;
    let d = reads::doc(&p, &run, &path).await?;
    Ok(Json(serde_json::to_value(d).unwrap_or_default()))
}

async fn search(
    State(p): State<Platform>, user: User, Path(id): Path<String>, ApiQuery(q): ApiQuery<PageQuery>,
) -> Result<Json<Value>, ApiError> {
    let run = owned(&p, &user, &id).await?;
    let query = q.q.unwrap_or_default();
    if is_blank(&query) {
        return Err(ApiError::BadRequest("q must not be empty".into()));
    }
    longrun_domain::no_controls("q", &query).map_err(ApiError::BadRequest)?;
    let limit = in_range("limit", q.limit, 20, 1, 100)?;
    let hits = reads::search(&p, &run, &query, limit).await?;
    Ok(Json(json!({"hits": hits})))
}

async fn scratchpad(
    State(p): State<Platform>, user: User, Path(id): Path<String>, ApiQuery(q): ApiQuery<PageQuery>,
) -> Result<Json<Value>, ApiError> {
    let run = owned(&p, &user, &id).await?;
    let last = in_range("last", q.last, 3, 1, 1000)?;
    let entries = reads::scratchpad(&p, &run, last).await?;
    Ok(Json(json!({"entries": entries})))
}

/// One webhook delivery of a run's outcome, as its owner sees it: never the signing secret,
/// the signature or the body.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DeliveryView {
    /// The delivery id, `{run_id}#{iteration}#{status}#{webhook}`, sent as `X-Longrun-Delivery`
    /// and as the body's `id` on every attempt: one per outcome and webhook, the same on every
    /// retry, so receivers can drop repeats.
    pub id: String,
    /// The webhook's place in your list when the outcome was recorded.
    pub webhook: u32,
    /// Where it is POSTed.
    pub url: String,
    /// `pending` (to be attempted again), `delivered`, or `given_up` (refused for good by
    /// the receiver, or out of attempts; `last_error` says why).
    pub state: longrun_domain::DeliveryState,
    /// Attempts made so far.
    pub attempts: u32,
    /// When it was recorded (ms since the epoch).
    pub created_at: i64,
    /// When it is attempted next (ms since the epoch); null once delivered or given up.
    pub next_attempt_at: Option<i64>,
    /// When it was delivered or given up (ms since the epoch); null while pending.
    pub settled_at: Option<i64>,
    /// What the last failed attempt came to (a status code or a connection error).
    pub last_error: Option<String>,
    /// Each attempt, oldest first (the latest 20): when it ended and why it failed.
    pub history: Vec<longrun_domain::AttemptRecord>,
}

impl From<longrun_domain::WebhookDelivery> for DeliveryView {
    fn from(d: longrun_domain::WebhookDelivery) -> Self {
        let pending = d.state == longrun_domain::DeliveryState::Pending;
        DeliveryView {
            id: d.id,
            webhook: d.hook,
            url: d.url,
            state: d.state,
            attempts: d.attempts,
            created_at: d.created_at,
            next_attempt_at: pending.then_some(d.next_at),
            settled_at: (!pending).then_some(d.next_at),
            last_error: d.last_error,
            history: d.history,
        }
    }
}

/// The run's webhook deliveries, oldest first: its delivery log.
async fn deliveries(
    State(p): State<Platform>, user: User, Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let run = owned(&p, &user, &id).await?;
    let log: Vec<DeliveryView> = reads::deliveries(&p, &run)
        .await?
        .into_iter()
        .map(DeliveryView::from)
        .collect();
    Ok(Json(json!({"deliveries": log})))
}

async fn report(
    State(p): State<Platform>, user: User, Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let run = owned(&p, &user, &id).await?;
    match run.report {
        Some(r) => Ok(Json(serde_json::to_value(r).unwrap_or_default())),
        // The run exists; its report does not yet: a state to wait out, not a missing resource.
        None => Err(ApiError::Conflict(format!(
            "run {id} has no report yet: it is {}; a report is written when it ends or waits",
            run.status
        ))),
    }
}

async fn cancel(
    State(p): State<Platform>, user: User, Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let run = cancel_run(&p, &user.0, &id).await?;
    Ok(Json(run_view(&p, &run)))
}

async fn respond(
    State(p): State<Platform>, user: User, Path(id): Path<String>,
    ApiJson(body): ApiJson<RespondBody>,
) -> Result<Json<Value>, ApiError> {
    let approval = change::Approval {
        approve: body.approve,
        decisions: body.decisions,
    };
    let run = respond_run(&p, &user.0, &id, &body.answer, approval).await?;
    Ok(Json(run_view(&p, &run)))
}

async fn message(
    State(p): State<Platform>, user: User, Path(id): Path<String>,
    ApiJson(body): ApiJson<MessageBody>,
) -> Result<Json<Value>, ApiError> {
    let run = post_message(&p, &user.0, &id, &body.text).await?;
    Ok(Json(run_view(&p, &run)))
}

async fn agent(
    State(p): State<Platform>, user: User, Path(id): Path<String>,
) -> Result<Json<longrun_domain::AgentView>, ApiError> {
    let run = owned(&p, &user, &id).await?;
    Ok(Json(longrun_service::runs::agent_view(&p, &run).await?))
}

async fn continue_run(
    State(p): State<Platform>, user: User, Path(id): Path<String>,
    ApiJson(body): ApiJson<ContinueBody>,
) -> Result<Json<Value>, ApiError> {
    let run = continue_run_with(&p, &user.0, &id, &body.budgets).await?;
    Ok(Json(run_view(&p, &run)))
}

async fn follow_up(
    State(p): State<Platform>, user: User, Path(id): Path<String>,
    ApiJson(body): ApiJson<FollowUpBody>,
) -> Result<Json<Value>, ApiError> {
    let run = follow_up_run(&p, &user.0, &id, &body.question, &body.budgets).await?;
    Ok(Json(run_view(&p, &run)))
}

async fn pause(
    State(p): State<Platform>, user: User, Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let run = pause_run(&p, &user.0, &id).await?;
    Ok(Json(run_view(&p, &run)))
}

async fn patch_run(
    State(p): State<Platform>, user: User, Path(id): Path<String>, ApiJson(body): ApiJson<RunPatch>,
) -> Result<Json<Value>, ApiError> {
    let run = patch_run_with(&p, &user.0, &id, body).await?;
    Ok(Json(run_view(&p, &run)))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MarkReadBody {
    /// Ids of your notifications to mark read (at most 200); unknown ids are ignored.
    #[schemars(length(max = 200))]
    pub ids: Vec<String>,
}

async fn mark_read(
    State(p): State<Platform>, user: User, ApiJson(body): ApiJson<MarkReadBody>,
) -> Result<Json<Value>, ApiError> {
    let updated = reads::mark_read(&p, &user.0, &body.ids).await?;
    Ok(Json(json!({"updated": updated})))
}

/// What a client needs to offer choices: the models, default budgets and limits.
async fn server_config(State(p): State<Platform>, _user: User) -> Json<Value> {
    let c = &p.config;
    Json(json!({
        "models": c.models,
        "default_model": c.default_model(),
        "priced_models": c.priced_models,
        "default_budgets": c.default_budgets,
        "active_limit": c.active_limit,
        "permission_modes": [PermissionMode::Autopilot, PermissionMode::ApprovePlan, PermissionMode::PerWrite],
    }))
}

#[derive(Debug, Deserialize)]
struct InboxQuery {
    limit: Option<usize>,
    cursor: Option<String>,
}

async fn notifications(
    State(p): State<Platform>, user: User, ApiQuery(q): ApiQuery<InboxQuery>,
) -> Result<Json<Value>, ApiError> {
    let limit = in_range("limit", q.limit, 50, 1, INBOX)?;
    let before = parse_cursor(q.cursor.as_deref())?;
    let items = reads::notifications(&p, &user.0, before.as_ref(), limit).await?;
    let unread = items.iter().filter(|n| !n.read).count();
    let next_cursor = (items.len() == limit)
        .then(|| items.last().map(|n| format!("{}_{}", n.at, n.id)))
        .flatten();
    Ok(Json(
        json!({"notifications": items, "unread": unread, "next_cursor": next_cursor}),
    ))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhooksBody {
    /// Replaces all of your webhooks. Each outcome is POSTed to every URL with an
    /// `X-Longrun-Signature: sha256=<hex HMAC-SHA256 of the body>` header.
    #[schemars(length(max = 5))]
    pub webhooks: Vec<Webhook>,
}

fn redacted(hooks: &[Webhook]) -> Value {
    json!({"webhooks": hooks.iter().map(|h| json!({"url": h.url})).collect::<Vec<_>>()})
}

async fn put_webhooks(
    State(p): State<Platform>, user: User, ApiJson(body): ApiJson<WebhooksBody>,
) -> Result<Json<Value>, ApiError> {
    registrations::put_webhooks(&p, &user.0, &body.webhooks).await?;
    Ok(Json(redacted(&body.webhooks)))
}

async fn get_webhooks(State(p): State<Platform>, user: User) -> Result<Json<Value>, ApiError> {
    Ok(Json(redacted(&registrations::webhooks(&p, &user.0).await?)))
}

async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

async fn openapi(State(p): State<Platform>) -> Json<Value> {
    let agents = p
        .engine
        .agents
        .as_ref()
        .map(|h| h.agents())
        .unwrap_or_default();
    Json(crate::openapi::for_deployment(&p.config, &agents))
}

async fn fallback() -> ApiError {
    ApiError::NotFound("route".into())
}

/// Body limit: well above the largest valid body, so oversized fields get a 422 that names
/// them rather than a bare 413.
pub const BODY_LIMIT: usize = 1024 * 1024;

pub fn router(p: Platform) -> Router {
    with_head_limits(routes(p).fallback(fallback))
}

/// `app` (its routes and fallback) behind the API's bounds on a request's target and headers.
pub fn with_head_limits(app: Router) -> Router {
    app.layer(axum::middleware::from_fn(crate::error::head_limits))
}

/// Every API route, with no fallback: `router` adds the API's 404, the console its files.
pub fn routes(p: Platform) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route(
            "/mcp",
            post(crate::mcp::post_mcp)
                .get(crate::mcp::no_stream)
                .delete(crate::mcp::no_stream),
        )
        .route("/v1/openapi.json", get(openapi))
        .route("/v1/runs", post(post_run).get(list_runs))
        .route("/v1/runs/{id}", get(get_run).patch(patch_run))
        .route("/v1/runs/{id}/pause", post(pause))
        .route("/v1/runs/{id}/events", get(events))
        .route("/v1/runs/{id}/stream", get(stream))
        .route("/v1/runs/{id}/iterations", get(iterations))
        .route("/v1/runs/{id}/workspace", get(workspace))
        .route("/v1/runs/{id}/workspace/search", get(search))
        .route("/v1/runs/{id}/docs/{*path}", get(doc))
        .route("/v1/runs/{id}/scratchpad", get(scratchpad))
        .route("/v1/runs/{id}/report", get(report))
        .route("/v1/runs/{id}/deliveries", get(deliveries))
        .route("/v1/runs/{id}/cancel", post(cancel))
        .route("/v1/runs/{id}/respond", post(respond))
        .route("/v1/runs/{id}/messages", post(message))
        .route("/v1/runs/{id}/agent", get(agent))
        .route(
            "/v1/runs/{id}/agent/stream",
            get(crate::tasks::run_agent_stream),
        )
        .route("/v1/tasks", get(crate::tasks::get_tasks))
        .route("/v1/tasks/{project}/{task}", get(crate::tasks::get_task))
        .route(
            "/v1/tasks/{project}/{task}/stream",
            get(crate::tasks::task_stream),
        )
        .route("/v1/runs/{id}/continue", post(continue_run))
        .route("/v1/runs/{id}/follow-up", post(follow_up))
        .route("/v1/config", get(server_config))
        .route("/v1/notifications", get(notifications))
        .route("/v1/notifications/read", post(mark_read))
        .route("/v1/webhooks", get(get_webhooks).put(put_webhooks))
        .route(
            "/v1/schedules",
            post(crate::schedules::post_schedule).get(crate::schedules::list_schedules),
        )
        .route(
            "/v1/schedules/{id}",
            axum::routing::delete(crate::schedules::delete_schedule),
        )
        .route(
            "/v1/tools",
            post(crate::tools::register_tool).get(crate::tools::list_tools),
        )
        .route(
            "/v1/tools/{name}",
            axum::routing::delete(crate::tools::delete_tool),
        )
        .route(
            "/v1/mcp-servers",
            post(crate::mcp_servers::register_mcp_server).get(crate::mcp_servers::list_mcp_servers),
        )
        .route(
            "/v1/mcp-servers/{name}",
            axum::routing::delete(crate::mcp_servers::delete_mcp_server),
        )
        .route_layer(axum::middleware::from_fn(crate::error::known_query))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(axum::middleware::map_response(
            crate::error::plain_errors_as_problems,
        ))
        .with_state(p)
}

#[cfg(test)]
mod auth_tests {
    use super::bearer_token;

    #[test]
    fn the_bearer_scheme_is_matched_in_any_case_and_other_schemes_are_not() {
        assert_eq!(bearer_token("Bearer lr_a"), Some("lr_a"));
        assert_eq!(bearer_token("bearer lr_a"), Some("lr_a"));
        assert_eq!(bearer_token("BEARER  lr_a "), Some("lr_a"));
        assert_eq!(bearer_token("Basic lr_a"), None);
        assert_eq!(bearer_token("Bearer "), None);
        assert_eq!(bearer_token("Bearerlr_a"), None);
    }
}
