//! OpenAPI 3.1 generated from the code: request and response schemas come from the Rust types
//! (schemars, JSON Schema 2020-12, which 3.1 adopts), paths from one table.

use longrun_domain::OutcomePayload;
use longrun_domain::report::Report;
use longrun_domain::run::RunPatch;
use longrun_domain::{AgentView, DocHit, Notification};
use longrun_domain::{Doc, Event, IterationRecord, PadEntry, Run};
use longrun_service::idempotency::MAX_KEY_LEN;
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Value, json};

use longrun_domain::RunStatus;
use longrun_outbound::FetchPolicy;

use crate::api::CURSOR_PATTERN;
use crate::api::{
    ContinueBody, CreateRun, DeliveryView, FollowUpBody, MarkReadBody, MessageBody, RespondBody,
    WebhooksBody,
};
use crate::config::AppConfig;
use crate::mcp_servers::{McpServerList, McpServerView, RegisterMcpServer};
use crate::schedules::CreateSchedule;
use crate::tools::RegisterTool;
use longrun_domain::Schedule;

struct Op {
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    body: Option<fn(&mut SchemaGenerator) -> Value>,
    ok: u16,
    response: Option<fn(&mut SchemaGenerator) -> Value>,
}

fn schema<T: JsonSchema>(g: &mut SchemaGenerator) -> Value {
    g.subschema_for::<T>().to_value()
}

fn list_of<T: JsonSchema>(key: &'static str) -> impl Fn(&mut SchemaGenerator) -> Value {
    move |g| json!({"type": "object", "properties": {key: {"type": "array", "items": schema::<T>(g)}}})
}

fn events(g: &mut SchemaGenerator) -> Value {
    json!({"type": "object", "properties": {"events": {"type": "array", "items": schema::<Event>(g)}, "next_after": {"type": "integer"}}})
}
fn iterations(g: &mut SchemaGenerator) -> Value {
    list_of::<IterationRecord>("iterations")(g)
}
fn pads(g: &mut SchemaGenerator) -> Value {
    list_of::<PadEntry>("entries")(g)
}
fn hits(g: &mut SchemaGenerator) -> Value {
    list_of::<DocHit>("hits")(g)
}
fn notifications(g: &mut SchemaGenerator) -> Value {
    json!({"type": "object", "required": ["notifications", "unread", "next_cursor"], "properties": {
        "notifications": {"type": "array", "items": schema::<Notification>(g)},
        "unread": {"type": "integer", "minimum": 0, "description": "Unread on this page"},
        "next_cursor": {"type": ["string", "null"], "description": "Pass as `cursor` for the next page; null on the last"}}})
}
fn deliveries(g: &mut SchemaGenerator) -> Value {
    json!({"type": "object", "required": ["deliveries"], "properties": {
        "deliveries": {"type": "array", "items": schema::<DeliveryView>(g),
            "description": "One per outcome and webhook, oldest first"}}})
}
fn updated(_: &mut SchemaGenerator) -> Value {
    json!({"type": "object", "properties": {"updated": {"type": "integer"}}})
}
fn server_config(g: &mut SchemaGenerator) -> Value {
    json!({"type": "object", "properties": {
        "models": {"type": "array", "items": {"type": "string"}},
        "default_model": {"type": "string"},
        "priced_models": {"type": "array", "items": {"type": "string"}},
        "default_budgets": schema::<longrun_domain::Budgets>(g),
        "active_limit": {"type": "integer"},
        "permission_modes": {"type": "array", "items": schema::<longrun_domain::run::PermissionMode>(g)}}})
}
fn schedules(g: &mut SchemaGenerator) -> Value {
    list_of::<Schedule>("schedules")(g)
}
fn webhooks(_: &mut SchemaGenerator) -> Value {
    json!({"type": "object", "properties": {"webhooks": {"type": "array", "items": {"type": "object", "properties": {"url": {"type": "string"}}}}}})
}
/// One row of `GET /v1/runs` (`api::list_runs`): a run's headline, not the whole run.
fn run_summary(g: &mut SchemaGenerator) -> Value {
    let status = schema::<RunStatus>(g);
    let reason = schema::<longrun_domain::StoppingReason>(g);
    let context = schema::<longrun_domain::run::RunContext>(g);
    json!({"type": "object", "description": "One run in a listing (the objective cut to 200 characters)",
        "required": ["id", "objective", "status", "iteration", "created_at", "updated_at", "tokens", "cost_usd", "stopping_reason", "link"],
        "properties": {
            "id": {"type": "string"}, "objective": {"type": "string"}, "status": status,
            "iteration": {"type": "integer", "minimum": 0}, "created_at": {"type": "integer"},
            "updated_at": {"type": "integer"}, "tokens": {"type": "integer", "minimum": 0},
            "cost_usd": {"type": "number"},
            "stopping_reason": {"anyOf": [reason, {"type": "null"}]},
            "link": {"type": "string", "description": "The run's page in the console"},
            "context": {"anyOf": [context, {"type": "null"}]},
            "parent_run_id": {"type": ["string", "null"], "description": "The run that spawned this one, for a child run"}}})
}
fn runs(_: &mut SchemaGenerator) -> Value {
    json!({"type": "object", "required": ["runs", "next_cursor", "active", "active_limit"], "properties": {
        "runs": {"type": "array", "items": {"$ref": "#/components/schemas/RunSummary"}},
        "next_cursor": {"type": ["string", "null"], "description": "Pass as `cursor` for the next page; null on the last"},
        "active": {"type": "integer"}, "active_limit": {"type": "integer"}}})
}

