//! Registered tools: `POST/GET /v1/tools`, `DELETE /v1/tools/{name}`. A user's runs may call
//! the user's tools; each call is a signed POST to the tool's URL (see `longrun_outbound`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use longrun_domain::UserTool;
use longrun_ports::CatalogExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::User;
use crate::error::{ApiError, ApiJson};
use crate::platform::Platform;

pub const MAX_TOOLS: usize = 20;
const MAX_DESCRIPTION: usize = 1_000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterTool {
    /// `[a-z][a-z0-9_]*`, at most 48 characters, not a built-in tool's name.
    #[schemars(regex(pattern = r"^[a-z][a-z0-9_]{0,47}$"))]
    pub name: String,
    /// What the tool does, for the planner (not blank).
    #[schemars(length(min = 1, max = 1_000), regex(pattern = r"\S"))]
    pub description: String,
    /// JSON Schema (type object) of the arguments, enforced before every call.
    #[schemars(schema_with = "object_schema")]
    pub parameters: Value,
    /// Where calls are POSTed: https to a host name (plain http only to hosts the deployment
    /// trusts); the document states the exact pattern.
    pub url: String,
    /// HMAC-SHA256 key for the `x-longrun-signature` header; at least 16 characters.
    #[schemars(length(min = 16))]
    pub secret: String,
    /// Whether the tool changes something (held for approval under `per_write`). Default true.
    #[serde(default = "default_write")]
    pub write: bool,
}

fn object_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "required": ["type"],
        "properties": {"type": {"const": "object"}},
    })
}

fn default_write() -> bool {
    true
}

fn view(t: &UserTool) -> Value {
    json!({
        "name": t.name,
        "description": t.description,
        "parameters": t.parameters,
        "url": t.url,
        "write": t.write,
        "created_at": t.created_at,
    })
}

/// A registered tool's or MCP server's name: `[a-z][a-z0-9_]*`, at most `max` characters.
pub(crate) fn check_name(name: &str, max: usize) -> Result<(), ApiError> {
    let well_formed = name.len() <= max
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    match well_formed {
        true => Ok(()),
        false => Err(ApiError::Unprocessable(format!(
            "name `{name}` must be [a-z][a-z0-9_]* and at most {max} characters"
        ))),
    }
}

fn check(p: &Platform, body: &RegisterTool) -> Result<(), ApiError> {
    let bad = |m: String| Err(ApiError::Unprocessable(m));
    let name = body.name.as_str();
    check_name(name, 48)?;
    if p.engine.tools.contains(name) {
        return Err(ApiError::Conflict(format!(
            "`{name}` is a built-in tool; choose another name"
        )));
    }
    if longrun_domain::is_blank(&body.description)
        || body.description.chars().count() > MAX_DESCRIPTION
    {
        return bad(format!(
            "description must be 1 to {MAX_DESCRIPTION} characters"
        ));
    }
    if body.parameters.get("type").and_then(Value::as_str) != Some("object") {
        return bad("parameters must be a JSON Schema with \"type\": \"object\"".into());
    }
    if let Err(e) = jsonschema::validator_for(&body.parameters) {
        return bad(format!("parameters is not a valid JSON Schema: {e}"));
    }
    if body.secret.chars().count() < 16 {
        return bad("secret must be at least 16 characters".into());
    }
    check_url(p, &body.url)?;
    match p.user_tools {
        Some(_) => Ok(()),
        None => Err(ApiError::Unavailable(
            "registered tools are unavailable on this server".into(),
        )),
    }
}

/// A registered tool's or MCP server's URL: the document's pattern, then the SSRF guard (the
/// same policy the calls go through; DNS is checked again at every call).
pub(crate) fn check_url(p: &Platform, url: &str) -> Result<(), ApiError> {
    p.config
        .fetch
        .policy
        .check_registrable(url)
        .map(|_| ())
        .map_err(|m| ApiError::Unprocessable(format!("url {m}")))
}

pub async fn register_tool(
    State(p): State<Platform>, user: User, ApiJson(body): ApiJson<RegisterTool>,
) -> Result<Response, ApiError> {
    check(&p, &body)?;
    let existing = p.store.tools(&user.0).await?;
    let replacing = existing.iter().any(|t| t.name == body.name);
    if !replacing && existing.len() >= MAX_TOOLS {
        return Err(ApiError::TooManyRequests(format!(
            "at most {MAX_TOOLS} tools per user; delete one first"
        )));
    }
    let tool = UserTool {
        name: body.name,
        description: body.description.trim().to_string(),
        parameters: body.parameters,
        url: body.url.trim().to_string(),
        secret: body.secret,
        write: body.write,
        created_at: p.clock.now_ms(),
    };
    p.store.put_tool(&user.0, &tool).await?;
    let status = if replacing {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((status, Json(view(&tool))).into_response())
}

pub async fn list_tools(State(p): State<Platform>, user: User) -> Result<Json<Value>, ApiError> {
    let tools = p.store.tools(&user.0).await?;
    Ok(Json(
        json!({"tools": tools.iter().map(view).collect::<Vec<_>>()}),
    ))
}

pub async fn delete_tool(
    State(p): State<Platform>, user: User, Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    if p.store.delete_tool(&user.0, &name).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!("tool {name}")))
    }
}
