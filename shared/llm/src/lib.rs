//! `LlmClient` implementations, pricing, retries and routing by `provider:model`.

pub mod anthropic;
pub mod openai;
pub mod pricing;
pub mod scripted;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use longrun_engine::{ChatRequest, ChatResponse, LlmClient, LlmError, LlmErrorKind};
use tracing::warn;

pub use anthropic::AnthropicClient;
pub use openai::OpenAiClient;
pub use pricing::{Price, PriceTable};
pub use scripted::{Script, ScriptedLlm};

/// A secret that cannot be printed by accident.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub base_ms: u64,
    pub max_delay_ms: u64,
}

impl RetryPolicy {
    /// 1 s, 2 s, 4 s with ±20 % jitter; a `Retry-After` longer than that wins.
    pub const PROVIDER: RetryPolicy = RetryPolicy {
        max_retries: 3,
        base_ms: 1_000,
        max_delay_ms: 30_000,
    };
    /// Scripted models simulate failures; waiting seconds would only slow tests and demos.
    pub const SIMULATED: RetryPolicy = RetryPolicy {
        max_retries: 3,
        base_ms: 5,
        max_delay_ms: 50,
    };

    pub fn delay_ms(&self, attempt: u32, retry_after_ms: Option<u64>) -> u64 {
        let base = self.base_ms.saturating_mul(1 << attempt.min(16));
        let jitter = (base as f64 * 0.2 * (fastrand::f64() * 2.0 - 1.0)) as i64;
        let d = (base as i64 + jitter).max(0) as u64;
        d.max(retry_after_ms.unwrap_or(0)).min(self.max_delay_ms)
    }
}

#[derive(Clone, Debug)]
pub struct LlmSettings {
    pub openai_base_url: String,
    pub openai_api_key: Option<Secret>,
    pub anthropic_base_url: String,
    pub anthropic_api_key: Option<Secret>,
    pub timeout: Duration,
    pub retry: RetryPolicy,
    pub prices: PriceTable,
}

impl Default for LlmSettings {
    fn default() -> Self {
        LlmSettings {
            openai_base_url: "https://api.openai.com/v1".into(),
            openai_api_key: None,
            anthropic_base_url: "https://api.anthropic.com".into(),
            anthropic_api_key: None,
            timeout: Duration::from_secs(120),
            retry: RetryPolicy::PROVIDER,
            prices: PriceTable::default(),
        }
    }
}

impl LlmSettings {
    /// `OPENAI_BASE_URL`, `OPENAI_API_KEY`, `LONGRUN_LLM_TIMEOUT_SECS`.
    pub fn from_env() -> Self {
        let mut s = LlmSettings::default();
        if let Ok(url) = std::env::var("OPENAI_BASE_URL") {
            s.openai_base_url = url;
        }
        s.openai_api_key = std::env::var("OPENAI_API_KEY")
            .ok()
            .filter(|k| !k.is_empty())
            .map(Secret::new);
        if let Ok(url) = std::env::var("ANTHROPIC_BASE_URL") {
            s.anthropic_base_url = url;
        }
        s.anthropic_api_key = std::env::var("ANTHROPIC_API_KEY")
            .ok()
            .filter(|k| !k.is_empty())
            .map(Secret::new);
        if let Some(secs) = std::env::var("LONGRUN_LLM_TIMEOUT_SECS")
            .ok()
            .and_then(|v| v.parse().ok())
        {
            s.timeout = Duration::from_secs(secs);
        }
        s
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error(
        "model `{0}` must be written provider:model, e.g. openai:gpt-4.1-mini or script:path/to/script.json"
    )]
    Malformed(String),
    #[error("unknown provider `{0}`; supported: script, openai, anthropic")]
    UnknownProvider(String),
    #[error(transparent)]
    Script(#[from] scripted::ScriptLoadError),
    #[error("{0}")]
    Client(String),
}

struct Route {
    client: Arc<dyn LlmClient>,
    retry: RetryPolicy,
}

/// Dispatches by the request's `provider:model`, retries retryable failures with backoff, and
/// prices every answer. Models are set up once at start-up; anything else is refused.
pub struct ModelRouter {
    routes: BTreeMap<String, Route>,
    prices: PriceTable,
}

/// One HTTP client for every provider route, built on first need.
fn shared_http(
    http: &mut Option<reqwest::Client>,
    settings: &LlmSettings,
) -> Result<reqwest::Client, ModelError> {
    if let Some(c) = http {
        return Ok(c.clone());
    }
    let c = openai::http_client(settings.timeout).map_err(|e| ModelError::Client(e.message))?;
    *http = Some(c.clone());
    Ok(c)
}

impl ModelRouter {
    pub fn build(models: &[String], settings: &LlmSettings) -> Result<Self, ModelError> {
        let mut routes = BTreeMap::new();
        let mut http = None;
        for spec in models {
            let (provider, model) = spec
                .split_once(':')
                .filter(|(p, m)| !p.is_empty() && !m.is_empty())
                .ok_or_else(|| ModelError::Malformed(spec.clone()))?;
            let route = match provider {
                "script" => {
                    let path = Path::new(model);
                    let name = path
                        .file_name()
                        .map(|n| n.to_string_lossy().to_string())
                        .unwrap_or_else(|| model.to_string());
                    Route {
                        client: Arc::new(ScriptedLlm::new(&name, Script::load(path)?)),
                        retry: RetryPolicy::SIMULATED,
                    }
                }
                "openai" => {
                    let client = shared_http(&mut http, settings)?;
                    Route {
                        client: Arc::new(OpenAiClient::new(
                            client,
                            &settings.openai_base_url,
                            settings.openai_api_key.clone(),
                            model,
                        )),
                        retry: settings.retry,
                    }
                }
                "anthropic" => {
                    let client = shared_http(&mut http, settings)?;
                    Route {
                        client: Arc::new(AnthropicClient::new(
                            client,
                            &settings.anthropic_base_url,
                            settings.anthropic_api_key.clone(),
                            model,
                        )),
                        retry: settings.retry,
                    }
                }
                other => return Err(ModelError::UnknownProvider(other.to_string())),
            };
            routes.insert(spec.clone(), route);
        }
        Ok(ModelRouter {
            routes,
            prices: settings.prices.clone(),
        })
    }