const OPS: &[Op] = &[
    Op {
        method: "post",
        path: "/v1/runs",
        summary: "Start a run",
        body: Some(schema::<CreateRun>),
        ok: 201,
        response: Some(schema::<Run>),
    },
    Op {
        method: "get",
        path: "/v1/runs",
        summary: "List your runs (newest first; ?status=&limit=&cursor=)",
        body: None,
        ok: 200,
        response: Some(runs),
    },
    Op {
        method: "get",
        path: "/v1/runs/{id}",
        summary: "Get a run",
        body: None,
        ok: 200,
        response: Some(schema::<Run>),
    },
    Op {
        method: "get",
        path: "/v1/runs/{id}/events",
        summary: "Events after a seq; ?wait=SECS long-polls",
        body: None,
        ok: 200,
        response: Some(events),
    },
    Op {
        method: "get",
        path: "/v1/runs/{id}/stream",
        summary: "Events as server-sent events; resumes from Last-Event-ID",
        body: None,
        ok: 200,
        response: None,
    },
    Op {
        method: "get",
        path: "/v1/runs/{id}/iterations",
        summary: "Committed iterations",
        body: None,
        ok: 200,
        response: Some(iterations),
    },
    Op {
        method: "get",
        path: "/v1/runs/{id}/workspace",
        summary: "Workspace tree",
        body: None,
        ok: 200,
        response: None,
    },
    Op {
        method: "get",
        path: "/v1/runs/{id}/workspace/search",
        summary: "Search workspace documents (?q=)",
        body: None,
        ok: 200,
        response: Some(hits),
    },
    Op {
        method: "get",
        path: "/v1/runs/{id}/docs/{path}",
        summary: "One workspace document",
        body: None,
        ok: 200,
        response: Some(schema::<Doc>),
    },
    Op {
        method: "get",
        path: "/v1/runs/{id}/scratchpad",
        summary: "Last scratchpad entries (?last=N)",
        body: None,
        ok: 200,
        response: Some(pads),
    },
    Op {
        method: "get",
        path: "/v1/runs/{id}/report",
        summary: "The run's report",
        body: None,
        ok: 200,
        response: Some(schema::<Report>),
    },
    Op {
        method: "get",
        path: "/v1/runs/{id}/deliveries",
        summary: "The run's webhook deliveries, oldest first: state, attempts, next attempt and last error (never the secret or the signature)",
        body: None,
        ok: 200,
        response: Some(deliveries),
    },
    Op {
        method: "post",
        path: "/v1/runs/{id}/cancel",
        summary: "Cancel a run",
        body: None,
        ok: 200,
        response: Some(schema::<Run>),
    },
    Op {
        method: "post",
        path: "/v1/runs/{id}/respond",
        summary: "Answer a waiting run's questions",
        body: Some(schema::<RespondBody>),
        ok: 200,
        response: Some(schema::<Run>),
    },
    Op {
        method: "post",
        path: "/v1/runs/{id}/messages",
        summary: "Tell a run something: its next iteration's planner reads it (any status but ended)",
        body: Some(schema::<MessageBody>),
        ok: 200,
        response: Some(schema::<Run>),
    },
    Op {
        method: "get",
        path: "/v1/runs/{id}/agent",
        summary: "An agent run's task folder: its agent processes, message bus, TASK_STATE.md, output and live tail (404 for other runs)",
        body: None,
        ok: 200,
        response: Some(schema::<AgentView>),
    },
    Op {
        method: "post",
        path: "/v1/runs/{id}/pause",
        summary: "Pause a run after the iteration in flight (continue resumes it)",
        body: None,
        ok: 200,
        response: Some(schema::<Run>),
    },
    Op {
        method: "patch",
        path: "/v1/runs/{id}",
        summary: "Edit the objective or plan; takes effect at the next iteration",
        body: Some(schema::<RunPatch>),
        ok: 200,
        response: Some(schema::<Run>),
    },
    Op {
        method: "post",
        path: "/v1/runs/{id}/continue",
        summary: "Continue a stopped run with raised budgets, or resume a paused one",
        body: Some(schema::<ContinueBody>),
        ok: 200,
        response: Some(schema::<Run>),
    },
    Op {
        method: "post",
        path: "/v1/runs/{id}/follow-up",
        summary: "Ask an ended run a follow-up question; it runs again and writes a new report",
        body: Some(schema::<FollowUpBody>),
        ok: 200,
        response: Some(schema::<Run>),
    },
    Op {
        method: "get",
        path: "/v1/notifications",
        summary: "Your notification inbox",
        body: None,
        ok: 200,
        response: Some(notifications),
    },
    Op {
        method: "post",
        path: "/v1/notifications/read",
        summary: "Mark notifications of your inbox read",
        body: Some(schema::<MarkReadBody>),
        ok: 200,
        response: Some(updated),
    },
    Op {
        method: "get",
        path: "/v1/config",
        summary: "The models runs may use, the default budgets and the active-run limit",
        body: None,
        ok: 200,
        response: Some(server_config),
    },
    Op {
        method: "get",
        path: "/v1/webhooks",
        summary: "Your webhook URLs (secrets are never returned)",
        body: None,
        ok: 200,
        response: Some(webhooks),
    },
    Op {
        method: "put",
        path: "/v1/webhooks",
        summary: "Replace your webhooks",
        body: Some(schema::<WebhooksBody>),
        ok: 200,
        response: Some(webhooks),
    },
    Op {
        method: "post",
        path: "/v1/tools",
        summary: "Register (or replace) a tool your runs may call",
        body: Some(schema::<RegisterTool>),
        ok: 201,
        response: None,
    },
    Op {
        method: "get",
        path: "/v1/tools",
        summary: "Your registered tools (secrets are never returned)",
        body: None,
        ok: 200,
        response: None,
    },
    Op {
        method: "delete",
        path: "/v1/tools/{name}",
        summary: "Delete a registered tool",
        body: None,
        ok: 204,
        response: None,
    },
    Op {
        method: "post",
        path: "/v1/mcp-servers",
        summary: "Register (or replace) an MCP server whose tools your runs may call",
        body: Some(schema::<RegisterMcpServer>),
        ok: 201,
        response: Some(schema::<McpServerView>),
    },
    Op {
        method: "get",
        path: "/v1/mcp-servers",
        summary: "Your MCP servers (secrets are never returned)",
        body: None,
        ok: 200,
        response: Some(schema::<McpServerList>),
    },
    Op {
        method: "delete",
        path: "/v1/mcp-servers/{name}",
        summary: "Delete an MCP server",
        body: None,
        ok: 204,
        response: None,
    },
    Op {
        method: "post",
        path: "/v1/schedules",
        summary: "Start a run on a cron schedule (UTC)",
        body: Some(schema::<CreateSchedule>),
        ok: 201,
        response: Some(schema::<Schedule>),
    },
    Op {
        method: "get",
        path: "/v1/schedules",
        summary: "Your schedules",
        body: None,
        ok: 200,
        response: Some(schedules),
    },
    Op {
        method: "delete",
        path: "/v1/schedules/{id}",
        summary: "Delete a schedule",
        body: None,
        ok: 204,
        response: None,
    },
    Op {
        method: "get",
        path: "/healthz",
        summary: "Liveness",
        body: None,
        ok: 200,
        response: None,
    },
];

