//! The serverless wiring: DynamoDB store, SQS FIFO queue, SNS notifier, configured from the
//! environment the infrastructure sets on every function.

use std::sync::Arc;

use longrun_aws::{AwsClients, DynamoDbRunStore, SnsNotifier, SqsStepQueue};
use longrun_engine::EngineConfig;
use longrun_llm::{LlmSettings, ModelRouter, Secret};
use longrun_ports::{Faults, NoFaults, SystemClock};
use longrun_ports::{LlmClient, Sealer};

use longrun_service::{AppConfig, Platform, Tokens};

use crate::{Adapters, PlatformError};

/// Where the deployed resources are, and the key that seals catalog secrets in the table.
#[derive(Clone, Debug)]
pub struct AwsSettings {
    pub table: String,
    pub queue_url: String,
    pub topic_arn: String,
    pub sealer: Sealer,
}

/// `LONGRUN_SEAL_KEY_SECRET`: the Secrets Manager secret whose value (at least 32 random
/// characters; the stack generates 64) seals tool, MCP and webhook secrets in the table.
pub const SEAL_KEY_SECRET: &str = "LONGRUN_SEAL_KEY_SECRET";

fn var(name: &str) -> Result<String, PlatformError> {
    std::env::var(name)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .ok_or_else(|| PlatformError::Setting(format!("{name} is not set")))
}

impl AwsSettings {
    /// `LONGRUN_TABLE`, `LONGRUN_QUEUE_URL`, `LONGRUN_TOPIC_ARN`, and the sealing key read
    /// from the secret `LONGRUN_SEAL_KEY_SECRET` names. Required: a deployment never keeps
    /// registered secrets in the table in plain text.
    pub async fn from_env(clients: &AwsClients) -> Result<AwsSettings, PlatformError> {
        let name = var(SEAL_KEY_SECRET)?;
        let text = longrun_aws::secrets::secret_string(&clients.secrets, &name)
            .await
            .map_err(|e| PlatformError::Setting(e.to_string()))?;
        let sealer = Sealer::from_secret_text(&text)
            .map_err(|e| PlatformError::Setting(format!("secret `{name}`: {e}")))?;
        Ok(AwsSettings {
            table: var("LONGRUN_TABLE")?,
            queue_url: var("LONGRUN_QUEUE_URL")?,
            topic_arn: var("LONGRUN_TOPIC_ARN")?,
            sealer,
        })
    }
}

/// `LONGRUN_MODELS` (comma-separated, first is the default), `LONGRUN_APP_BASE_URL`,
/// `LONGRUN_ACTIVE_LIMIT`, `LONGRUN_MODEL_LIMITS`. Users come from the JWT authorizer, so no
/// tokens.
pub fn config_from_env() -> Result<(AppConfig, Adapters), PlatformError> {
    let models: Vec<String> = var("LONGRUN_MODELS")?
        .split(',')
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty())
        .collect();
    let mut config = AppConfig::new(Tokens::default(), models)
        .map_err(|e| PlatformError::Setting(e.to_string()))?;
    if let Ok(url) = var("LONGRUN_APP_BASE_URL") {
        config.app_base_url = url;
    }
    if let Ok(limit) = var("LONGRUN_ACTIVE_LIMIT") {
        config.active_limit = limit
            .parse()
            .map_err(|_| PlatformError::Setting("LONGRUN_ACTIVE_LIMIT must be a number".into()))?;
    }
    let mut adapters = Adapters::default();
    if let Ok(limits) = var("LONGRUN_MODEL_LIMITS") {
        adapters.model_limits = longrun_llm::ModelLimits::parse([limits.as_str()])
            .map_err(|e| PlatformError::Setting(e.to_string()))?;
    }
    Ok((config, adapters))
}

/// `LONGRUN_RETENTION_DAYS`: items of runs ended (and notified) this many days ago expire by
/// the table's TTL; unset keeps every run.
pub fn retention_days() -> Result<Option<u32>, PlatformError> {
    match var("LONGRUN_RETENTION_DAYS") {
        Err(_) => Ok(None),
        Ok(v) => match v.trim().parse::<u32>() {
            Ok(d) if d >= 1 => Ok(Some(d)),
            _ => Err(PlatformError::Setting(format!(
                "LONGRUN_RETENTION_DAYS must be a whole number of days >= 1, got {v:?}"
            ))),
        },
    }
}

/// `LONGRUN_LLM_KEY_SECRET`: the Secrets Manager secret holding the provider's API key.
pub const LLM_KEY_SECRET: &str = "LONGRUN_LLM_KEY_SECRET";

