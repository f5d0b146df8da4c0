//! What every use case is handed: the ports and the engine, built once by the composition
//! root (`longrun-wiring`) and shared by reference.

use std::sync::Arc;

use longrun_engine::{Engine, FollowUp};
use longrun_ports::{Clock, McpConnector, StepQueue, Store, ToolFactory, WebhookPoster};

use crate::config::AppConfig;

/// Everything the API and the worker need, shared by reference.
#[derive(Clone)]
pub struct Platform {
    pub store: Arc<dyn Store>,
    pub queue: Arc<dyn StepQueue>,
    pub follow_up: FollowUp,
    pub engine: Arc<Engine>,
    pub clock: Arc<dyn Clock>,
    pub config: Arc<AppConfig>,
    /// Calls users' registered tools; `None` only if its HTTP client could not be built.
    pub user_tools: Option<Arc<dyn ToolFactory>>,
    /// Lists and calls users' MCP servers; `None` only if its HTTP client could not be built.
    pub mcp: Option<Arc<dyn McpConnector>>,
    /// POSTs outcome webhooks (through the SSRF guard).
    pub webhooks: Arc<dyn WebhookPoster>,
}
