//! Users' MCP servers: `POST/GET /v1/mcp-servers`, `DELETE /v1/mcp-servers/{name}`. A user's
//! runs may call the tools these servers list, as `{name}.{tool}` (see `longrun_outbound::mcp_client`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use longrun_domain::McpServer;
use longrun_service::registrations::{self, NewMcpServer};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::api::User;
use crate::error::{ApiError, ApiJson};
use crate::platform::Platform;
use crate::tools::saved_status;

pub use longrun_service::registrations::MAX_MCP_SERVERS;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterMcpServer {
    /// `[a-z][a-z0-9_]*`, at most 32 characters: runs see its tools as `{name}.{tool}`.
    #[schemars(regex(pattern = r"^[a-z][a-z0-9_]{0,31}$"))]
    pub name: String,
    /// The server's streamable HTTP endpoint: https to a host name (plain http only to hosts
    /// the deployment trusts); the document states the exact pattern.
    pub url: String,
    /// Sent as `Authorization: Bearer {secret}`; printable ASCII, never returned.
    #[serde(default)]
    #[schemars(length(min = 1, max = 4_096), regex(pattern = r"^[!-~]+$"))]
    pub secret: Option<String>,
}

/// A registration as the API shows it: the secret stays inside.
#[derive(Debug, serde::Serialize, JsonSchema)]
pub struct McpServerView {
    pub name: String,
    pub url: String,
    pub has_secret: bool,
    pub created_at: i64,
}

#[derive(Debug, serde::Serialize, JsonSchema)]
pub struct McpServerList {
    pub mcp_servers: Vec<McpServerView>,
}

fn view(s: &McpServer) -> McpServerView {
    McpServerView {
        name: s.name.clone(),
        url: s.url.clone(),
        has_secret: s.secret.is_some(),
        created_at: s.created_at,
    }
}

pub async fn register_mcp_server(
    State(p): State<Platform>, user: User, ApiJson(body): ApiJson<RegisterMcpServer>,
) -> Result<Response, ApiError> {
    let new = NewMcpServer {
        name: body.name,
        url: body.url,
        secret: body.secret,
    };
    let (server, saved) = registrations::register_mcp_server(&p, &user.0, new).await?;
    Ok((saved_status(saved), Json(view(&server))).into_response())
}

pub async fn list_mcp_servers(
    State(p): State<Platform>, user: User,
) -> Result<Json<McpServerList>, ApiError> {
    let servers = registrations::mcp_servers(&p, &user.0).await?;
    Ok(Json(McpServerList {
        mcp_servers: servers.iter().map(view).collect(),
    }))
}

pub async fn delete_mcp_server(
    State(p): State<Platform>, user: User, Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    registrations::delete_mcp_server(&p, &user.0, &name).await?;
    Ok(StatusCode::NO_CONTENT)
}
