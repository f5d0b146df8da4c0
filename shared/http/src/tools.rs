//! Registered tools: `POST/GET /v1/tools`, `DELETE /v1/tools/{name}`. A user's runs may call
//! the user's tools; each call is a signed POST to the tool's URL (see `longrun_outbound`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use longrun_domain::UserTool;
use longrun_service::registrations::{self, NewTool, Saved};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::User;
use crate::error::{ApiError, ApiJson};
use crate::platform::Platform;

pub use longrun_service::registrations::MAX_TOOLS;

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

/// 201 for a new registration, 200 for one that replaced its namesake.
pub(crate) fn saved_status(saved: Saved) -> StatusCode {
    match saved {
        Saved::Created => StatusCode::CREATED,
        Saved::Replaced => StatusCode::OK,
    }
}

pub async fn register_tool(
    State(p): State<Platform>, user: User, ApiJson(body): ApiJson<RegisterTool>,
) -> Result<Response, ApiError> {
    let new = NewTool {
        name: body.name,
        description: body.description,
        parameters: body.parameters,
        url: body.url,
        secret: body.secret,
        write: body.write,
    };
    let (tool, saved) = registrations::register_tool(&p, &user.0, new).await?;
    Ok((saved_status(saved), Json(view(&tool))).into_response())
}

pub async fn list_tools(State(p): State<Platform>, user: User) -> Result<Json<Value>, ApiError> {
    let tools = registrations::tools(&p, &user.0).await?;
    Ok(Json(
        json!({"tools": tools.iter().map(view).collect::<Vec<_>>()}),
    ))
}

pub async fn delete_tool(
    State(p): State<Platform>, user: User, Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    registrations::delete_tool(&p, &user.0, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}
