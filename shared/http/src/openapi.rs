//! OpenAPI 3.1 generated from the code: request and response schemas come from the Rust types
//! (schemars, JSON Schema 2020-12, which 3.1 adopts), paths from one table.

use longrun_domain::OutcomePayload;
use longrun_domain::report::Report;
use longrun_domain::run::RunPatch;
use longrun_domain::{AgentView, DocHit, Notification, TaskSummary, TaskView};
use longrun_domain::{Doc, Event, IterationRecord, PadEntry, Run};
use longrun_service::idempotency::MAX_KEY_LEN;
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Value, json};

use longrun_domain::RunStatus;
use longrun_ports::FetchPolicy;

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

/// Where the project lives; the clients' package metadata names the same place.
const REPOSITORY: &str = "https://github.com/longrun-dev/longrun";

struct Op {
    method: &'static str,
    path: &'static str,
    /// Stable: clients name their calls after it (the Python client's modules, the TypeScript
    /// client's `operations`), so a path that moves keeps its id.
    id: &'static str,
    /// The one tag that groups it (one of [`TAGS`]).
    tag: &'static str,
    summary: &'static str,
    description: &'static str,
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
fn task_list(g: &mut SchemaGenerator) -> Value {
    list_of::<TaskSummary>("tasks")(g)
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

/// The groups of operations, in the order a reader meets them.
const TAGS: &[(&str, &str)] = &[
    (
        "runs",
        "Start, list, read and steer runs: answers, messages, edits, pause, continue, follow-up questions, cancel; each run's iterations and report",
    ),
    (
        "events",
        "A run's gapless event log, by long-poll or as server-sent events, resumable from any seq",
    ),
    (
        "workspace",
        "The documents a run writes, searched or read one by one, and its scratchpad",
    ),
    (
        "notifications",
        "Your inbox: one notification per run outcome",
    ),
    (
        "webhooks",
        "Where your runs' outcomes are POSTed, signed, and how each delivery went",
    ),
    (
        "tools",
        "Your own tools for your runs: HTTP tools and MCP servers",
    ),
    ("schedules", "Runs started on a cron schedule"),
    (
        "tasks",
        "The tasks a terminal started with `longrun task` on the server's machine, read-only, and the live message bus of those tasks and of agent runs",
    ),
    (
        "server",
        "The server itself: what it offers clients, and its liveness",
    ),
];

const OPS: &[Op] = &[
    Op {
        method: "post",
        path: "/v1/runs",
        id: "post_runs",
        tag: "runs",
        summary: "Start a run",
        description: "Creates a run from an objective, budgets, a model and a permission mode, and queues its first iteration. The body is checked strictly: an unknown field (a misspelt budget), a blank objective or a budget out of range is a 422 naming the field. Send an `Idempotency-Key` to make a retried create safe. A user over their active-run limit gets a 429.",
        body: Some(schema::<CreateRun>),
        ok: 201,
        response: Some(schema::<Run>),
    },
    Op {
        method: "get",
        path: "/v1/runs",
        id: "get_runs",
        tag: "runs",
        summary: "List your runs (newest first; ?status=&limit=&cursor=)",
        description: "Your runs, newest first, a page at a time: pass the page's `next_cursor` back as `cursor` for the next one (null on the last). Filter by `status`, or by the `context` a run was created with (`context_type`, `entity_id`). Each row is a `RunSummary`, with the active count and limit beside the page.",
        body: None,
        ok: 200,
        response: Some(runs),
    },
    Op {
        method: "get",
        path: "/v1/runs/{id}",
        id: "get_runs_id",
        tag: "runs",
        summary: "Get a run",
        description: "The whole run: status, budgets and what it has spent (`metrics`), the plan, its stopping reason once it stops, its children, and the deep link to its page in the console. Another user's run is a 404.",
        body: None,
        ok: 200,
        response: Some(schema::<Run>),
    },
    Op {
        method: "get",
        path: "/v1/runs/{id}/events",
        id: "get_runs_id_events",
        tag: "events",
        summary: "Events after a seq; ?wait=SECS long-polls",
        description: "A page of the run's gapless event log after seq `after` (1, 2, 3, … with no holes). With `wait`, the request is held until an event arrives or the wait is over (a long-poll, for servers that cannot stream); pass `next_after` back as `after` to resume.",
        body: None,
        ok: 200,
        response: Some(events),
    },
    Op {
        method: "get",
        path: "/v1/runs/{id}/stream",
        id: "get_runs_id_stream",
        tag: "events",
        summary: "Events as server-sent events; resumes from Last-Event-ID",
        description: "The run's events as server-sent events (`text/event-stream`), each `data:` one event as JSON with its seq as the SSE id. A reconnect with `Last-Event-ID` (or `after`) resumes after that seq, so nothing is missed or repeated; the stream ends when the run settles (ends, or waits on the user or its children).",
        body: None,
        ok: 200,
        response: None,
    },
    Op {
        method: "get",
        path: "/v1/runs/{id}/iterations",
        id: "get_runs_id_iterations",
        tag: "runs",
        summary: "Committed iterations",
        description: "The run's committed iterations in order, each with its summary, metrics, tool results, the documents it created and updated, and why the run went on or stopped after it. Paged by iteration number (`after`, `limit`).",
        body: None,
        ok: 200,
        response: Some(iterations),
    },
    Op {
        method: "get",
        path: "/v1/runs/{id}/workspace",
        id: "get_runs_id_workspace",
        tag: "workspace",
        summary: "Workspace tree",
        description: "The documents the run has written, as a tree of folders and as a flat list (path, title, size, version, the iterations that created and last updated each). With `tag`, only the documents tagged with it.",
        body: None,
        ok: 200,
        response: None,
    },
    Op {
        method: "get",
        path: "/v1/runs/{id}/workspace/search",
        id: "get_runs_id_workspace_search",
        tag: "workspace",
        summary: "Search workspace documents (?q=)",
        description: "Full-text search over the run's documents: the best matches for the words in `q`, each with its path, title and a snippet.",
        body: None,
        ok: 200,
        response: Some(hits),
    },
    Op {
        method: "get",
        path: "/v1/runs/{id}/docs/{path}",
        id: "get_runs_id_docs_path",
        tag: "workspace",
        summary: "One workspace document",
        description: "One document of the run's workspace by its path (`/`-separated, e.g. `notes/green.md`): its content, title, tags, version, the iterations that wrote it and where what it says came from (`sources`). A path naming no document is a 404.",
        body: None,
        ok: 200,
        response: Some(schema::<Doc>),
    },
    Op {
        method: "get",
        path: "/v1/runs/{id}/scratchpad",
        id: "get_runs_id_scratchpad",
        tag: "workspace",
        summary: "Last scratchpad entries (?last=N)",
        description: "The run's scratchpad, the notes each iteration leaves for the next (what was done, learned and planned): the last `last` entries, oldest first.",
        body: None,
        ok: 200,
        response: Some(pads),
    },
    Op {
        method: "get",
        path: "/v1/runs/{id}/report",
        id: "get_runs_id_report",
        tag: "runs",
        summary: "The run's report",
        description: "The report a run writes when it ends or waits on you: the narrative, what changed (documents, plan steps, links), the sources, its children's outcomes, its metrics and why it stopped. Asked for before that, it is a 409.",
        body: None,
        ok: 200,
        response: Some(schema::<Report>),
    },
    Op {
        method: "get",
        path: "/v1/runs/{id}/deliveries",
        id: "get_runs_id_deliveries",
        tag: "webhooks",
        summary: "The run's webhook deliveries, oldest first: state, attempts, next attempt and last error (never the secret or the signature)",
        description: "The deliveries of this run's outcomes to your webhooks, one per outcome and webhook, oldest first: state (`pending`, `delivered`, `given_up`), attempts, next attempt while pending, the last error and the latest attempts' history.",
        body: None,
        ok: 200,
        response: Some(deliveries),
    },
    Op {
        method: "post",
        path: "/v1/runs/{id}/cancel",
        id: "post_runs_id_cancel",
        tag: "runs",
        summary: "Cancel a run",
        description: "Cancels a run that has not ended: a queued or waiting run at once, a running one before its next model call (`cancel_requested` until then). Canceling an ended run is a 409.",
        body: None,
        ok: 200,
        response: Some(schema::<Run>),
    },
    Op {
        method: "post",
        path: "/v1/runs/{id}/respond",
        id: "post_runs_id_respond",
        tag: "runs",
        summary: "Answer a waiting run's questions",
        description: "Answers a run that waits on you (`waiting_on_user`): an answer to its questions, an approval (`approve`) of its plan or of the writes held for approval, or a decision per held call. The run is queued again; a run that is not waiting is a 409.",
        body: Some(schema::<RespondBody>),
        ok: 200,
        response: Some(schema::<Run>),
    },
    Op {
        method: "post",
        path: "/v1/runs/{id}/messages",
        id: "post_runs_id_messages",
        tag: "runs",
        summary: "Tell a run something: its next iteration's planner reads it (any status but ended)",
        description: "Posts a message to a run in any status but ended: the next iteration's planner is shown it once (one posted while an iteration runs waits for the one after). It moves nothing; at most 20 wait at a time.",
        body: Some(schema::<MessageBody>),
        ok: 200,
        response: Some(schema::<Run>),
    },
    Op {
        method: "get",
        path: "/v1/runs/{id}/agent",
        id: "get_runs_id_agent",
        tag: "runs",
        summary: "An agent run's task folder: its agent processes, message bus, TASK_STATE.md, output and live tail (404 for other runs)",
        description: "For a run whose iterations are a coding agent: its task folder as the runner keeps it, with the agent processes, the message bus, `TASK_STATE.md`, the output and a live tail of the running process. Any other run is a 404.",
        body: None,
        ok: 200,
        response: Some(schema::<AgentView>),
    },
    Op {
        method: "get",
        path: "/v1/runs/{id}/agent/stream",
        id: "get_runs_id_agent_stream",
        tag: "tasks",
        summary: "An agent run's message bus as server-sent events; resumes from Last-Event-ID",
        description: "The agent run's bus (`longrun bus`) as server-sent events (`text/event-stream`): each `data:` one message as JSON (a `BusMessage`), its seq the SSE id and its type the event name. A reconnect with `Last-Event-ID` (or `after`) resumes after that seq; the stream ends once the run settles and every message was sent. Any other run is a 404.",
        body: None,
        ok: 200,
        response: None,
    },
    Op {
        method: "get",
        path: "/v1/tasks",
        id: "get_tasks",
        tag: "tasks",
        summary: "The tasks `longrun task` started on the server's machine, most recently active first",
        description: "The tasks a terminal started with `longrun task` under the server's projects root (`projects_root/<project>/<task>/`), the most recently active first (at most 500): status, title, process count, backend and spend. They are the machine user's: only the user the server names for them (`LONGRUN_TASKS_USER`; `local` on a server without `LONGRUN_TOKENS`) sees any; everyone else gets an empty list. Read-only: agent runs are under `/v1/runs`.",
        body: None,
        ok: 200,
        response: Some(task_list),
    },
    Op {
        method: "get",
        path: "/v1/tasks/{project}/{task}",
        id: "get_tasks_project_task",
        tag: "tasks",
        summary: "One terminal task: its processes, message bus, TASK.md, TASK_STATE.md, output and live tail",
        description: "A task `longrun task` started: its summary, TASK.md, and its folder as an agent run's is shown (the chain of agent processes with the children each delegated to, the last 200 bus messages, TASK_STATE.md, the newest root's output and the live tail). A task that does not exist, or that the caller may not see, is a 404.",
        body: None,
        ok: 200,
        response: Some(schema::<TaskView>),
    },
    Op {
        method: "get",
        path: "/v1/tasks/{project}/{task}/stream",
        id: "get_tasks_project_task_stream",
        tag: "tasks",
        summary: "A terminal task's message bus as server-sent events; resumes from Last-Event-ID",
        description: "The task's bus as server-sent events (`text/event-stream`): each `data:` one message as JSON (a `BusMessage`), its seq the SSE id and its type the event name. A reconnect with `Last-Event-ID` (or `after`) resumes after that seq; the stream ends once nothing of the task runs and every message was sent.",
        body: None,
        ok: 200,
        response: None,
    },
    Op {
        method: "post",
        path: "/v1/runs/{id}/pause",
        id: "post_runs_id_pause",
        tag: "runs",
        summary: "Pause a run after the iteration in flight (continue resumes it)",
        description: "Pauses a run: a queued run at once, a running one after the iteration in flight is committed (`pause_requested` until then). A paused run keeps its slot and spends nothing; `continue` resumes it. Only queued or running runs can be paused (else a 409).",
        body: None,
        ok: 200,
        response: Some(schema::<Run>),
    },
    Op {
        method: "patch",
        path: "/v1/runs/{id}",
        id: "patch_runs_id",
        tag: "runs",
        summary: "Edit the objective or plan; takes effect at the next iteration",
        description: "Edits a run's objective or plan steps (at most 50). The edit is recorded at once (a `run_patched` event) and applied when the next iteration is claimed; the planner is told what changed.",
        body: Some(schema::<RunPatch>),
        ok: 200,
        response: Some(schema::<Run>),
    },
    Op {
        method: "post",
        path: "/v1/runs/{id}/continue",
        id: "post_runs_id_continue",
        tag: "runs",
        summary: "Continue a stopped run with raised budgets, or resume a paused one",
        description: "Resumes a paused run, or continues a stopped one (a budget ran out) with the budgets raised in the body. The run is queued for its next iteration.",
        body: Some(schema::<ContinueBody>),
        ok: 200,
        response: Some(schema::<Run>),
    },
    Op {
        method: "post",
        path: "/v1/runs/{id}/follow-up",
        id: "post_runs_id_follow-up",
        tag: "runs",
        summary: "Ask an ended run a follow-up question; it runs again and writes a new report",
        description: "Asks a run that ended completed, stopped or failed a follow-up question: it is queued again on the budgets it has left (or those raised in the body), works on the question with its workspace, and writes a new report that supersedes the last.",
        body: Some(schema::<FollowUpBody>),
        ok: 200,
        response: Some(schema::<Run>),
    },
    Op {
        method: "get",
        path: "/v1/notifications",
        id: "get_notifications",
        tag: "notifications",
        summary: "Your notification inbox",
        description: "Your inbox: one notification per run outcome (ended, or waiting on you), newest first, with its title, message, deep link and the run's figures; paged like runs, with the unread count of the page.",
        body: None,
        ok: 200,
        response: Some(notifications),
    },
    Op {
        method: "post",
        path: "/v1/notifications/read",
        id: "post_notifications_read",
        tag: "notifications",
        summary: "Mark notifications of your inbox read",
        description: "Marks the notifications with the given ids read; answers how many changed.",
        body: Some(schema::<MarkReadBody>),
        ok: 200,
        response: Some(updated),
    },
    Op {
        method: "get",
        path: "/v1/config",
        id: "get_config",
        tag: "server",
        summary: "The models runs may use, the default budgets and the active-run limit",
        description: "What this server offers a client: the models a run may use (the first is the default), the priced ones, the default budgets, the permission modes and your active-run limit.",
        body: None,
        ok: 200,
        response: Some(server_config),
    },
    Op {
        method: "get",
        path: "/v1/webhooks",
        id: "get_webhooks",
        tag: "webhooks",
        summary: "Your webhook URLs (secrets are never returned)",
        description: "The URLs of your webhooks, in their order. Their secrets are never returned.",
        body: None,
        ok: 200,
        response: Some(webhooks),
    },
    Op {
        method: "put",
        path: "/v1/webhooks",
        id: "put_webhooks",
        tag: "webhooks",
        summary: "Replace your webhooks",
        description: "Replaces your webhooks. Every outcome of your runs is POSTed to each (the `runOutcome` webhook), signed with its secret; URLs are https (http only to a host the deployment trusts) and checked by the SSRF guard.",
        body: Some(schema::<WebhooksBody>),
        ok: 200,
        response: Some(webhooks),
    },
    Op {
        method: "post",
        path: "/v1/tools",
        id: "post_tools",
        tag: "tools",
        summary: "Register (or replace) a tool your runs may call",
        description: "Registers an HTTP tool your runs may call (or replaces the one of that name): its name, description, JSON Schema parameters, https URL and signing secret, and whether it writes (held for approval under `per_write`). At most 20; built-in names are refused.",
        body: Some(schema::<RegisterTool>),
        ok: 201,
        response: None,
    },
    Op {
        method: "get",
        path: "/v1/tools",
        id: "get_tools",
        tag: "tools",
        summary: "Your registered tools (secrets are never returned)",
        description: "The tools you registered, without their secrets.",
        body: None,
        ok: 200,
        response: None,
    },
    Op {
        method: "delete",
        path: "/v1/tools/{name}",
        id: "delete_tools_name",
        tag: "tools",
        summary: "Delete a registered tool",
        description: "Deletes a registered tool; runs under way stop seeing it within 30 s.",
        body: None,
        ok: 204,
        response: None,
    },
    Op {
        method: "post",
        path: "/v1/mcp-servers",
        id: "post_mcp-servers",
        tag: "tools",
        summary: "Register (or replace) an MCP server whose tools your runs may call",
        description: "Registers a Model Context Protocol server (streamable HTTP) whose tools your runs may call as `name.tool`, or replaces the one of that name. At most 10; the secret, when given, is sent as a bearer token and never returned.",
        body: Some(schema::<RegisterMcpServer>),
        ok: 201,
        response: Some(schema::<McpServerView>),
    },
    Op {
        method: "get",
        path: "/v1/mcp-servers",
        id: "get_mcp-servers",
        tag: "tools",
        summary: "Your MCP servers (secrets are never returned)",
        description: "The MCP servers you registered, with `has_secret` in place of their secrets.",
        body: None,
        ok: 200,
        response: Some(schema::<McpServerList>),
    },
    Op {
        method: "delete",
        path: "/v1/mcp-servers/{name}",
        id: "delete_mcp-servers_name",
        tag: "tools",
        summary: "Delete an MCP server",
        description: "Deletes a registered MCP server; its tools are no longer offered to your runs.",
        body: None,
        ok: 204,
        response: None,
    },
    Op {
        method: "post",
        path: "/v1/schedules",
        id: "post_schedules",
        tag: "schedules",
        summary: "Start a run on a cron schedule (UTC)",
        description: "Starts a run from the template at every occurrence of a five-field cron expression, in UTC. The template is checked like the body of `POST /v1/runs`; each occurrence starts at most one run and missed ones are not replayed. Send an `Idempotency-Key` to make a retried create safe.",
        body: Some(schema::<CreateSchedule>),
        ok: 201,
        response: Some(schema::<Schedule>),
    },
    Op {
        method: "get",
        path: "/v1/schedules",
        id: "get_schedules",
        tag: "schedules",
        summary: "Your schedules",
        description: "Your schedules, each with its cron expression, template, next occurrence (`next_at`) and the last run it started.",
        body: None,
        ok: 200,
        response: Some(schedules),
    },
    Op {
        method: "delete",
        path: "/v1/schedules/{id}",
        id: "delete_schedules_id",
        tag: "schedules",
        summary: "Delete a schedule",
        description: "Deletes one of your schedules; runs it already started go on.",
        body: None,
        ok: 204,
        response: None,
    },
    Op {
        method: "get",
        path: "/healthz",
        id: "get_healthz",
        tag: "server",
        summary: "Liveness",
        description: "Answers 200 while the process serves requests, without authentication (also when it is at its connection limit), for load balancers and orchestrators.",
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
/// The query parameters the document gives the operation at (`method`, route template);
/// `None` for a route the document does not describe (`/mcp`, the console's files).
pub fn query_names(method: &str, path: &str) -> Option<Vec<&'static str>> {
    OPS.iter()
        .any(|op| op.method == method && op.path == path)
        .then(|| query(method, path).into_iter().map(|(n, _, _)| n).collect())
}

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
