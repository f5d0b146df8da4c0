//! What a user registers for their runs: HTTP tools, MCP servers, schedules and webhooks. Each
//! is checked as the platform will use it (names, schemas, the SSRF policy on URLs), a new
//! name counts against a per-user limit, and a known name is replaced.

use longrun_domain::schedule::next_occurrence;
use longrun_domain::{McpServer, RunTemplate, Schedule, UserTool, Webhook, is_blank};
use longrun_ports::CatalogExt;
use serde::Serialize;
use serde_json::Value;

use crate::error::ServiceError;
use crate::idempotency::{once, request_fingerprint};
use crate::platform::Platform;
use crate::runs::prepare_run;

pub const MAX_TOOLS: usize = 20;
pub const MAX_MCP_SERVERS: usize = 10;
pub const MAX_SCHEDULES: usize = 20;
pub const MAX_WEBHOOKS: usize = 5;
const MAX_DESCRIPTION: usize = 1_000;
const MAX_SECRET: usize = 4_096;

/// Whether a registration made something new or replaced one of the same name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Saved {
    Created,
    Replaced,
}

/// The one registration rule: a known name is replaced; a new one needs room under `max`.
fn admit(
    names: impl IntoIterator<Item = String>, name: &str, max: usize, what: &str,
) -> Result<Saved, ServiceError> {
    let names: Vec<String> = names.into_iter().collect();
    if names.iter().any(|n| n == name) {
        return Ok(Saved::Replaced);
    }
    if names.len() >= max {
        return Err(ServiceError::LimitExceeded(format!(
            "at most {max} {what} per user; delete one first"
        )));
    }
    Ok(Saved::Created)
}

/// A registered tool's or MCP server's name: `[a-z][a-z0-9_]*`, at most `max` characters.
pub fn check_name(name: &str, max: usize) -> Result<(), ServiceError> {
    let well_formed = name.len() <= max
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    match well_formed {
        true => Ok(()),
        false => Err(ServiceError::Invalid(format!(
            "name `{name}` must be [a-z][a-z0-9_]* and at most {max} characters"
        ))),
    }
}

/// A URL a user registers for the platform to call: the document's pattern, then the SSRF
/// guard (the same policy the calls go through; DNS is checked again at every call).
pub fn check_url(p: &Platform, field: &str, url: &str) -> Result<(), ServiceError> {
    p.config
        .fetch
        .policy
        .check_registrable(url)
        .map(|_| ())
        .map_err(|m| ServiceError::Invalid(format!("{field} {m}")))
}

/// A tool as registered: calls are POSTed to `url`, signed with `secret`.
pub struct NewTool {
    pub name: String,
    pub description: String,
    pub parameters: Value,
    pub url: String,
    pub secret: String,
    pub write: bool,
}

fn check_tool(p: &Platform, t: &NewTool) -> Result<(), ServiceError> {
    let bad = |m: String| Err(ServiceError::Invalid(m));
    let name = t.name.as_str();
    check_name(name, 48)?;
    if p.engine.tools.contains(name) {
        return Err(ServiceError::Conflict(format!(
            "`{name}` is a built-in tool; choose another name"
        )));
    }
    if is_blank(&t.description) || t.description.chars().count() > MAX_DESCRIPTION {
        return bad(format!(
            "description must be 1 to {MAX_DESCRIPTION} characters"
        ));
    }
    if t.parameters.get("type").and_then(Value::as_str) != Some("object") {
        return bad("parameters must be a JSON Schema with \"type\": \"object\"".into());
    }
    if let Err(e) = jsonschema::validator_for(&t.parameters) {
        return bad(format!("parameters is not a valid JSON Schema: {e}"));
    }
    if t.secret.chars().count() < 16 {
        return bad("secret must be at least 16 characters".into());
    }
    check_url(p, "url", &t.url)?;
    match p.user_tools {
        Some(_) => Ok(()),
        None => Err(ServiceError::Unavailable(
            "registered tools are unavailable on this server".into(),
        )),
    }
}

pub async fn register_tool(
    p: &Platform, user: &str, t: NewTool,
) -> Result<(UserTool, Saved), ServiceError> {
    check_tool(p, &t)?;
    let existing = p.store.tools(user).await?;
    let saved = admit(
        existing.into_iter().map(|t| t.name),
        &t.name,
        MAX_TOOLS,
        "tools",
    )?;
    let tool = UserTool {
        name: t.name,
        description: t.description.trim().to_string(),
        parameters: t.parameters,
        url: t.url.trim().to_string(),
        secret: t.secret,
        write: t.write,
        created_at: p.clock.now_ms(),
    };
    p.store.put_tool(user, &tool).await?;
    Ok((tool, saved))
}

pub async fn tools(p: &Platform, user: &str) -> Result<Vec<UserTool>, ServiceError> {
    Ok(p.store.tools(user).await?)
}

pub async fn delete_tool(p: &Platform, user: &str, name: &str) -> Result<(), ServiceError> {
    match p.store.delete_tool(user, name).await? {
        true => Ok(()),
        false => Err(ServiceError::NotFound(format!("tool {name}"))),
    }
}

/// An MCP server as registered: its streamable HTTP endpoint and an optional bearer secret.
pub struct NewMcpServer {
    pub name: String,
    pub url: String,
    pub secret: Option<String>,
}

