//! `LlmClient` implementations, pricing, retries and routing by `provider:model`.

pub mod anthropic;
pub mod limit;
pub mod openai;
pub mod scripted;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use longrun_ports::{ChatRequest, ChatResponse, LlmClient, LlmError, LlmErrorKind};
use longrun_ports::{Clock, SystemClock};
use tracing::warn;

pub use anthropic::AnthropicClient;
pub use limit::{Limiter, ModelLimit, ModelLimits};
pub use longrun_ports::pricing::{self, Price, PriceTable};
pub use openai::{OpenAiClient, Structured};
pub use scripted::{Script, ScriptedLlm};

/// A secret that cannot be printed by accident.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        let s = s.into();
        // Kept out of any error text a provider echoes it in.
        longrun_ports::redact::register(&s);
        Secret(s)
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

/// The usage fields a provider sent that are not in `known` (dotted paths one level deep,
/// e.g. `prompt_tokens_details.audio_tokens`), kept rather than dropped.
pub(crate) fn extra_usage(
    usage: &serde_json::Value, known: &[&str],
) -> BTreeMap<String, serde_json::Value> {
    let mut extra = BTreeMap::new();
    let Some(fields) = usage.as_object() else {
        return extra;
    };
    for (k, v) in fields {
        match v.as_object() {
            Some(inner) => {
                for (ik, iv) in inner {
                    let path = format!("{k}.{ik}");
                    if !known.contains(&path.as_str()) && !iv.is_null() {
                        extra.insert(path, iv.clone());
                    }
                }
            }
            None if !known.contains(&k.as_str()) && !v.is_null() => {
                extra.insert(k.clone(), v.clone());
            }
            None => {}
        }
    }
    extra
}

/// The model routes' retry policy is the workspace's one (`Backoff::PROVIDER` by default).
pub use longrun_domain::Backoff;

#[derive(Clone, Debug)]
pub struct LlmSettings {
    pub openai_base_url: String,
    pub openai_api_key: Option<Secret>,
    pub anthropic_base_url: String,
    pub anthropic_api_key: Option<Secret>,
    /// Perplexity speaks the OpenAI chat completions API at its own address (`perplexity:sonar`).
    pub perplexity_base_url: String,
    pub perplexity_api_key: Option<Secret>,
    pub timeout: Duration,
    pub retry: Backoff,
    pub prices: PriceTable,
    pub failover: Failover,
    pub openai_structured: Structured,
    /// Providers built outside this crate (`bedrock`, by `longrun-aws`).
    pub providers: Providers,
    /// Per-model capacity (`LONGRUN_MODEL_LIMITS`), shared by every run of the deployment.
    pub limits: ModelLimits,
}

/// Builds the client of one model of a provider this crate does not own.
pub type ProviderFactory = Arc<dyn Fn(&str) -> Result<Arc<dyn LlmClient>, String> + Send + Sync>;

#[derive(Clone, Default)]
pub struct Providers(pub BTreeMap<String, ProviderFactory>);

impl Providers {
    pub fn get(&self, name: &str) -> Option<&ProviderFactory> {
        self.0.get(name)
    }
    pub fn insert(&mut self, name: &str, factory: ProviderFactory) {
        self.0.insert(name.to_string(), factory);
    }
}

impl std::fmt::Debug for Providers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}

impl Default for LlmSettings {
    fn default() -> Self {
        LlmSettings {
            openai_base_url: "https://api.openai.com/v1".into(),
            openai_api_key: None,
            anthropic_base_url: "https://api.anthropic.com".into(),
            anthropic_api_key: None,
            perplexity_base_url: "https://api.perplexity.ai".into(),
            perplexity_api_key: None,
            timeout: Duration::from_secs(120),
            retry: Backoff::PROVIDER,
            prices: PriceTable::default(),
            failover: Failover::default(),
            openai_structured: Structured::default(),
            providers: Providers::default(),
            limits: ModelLimits::default(),
        }
    }
}