fn int(min: u64, max: u64, description: &str) -> Value {
    json!({"type": "integer", "minimum": min, "maximum": max, "description": description})
}

/// The query parameters an operation reads, with the bounds the server enforces (a value out of
/// range is a 400; `wait` alone is capped, at 30 s).
fn query(method: &str, path: &str) -> Vec<(&'static str, bool, Value)> {
    let limit = |max: u64, d: &str| ("limit", false, int(1, max, d));
    match (method, path) {
        ("get", "/v1/runs") => vec![
            (
                "status",
                false,
                json!({"type": "string", "enum": std::iter::once("").chain(RunStatus::ALL.iter().map(|s| s.as_str())).collect::<Vec<_>>(), "description": "Only runs in this status"}),
            ),
            (
                "context_type",
                false,
                json!({"type": "string", "maxLength": 64, "description": "Only runs whose `context.type` is this"}),
            ),
            (
                "entity_id",
                false,
                json!({"type": "string", "maxLength": 256, "description": "Only runs whose `context.entity_id` is this"}),
            ),
            limit(200, "Page size, 1 to 200 (default 50)"),
            (
                "cursor",
                false,
                json!({"type": "string", "pattern": CURSOR_PATTERN, "description": "`next_cursor` of the previous page, unchanged"}),
            ),
        ],
        ("get", "/v1/runs/{id}/events" | "/v1/runs/{id}/stream") => vec![
            (
                "after",
                false,
                int(0, u64::MAX, "Only events after this seq"),
            ),
            (
                "wait",
                false,
                int(
                    0,
                    u64::MAX,
                    "Long-poll up to this many seconds for an event; more than 30 waits 30",
                ),
            ),
            limit(1000, "At most this many events, 1 to 1000 (default 100)"),
        ],
        ("get", "/v1/runs/{id}/workspace") => vec![(
            "tag",
            false,
            json!({"type": "string", "maxLength": 64, "description": "Only documents with this tag (`doc_write`'s `tags`); the tree lists those alone"}),
        )],
        ("get", "/v1/runs/{id}/iterations") => vec![
            (
                "after",
                false,
                int(0, u32::MAX.into(), "Only iterations after this one"),
            ),
            limit(500, "Page size, 1 to 500 (default 100)"),
        ],
        ("get", "/v1/runs/{id}/workspace/search") => vec![
            (
                "q",
                true,
                json!({"type": "string", "pattern": longrun_domain::NOT_BLANK, "description": "Words to find (not blank)"}),
            ),
            limit(100, "At most this many hits, 1 to 100 (default 20)"),
        ],
        ("get", "/v1/runs/{id}/scratchpad") => vec![(
            "last",
            false,
            int(1, 1000, "The last N entries, 1 to 1000 (default 3)"),
        )],
        ("get", "/v1/notifications") => vec![
            limit(200, "Page size, 1 to 200 (default 50)"),
            (
                "cursor",
                false,
                json!({"type": "string", "pattern": CURSOR_PATTERN, "description": "`next_cursor` of the previous page, unchanged"}),
            ),
        ],
        _ => vec![],
    }
}

