//! What a user registers once and every run of theirs may use: tools, MCP servers, webhooks.
//! Records only; the keyed collection that stores them is the `UserCatalog` port.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// An MCP server a user registered (`POST /v1/mcp-servers`): runs of that user may call the
/// tools it lists, each named `{name}.{tool}`.
#[derive(Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct McpServer {
    /// The namespace of its tools: `[a-z][a-z0-9_]*`, at most 32 characters.
    pub name: String,
    /// Its streamable HTTP endpoint.
    pub url: String,
    /// Sent as `Authorization: Bearer {secret}`; never returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    pub created_at: i64,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "McpServer({} → {}, secret redacted)",
            self.name, self.url
        )
    }
}

/// A tool a user registered (`POST /v1/tools`): runs of that user may call it; each call is
/// POSTed to `url`, signed with `secret`.
#[derive(Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UserTool {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments; enforced before every call.
    pub parameters: serde_json::Value,
    pub url: String,
    pub secret: String,
    /// Changes something outside: held for approval under `per_write`.
    #[serde(default = "yes")]
    pub write: bool,
    pub created_at: i64,
}

fn yes() -> bool {
    true
}

impl std::fmt::Debug for UserTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UserTool({} → {}, secret redacted)", self.name, self.url)
    }
}

/// Where a user's run outcomes are POSTed, signed with the secret (HMAC-SHA256).
#[derive(Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Webhook {
    pub url: String,
    /// At least 16 characters.
    #[schemars(length(min = 16))]
    pub secret: String,
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Webhook({}, secret redacted)", self.url)
    }
}
