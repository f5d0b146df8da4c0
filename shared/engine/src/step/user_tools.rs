//! The tools a run may call: the built-ins plus its owner's registered tools, whose specs are
//! cached per user.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tracing::warn;

use longrun_domain::run::Run;

use super::{Engine, EngineError};
use crate::ports::UserTool;
use crate::tools::ToolRegistry;

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

impl Engine {
    /// The tools the run may use: the built-ins plus its owner's registered tools, narrowed to
    /// its `allowed_tools`.
    pub(super) async fn tools_for(&self, run: &Run) -> Result<Arc<ToolRegistry>, EngineError> {
        let tools = self.owner_tools(&run.user_id).await?;
        Ok(match &run.allowed_tools {
            Some(allowed) => Arc::new(tools.only(allowed)),
            None => tools,
        })
    }

    /// The built-ins, plus the tools the user registered.
    async fn owner_tools(&self, user_id: &str) -> Result<Arc<ToolRegistry>, EngineError> {
        let Some(factory) = &self.user_tools else {
            return Ok(self.tools.clone());
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
        if specs.is_empty() {
            return Ok(self.tools.clone());
        }
        let extra = specs
            .iter()
            .filter_map(|spec| match factory.build(spec) {
                Ok(t) => Some(t),
                Err(e) => {
                    warn!(tool = %spec.name, error = %e, "a user tool was left out");
                    None
                }
            })
            .collect();
        Ok(Arc::new(self.tools.with_extra(extra)))
    }
}