/// The headers an operation reads besides `Authorization`: creates take an idempotency key.
fn headers(method: &str, path: &str) -> Vec<Value> {
    match (method, path) {
        ("post", "/v1/runs" | "/v1/schedules") => vec![json!({
            "name": "Idempotency-Key",
            "in": "header",
            "required": false,
            "description": "Makes a retried create safe: a request sent again with the same key \
                and the same body within 24 hours gets the first answer (the same status and \
                body) instead of creating again; the same key with another body is a 409. One \
                key per logical create (a UUID), reused on its retries; kept per user.",
            "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LEN, "pattern": "^[!-~]+$"},
        })],
        _ => vec![],
    }
}

/// What a created resource's id leads to (OpenAPI links), so a client or a fuzzer can follow
/// a create with the operations that use it.
fn links(method: &str, path: &str) -> Option<Value> {
    let id = json!({"id": "$response.body#/id"});
    let to = |op: &str, params: &Value| json!({"operationId": op, "parameters": params});
    match (method, path) {
        ("post", "/v1/runs") => Some(json!({
            "GetRun": to("get_runs_id", &id),
            "GetEvents": to("get_runs_id_events", &id),
            "GetIterations": to("get_runs_id_iterations", &id),
            "GetWorkspace": to("get_runs_id_workspace", &id),
            "GetScratchpad": to("get_runs_id_scratchpad", &id),
            "GetReport": to("get_runs_id_report", &id),
            "CancelRun": to("post_runs_id_cancel", &id),
            "PauseRun": to("post_runs_id_pause", &id),
            "PatchRun": to("patch_runs_id", &id),
        })),
        ("post", "/v1/schedules") => {
            Some(json!({"DeleteSchedule": to("delete_schedules_id", &id)}))
        }
        ("post", "/v1/tools") => Some(json!({
            "DeleteTool": to("delete_tools_name", &json!({"name": "$response.body#/name"})),
        })),
        ("post", "/v1/mcp-servers") => Some(json!({
            "DeleteMcpServer": to("delete_mcp-servers_name", &json!({"name": "$response.body#/name"})),
        })),
        _ => None,
    }
}

