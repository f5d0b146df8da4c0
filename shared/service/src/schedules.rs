//! Scheduled runs: each due occurrence starts once.

use longrun_domain::Schedule;
use longrun_domain::schedule::{next_occurrence, occurrence_run_id};
use tracing::{info, warn};

use crate::error::ServiceError;
use crate::platform::Platform;
use crate::runs::create_run_with_id;

/// Starts every due occurrence once and moves each schedule to its next occurrence after
/// now (missed occurrences are not replayed). The run id is derived from the occurrence, so
/// two sweepers racing start one run. Returns the ids of the runs started.
pub async fn start_due(p: &Platform, limit: usize) -> Result<Vec<String>, ServiceError> {
    let now = p.clock.now_ms();
    let mut started = vec![];
    for sc in p.store.due_schedules(now, limit).await? {
        let run_id = occurrence_run_id(&sc.id, sc.next_at);
        match create_run_with_id(p, &sc.user_id, sc.template.clone(), run_id.clone()).await {
            Ok(_) => {
                info!(schedule = %sc.id, run_id = %run_id, "scheduled run started");
                started.push(run_id.clone());
            }
            // Another sweeper started this occurrence already.
            Err(ServiceError::Conflict(_)) => {}
            Err(e @ (ServiceError::Unavailable(_) | ServiceError::Internal(_))) => {
                // The run may have been written before its first step failed to send: it is
                // started (the sweep sends that step), and the schedule must move on, or a
                // later sweeper would start the occurrence again once retention deleted it.
                if p.store.get_run(&run_id).await?.is_none() {
                    return Err(e);
                }
                warn!(schedule = %sc.id, run_id = %run_id, error = %e, "scheduled run started; its first step is left to the sweep");
                started.push(run_id.clone());
            }
            Err(e) => warn!(schedule = %sc.id, error = %e, "scheduled occurrence skipped"),
        }
        let next = Schedule {
            next_at: next_occurrence(&sc.cron, now)?,
            last_run_id: Some(run_id),
            ..sc.clone()
        };
        p.store.advance_schedule(&next, sc.next_at).await?;
    }
    Ok(started)
}