fn check_mcp_server(p: &Platform, s: &NewMcpServer) -> Result<(), ServiceError> {
    check_name(&s.name, 32)?;
    if let Some(secret) = &s.secret {
        // It goes into a header: no spaces, controls or line breaks.
        let printable = secret.chars().all(|c| c.is_ascii_graphic());
        if secret.is_empty() || secret.len() > MAX_SECRET || !printable {
            return Err(ServiceError::Invalid(format!(
                "secret must be 1 to {MAX_SECRET} printable ASCII characters without spaces"
            )));
        }
    }
    check_url(p, "url", &s.url)?;
    match p.mcp {
        Some(_) => Ok(()),
        None => Err(ServiceError::Unavailable(
            "MCP servers are unavailable on this server".into(),
        )),
    }
}

pub async fn register_mcp_server(
    p: &Platform, user: &str, s: NewMcpServer,
) -> Result<(McpServer, Saved), ServiceError> {
    check_mcp_server(p, &s)?;
    let existing = p.store.mcp_servers(user).await?;
    let names = existing.into_iter().map(|s| s.name);
    let saved = admit(names, &s.name, MAX_MCP_SERVERS, "MCP servers")?;
    let server = McpServer {
        name: s.name,
        url: s.url.trim().to_string(),
        secret: s.secret,
        created_at: p.clock.now_ms(),
    };
    p.store.put_mcp_server(user, &server).await?;
    Ok((server, saved))
}

pub async fn mcp_servers(p: &Platform, user: &str) -> Result<Vec<McpServer>, ServiceError> {
    Ok(p.store.mcp_servers(user).await?)
}

pub async fn delete_mcp_server(p: &Platform, user: &str, name: &str) -> Result<(), ServiceError> {
    match p.store.delete_mcp_server(user, name).await? {
        true => Ok(()),
        false => Err(ServiceError::NotFound(format!("MCP server {name}"))),
    }
}

/// A schedule as requested: a cron expression (UTC) and the run each occurrence starts.
#[derive(Clone, Debug, Serialize)]
pub struct NewSchedule {
    pub cron: String,
    pub template: RunTemplate,
}

/// Registers a schedule, once per idempotency key when one is given. The template must be a
/// run this server would accept, so it fails now, not at 3 a.m.
pub async fn create_schedule(
    p: &Platform, user: &str, key: Option<&str>, s: NewSchedule,
) -> Result<Value, ServiceError> {
    let now = p.clock.now_ms();
    // Checked as sent (the document's pattern allows spaces around it), stored trimmed.
    let next_at = next_occurrence(&s.cron, now)?;
    prepare_run(p, user, s.template.clone(), "validation".into())?;
    let new_id = format!("sch_{}", uuid::Uuid::new_v4().simple());
    match key {
        Some(key) => {
            let fingerprint = request_fingerprint("schedules", &s)?;
            let create = |id| store_schedule(p, user, s, id, next_at, now);
            once(p, user, key, fingerprint, new_id, create).await
        }
        None => store_schedule(p, user, s, new_id, next_at, now).await,
    }
}

/// Stores the schedule under `id`; one already there (an earlier attempt under the same
/// idempotency key) is the answer.
async fn store_schedule(
    p: &Platform, user: &str, s: NewSchedule, id: String, next_at: i64, now: i64,
) -> Result<Value, ServiceError> {
    let mine = p.store.schedules(user).await?;
    if let Some(made) = mine.iter().find(|s| s.id == id) {
        return serde_json::to_value(made).map_err(ServiceError::internal);
    }
    if mine.len() >= MAX_SCHEDULES {
        return Err(ServiceError::LimitExceeded(format!(
            "at most {MAX_SCHEDULES} schedules per user"
        )));
    }
    let schedule = Schedule {
        id,
        user_id: user.to_string(),
        cron: s.cron.trim().to_string(),
        template: s.template,
        next_at,
        created_at: now,
        last_run_id: None,
    };
    p.store.put_schedule(&schedule).await?;
    serde_json::to_value(&schedule).map_err(ServiceError::internal)
}

pub async fn schedules(p: &Platform, user: &str) -> Result<Vec<Schedule>, ServiceError> {
    Ok(p.store.schedules(user).await?)
}

pub async fn delete_schedule(p: &Platform, user: &str, id: &str) -> Result<(), ServiceError> {
    match p.store.delete_schedule(user, id).await? {
        true => Ok(()),
        false => Err(ServiceError::NotFound(format!("schedule {id}"))),
    }
}

/// Replaces all of the caller's webhooks.
pub async fn put_webhooks(p: &Platform, user: &str, hooks: &[Webhook]) -> Result<(), ServiceError> {
    if hooks.len() > MAX_WEBHOOKS {
        return Err(ServiceError::Invalid(format!(
            "at most {MAX_WEBHOOKS} webhooks"
        )));
    }
    for h in hooks {
        check_url(p, "webhooks[].url", &h.url)?;
        if h.secret.chars().count() < 16 {
            return Err(ServiceError::Invalid(
                "webhooks[].secret must be at least 16 characters".into(),
            ));
        }
    }
    Ok(p.store.put_webhooks(user, hooks).await?)
}

pub async fn webhooks(p: &Platform, user: &str) -> Result<Vec<Webhook>, ServiceError> {
    Ok(p.store.webhooks(user).await?)
}
