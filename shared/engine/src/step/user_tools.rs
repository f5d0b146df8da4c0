//! The tools a run may call: the built-ins plus its owner's registered tools and the tools
//! of its owner's MCP servers, whose specs and listings are cached.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

use futures_util::future::join_all;
use tracing::warn;

use longrun_domain::run::Run;

use super::{Engine, EngineError};
use crate::tools::{ToolRegistry, is_mcp_tool};
use longrun_domain::{McpServer, UserTool};
use longrun_ports::{CatalogExt, McpConnector, McpToolSpec, Tool};

/// Users' registered tool specs, re-read at most every [`UserToolCache::TTL_MS`]: one store
/// read per user per half minute instead of one per iteration. The tools themselves are
/// built per iteration (their idempotency counters are per iteration).
#[derive(Default)]
pub struct UserToolCache(Mutex<HashMap<String, (i64, Vec<UserTool>)>>);

impl UserToolCache {
    pub const TTL_MS: i64 = 30_000;
    const MAX_USERS: usize = 10_000;

    fn get(&self, user_id: &str, now: i64) -> Option<Vec<UserTool>> {
        let map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.get(user_id)
            .filter(|(at, _)| now - at < Self::TTL_MS)
            .map(|(_, specs)| specs.clone())
    }

    fn put(&self, user_id: &str, now: i64, specs: Vec<UserTool>) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= Self::MAX_USERS {
            map.retain(|_, (at, _)| now - *at < Self::TTL_MS);
        }
        map.insert(user_id.to_string(), (now, specs));
    }
}

/// Values that expire, bounded in count (expired entries are dropped when it fills).
struct Expiring<K, V>(Mutex<HashMap<K, (i64, V)>>);

impl<K, V> Default for Expiring<K, V> {
    fn default() -> Self {
        Expiring(Mutex::new(HashMap::new()))
    }
}

impl<K: Eq + Hash, V: Clone> Expiring<K, V> {
    const MAX_ENTRIES: usize = 10_000;

    fn get(&self, key: &K, now: i64) -> Option<V> {
        let map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.get(key)
            .filter(|(expires, _)| now < *expires)
            .map(|(_, v)| v.clone())
    }

    fn put(&self, key: K, expires: i64, value: V, now: i64) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= Self::MAX_ENTRIES {
            map.retain(|_, (e, _)| now < *e);
        }
        map.insert(key, (expires, value));
    }
}

/// Users' MCP servers (re-read like registered tools) and each server's tool listing, asked
/// of the server at most every [`McpCache::LIST_TTL_MS`]. A server that could not be listed
/// is asked again after [`McpCache::FAILED_TTL_MS`], so a dead server costs one timeout per
/// few iterations, not one per iteration.
#[derive(Default)]
pub struct McpCache {
    servers: Expiring<String, Vec<McpServer>>,
    /// By (user, server name, url, created_at): a replaced registration is listed afresh.
    listings: Expiring<(String, String, String, i64), Vec<McpToolSpec>>,
}

impl McpCache {
    pub const SERVERS_TTL_MS: i64 = 30_000;
    pub const LIST_TTL_MS: i64 = 60_000;
    pub const FAILED_TTL_MS: i64 = 10_000;
}

impl Engine {
    /// The tools the run may use: the built-ins plus its owner's registered tools and MCP
    /// tools, narrowed to its `allowed_tools`.
    pub(super) async fn tools_for(&self, run: &Run) -> Result<Arc<ToolRegistry>, EngineError> {
        // A run narrowed to no MCP tool costs its servers no listing.
        let wants_mcp = run
            .allowed_tools
            .as_ref()
            .is_none_or(|allowed| allowed.iter().any(|n| is_mcp_tool(n)));
        let tools = self.owner_tools(&run.user_id, wants_mcp).await?;
        Ok(match &run.allowed_tools {
            Some(allowed) => Arc::new(tools.only(allowed)),
            None => tools,
        })
    }

    /// The built-ins, plus the tools the user registered and those of the user's MCP servers.
    async fn owner_tools(
        &self, user_id: &str, wants_mcp: bool,
    ) -> Result<Arc<ToolRegistry>, EngineError> {
        let mut extra = self.registered_tools(user_id).await?;
        if wants_mcp {
            extra.extend(self.mcp_tools(user_id).await?);
        }
        if extra.is_empty() {
            return Ok(self.tools.clone());
        }
        Ok(Arc::new(self.tools.with_extra(extra)))
    }

    async fn registered_tools(&self, user_id: &str) -> Result<Vec<Arc<dyn Tool>>, EngineError> {
        let Some(factory) = &self.user_tools else {
            return Ok(vec![]);
        };
        let now = self.now();
        let specs = match self.user_tool_specs.get(user_id, now) {
            Some(specs) => specs,
            None => {
                let specs = self.store().tools(user_id).await?;
                self.user_tool_specs.put(user_id, now, specs.clone());
                specs
            }
        };
        Ok(specs
            .iter()
            .filter_map(|spec| match factory.build(spec) {
                Ok(t) => Some(t),
                Err(e) => {
                    warn!(tool = %spec.name, error = %e, "a user tool was left out");
                    None
                }
            })
            .collect())
    }

    /// The tools of the user's MCP servers. A server that cannot be listed (down, refused,
    /// answering garbage) is left out with a warning; the iteration goes on without it.
    async fn mcp_tools(&self, user_id: &str) -> Result<Vec<Arc<dyn Tool>>, EngineError> {
        let Some(mcp) = &self.mcp else {
            return Ok(vec![]);
        };
        let now = self.now();
        let key = user_id.to_string();
        let servers = match self.mcp_cache.servers.get(&key, now) {
            Some(servers) => servers,
            None => {
                let servers = self.store().mcp_servers(user_id).await?;
                let expires = now + McpCache::SERVERS_TTL_MS;
                self.mcp_cache
                    .servers
                    .put(key, expires, servers.clone(), now);
                servers
            }
        };
        let listings = join_all(
            servers
                .iter()
                .map(|server| self.mcp_listing(mcp.as_ref(), user_id, server, now)),
        )
        .await;
        let mut tools = vec![];
        for (server, specs) in servers.iter().zip(listings) {
            for spec in &specs {
                match mcp.build(server, spec) {
                    Ok(t) => tools.push(t),
                    Err(e) => {
                        warn!(server = %server.name, tool = %spec.name, error = %e,
                              "an MCP tool was left out");
                    }
                }
            }
        }
        Ok(tools)
    }

    async fn mcp_listing(
        &self, mcp: &dyn McpConnector, user_id: &str, server: &McpServer, now: i64,
    ) -> Vec<McpToolSpec> {
        let key = (
            user_id.to_string(),
            server.name.clone(),
            server.url.clone(),
            server.created_at,
        );
        if let Some(specs) = self.mcp_cache.listings.get(&key, now) {
            return specs;
        }
        let (specs, ttl) = match mcp.list(server).await {
            Ok(specs) => (specs, McpCache::LIST_TTL_MS),
            Err(e) => {
                // Its answer may quote the bearer secret it was sent: scrubbed even in logs.
                let error = longrun_ports::redact::scrubbed(&e);
                warn!(server = %server.name, %error, "an MCP server's tools were left out");
                (vec![], McpCache::FAILED_TTL_MS)
            }
        };
        self.mcp_cache
            .listings
            .put(key, now + ttl, specs.clone(), now);
        specs
    }
}
