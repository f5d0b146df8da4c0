//! The document's one table: every operation with its tag, summary, body and response schema.

use longrun_domain::report::Report;
use longrun_domain::run::RunPatch;
use longrun_domain::{AgentView, DocHit, Notification, TaskSummary, TaskView};
use longrun_domain::{Doc, Event, IterationRecord, PadEntry, Run};
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Value, json};

use longrun_domain::RunStatus;

use crate::api::{
    ContinueBody, CreateRun, DeliveryView, FollowUpBody, MarkReadBody, MessageBody, RespondBody,
    WebhooksBody,
};
use crate::mcp_servers::{McpServerList, McpServerView, RegisterMcpServer};
use crate::schedules::CreateSchedule;
use crate::tools::RegisterTool;
use longrun_domain::Schedule;

pub(super) struct Op {
    pub(super) method: &'static str,
    pub(super) path: &'static str,
    /// Stable: clients name their calls after it (the Python client's modules, the TypeScript
    /// client's `operations`), so a path that moves keeps its id.
    pub(super) id: &'static str,
    /// The one tag that groups it (one of [`TAGS`]).
    pub(super) tag: &'static str,
    pub(super) summary: &'static str,
    pub(super) description: &'static str,
    pub(super) body: Option<fn(&mut SchemaGenerator) -> Value>,
    pub(super) ok: u16,
    pub(super) response: Option<fn(&mut SchemaGenerator) -> Value>,
}

pub(super) fn schema<T: JsonSchema>(g: &mut SchemaGenerator) -> Value {
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
pub(super) fn run_summary(g: &mut SchemaGenerator) -> Value {
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
pub(super) const TAGS: &[(&str, &str)] = &[
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

pub(super) const OPS: &[Op] = &[
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
        description: "The report a run writes when it ends or waits on you: a title with the outcome, the 5–10 sentence `summary` and the last iteration's `headline`, what changed (documents and plan steps created and updated, and how they are linked), its plan with its status, the sources, its children's outcomes, its metrics and why it stopped. Asked for before that, it is a 409.",
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
