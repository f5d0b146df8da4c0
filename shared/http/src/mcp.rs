//! `POST /mcp`: longrun as a Model Context Protocol server (streamable HTTP transport, JSON-RPC
//! 2.0, stateless: every request is answered with one JSON body), so an agent can hand a long
//! task to longrun and come back for its report. Same bearer auth and ownership as `/v1`; the
//! tools call the same functions as the routes.

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use longrun_domain::change;
use longrun_domain::run::RunStatus;
use schemars::generate::SchemaSettings;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::{self, CreateRun, User};
use crate::error::ApiError;
use crate::platform::Platform;
use longrun_service::idempotency::{MAX_KEY_LEN, create_run_once};
use longrun_service::reads;

/// Protocol revisions this server speaks, newest first; a client asking for another gets the newest.
const PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;
const INTERNAL_ERROR: i64 = -32603;

/// Reports and docs are served as resources under this scheme.
const SCHEME: &str = "longrun://runs/";

pub async fn post_mcp(
    State(p): State<Platform>, user: User, headers: HeaderMap, body: Bytes,
) -> Response {
    if !same_origin(&headers) {
        return ApiError::Forbidden("Origin does not match Host".into()).into_response();
    }
    let message: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return reply(error(Value::Null, PARSE_ERROR, &format!("not JSON: {e}"))),
    };
    match message {
        Value::Array(batch) if !batch.is_empty() => {
            let mut replies = Vec::new();
            for m in batch {
                replies.extend(handle(&p, &user, m).await);
            }
            if replies.is_empty() {
                accepted()
            } else {
                reply(Value::Array(replies))
            }
        }
        m => match handle(&p, &user, m).await {
            Some(r) => reply(r),
            None => accepted(),
        },
    }
}

/// This server pushes nothing unasked, so there is no stream to open, and no session to end.
pub async fn no_stream(_user: User) -> Response {
    let mut res = StatusCode::METHOD_NOT_ALLOWED.into_response();
    res.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST"));
    res
}

/// A browser page on another site must not drive the server (DNS rebinding); clients that are
/// not browsers send no Origin.
fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    let origin_host = origin.split_once("://").map(|(_, h)| h);
    origin_host.is_some() && origin_host == host
}

fn reply(body: Value) -> Response {
    Json(body).into_response()
}

/// Notifications and responses from the client get 202 and no body.
fn accepted() -> Response {
    StatusCode::ACCEPTED.into_response()
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// One JSON-RPC message; `None` for the ones that get no answer.
async fn handle(p: &Platform, user: &User, m: Value) -> Option<Value> {
    let Some(method) = m.get("method").and_then(Value::as_str) else {
        // A client's response to a request we never send, or garbage.
        return (m.get("result").is_none() && m.get("error").is_none())
            .then(|| error(Value::Null, INVALID_REQUEST, "not a JSON-RPC 2.0 request"));
    };
    let id = m.get("id").cloned()?;
    if m.get("jsonrpc") != Some(&json!("2.0")) {
        return Some(error(id, INVALID_REQUEST, "jsonrpc must be \"2.0\""));
    }
    let params = m.get("params").cloned().unwrap_or(json!({}));
    let result = match method {
        "initialize" => Ok(initialize(&params)),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": tools()})),
        "tools/call" => call_tool(p, user, &params).await,
        "resources/list" => list_resources(p, user).await,
        "resources/templates/list" => Ok(json!({"resourceTemplates": [
            {"uriTemplate": format!("{SCHEME}{{run_id}}/report"), "name": "run report",
             "description": "The report of a run that ended or waits on you", "mimeType": "application/json"},
            // `{+path}`: a nested path's `/` is expanded as is (RFC 6570 reserved expansion);
            // a client that percent-encodes it anyway is decoded on read.
            {"uriTemplate": format!("{SCHEME}{{run_id}}/docs/{{+path}}"), "name": "workspace document",
             "description": "A document the run wrote", "mimeType": "text/markdown"},
        ]})),
        "resources/read" => read_resource(p, user, &params).await,
        _ => Err((METHOD_NOT_FOUND, format!("no method `{method}`"))),
    };
    Some(match result {
        Ok(r) => json!({"jsonrpc": "2.0", "id": id, "result": r}),
        Err((code, message)) => error(id, code, &message),
    })
}

fn initialize(params: &Value) -> Value {
    let asked = params.get("protocolVersion").and_then(Value::as_str);
    let version = asked
        .filter(|v| PROTOCOL_VERSIONS.contains(v))
        .unwrap_or(PROTOCOL_VERSIONS[0]);
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {}, "resources": {}},
        "serverInfo": {"name": "longrun", "version": env!("CARGO_PKG_VERSION")},
        "instructions": "longrun runs long agent tasks to completion in the background. \
            start_run returns at once with a run id; poll get_run until its status is \
            completed, failed, stopped, canceled or waiting_on_user, then read get_report. \
            A run waiting on you continues after respond; an ended one answers a follow_up.",
    })
}