/// `settings` with the provider keys read from the Secrets Manager secret `secret`, when one
/// is named; the deployed stack passes a name, never a key. The secret is either one key (used
/// by the OpenAI-compatible and the Anthropic provider alike) or a JSON object of keys by
/// provider, `{"openai": "sk-...", "anthropic": "sk-ant-..."}`.
pub async fn with_key_secret(
    mut settings: LlmSettings, clients: &AwsClients, secret: Option<&str>,
) -> Result<LlmSettings, PlatformError> {
    let Some(name) = secret else {
        return Ok(settings);
    };
    let value = longrun_aws::secrets::secret_string(&clients.secrets, name)
        .await
        .map_err(|e| PlatformError::Setting(e.to_string()))?;
    match serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&value) {
        Ok(keys) => {
            let key = |p: &str| keys.get(p).and_then(|k| k.as_str()).map(Secret::new);
            if keys
                .keys()
                .any(|p| !["openai", "anthropic", "perplexity"].contains(&p.as_str()))
            {
                return Err(PlatformError::Setting(format!(
                    "secret `{name}` may hold keys for `openai`, `anthropic` and `perplexity` only"
                )));
            }
            settings.openai_api_key = key("openai").or(settings.openai_api_key);
            settings.perplexity_api_key = key("perplexity").or(settings.perplexity_api_key);
            settings.anthropic_api_key = key("anthropic").or(settings.anthropic_api_key);
        }
        Err(_) => {
            settings.openai_api_key = Some(Secret::new(value.clone()));
            settings.anthropic_api_key = Some(Secret::new(value));
        }
    }
    Ok(settings)
}

/// `LONGRUN_SEARCH_KEY_SECRET`: the Secrets Manager secret holding the search provider's key.
pub const SEARCH_KEY_SECRET: &str = "LONGRUN_SEARCH_KEY_SECRET";

/// `web_search` on AWS: `LONGRUN_SEARCH` names the provider, its key is read from the secret
/// `LONGRUN_SEARCH_KEY_SECRET` (or, without one, the provider's key variable).
pub async fn search_from_env(
    clients: &AwsClients,
) -> Result<Option<longrun_outbound::SearchSettings>, PlatformError> {
    let provider =
        longrun_outbound::SearchProvider::parse(&var("LONGRUN_SEARCH").unwrap_or_default())
            .map_err(PlatformError::Setting)?;
    let (Some(provider), Ok(name)) = (provider, var(SEARCH_KEY_SECRET)) else {
        return longrun_outbound::SearchSettings::from_env().map_err(PlatformError::Setting);
    };
    let key = longrun_aws::secrets::secret_string(&clients.secrets, &name)
        .await
        .map_err(|e| PlatformError::Setting(e.to_string()))?;
    Ok(Some(longrun_outbound::SearchSettings::new(
        provider,
        key.trim().to_string(),
    )))
}

/// `settings` with the `bedrock` provider: Converse through the function's IAM role, with the
/// model timeout of `settings`.
pub fn with_bedrock(mut settings: LlmSettings, clients: &AwsClients) -> LlmSettings {
    let client = longrun_aws::bedrock::runtime_client(&clients.config, settings.timeout);
    settings.providers.insert(
        longrun_aws::bedrock::PROVIDER,
        longrun_aws::bedrock::provider(client),
    );
    settings
}

/// The platform over the AWS adapters. `llm: None` builds the model router from the
/// configured models and the provider environment.
pub fn platform(
    clients: &AwsClients, settings: &AwsSettings, config: AppConfig, adapters: &Adapters,
    llm: Option<Arc<dyn LlmClient>>, faults: Arc<dyn Faults>, engine: EngineConfig,
) -> Result<Platform, PlatformError> {
    let llm: Arc<dyn LlmClient> = match llm {
        Some(llm) => llm,
        None => Arc::new(ModelRouter::build(
            &config.models,
            &with_bedrock(adapters.llm_settings(), clients),
        )?),
    };
    crate::assemble(
        Arc::new(
            DynamoDbRunStore::new(
                clients.dynamodb.clone(),
                settings.table.clone(),
                settings.sealer.clone(),
            )
            .with_retention_days(retention_days()?),
        ),
        Arc::new(SqsStepQueue::new(
            clients.sqs.clone(),
            settings.queue_url.clone(),
        )),
        Arc::new(SnsNotifier::new(
            clients.sns.clone(),
            settings.topic_arn.clone(),
        )),
        llm,
        config,
        adapters,
        Arc::new(SystemClock),
        faults,
        engine,
        // Lambda cannot keep a coding agent's process: agent runs are refused (422).
        None,
    )
}

/// Everything from the environment, as each Lambda function starts.
pub async fn from_env() -> Result<Platform, PlatformError> {
    let clients = AwsClients::new(&longrun_aws::load_config().await);
    let (config, mut adapters) = config_from_env()?;
    adapters.search = search_from_env(&clients).await?;
    let secret = var(LLM_KEY_SECRET).ok();
    let llm = with_key_secret(
        with_bedrock(adapters.llm_settings(), &clients),
        &clients,
        secret.as_deref(),
    )
    .await?;
    let llm = Arc::new(ModelRouter::build(&config.models, &llm)?);
    platform(
        &clients,
        &AwsSettings::from_env(&clients).await?,
        config,
        &adapters,
        Some(llm),
        Arc::new(NoFaults),
        EngineConfig {
            // A claim outlives the longest invocation (Lambda's 15-minute ceiling).
            lease_ms: 15 * 60 * 1000,
            ..EngineConfig::default()
        },
    )
}