/// `get /v1/runs/{id}` → `get_runs_id`.
fn operation_id(method: &str, path: &str) -> String {
    let rest = path.trim_start_matches("/v1").replace(['{', '}'], "");
    let parts: Vec<&str> = rest.split('/').filter(|p| !p.is_empty()).collect();
    format!("{method}_{}", parts.join("_"))
}

/// The document with what only this deployment knows: its models, its agents (none where no
/// process can be started), and the hosts it trusts for tool and webhook URLs.
pub fn for_deployment(config: &AppConfig, agents: &[String]) -> Value {
    let mut doc = build(&config.fetch.policy);
    let schemas = &mut doc["components"]["schemas"];
    let models = &config.models;
    let mut with_null: Vec<Value> = models.iter().map(|m| json!(m)).collect();
    with_null.push(Value::Null);
    let template = &mut schemas["RunTemplate"];
    template["properties"]["model"] =
        json!({"enum": with_null, "description": "`provider:model`; one of this server's models"});
    template["properties"]["models"]["items"] = json!({"enum": models});
    // `model` must also be the first of `models` when both are given.
    let mut same: Vec<Value> = vec![json!({"properties": {"model": {"type": "null"}}})];
    same.extend(models.iter().map(
        |m| json!({"properties": {"model": {"const": m}, "models": {"prefixItems": [{"const": m}]}}}),
    ));
    template["anyOf"] = Value::Array(same);
    let mut agents: Vec<Value> = agents.iter().map(|a| json!(a)).collect();
    agents.push(Value::Null);
    template["properties"]["agent"] = json!({"enum": agents,
        "description": "A coding agent this server runs as the run's iterations, or none; a Lambda deployment runs none"});
    doc
}

