//! Server configuration, validated when it is built so a bad value fails at start-up.

use std::collections::HashMap;
use std::sync::Arc;

use longrun_domain::Budgets;
use longrun_ports::pricing::PriceTable;
use longrun_ports::{FetchPolicy, HostLookup};

/// Bearer token → user id. Tokens are never logged or printed by `Debug`.
#[derive(Clone, Default)]
pub struct Tokens(HashMap<String, String>);

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tokens({} configured)", self.0.len())
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ConfigError {
    #[error("LONGRUN_TOKENS entry `{0}` must be token:user with both parts non-empty")]
    BadToken(String),
    #[error("no model configured; pass --model provider:model")]
    NoModel,
}

impl Tokens {
    /// `token:user,token:user`.
    pub fn parse(spec: &str) -> Result<Tokens, ConfigError> {
        let mut map = HashMap::new();
        for entry in spec.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (token, user) = entry
                .split_once(':')
                .filter(|(t, u)| !t.trim().is_empty() && !u.trim().is_empty())
                .ok_or_else(|| {
                    ConfigError::BadToken(entry.chars().take(3).collect::<String>() + "…")
                })?;
            longrun_ports::redact::register(token.trim());
            map.insert(token.trim().to_string(), user.trim().to_string());
        }
        Ok(Tokens(map))
    }

    pub fn insert(&mut self, token: &str, user: &str) {
        // A bearer token is never echoed into stored error text either.
        longrun_ports::redact::register(token);
        self.0.insert(token.to_string(), user.to_string());
    }

    pub fn user_for(&self, token: &str) -> Option<&str> {
        self.0.get(token).map(String::as_str)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[derive(Clone, Debug)]
pub struct AppConfig {
    pub tokens: Tokens,
    /// Active (not ended) runs one user may have at once.
    pub active_limit: u32,
    /// Models runs may use; the first is the default.
    pub models: Vec<String>,
    /// Models with a known price; `max_cost_usd` is refused on others.
    pub priced_models: Vec<String>,
    pub default_budgets: Budgets,
    pub app_base_url: String,
    pub max_objective_bytes: usize,
    pub fetch: FetchConfig,
    /// How deep runs may nest through `spawn_run` (`LONGRUN_MAX_RUN_DEPTH`, default 16).
    pub max_run_depth: u32,
    /// The one user who sees the tasks a terminal started with `longrun task` on this machine
    /// (`LONGRUN_TASKS_USER`; `serve` without `LONGRUN_TOKENS`: `local`); `None`: nobody.
    pub tasks_user: Option<String>,
}

/// The product's spec: at most 3 runs of one user active at once.
pub const DEFAULT_ACTIVE_LIMIT: u32 = 3;

/// The `http_fetch` tool: on by default, behind the SSRF guard; the deployment may narrow it
/// with allow/deny host lists, or turn it off. The same policy checks every URL a user
/// registers (tools, MCP servers, webhooks) and every call to one.
#[derive(Clone)]
pub struct FetchConfig {
    pub enabled: bool,
    pub policy: FetchPolicy,
    /// Where every outbound call resolves names; `None`: the system resolver.
    pub lookup: Option<Arc<dyn HostLookup>>,
}

impl std::fmt::Debug for FetchConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FetchConfig")
            .field("enabled", &self.enabled)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl Default for FetchConfig {
    fn default() -> Self {
        FetchConfig {
            enabled: true,
            policy: FetchPolicy::default(),
            lookup: None,
        }
    }
}

fn host_list(v: Option<String>) -> Vec<String> {
    v.unwrap_or_default()
        .split(',')
        .map(|h| h.trim().to_ascii_lowercase())
        .filter(|h| !h.is_empty())
        .collect()
}

impl FetchConfig {
    /// `LONGRUN_FETCH=off` turns the tool off; `LONGRUN_FETCH_ALLOW` (only these hosts and
    /// their subdomains), `LONGRUN_FETCH_DENY` and `LONGRUN_FETCH_TRUSTED_PRIVATE` (names that
    /// may resolve to private addresses, e.g. an intranet wiki, or `localhost` named outright)
    /// are comma-separated hosts (the last also takes IP literals: `127.0.0.1` reaches
    /// `http://127.0.0.1`).
    pub fn from_env() -> FetchConfig {
        let var = |k: &str| std::env::var(k).ok();
        FetchConfig {
            enabled: !matches!(var("LONGRUN_FETCH").as_deref(), Some("off" | "false" | "0")),
            policy: FetchPolicy {
                allow: host_list(var("LONGRUN_FETCH_ALLOW")),
                deny: host_list(var("LONGRUN_FETCH_DENY")),
                trusted_private: host_list(var("LONGRUN_FETCH_TRUSTED_PRIVATE")),
            },
            ..FetchConfig::default()
        }
    }
}

/// The configured models the price table knows: only these can carry a cost budget.
fn priced(models: &[String]) -> Vec<String> {
    let prices = PriceTable::default();
    models
        .iter()
        .filter(|m| {
            m.split_once(':')
                .is_some_and(|(provider, model)| prices.get(provider, model).is_some())
        })
        .cloned()
        .collect()
}

impl AppConfig {
    pub fn new(tokens: Tokens, models: Vec<String>) -> Result<AppConfig, ConfigError> {
        if models.is_empty() {
            return Err(ConfigError::NoModel);
        }
        Ok(AppConfig {
            tokens,
            active_limit: DEFAULT_ACTIVE_LIMIT,
            priced_models: priced(&models),
            models,
            default_budgets: Budgets::default(),
            app_base_url: "http://127.0.0.1:8080".into(),
            max_objective_bytes: 16 * 1024,
            fetch: FetchConfig::from_env(),
            tasks_user: None,
            max_run_depth: std::env::var("LONGRUN_MAX_RUN_DEPTH")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(longrun_engine::tools::MAX_CHILD_DEPTH),
        })
    }

    pub fn default_model(&self) -> &str {
        &self.models[0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_parse_and_bad_entries_do_not_echo_the_secret() {
        let t = Tokens::parse("abc:alice, def:bob").unwrap();
        assert_eq!(t.user_for("def"), Some("bob"));
        let err = Tokens::parse("supersecret").unwrap_err().to_string();
        assert!(!err.contains("supersecret"), "{err}");
        assert!(!format!("{t:?}").contains("abc"));
    }

    #[test]
    fn only_models_with_a_known_price_are_listed_as_priced() {
        let models = vec![
            "script:demo.json".to_string(),
            "openai:gpt-4.1-mini".to_string(),
            "openai:my-finetune".to_string(),
        ];

        let c = AppConfig::new(Tokens::default(), models).unwrap();

        assert_eq!(
            c.priced_models,
            vec![
                "script:demo.json".to_string(),
                "openai:gpt-4.1-mini".to_string()
            ]
        );
    }
}
