//! The composition root: which adapter stands behind each port, and the settings only the
//! adapters read. The binaries (`longrun`, the Lambda functions), the simulator and the tests
//! build their platform here; the use cases (`longrun-service`) see ports only.

#[cfg(feature = "aws")]
pub mod aws;
#[cfg(feature = "embedded")]
pub mod embedded;

use std::sync::Arc;

use longrun_engine::tools::SpawnRun;
use longrun_engine::{Engine, EngineConfig, FollowUp, ToolRegistry};
use longrun_llm::{LlmSettings, ModelLimits};
use longrun_outbound::{
    FetchSettings, HttpFetch, HttpMcpClient, HttpToolFactory, McpSettings, SearchSettings,
    SystemLookup, UserToolSettings, WebSearch, WebhookSender,
};
use longrun_ports::{AgentHost, Clock, Faults, HostLookup, LlmClient, Notifier};
use longrun_ports::{McpConnector, StepQueue, Store, ToolFactory, WebhookPoster};
use longrun_service::{AppConfig, Platform};

#[cfg(feature = "embedded")]
pub use embedded::{Embedded, Running, embedded};

#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    #[error("cannot open the data directory {path}: {message}")]
    DataDir { path: String, message: String },
    #[error(transparent)]
    Model(#[from] longrun_llm::ModelError),
    #[error("configuration: {0}")]
    Setting(String),
}

/// What only the adapters read: the fetch tool's bounds, the search provider, the MCP
/// client's bounds and the per-model capacity. The use cases' settings are `AppConfig`.
#[derive(Clone, Debug, Default)]
pub struct Adapters {
    pub fetch: FetchSettings,
    /// The `web_search` tool's provider and key; `None`: no web search.
    pub search: Option<SearchSettings>,
    /// Bounds on calls to users' MCP servers (time, size, tools per server).
    pub mcp: McpSettings,
    /// Per-model capacity shared by every run (`--model-limit`, `LONGRUN_MODEL_LIMITS`).
    pub model_limits: ModelLimits,
}

impl Adapters {
    /// `web_search` from `LONGRUN_SEARCH` and the provider's key variable (`serve`, embedded
    /// runs); on AWS the key comes from a secret instead.
    pub fn with_search_from_env(mut self) -> Result<Adapters, PlatformError> {
        self.search = SearchSettings::from_env().map_err(PlatformError::Setting)?;
        Ok(self)
    }

    /// The model clients' settings: the providers' environment, this deployment's limits.
    pub fn llm_settings(&self) -> LlmSettings {
        let mut settings = LlmSettings::from_env();
        settings.limits = self.model_limits.clone();
        settings
    }
}

/// The resolver every outbound call goes through: the configured one, else the system's.
fn lookup(config: &AppConfig) -> Arc<dyn HostLookup> {
    config
        .fetch
        .lookup
        .clone()
        .unwrap_or_else(|| Arc::new(SystemLookup))
}

/// The platform over these ports: the engine with the built-in tools (and `http_fetch` and
/// `web_search` where configured), users' tools and MCP servers, and the webhook poster.
#[allow(clippy::too_many_arguments)]
pub fn assemble(
    store: Arc<dyn Store>, queue: Arc<dyn StepQueue>, notifier: Arc<dyn Notifier>,
    llm: Arc<dyn LlmClient>, config: AppConfig, adapters: &Adapters, clock: Arc<dyn Clock>,
    faults: Arc<dyn Faults>, mut engine: EngineConfig, agents: Option<Arc<dyn AgentHost>>,
) -> Result<Platform, PlatformError> {
    engine.app_base_url = config.app_base_url.clone();
    let follow_up = FollowUp {
        store: store.clone(),
        queue: queue.clone(),
        notifier,
        clock: clock.clone(),
        app_base_url: config.app_base_url.clone(),
    };
    let policy = config.fetch.policy.clone();
    let lookup = lookup(&config);
    let mut tools = ToolRegistry::builtin();
    tools.register(Arc::new(SpawnRun {
        max_depth: config.max_run_depth,
    }));
    if config.fetch.enabled {
        match HttpFetch::new(policy.clone(), lookup.clone(), adapters.fetch.clone()) {
            Ok(fetch) => tools.register(Arc::new(fetch)),
            Err(e) => tracing::error!(error = %e, "http_fetch is unavailable"),
        }
    }
    if let Some(search) = &adapters.search {
        match WebSearch::new(search.clone()) {
            Ok(search) => tools.register(Arc::new(search)),
            Err(e) => tracing::error!(error = %e, "web_search is unavailable"),
        }
    }
    let user_tools: Option<Arc<dyn ToolFactory>> =
        match HttpToolFactory::new(policy.clone(), lookup.clone(), UserToolSettings::default()) {
            Ok(factory) => Some(Arc::new(factory)),
            Err(e) => {
                tracing::error!(error = %e, "registered tools are unavailable");
                None
            }
        };
    let mcp: Option<Arc<dyn McpConnector>> =
        match HttpMcpClient::new(policy.clone(), lookup.clone(), adapters.mcp.clone()) {
            Ok(client) => Some(Arc::new(client)),
            Err(e) => {
                tracing::error!(error = %e, "MCP tools are unavailable");
                None
            }
        };
    let webhooks: Arc<dyn WebhookPoster> = Arc::new(
        WebhookSender::new(policy, lookup)
            .map_err(|e| PlatformError::Setting(format!("webhook client: {e}")))?,
    );
    let engine = Arc::new(Engine {
        follow_up: follow_up.clone(),
        llm,
        tools: Arc::new(tools),
        user_tools: user_tools.clone(),
        user_tool_specs: Default::default(),
        mcp: mcp.clone(),
        mcp_cache: Default::default(),
        agents,
        faults,
        config: engine,
    });
    Ok(Platform {
        store,
        queue,
        follow_up,
        engine,
        clock,
        config: Arc::new(config),
        user_tools,
        mcp,
        webhooks,
    })
}

/// Logs on stderr: human lines for the CLI (`json` false), JSON lines for Lambda and for
/// `--log-format json`; `RUST_LOG` overrides the level. Colour only for a person at a terminal:
/// a log redirected to a file or a pipe, or read with `NO_COLOR` set, gets no escape codes.
pub fn init_tracing(json: bool, default_level: &str) {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    let terminal = std::io::stderr().is_terminal();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(!json && colour(terminal, std::env::var_os("NO_COLOR")));
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}

/// Whether to colour a log: on a terminal, unless `NO_COLOR` is set to something
/// (<https://no-color.org>: an empty value does not count).
fn colour(terminal: bool, no_color: Option<std::ffi::OsString>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::colour;

    #[test]
    fn logs_are_coloured_only_on_a_terminal_without_no_color() {
        assert!(colour(true, None));
        assert!(colour(true, Some("".into())));
        assert!(!colour(true, Some("1".into())));
        assert!(!colour(false, None));
    }
}
