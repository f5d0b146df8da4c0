//! Tools users register (`POST /v1/tools`): each call is POSTed to the user's URL as JSON,
//! signed with HMAC-SHA256 over the body, with an `Idempotency-Key` that a redelivered
//! iteration repeats. The arguments were checked against the tool's schema before the call
//! (by the registry); the URL goes through the same SSRF guard as `http_fetch`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use longrun_domain::UserTool;
use longrun_domain::fingerprint;
use longrun_ports::{Tool, ToolContext, ToolFactory};
use serde_json::{Value, json};
use url::Url;

use crate::{EndpointSettings, FetchPolicy, Guarded, read_limited, refusal_in};

/// Calls are signed the way webhooks are.
pub use longrun_ports::signing::{SIGNATURE_HEADER, signature};
pub const IDEMPOTENCY_HEADER: &str = "idempotency-key";

#[derive(Clone, Debug)]
pub struct UserToolSettings {
    pub timeout: Duration,
    pub max_response_bytes: usize,
    /// Response text handed to the planner.
    pub max_chars: usize,
}

impl Default for UserToolSettings {
    fn default() -> Self {
        UserToolSettings {
            timeout: Duration::from_secs(20),
            max_response_bytes: 256 * 1024,
            max_chars: 8_000,
        }
    }
}

/// Builds [`HttpTool`]s on one guarded client, shared by every run.
pub type HttpToolFactory = Guarded<UserToolSettings>;

impl EndpointSettings for UserToolSettings {
    fn timeout(&self) -> Duration {
        self.timeout
    }
}

impl HttpToolFactory {
    /// Checks a registration's URL against the guard (DNS is checked again at every call).
    pub fn check_url(&self, url: &str) -> Result<(), String> {
        let parsed = Url::parse(url).map_err(|e| format!("url `{url}` is not valid: {e}"))?;
        self.policy
            .check_url(&parsed)
            .map_err(|r| format!("url `{url}` is refused: {r}"))
    }
}

impl ToolFactory for HttpToolFactory {
    fn build(&self, spec: &UserTool) -> Result<Arc<dyn Tool>, String> {
        self.check_url(&spec.url)?;
        Ok(Arc::new(HttpTool {
            spec: spec.clone(),
            client: self.client.clone(),
            policy: self.policy.clone(),
            settings: self.settings.clone(),
            seen: Mutex::new(HashMap::new()),
        }))
    }
}

/// One user tool for one iteration.
pub struct HttpTool {
    spec: UserTool,
    client: reqwest::Client,
    policy: Arc<FetchPolicy>,
    settings: UserToolSettings,
    /// Same-argument calls within the iteration, so each gets its own stable key.
    seen: Mutex<HashMap<String, u32>>,
}

impl HttpTool {
    /// `{run_id}#{iteration}#{call}`, where the call is named by the tool, a fingerprint of
    /// its arguments and its occurrence: the same on a redelivery of the iteration, whatever
    /// order concurrent executors call in.
    fn idempotency_key(&self, ctx: &dyn ToolContext, args: &Value) -> String {
        let print = fingerprint::of_json(args);
        let k = {
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            let n = seen.entry(print.clone()).or_insert(0);
            *n += 1;
            *n
        };
        format!(
            "{}#{}#{}.{}.{k}",
            ctx.run_id(),
            ctx.iteration(),
            self.spec.name,
            print
        )
    }
}

#[async_trait]
impl Tool for HttpTool {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn description(&self) -> &str {
        &self.spec.description
    }

    fn schema(&self) -> Value {
        self.spec.parameters.clone()
    }

    fn writes(&self) -> bool {
        self.spec.write
    }

    async fn call(&self, ctx: &dyn ToolContext, args: Value) -> Result<Value, String> {
        let name = &self.spec.name;
        let url = Url::parse(&self.spec.url).map_err(|e| format!("{name}: bad url: {e}"))?;
        self.policy
            .check_url(&url)
            .map_err(|r| format!("{name}: refused {url}: {r}"))?;
        let key = self.idempotency_key(ctx, &args);
        let body = json!({
            "tool": name,
            "run_id": ctx.run_id(),
            "iteration": ctx.iteration(),
            "args": args,
        })
        .to_string();
        let resp = self
            .client
            .post(url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(
                SIGNATURE_HEADER,
                signature(&self.spec.secret, body.as_bytes()),
            )
            .header(IDEMPOTENCY_HEADER, &key)
            .body(body)
            .send()
            .await
            .map_err(|e| match refusal_in(&e) {
                Some(r) => format!("{name}: refused {url}: {r}"),
                None if e.is_timeout() => format!("{name}: timed out"),
                None => format!(
                    "{name}: request failed: {}",
                    longrun_transport::describe(&e)
                ),
            })?;
        let status = resp.status();
        let (bytes, truncated) = read_limited(resp, self.settings.max_response_bytes)
            .await
            .map_err(|e| {
                let why = longrun_transport::describe(&e);
                format!("{name}: reading the response failed: {why}")
            })?;
        let text = String::from_utf8_lossy(&bytes);
        let clipped = longrun_domain::clip(&text, self.settings.max_chars);
        if !status.is_success() {
            return Err(format!("{name} answered {}: {clipped}", status.as_u16()));
        }
        let result = match serde_json::from_str::<Value>(&text) {
            Ok(v) if !truncated && text.chars().count() <= self.settings.max_chars => v,
            _ => Value::String(clipped),
        };
        Ok(json!({"status": status.as_u16(), "result": result, "truncated": truncated}))
    }

    fn sources(&self, _args: &Value, _result: &Value) -> Vec<String> {
        vec![format!("tool:{}", self.spec.name)]
    }
}
