//! The `Tool` port and the factories that build a user's tools. The engine's built-in tools
//! implement it too; outbound tools (`http_fetch`, web search, registered HTTP tools, MCP) live
//! in adapters and see only the call's identity, never the engine's staging.

use std::any::Any;
use std::sync::Arc;

use async_trait::async_trait;
use longrun_domain::{McpServer, UserTool};
use serde_json::Value;

/// The iteration a tool call belongs to. The engine passes its staging; adapters read the
/// identity (for idempotency keys), the engine's built-ins reach the staging through `staging`.
pub trait ToolContext: Send + Sync {
    fn run_id(&self) -> &str;
    fn iteration(&self) -> u32;
    /// The engine's own staging, for its built-in tools.
    fn staging(&self) -> &dyn Any;
}

#[async_trait]
pub trait Tool: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    fn schema(&self) -> Value;
    /// Changes something (the workspace, an outside system): held for approval under
    /// `per_write`.
    fn writes(&self) -> bool {
        false
    }
    /// Called only with arguments that passed the schema.
    async fn call(&self, ctx: &dyn ToolContext, args: Value) -> Result<Value, String>;
    /// What a successful call read from outside (URLs, `tool:NAME`): the docs written after
    /// it cite these. The workspace tools read nothing from outside.
    fn sources(&self, _args: &Value, _result: &Value) -> Vec<String> {
        vec![]
    }
}

/// Builds the tools a user registered, for one iteration of one of their runs.
pub trait ToolFactory: Send + Sync {
    fn build(&self, spec: &UserTool) -> Result<Arc<dyn Tool>, String>;
}

/// One tool an MCP server lists (`tools/list`).
#[derive(Clone, Debug, PartialEq)]
pub struct McpToolSpec {
    /// The server's name for it; the run sees `{server}.{name}`.
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments (`inputSchema`), enforced before every call.
    pub input_schema: Value,
    /// `annotations.readOnlyHint`: a tool not marked read-only is a write under `per_write`.
    pub read_only: bool,
}

/// Lists the tools of users' MCP servers and builds callable tools from the listings. The
/// engine caches listings; each list is a round trip to the server.
#[async_trait]
pub trait McpConnector: Send + Sync {
    async fn list(&self, server: &McpServer) -> Result<Vec<McpToolSpec>, String>;
    /// The tool named `{server.name}.{spec.name}`, calling the server.
    fn build(&self, server: &McpServer, spec: &McpToolSpec) -> Result<Arc<dyn Tool>, String>;
}