/// The document any deployment serves, less its models and trusted hosts.
pub fn document() -> Value {
    build(&FetchPolicy::default())
}

fn build(policy: &FetchPolicy) -> Value {
    let mut g = SchemaSettings::draft2020_12()
        .with(|s| s.definitions_path = "/components/schemas".into())
        .into_generator();
    let problem = json!({"description": "Problem details (RFC 7807)", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}});
    let mut paths = serde_json::Map::new();
    for op in OPS {
        let mut o = json!({"summary": op.summary, "operationId": operation_id(op.method, op.path), "responses": {}});
        let ok = match op.response {
            Some(f) => {
                json!({"description": "OK", "content": {"application/json": {"schema": f(&mut g)}}})
            }
            None => json!({"description": "OK"}),
        };
        o["responses"][op.ok.to_string()] = ok;
        if op.method == "post" && matches!(op.path, "/v1/tools" | "/v1/mcp-servers") {
            o["responses"]["200"] = json!({"description": "Replaced the one of the same name"});
        }
        if let Some(links) = links(op.method, op.path) {
            o["responses"][op.ok.to_string()]["links"] = links;
        }
        for code in ["400", "401", "404", "409", "422", "429"] {
            o["responses"][code] = problem.clone();
        }
        if let Some(f) = op.body {
            o["requestBody"] =
                json!({"required": true, "content": {"application/json": {"schema": f(&mut g)}}});
        }
        if op.path == "/healthz" {
            o["security"] = json!([]);
        }
        let mut params: Vec<Value> = op
            .path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        params.extend(
            query(op.method, op.path)
                .into_iter()
                .map(|(name, required, schema)| json!({"name": name, "in": "query", "required": required, "schema": schema})),
        );
        params.extend(headers(op.method, op.path));
        if !params.is_empty() {
            o["parameters"] = Value::Array(params);
        }
        let entry = paths.entry(op.path).or_insert_with(|| json!({}));
        entry[op.method] = o;
    }
    let summary = run_summary(&mut g);
    let outcome = schema::<OutcomePayload>(&mut g);
    let mut schemas = g.take_definitions(true);
    schemas.insert("RunSummary".into(), summary);
    // schemars writes "anything" as the schema `true`; generators (openapi-python-client)
    // want the equivalent `{}`.
    for s in schemas.values_mut() {
        no_true_schemas(s);
        one_string_enum(s);
    }
    for item in paths.values_mut() {
        no_true_schemas(item);
    }
    let url = json!({"type": "string", "pattern": policy.registrable_url_pattern()});
    for name in ["RegisterTool", "Webhook", "RegisterMcpServer"] {
        if let Some(props) = schemas.get_mut(name).and_then(|t| t.get_mut("properties")) {
            props["url"] = url.clone();
        }
    }
    schemas.insert(
        "Problem".into(),
        json!({"type": "object", "required": ["type", "title", "status", "detail"], "properties": {
            "type": {"type": "string"}, "title": {"type": "string"}, "status": {"type": "integer"}, "detail": {"type": "string"}}}),
    );
    json!({
        "openapi": "3.1.0",
        "info": {"title": "longrun API", "version": env!("CARGO_PKG_VERSION"),
            "description": "Long-running LLM agent runs, one bounded iteration at a time.",
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"}},
        // Relative: the API is on the server that serves this document.
        "servers": [{"url": "/", "description": "The server that serves this document"}],
        "paths": paths,
        // What the server POSTs to the URLs of `PUT /v1/webhooks`.
        "webhooks": {"runOutcome": {"post": {
            "summary": "A run's outcome (ended, or waiting on you), signed with your secret",
            "operationId": "runOutcome",
            "parameters": [
                {"name": "X-Longrun-Signature", "in": "header", "required": true,
                 "description": "sha256=<hex HMAC-SHA256(secret, body)>", "schema": {"type": "string"}},
                {"name": "X-Longrun-Delivery", "in": "header", "required": true,
                 "description": "The delivery id, also the payload's `id`: `{run_id}#{iteration}#{status}#{webhook}`, one per outcome and webhook (its place in your list when the outcome was recorded), the same on every attempt of that delivery; drop repeats by it", "schema": {"type": "string"}}],
            "requestBody": {"required": true, "content": {"application/json": {"schema": outcome}}},
            "responses": {"2XX": {"description": "Received; anything else is attempted again"}},
        }}},
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    })
}

