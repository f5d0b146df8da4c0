//! Wiring: the ports and the engine, built once.

use std::sync::Arc;

use longrun_engine::tools::SpawnRun;
use longrun_engine::{Engine, EngineConfig, FollowUp, ToolRegistry};
use longrun_outbound::{HttpFetch, HttpMcpClient, HttpToolFactory, UserToolSettings, WebSearch};
use longrun_ports::{AgentHost, LlmClient};
use longrun_ports::{Clock, Faults, Notifier, StepQueue, Store};
use longrun_ports::{McpConnector, ToolFactory};

use crate::config::AppConfig;

#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    #[error("cannot open the data directory {path}: {message}")]
    DataDir { path: String, message: String },
    #[error(transparent)]
    Model(#[from] longrun_llm::ModelError),
    #[error("configuration: {0}")]
    Setting(String),
}

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
    pub user_tools: Option<Arc<HttpToolFactory>>,
    /// Lists and calls users' MCP servers; `None` only if its HTTP client could not be built.
    pub mcp: Option<Arc<HttpMcpClient>>,
}

impl Platform {
    #[allow(clippy::too_many_arguments)]
    pub fn assemble(
        store: Arc<dyn Store>, queue: Arc<dyn StepQueue>, notifier: Arc<dyn Notifier>,
        llm: Arc<dyn LlmClient>, config: AppConfig, clock: Arc<dyn Clock>, faults: Arc<dyn Faults>,
        mut engine: EngineConfig, agents: Option<Arc<dyn AgentHost>>,
    ) -> Platform {
        engine.app_base_url = config.app_base_url.clone();
        let follow_up = FollowUp {
            store: store.clone(),
            queue: queue.clone(),
            notifier,
            clock: clock.clone(),
            app_base_url: config.app_base_url.clone(),
        };
        let mut tools = ToolRegistry::builtin();
        tools.register(Arc::new(SpawnRun {
            max_depth: config.max_run_depth,
        }));
        if config.fetch.enabled {
            let f = &config.fetch;
            match HttpFetch::new(f.policy.clone(), f.lookup.clone(), f.settings.clone()) {
                Ok(fetch) => tools.register(Arc::new(fetch)),
                Err(e) => tracing::error!(error = %e, "http_fetch is unavailable"),
            }
        }
        if let Some(search) = &config.search {
            match WebSearch::new(search.clone()) {
                Ok(search) => tools.register(Arc::new(search)),
                Err(e) => tracing::error!(error = %e, "web_search is unavailable"),
            }
        }
        let f = &config.fetch;
        let user_tools = match HttpToolFactory::new(
            f.policy.clone(),
            f.lookup.clone(),
            UserToolSettings::default(),
        ) {
            Ok(factory) => Some(Arc::new(factory)),
            Err(e) => {
                tracing::error!(error = %e, "registered tools are unavailable");
                None
            }
        };
        let mcp = match HttpMcpClient::new(f.policy.clone(), f.lookup.clone(), config.mcp.clone()) {
            Ok(client) => Some(Arc::new(client)),
            Err(e) => {
                tracing::error!(error = %e, "MCP tools are unavailable");
                None
            }
        };
        let engine = Arc::new(Engine {
            follow_up: follow_up.clone(),
            llm,
            tools: Arc::new(tools),
            user_tools: user_tools.clone().map(|f| f as Arc<dyn ToolFactory>),
            user_tool_specs: Default::default(),
            mcp: mcp.clone().map(|c| c as Arc<dyn McpConnector>),
            mcp_cache: Default::default(),
            agents,
            faults,
            config: engine,
        });
        Platform {
            store,
            queue,
            follow_up,
            engine,
            clock,
            config: Arc::new(config),
            user_tools,
            mcp,
        }
    }
}
