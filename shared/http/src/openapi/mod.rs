//! OpenAPI 3.1 generated from the code: request and response schemas come from the Rust types
//! (schemars, JSON Schema 2020-12, which 3.1 adopts), paths from one table.

mod ops;

use longrun_domain::OutcomePayload;
use longrun_service::idempotency::MAX_KEY_LEN;
use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

use longrun_domain::RunStatus;
use longrun_ports::FetchPolicy;

use crate::api::CURSOR_PATTERN;
use crate::config::AppConfig;

use ops::{OPS, TAGS, run_summary, schema};

/// Where the project lives; the clients' package metadata names the same place.
const REPOSITORY: &str = "https://github.com/longrun-dev/longrun";

fn int(min: u64, max: u64, description: &str) -> Value {
    json!({"type": "integer", "minimum": min, "maximum": max, "description": description})
}

/// The query parameters the document gives the operation at (`method`, route template);
/// `None` for a route the document does not describe (`/mcp`, the console's files).
pub fn query_names(method: &str, path: &str) -> Option<Vec<&'static str>> {
    OPS.iter()
        .any(|op| op.method == method && op.path == path)
        .then(|| query(method, path).into_iter().map(|(n, _, _)| n).collect())
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
        ("get", "/v1/runs/{id}/agent/stream" | "/v1/tasks/{project}/{task}/stream") => vec![(
            "after",
            false,
            int(0, i64::MAX as u64, "Only messages after this seq"),
        )],
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
    template["properties"]["grading"] = json!({"anyOf": [{"type": "null"}, {
        "type": "object", "additionalProperties": false,
        "description": "Whether plain-text criteria are graded (default: yes) and by which model",
        "properties": {"text": {"type": "boolean"},
            "model": {"enum": models.iter().map(|m| json!(m)).chain([Value::Null]).collect::<Vec<_>>()}}}]});
    // What the service checks across fields, stated so a client can check it first: a command
    // check runs in an agent run's task folder (a run without an agent has none); `project`
    // names one project, `multi_project` one or more, any other scope none; no id twice.
    let scoped = |scope: &str, max: Option<usize>| {
        json!({"if": {"required": ["scope"], "properties": {"scope": {"const": scope}}},
        "then": {"required": ["project_ids"], "properties": {"project_ids": match max {
            Some(max) => json!({"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": max}),
            None => json!({"type": "array", "items": {"type": "string"}, "minItems": 1}),
        }}}})
    };
    template["allOf"] = json!([
        {"anyOf": [
            {"required": ["agent"], "properties": {"agent": {"type": "string"}}},
            {"properties": {"completion_criteria": {"items": {"not": {
                "type": "object", "required": ["check"], "properties": {"check": {"const": "command"}}}}}}}
        ]},
        scoped("project", Some(1)),
        scoped("multi_project", None),
        {"if": {"not": {"required": ["scope"], "properties": {"scope": {"enum": ["project", "multi_project"]}}}},
         "then": {"properties": {"project_ids": {"anyOf": [{"type": "null"},
             {"type": "array", "items": {"type": "string"}, "maxItems": 0}]}}}}
    ]);
    if let Some(ids) = template["properties"]["project_ids"].as_object_mut() {
        ids.insert("uniqueItems".into(), json!(true));
    }
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
        let mut o = json!({"tags": [op.tag], "summary": op.summary, "description": op.description,
            "operationId": op.id, "responses": {}});
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
            .map(|name| {
                // A document path never holds a control character (an encoded NUL is a 400).
                let schema = if name == "path" {
                    json!({"type": "string", "pattern": "^[^\\u0000-\\u001F\\u007F-\\u009F]*$"})
                } else {
                    json!({"type": "string"})
                };
                json!({"name": name, "in": "path", "required": true, "schema": schema})
            })
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
            "contact": {"name": "longrun", "url": REPOSITORY},
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"}},
        "tags": TAGS.iter().map(|(name, description)| json!({"name": name, "description": description})).collect::<Vec<_>>(),
        // Relative: the API is on the server that serves this document.
        "servers": [{"url": "/", "description": "The server that serves this document"}],
        "paths": paths,
        // What the server POSTs to the URLs of `PUT /v1/webhooks`.
        "webhooks": {"runOutcome": {"post": {
            "tags": ["webhooks"],
            "summary": "A run's outcome (ended, or waiting on you), signed with your secret",
            "description": "POSTed to each of your webhooks when a run ends or waits on you: check `X-Longrun-Signature` against the raw body before trusting it. Delivery is at least once: attempted again with backoff (about 23 minutes in all) until a 2xx, given up at once on a 4xx other than 429; drop repeats by `X-Longrun-Delivery`.",
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
