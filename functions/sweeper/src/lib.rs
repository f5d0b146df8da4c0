//! The sweeper, on an EventBridge schedule: re-sends the next step of runs that stalled (a
//! lost message, a crashed worker whose lease ran out), re-publishes outcomes that were never
//! marked published, starts the scheduled runs that are due, and attempts the webhook
//! deliveries whose wait is over (the outbox's retries, beyond the notifier's first attempt and
//! SNS's own). An event whose `detail-type` is `longrun.StartRun` (from a rule on the bus or an
//! EventBridge Scheduler target) starts one run instead.

use aws_lambda_events::event::eventbridge::EventBridgeEvent;
use longrun_engine::{EngineError, SweepReport};
use longrun_ports::StoreError;
use longrun_service::{CreateRun, Outbox, OutboxConfig, Platform, ServiceError};
use serde::Deserialize;
use tracing::info;

/// The `detail-type` of an event that starts a run.
pub const START_RUN: &str = "longrun.StartRun";

/// The `detail` of a `longrun.StartRun` event: whose run, and the same body as `POST /v1/runs`.
/// Whoever may put events on the bus (or invoke the function) may start runs for any user,
/// so grant `events:PutEvents` as you would the API itself.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartRun {
    pub user_id: String,
    pub template: CreateRun,
}

/// Runs (and schedules) the sweeper looks at per invocation.
pub const SWEEP_LIMIT: usize = 200;

/// Webhook deliveries attempted at once, and passes per sweep: at most 4 × 64 a minute, each
/// pass bounded by the sender's timeouts (5 s), well inside the function's 60 s.
const DELIVERY_BATCH: usize = 64;
const DELIVERY_PASSES: usize = 4;

#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("starting scheduled runs: {0}")]
    Schedules(#[from] ServiceError),
    #[error("a longrun.StartRun event {0}")]
    BadEvent(String),
    #[error("webhook deliveries: {0}")]
    Webhooks(#[from] StoreError),
}

/// The platform and the outbox it delivers webhooks with, built once per execution
/// environment.
pub struct Sweeper {
    platform: Platform,
    outbox: Outbox,
    /// Runs not written for this long are looked at.
    stale_ms: i64,
}

impl Sweeper {
    pub fn new(platform: Platform, stale_ms: i64) -> Self {
        Self::with_outbox(
            platform,
            stale_ms,
            OutboxConfig {
                batch: DELIVERY_BATCH,
                ..OutboxConfig::default()
            },
        )
    }

    /// With another retry policy, lease or batch (tests).
    pub fn with_outbox(platform: Platform, stale_ms: i64, config: OutboxConfig) -> Self {
        let outbox = platform.outbox(config);
        Sweeper {
            platform,
            outbox,
            stale_ms,
        }
    }

    pub async fn handle(&self, event: EventBridgeEvent) -> Result<SweepReport, SweepError> {
        let p = &self.platform;
        if event.detail_type == START_RUN {
            return start_run(p, event).await;
        }
        let mut report = p.follow_up.sweep(self.stale_ms, SWEEP_LIMIT).await?;
        report.started = longrun_service::schedules::start_due(p, SWEEP_LIMIT).await?;
        report.webhook_attempts = self.outbox.deliver_due_passes(DELIVERY_PASSES).await?;
        info!(
            event_id = event.id.as_deref().unwrap_or("?"),
            requeued = report.requeued.len(),
            republished = report.republished.len(),
            leased = report.leased,
            started = report.started.len(),
            woken = report.woken.len(),
            webhook_attempts = report.webhook_attempts,
            "sweep done"
        );
        Ok(report)
    }
}

/// Starts the run an event asks for. Its id is derived from the event's id, so a redelivered
/// event (EventBridge delivers at least once) starts the run once.
async fn start_run(p: &Platform, event: EventBridgeEvent) -> Result<SweepReport, SweepError> {
    let event_id = event
        .id
        .filter(|id| {
            (1..=64).contains(&id.len())
                && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
        .ok_or_else(|| SweepError::BadEvent("needs an `id` of 1-64 letters, digits or -".into()))?;
    let start: StartRun = serde_json::from_value(event.detail)
        .map_err(|e| SweepError::BadEvent(format!("has a bad detail: {e}")))?;
    if start.user_id.trim().is_empty() {
        return Err(SweepError::BadEvent("needs a user_id".into()));
    }
    let run_id = format!("run_evt_{event_id}");
    let started = match longrun_service::runs::create_run_with_id(
        p,
        &start.user_id,
        start.template,
        run_id.clone(),
    )
    .await
    {
        Ok(run) => vec![run.id],
        // The same event again: its run exists already.
        Err(ServiceError::Conflict(_))
            if p.store.get_run(&run_id).await.ok().flatten().is_some() =>
        {
            vec![]
        }
        Err(e) => return Err(e.into()),
    };
    info!(event_id, source = %event.source, started = started.len(), "run started from an event");
    Ok(SweepReport {
        started,
        ..SweepReport::default()
    })
}
