//! The sweeper, on an EventBridge schedule: re-sends the next step of runs that stalled (a
//! lost message, a crashed worker whose lease ran out) and re-publishes outcomes that were
//! never marked published.

use aws_lambda_events::event::eventbridge::EventBridgeEvent;
use longrun_engine::{Dispatch, EngineError, SweepReport};
use tracing::info;

/// Runs the sweeper looks at per invocation.
pub const SWEEP_LIMIT: usize = 200;

pub async fn handle(
    dispatch: &Dispatch,
    stale_ms: i64,
    event: EventBridgeEvent,
) -> Result<SweepReport, EngineError> {
    let report = dispatch.sweep(stale_ms, SWEEP_LIMIT).await?;
    info!(
        event_id = event.id.as_deref().unwrap_or("?"),
        requeued = report.requeued.len(),
        republished = report.republished.len(),
        leased = report.leased,
        "sweep done"
    );
    Ok(report)
}
