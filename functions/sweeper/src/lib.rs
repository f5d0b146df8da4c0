//! The sweeper, on an EventBridge schedule: re-sends the next step of runs that stalled (a
//! lost message, a crashed worker whose lease ran out), re-publishes outcomes that were never
//! marked published, and starts the scheduled runs that are due.

use aws_lambda_events::event::eventbridge::EventBridgeEvent;
use longrun_app::{ApiError, Platform};
use longrun_engine::{EngineError, SweepReport};
use tracing::info;

/// Runs (and schedules) the sweeper looks at per invocation.
pub const SWEEP_LIMIT: usize = 200;

#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("starting scheduled runs: {0}")]
    Schedules(#[from] ApiError),
}

pub async fn handle(
    p: &Platform,
    stale_ms: i64,
    event: EventBridgeEvent,
) -> Result<SweepReport, SweepError> {
    let mut report = p.dispatch.sweep(stale_ms, SWEEP_LIMIT).await?;
    report.started = longrun_app::schedules::start_due(p, SWEEP_LIMIT).await?;
    info!(
        event_id = event.id.as_deref().unwrap_or("?"),
        requeued = report.requeued.len(),
        republished = report.republished.len(),
        leased = report.leased,
        started = report.started.len(),
        "sweep done"
    );
    Ok(report)
}
