//! Users' MCP servers: `POST/GET /v1/mcp-servers`, `DELETE /v1/mcp-servers/{name}`. A user's
//! runs may call the tools these servers list, as `{name}.{tool}` (see `longrun_outbound::mcp_client`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use longrun_domain::McpServer;
use longrun_ports::CatalogExt;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::api::User;
use crate::error::{ApiError, ApiJson};
use crate::platform::Platform;

pub const MAX_MCP_SERVERS: usize = 10;
const MAX_SECRET: usize = 4_096;

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

fn check(p: &Platform, body: &RegisterMcpServer) -> Result<(), ApiError> {
    let bad = |m: String| Err(ApiError::Unprocessable(m));
    crate::tools::check_name(&body.name, 32)?;
    if let Some(secret) = &body.secret {
        // It goes into a header: no spaces, controls or line breaks.
        let printable = secret.chars().all(|c| c.is_ascii_graphic());
        if secret.is_empty() || secret.len() > MAX_SECRET || !printable {
            return bad(format!(
                "secret must be 1 to {MAX_SECRET} printable ASCII characters without spaces"
            ));
        }
    }
    crate::tools::check_url(p, &body.url)?;
    match p.mcp {
        Some(_) => Ok(()),
        None => Err(ApiError::Unavailable(
            "MCP servers are unavailable on this server".into(),
        )),
    }
}

pub async fn register_mcp_server(
    State(p): State<Platform>, user: User, ApiJson(body): ApiJson<RegisterMcpServer>,
) -> Result<Response, ApiError> {
    check(&p, &body)?;
    let existing = p.store.mcp_servers(&user.0).await?;
    let replacing = existing.iter().any(|s| s.name == body.name);
    if !replacing && existing.len() >= MAX_MCP_SERVERS {
        return Err(ApiError::TooManyRequests(format!(
            "at most {MAX_MCP_SERVERS} MCP servers per user; delete one first"
        )));
    }
    let server = McpServer {
        name: body.name,
        url: body.url.trim().to_string(),
        secret: body.secret,
        created_at: p.clock.now_ms(),
    };
    p.store.put_mcp_server(&user.0, &server).await?;
    let status = if replacing {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((status, Json(view(&server))).into_response())
}

pub async fn list_mcp_servers(
    State(p): State<Platform>, user: User,
) -> Result<Json<McpServerList>, ApiError> {
    let servers = p.store.mcp_servers(&user.0).await?;
    Ok(Json(McpServerList {
        mcp_servers: servers.iter().map(view).collect(),
    }))
}

pub async fn delete_mcp_server(
    State(p): State<Platform>, user: User, Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    if p.store.delete_mcp_server(&user.0, &name).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!("MCP server {name}")))
    }
}