/// Replaces the boolean schema `true` with `{}` wherever a schema is expected (property values,
/// items, the members of `anyOf`/`oneOf`/`allOf`); `additionalProperties: true` stays.
fn no_true_schemas(v: &mut Value) {
    let Some(o) = v.as_object_mut() else {
        if let Some(a) = v.as_array_mut() {
            a.iter_mut().for_each(no_true_schemas);
        }
        return;
    };
    for (key, child) in o.iter_mut() {
        match (key.as_str(), child) {
            ("properties" | "patternProperties" | "$defs", Value::Object(props)) => {
                for p in props.values_mut() {
                    if *p == Value::Bool(true) {
                        *p = json!({});
                    }
                    no_true_schemas(p);
                }
            }
            ("items" | "not" | "contains", c @ Value::Bool(true)) => *c = json!({}),
            ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(members)) => {
                for m in members.iter_mut() {
                    if *m == Value::Bool(true) {
                        *m = json!({});
                    }
                    no_true_schemas(m);
                }
            }
            (_, c) => no_true_schemas(c),
        }
    }
}

/// schemars writes an enum whose variants carry doc comments as `oneOf` string `const`s (and
/// `enum`s); generators make a union of types of that. One `enum` says the same, and the
/// variants' descriptions move to the schema's.
fn one_string_enum(schema: &mut Value) {
    let Some(members) = schema.get("oneOf").and_then(Value::as_array) else {
        return;
    };
    let mut values = vec![];
    let mut notes = vec![];
    for m in members {
        let Some(m) = m.as_object() else { return };
        if m.get("type") != Some(&json!("string"))
            || m.keys()
                .any(|k| !matches!(k.as_str(), "type" | "enum" | "const" | "description"))
        {
            return;
        }
        let these: Vec<Value> = match (m.get("const"), m.get("enum").and_then(Value::as_array)) {
            (Some(c), None) => vec![c.clone()],
            (None, Some(e)) => e.clone(),
            _ => return,
        };
        if let Some(d) = m.get("description").and_then(Value::as_str) {
            let names: Vec<String> = these
                .iter()
                .map(|v| format!("`{}`", v.as_str().unwrap_or("")))
                .collect();
            notes.push(format!("{}: {}", names.join(", "), d.replace('\n', " ")));
        }
        values.extend(these);
    }
    let Some(o) = schema.as_object_mut() else {
        return;
    };
    o.remove("oneOf");
    o.insert("type".into(), json!("string"));
    o.insert("enum".into(), Value::Array(values));
    if !notes.is_empty() {
        let mut text = o
            .get("description")
            .and_then(Value::as_str)
            .map(|d| format!("{d}\n\n"))
            .unwrap_or_default();
        text.push_str(&notes.join("\n\n"));
        o.insert("description".into(), json!(text));
    }
}
