//! The sweeper, on an EventBridge schedule: re-sends the next step of runs that stalled (a
//! lost message, a crashed worker whose lease ran out), re-publishes outcomes that were never
//! marked published, and starts the scheduled runs that are due. An event whose `detail-type`
//! is `longrun.StartRun` (from a rule on the bus or an EventBridge Scheduler target) starts one
//! run instead.

use aws_lambda_events::event::eventbridge::EventBridgeEvent;
use longrun_engine::{EngineError, SweepReport};
use longrun_service::{CreateRun, Platform, ServiceError};
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

#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("starting scheduled runs: {0}")]
    Schedules(#[from] ServiceError),
    #[error("a longrun.StartRun event {0}")]
    BadEvent(String),
}

pub async fn handle(
    p: &Platform, stale_ms: i64, event: EventBridgeEvent,
) -> Result<SweepReport, SweepError> {
    if event.detail_type == START_RUN {
        return start_run(p, event).await;
    }
    let mut report = p.follow_up.sweep(stale_ms, SWEEP_LIMIT).await?;
    report.started = longrun_service::schedules::start_due(p, SWEEP_LIMIT).await?;
    info!(
        event_id = event.id.as_deref().unwrap_or("?"),
        requeued = report.requeued.len(),
        republished = report.republished.len(),
        leased = report.leased,
        started = report.started.len(),
        woken = report.woken.len(),
        "sweep done"
    );
    Ok(report)
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