impl LlmSettings {
    /// `OPENAI_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_STRUCTURED_OUTPUT` (tool | json_schema |
    /// json_object), `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`, `PERPLEXITY_BASE_URL`,
    /// `PERPLEXITY_API_KEY`, `LONGRUN_LLM_TIMEOUT_SECS`,
    /// `LONGRUN_LLM_COOLDOWN_SECS`. Model limits come from the app's configuration, which
    /// validates them at start-up.
    pub fn from_env() -> Self {
        let mut s = LlmSettings::default();
        // A provider's base URL replaces the default when set; an empty key counts as unset.
        let provider = |base_url: &mut String, url_var: &str, key_var: &str| {
            if let Ok(url) = std::env::var(url_var) {
                *base_url = url;
            }
            let key = std::env::var(key_var).ok().filter(|k| !k.is_empty());
            key.map(Secret::new)
        };
        s.openai_api_key = provider(&mut s.openai_base_url, "OPENAI_BASE_URL", "OPENAI_API_KEY");
        s.anthropic_api_key = provider(
            &mut s.anthropic_base_url,
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_API_KEY",
        );
        s.perplexity_api_key = provider(
            &mut s.perplexity_base_url,
            "PERPLEXITY_BASE_URL",
            "PERPLEXITY_API_KEY",
        );
        if let Ok(mode) = std::env::var("OPENAI_STRUCTURED_OUTPUT") {
            s.openai_structured = match mode.as_str() {
                "json_schema" => Structured::JsonSchema,
                "json_object" => Structured::JsonObject,
                _ => Structured::Tool,
            };
        }
        let secs = |var: &str| {
            let secs = std::env::var(var).ok().and_then(|v| v.parse().ok());
            secs.map(Duration::from_secs)
        };
        if let Some(d) = secs("LONGRUN_LLM_COOLDOWN_SECS") {
            s.failover.cooldown = d;
        }
        if let Some(d) = secs("LONGRUN_LLM_TIMEOUT_SECS") {
            s.timeout = d;
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
    #[error("unknown provider `{0}`; supported: script, openai, anthropic, bedrock (on AWS)")]
    UnknownProvider(String),
    #[error(transparent)]
    Script(#[from] scripted::ScriptLoadError),
    #[error("{0}")]
    Client(String),
}

struct Route {
    client: Arc<dyn LlmClient>,
    retry: Backoff,
    health: Mutex<Health>,
    limiter: Option<Limiter>,
}

#[derive(Default)]
struct Health {
    /// Consecutive failed calls.
    failures: u32,
    degraded_until: Option<Instant>,
}

impl Health {
    fn is_degraded(&self, now: Instant) -> bool {
        self.degraded_until.is_some_and(|t| t > now)
    }
}

impl Route {
    fn new(client: Arc<dyn LlmClient>, retry: Backoff) -> Self {
        Route {
            client,
            retry,
            health: Mutex::default(),
            limiter: None,
        }
    }

    fn limited(mut self, limit: Option<&ModelLimit>) -> Self {
        self.limiter = limit.map(|l| Limiter::new(*l));
        self
    }

    /// One attempt, within the model's capacity: waits for it (the wait is reported as
    /// `queued_ms`), and a 429 lowers the model's rate for every run.
    async fn call(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let Some(limiter) = &self.limiter else {
            return self.client.chat(req).await;
        };
        let chars: usize = req.messages.iter().map(|m| m.content.len()).sum();
        let estimate = limit::estimate_tokens(chars, req.max_output_tokens);
        let asked = SystemClock.now_ms();
        let permit = limiter
            .acquire(&SystemClock, estimate, req.deadline_ms)
            .await
            .map_err(|wait_ms| {
                let mut e = LlmError::new(
                    LlmErrorKind::RateLimited,
                    "waiting for the model's capacity would pass the deadline",
                );
                e.requeue_after_ms = Some(wait_ms);
                e
            })?;
        let queued_ms = (SystemClock.now_ms() - asked).max(0) as u64;
        match self.client.chat(req).await {
            Ok(mut resp) => {
                let used = resp.usage.input_tokens
                    + resp.usage.cache_read_tokens
                    + resp.usage.cache_write_tokens
                    + resp.usage.output_tokens;
                limiter.release(permit, SystemClock.now_ms(), Some(used), true);
                resp.queued_ms += queued_ms;
                Ok(resp)
            }
            Err(mut e) => {
                limiter.release(permit, SystemClock.now_ms(), None, false);
                if e.kind == LlmErrorKind::RateLimited {
                    limiter.throttled(SystemClock.now_ms(), e.retry_after_ms);
                }
                e.queued_ms += queued_ms;
                Err(e)
            }
        }
    }
    fn health(&self) -> std::sync::MutexGuard<'_, Health> {
        self.health.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn is_degraded(&self, now: Instant) -> bool {
        self.health().is_degraded(now)
    }
}

/// When a failing provider is set aside, and for how long.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failover {
    /// Consecutive failed calls that mark a provider degraded.
    pub degrade_after: u32,
    /// How long a degraded provider is skipped while others are healthy; then it is tried again.
    pub cooldown: Duration,
}

impl Default for Failover {
    fn default() -> Self {
        Failover {
            degrade_after: 2,
            cooldown: Duration::from_secs(60),
        }
    }
}

/// A model's standing in the router, for status pages and tests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelHealth {
    pub model: String,
    pub consecutive_failures: u32,
    pub degraded: bool,
}

/// Routes by the request's `provider:model`, rotates round robin over the run's models,
/// fails over past degraded ones, retries retryable failures with backoff, and prices every
/// answer. Models are set up once at start-up; anything else is refused.
pub struct ModelRouter {
    routes: BTreeMap<String, Route>,
    prices: PriceTable,
    failover: Failover,
    turn: AtomicUsize,
}

/// One HTTP client for every provider route, built on first need.
fn shared_http(
    http: &mut Option<reqwest::Client>, settings: &LlmSettings,
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
            let client: Arc<dyn LlmClient> = match provider {
                "script" => {
                    let path = Path::new(model);
                    let name = path
                        .file_name()
                        .map(|n| n.to_string_lossy().to_string())
                        .unwrap_or_else(|| model.to_string());
                    let client = Arc::new(ScriptedLlm::new(&name, Script::load(path)?));
                    let route =
                        Route::new(client, Backoff::SIMULATED).limited(settings.limits.0.get(spec));
                    routes.insert(spec.clone(), route);
                    continue;
                }
                "openai" | "perplexity" => {
                    let s = settings;
                    let (base_url, key, structured) = match provider {
                        "openai" => (&s.openai_base_url, &s.openai_api_key, s.openai_structured),
                        // Perplexity answers JSON through `response_format`; it has no forced
                        // tool call.
                        _ => (
                            &s.perplexity_base_url,
                            &s.perplexity_api_key,
                            Structured::JsonSchema,
                        ),
                    };
                    let http = shared_http(&mut http, settings)?;
                    let client = OpenAiClient::new(http, base_url, key.clone(), model);
                    Arc::new(client.structured(structured).provider(provider))
                }
                "anthropic" => Arc::new(AnthropicClient::new(
                    shared_http(&mut http, settings)?,
                    &settings.anthropic_base_url,
                    settings.anthropic_api_key.clone(),
                    model,
                )),
                other => match settings.providers.get(other) {
                    Some(factory) => factory(model).map_err(ModelError::Client)?,
                    None => return Err(ModelError::UnknownProvider(other.to_string())),
                },
            };
            routes.insert(
                spec.clone(),
                Route::new(client, settings.retry).limited(settings.limits.0.get(spec)),
            );
        }
        Ok(ModelRouter {
            routes,
            prices: settings.prices.clone(),
            failover: settings.failover,
            turn: AtomicUsize::new(0),
        })
    }

    /// Routes a model spec to an already-built client (tests, embedding).
    pub fn with_client(mut self, spec: &str, client: Arc<dyn LlmClient>, retry: Backoff) -> Self {
        self.routes
            .insert(spec.to_string(), Route::new(client, retry));
        self
    }

    pub fn with_failover(mut self, failover: Failover) -> Self {
        self.failover = failover;
        self
    }

    pub fn models(&self) -> Vec<String> {
        self.routes.keys().cloned().collect()
    }

    pub fn has_price(&self, spec: &str) -> bool {
        spec.split_once(':')
            .is_some_and(|(p, m)| self.prices.get(p, m).is_some())
    }

    pub fn health(&self) -> Vec<ModelHealth> {
        let now = Instant::now();
        self.routes
            .iter()
            .map(|(model, r)| {
                let h = r.health();
                ModelHealth {
                    model: model.clone(),
                    consecutive_failures: h.failures,
                    degraded: h.is_degraded(now),
                }
            })
            .collect()
    }

    /// The models of one call in the order to try them: round robin over the request's
    /// models, healthy ones before degraded ones (which are still tried when all are).
    fn order<'a>(&'a self, req: &ChatRequest) -> Result<Vec<(&'a str, &'a Route)>, LlmError> {
        let mut specs: Vec<&str> = vec![req.model.as_str()];
        for m in &req.rotation {
            if !specs.contains(&m.as_str()) {
                specs.push(m);
            }
        }
        let mut routes = specs
            .into_iter()
            .map(|spec| {
                self.routes
                    .get_key_value(spec)
                    .map(|(k, r)| (k.as_str(), r))
                    .ok_or_else(|| {
                        LlmError::new(
                            LlmErrorKind::BadRequest,
                            format!("model `{spec}` is not configured on this server"),
                        )
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if routes.len() > 1 {
            let turn = self.turn.fetch_add(1, Ordering::Relaxed) % routes.len();
            routes.rotate_left(turn);
            let now = Instant::now();
            routes.sort_by_key(|(_, r)| r.is_degraded(now));
        }
        Ok(routes)
    }

    fn record(&self, spec: &str, route: &Route, ok: bool) {
        let mut h = route.health();
        if ok {
            *h = Health::default();
            return;
        }
        h.failures += 1;
        if h.failures >= self.failover.degrade_after {
            if !h.is_degraded(Instant::now()) {
                warn!(
                    model = spec,
                    failures = h.failures,
                    cooldown_s = self.failover.cooldown.as_secs(),
                    "model marked degraded"
                );
            }
            h.degraded_until = Some(Instant::now() + self.failover.cooldown);
        }
    }
}

#[async_trait]
impl LlmClient for ModelRouter {
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let order = self.order(req)?;
        let max_retries = order[0].1.retry.max_retries.unwrap_or(u32::MAX);
        let mut attempt = 0u32;
        // The request as retried: the same call, its `attempt` counted (built on the first retry).
        let mut retried: Option<ChatRequest> = None;
        loop {
            // Each retry moves to the next model in the order; with one model it is a retry.
            // Moving to a model not yet tried in this call needs no wait; coming back does.
            let (spec, route) = order[attempt as usize % order.len()];
            match route.call(retried.as_ref().unwrap_or(req)).await {
                Ok(mut resp) => {
                    self.record(spec, route, true);
                    if resp.cost_usd.is_none() {
                        resp.cost_usd = self
                            .prices
                            .get(&resp.provider, &resp.model)
                            .map(|p| p.cost(&resp.usage));
                    }
                    return Ok(resp);
                }
                // Capacity did not come before the deadline: the claim is handed back.
                Err(e) if e.requeue_after_ms.is_some() => return Err(e),
                Err(e) if e.is_retryable() && attempt < max_retries => {
                    self.record(spec, route, false);
                    let (next, _) = order[(attempt as usize + 1) % order.len()];
                    let delay = if (attempt as usize + 1) < order.len() {
                        0
                    } else {
                        route.retry.honouring(
                            attempt,
                            fastrand::f64() * 2.0 - 1.0,
                            e.retry_after_ms,
                        )
                    };
                    if let Some(deadline) = req.deadline_ms
                        && SystemClock.now_ms() + delay as i64 > deadline
                    {
                        let mut e = e;
                        e.requeue_after_ms = Some(delay.max(1_000));
                        return Err(e);
                    }
                    warn!(run_id = %req.run_id, iteration = req.iteration, model = spec, next, kind = ?e.kind, attempt, delay_ms = delay, "model call failed; retrying");
                    tokio::time::sleep(Duration::from_millis(delay)).await;
                    attempt += 1;
                    retried.get_or_insert_with(|| req.clone()).attempt = attempt;
                }
                Err(e) => {
                    if e.is_retryable() {
                        self.record(spec, route, false);
                    }
                    return Err(e);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