    /// Routes a model spec to an already-built client (tests, embedding).
    pub fn with_client(
        mut self,
        spec: &str,
        client: Arc<dyn LlmClient>,
        retry: RetryPolicy,
    ) -> Self {
        self.routes
            .insert(spec.to_string(), Route { client, retry });
        self
    }

    pub fn models(&self) -> Vec<String> {
        self.routes.keys().cloned().collect()
    }

    pub fn has_price(&self, spec: &str) -> bool {
        spec.split_once(':')
            .is_some_and(|(p, m)| self.prices.get(p, m).is_some())
    }
}

#[async_trait]
impl LlmClient for ModelRouter {
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let route = self.routes.get(&req.model).ok_or_else(|| {
            LlmError::new(
                LlmErrorKind::BadRequest,
                format!("model `{}` is not configured on this server", req.model),
            )
        })?;
        let mut attempt = 0;
        loop {
            match route.client.chat(req).await {
                Ok(mut resp) => {
                    if resp.cost_usd.is_none() {
                        resp.cost_usd = self
                            .prices
                            .get(&resp.provider, &resp.model)
                            .map(|p| p.cost(&resp.usage));
                    }
                    return Ok(resp);
                }
                Err(e) if e.is_retryable() && attempt < route.retry.max_retries => {
                    let delay = route.retry.delay_ms(attempt, e.retry_after_ms);
                    warn!(run_id = %req.run_id, iteration = req.iteration, kind = ?e.kind, attempt, delay_ms = delay, "model call failed; retrying");
                    tokio::time::sleep(Duration::from_millis(delay)).await;
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_bounded_jitter_and_honours_retry_after() {
        let p = RetryPolicy::PROVIDER;
        for (attempt, base) in [(0, 1000u64), (1, 2000), (2, 4000)] {
            let d = p.delay_ms(attempt, None);
            assert!(
                d >= base * 8 / 10 && d <= base * 12 / 10,
                "attempt {attempt}: {d}"
            );
        }
        assert_eq!(p.delay_ms(0, Some(7_000)), 7_000);
        assert_eq!(p.delay_ms(0, Some(999_000)), 30_000);
    }

    #[test]
    fn secrets_do_not_print() {
        assert_eq!(format!("{:?}", Secret::new("sk-123")), "Secret(***)");
    }

    #[test]
    fn a_model_without_provider_is_refused() {
        let err = ModelRouter::build(&["gpt-4".into()], &LlmSettings::default())
            .err()
            .unwrap();
        assert!(err.to_string().contains("provider:model"));
    }
}