fn run_id_schema() -> Value {
    json!({"type": "string", "description": "The run's id (run_…)"})
}

fn tools() -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true);
    let mut create = settings
        .into_generator()
        .into_root_schema_for::<CreateRun>()
        .to_value();
    if let Some(o) = create.as_object_mut() {
        o.remove("$schema");
        o.remove("title");
        if let Some(props) = o.get_mut("properties").and_then(Value::as_object_mut) {
            props.insert(
                "idempotency_key".into(),
                json!({"type": "string", "minLength": 1, "maxLength": MAX_KEY_LEN,
                    "pattern": "^[!-~]+$",
                    "description": "Send the same key when you retry a start_run whose answer \
                        you did not get: it returns the run the first call started instead of \
                        starting another (kept 24 hours)."}),
            );
        }
    }
    let by_id = |extra: Value| {
        let mut props = json!({"run_id": run_id_schema()});
        if let (Some(p), Some(e)) = (props.as_object_mut(), extra.as_object()) {
            p.extend(e.clone());
        }
        props
    };
    let read_only = json!({"readOnlyHint": true, "openWorldHint": false});
    json!([
        {"name": "start_run", "description": "Start a run: an objective the platform works on, \
            one bounded iteration at a time, until it is complete, needs you, or its budgets end. \
            Returns the run at once.",
         "inputSchema": create, "annotations": {"readOnlyHint": false, "idempotentHint": false}},
        {"name": "get_run", "description": "A run's status, iteration, budgets, spend and, when it \
            waits on you, its questions.",
         "inputSchema": {"type": "object", "properties": by_id(json!({})), "required": ["run_id"]},
         "annotations": read_only},
        {"name": "list_runs", "description": "Your runs, newest first, a page at a time: pass \
            the answer's next_cursor back as cursor for the next page (null on the last).",
         "inputSchema": {"type": "object", "properties": {
            "status": {"type": "string", "enum": ["queued", "running", "waiting_on_user",
                "waiting_on_children", "paused", "completed", "failed", "stopped", "canceled"]},
            "limit": {"type": "integer", "minimum": 1, "maximum": 200},
            "cursor": {"type": "string", "description": "next_cursor of the previous page"}}},
         "annotations": read_only},
        {"name": "get_report", "description": "The report of a run that ended or waits on you: \
            outcome, summary, what changed, open questions.",
         "inputSchema": {"type": "object", "properties": by_id(json!({})), "required": ["run_id"]},
         "annotations": read_only},
        {"name": "read_doc", "description": "A document from a run's workspace.",
         "inputSchema": {"type": "object", "properties": by_id(json!({
            "path": {"type": "string", "description": "e.g. notes/summary.md"}})),
            "required": ["run_id", "path"]},
         "annotations": read_only},
        {"name": "respond", "description": "Answer a run that waits on you (and/or approve or \
            reject what it holds for approval); it continues.",
         "inputSchema": {"type": "object", "properties": by_id(json!({
            "answer": {"type": "string"}, "approve": {"type": "boolean"}})),
            "required": ["run_id"]},
         "annotations": {"readOnlyHint": false}},
        {"name": "post_message", "description": "Tell a run that has not ended something (a \
            correction, a new fact, a priority): its next iteration's planner reads it.",
         "inputSchema": {"type": "object", "properties": by_id(json!({
            "text": {"type": "string", "minLength": 1, "maxLength": 4000}})),
            "required": ["run_id", "text"]},
         "annotations": {"readOnlyHint": false}},
        {"name": "follow_up", "description": "Ask a run that ended (completed, stopped or failed) \
            a follow-up question: it runs again on the budgets it has left (raise them with \
            budgets), its planner answers the question, and its next end writes a new report.",
         "inputSchema": {"type": "object", "properties": by_id(json!({
            "question": {"type": "string", "minLength": 1, "maxLength": 4096},
            "budgets": {"type": "object", "description": "Raised limits, as in start_run"}})),
            "required": ["run_id", "question"]},
         "annotations": {"readOnlyHint": false, "idempotentHint": false}},
        {"name": "cancel", "description": "Cancel a run: at once when it is not iterating, before \
            its next model call when it is.",
         "inputSchema": {"type": "object", "properties": by_id(json!({})), "required": ["run_id"]},
         "annotations": {"readOnlyHint": false, "destructiveHint": true, "idempotentHint": true}},
    ])
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ById {
    run_id: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    status: Option<String>,
    limit: Option<usize>,
    cursor: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DocArgs {
    run_id: String,
    path: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MessageArgs {
    run_id: String,
    text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FollowUpArgs {
    run_id: String,
    question: String,
    #[serde(default)]
    budgets: longrun_domain::run::BudgetsInput,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RespondArgs {
    run_id: String,
    #[serde(default)]
    answer: String,
    approve: Option<bool>,
}

type RpcResult = Result<Value, (i64, String)>;

fn args<T: for<'de> Deserialize<'de>>(tool: &str, v: Value) -> Result<T, (i64, String)> {
    serde_json::from_value(v).map_err(|e| (INVALID_PARAMS, format!("{tool}: {e}")))
}

/// `start_run`, once per `idempotency_key` when one is given.
async fn start_run(
    p: &Platform, user: &User, key: Option<Value>, req: CreateRun,
) -> Result<Value, ApiError> {
    match key {
        Some(Value::String(key)) => {
            Ok(create_run_once(p, &user.0, &key, req, |run| api::run_view(p, run)).await?)
        }
        Some(_) => Err(ApiError::BadRequest(
            "idempotency_key must be a string".into(),
        )),
        None => Ok(api::run_view(p, &api::create_run(p, &user.0, req).await?)),
    }
}

async fn call_tool(p: &Platform, user: &User, params: &Value) -> RpcResult {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Err((INVALID_PARAMS, "tools/call needs a tool name".into()));
    };
    let a = params.get("arguments").cloned().unwrap_or(json!({}));
    let outcome = match name {
        "start_run" => {
            let mut a = a;
            let key = a.as_object_mut().and_then(|o| o.remove("idempotency_key"));
            let req: CreateRun = args(name, a)?;
            start_run(p, user, key, req).await
        }
        "get_run" => {
            let a: ById = args(name, a)?;
            api::owned(p, user, &a.run_id)
                .await
                .map(|run| api::run_view(p, &run))
        }
        "list_runs" => {
            let a: ListArgs = args(name, a)?;
            list_runs(p, user, a).await
        }
        "get_report" => {
            let a: ById = args(name, a)?;
            report(p, user, &a.run_id).await
        }
        "read_doc" => {
            let a: DocArgs = args(name, a)?;
            doc(p, user, &a.run_id, &a.path).await
        }
        "respond" => {
            let a: RespondArgs = args(name, a)?;
            respond(p, user, a).await
        }
        "post_message" => {
            let a: MessageArgs = args(name, a)?;
            api::post_message(p, &user.0, &a.run_id, &a.text)
                .await
                .map(|run| api::run_view(p, &run))
                .map_err(ApiError::from)
        }
        "follow_up" => {
            let a: FollowUpArgs = args(name, a)?;
            follow_up(p, user, a).await
        }
        "cancel" => {
            let a: ById = args(name, a)?;
            api::cancel_run(p, &user.0, &a.run_id)
                .await
                .map(|run| api::run_view(p, &run))
                .map_err(ApiError::from)
        }
        _ => return Err((INVALID_PARAMS, format!("no tool `{name}`"))),
    };
    // A failed call is the tool's answer (the model can read it and adapt), not a protocol error.
    Ok(match outcome {
        Ok(v) => json!({
            "content": [{"type": "text", "text": v.to_string()}],
            "structuredContent": v,
            "isError": false,
        }),
        Err(e) => json!({
            "content": [{"type": "text", "text": format!("{}: {e}", e.title())}],
            "isError": true,
        }),
    })
}

async fn follow_up(p: &Platform, user: &User, a: FollowUpArgs) -> Result<Value, ApiError> {
    let run = api::follow_up_run(p, &user.0, &a.run_id, &a.question, &a.budgets).await?;
    Ok(api::run_view(p, &run))
}

async fn list_runs(p: &Platform, user: &User, a: ListArgs) -> Result<Value, ApiError> {
    let status = match a.status.as_deref() {
        None => None,
        Some(s) => Some(
            RunStatus::parse(s).ok_or_else(|| ApiError::BadRequest(format!("no status `{s}`")))?,
        ),
    };
    // The same cursor as `GET /v1/runs`: `{created_at}_{id}` of the page's last run.
    let before = match a.cursor.as_deref() {
        None | Some("") => None,
        Some(c) => Some(
            c.split_once('_')
                .filter(|(at, _)| !at.starts_with('+'))
                .and_then(|(at, id)| Some((at.parse::<i64>().ok()?, id.to_string())))
                .ok_or_else(|| {
                    ApiError::BadRequest("cursor is malformed; pass next_cursor unchanged".into())
                })?,
        ),
    };
    let limit = api::in_range("limit", a.limit, 20, 1, 200)?;
    let query = longrun_ports::RunQuery {
        context: None,
        status,
        before,
        limit,
    };
    let runs = reads::list_runs(p, &user.0, &query).await?.runs;
    let next_cursor = (runs.len() == limit)
        .then(|| runs.last().map(|r| format!("{}_{}", r.created_at, r.id)))
        .flatten();
    let runs: Vec<Value> = runs
        .iter()
        .map(|r| {
            json!({"id": r.id, "objective": r.objective.chars().take(200).collect::<String>(),
                   "status": r.status, "iteration": r.iteration, "created_at": r.created_at,
                   "link": p.follow_up.link(&r.id)})
        })
        .collect();
    Ok(json!({"runs": runs, "next_cursor": next_cursor}))
}

async fn report(p: &Platform, user: &User, id: &str) -> Result<Value, ApiError> {
    let run = api::owned(p, user, id).await?;
    match run.report {
        Some(r) => Ok(serde_json::to_value(r).unwrap_or_default()),
        None => Err(ApiError::NotFound(format!(
            "report for run {id} (the run is {}; reports exist once it ends or waits)",
            run.status
        ))),
    }
}

async fn doc(p: &Platform, user: &User, id: &str, path: &str) -> Result<Value, ApiError> {
    let run = api::owned(p, user, id).await?;
    let d = reads::doc(p, &run, path).await?;
    Ok(serde_json::to_value(d).unwrap_or_default())
}

async fn respond(p: &Platform, user: &User, a: RespondArgs) -> Result<Value, ApiError> {
    let approval = change::Approval {
        approve: a.approve,
        decisions: Vec::new(),
    };
    let run = api::respond_run(p, &user.0, &a.run_id, &a.answer, approval).await?;
    Ok(api::run_view(p, &run))
}

/// Your most recent runs' reports; docs are read by URI (templates).
async fn list_resources(p: &Platform, user: &User) -> RpcResult {
    let query = longrun_ports::RunQuery {
        context: None,
        status: None,
        before: None,
        limit: 50,
    };
    let runs = reads::list_runs(p, &user.0, &query)
        .await
        .map_err(|e| (INTERNAL_ERROR, e.to_string()))?
        .runs;
    let resources: Vec<Value> = runs
        .iter()
        .filter(|r| r.report.is_some())
        .map(|r| {
            json!({"uri": format!("{SCHEME}{}/report", r.id),
                   "name": format!("report of {}", r.id),
                   "title": r.objective.chars().take(80).collect::<String>(),
                   "mimeType": "application/json"})
        })
        .collect();
    Ok(json!({"resources": resources}))
}

async fn read_resource(p: &Platform, user: &User, params: &Value) -> RpcResult {
    let uri = params.get("uri").and_then(Value::as_str).unwrap_or("");
    let Some(rest) = uri.strip_prefix(SCHEME) else {
        return Err((INVALID_PARAMS, format!("unknown resource `{uri}`")));
    };
    let (id, what) = rest.split_once('/').unwrap_or((rest, ""));
    let read = if what == "report" {
        report(p, user, id)
            .await
            .map(|r| ("application/json", r.to_string()))
    } else if let Some(path) = what.strip_prefix("docs/") {
        let Some(path) = percent_decode(path) else {
            return Err((
                INVALID_PARAMS,
                format!("`{uri}` is not valid percent-encoded UTF-8"),
            ));
        };
        doc(p, user, id, &path).await.map(|d| {
            let text = d.get("content").and_then(Value::as_str).unwrap_or("");
            ("text/markdown", text.to_string())
        })
    } else {
        return Err((INVALID_PARAMS, format!("unknown resource `{uri}`")));
    };
    match read {
        Ok((mime, text)) => Ok(json!({"contents": [{"uri": uri, "mimeType": mime, "text": text}]})),
        // The spec's code for a resource that does not exist.
        Err(e) => Err((-32002, format!("{uri}: {e}"))),
    }
}

/// `notes%2Fgreen.md` → `notes/green.md`: what a client's simple template expansion sends for
/// a nested path. `None` for a bad escape or bytes that are not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::percent_decode;

    #[test]
    fn a_percent_encoded_doc_path_is_decoded_and_a_bad_escape_refused() {
        assert_eq!(
            percent_decode("notes%2Fgreen.md").as_deref(),
            Some("notes/green.md")
        );
        assert_eq!(percent_decode("a%20b/c.md").as_deref(), Some("a b/c.md"));
        assert_eq!(percent_decode("plain.md").as_deref(), Some("plain.md"));
        assert_eq!(percent_decode("bad%2"), None);
        assert_eq!(percent_decode("bad%zz"), None);
        assert_eq!(percent_decode("%ff"), None);
    }
}
