//! The retention policy as an actor: a pass at random points of a schedule, with an age the
//! seed picks (seconds to two minutes: a schedule spans a few minutes). Each run it deletes is checked
//! against what the store held just before, independently of the store's own rule: it had
//! ended longer ago than the policy, its outcome was published, no webhook delivery of it was
//! pending, and its parent (if any) had ended; nothing keyed by it is left.

use std::collections::BTreeMap;
use std::sync::Arc;

use longrun_domain::DeliveryState;
use longrun_domain::run::Run;
use longrun_ports::prelude::*;
use longrun_ports::{Clock, WebhookOutbox};
use longrun_service::retention::{Retention, RetentionMode, RetentionPolicy};

use crate::{Sim, check, lock};

pub(crate) async fn pass(sim: &Arc<Sim>, users: &[String]) {
    let after_ms = sim.retention_ms;
    let before: BTreeMap<String, Run> = check::all_runs(&sim.inner, users)
        .await
        .into_iter()
        .map(|r| (r.id.clone(), r))
        .collect();
    let mut pending = BTreeMap::new();
    for r in before.values() {
        let ds = sim
            .inner
            .deliveries(&r.user_id, &r.id)
            .await
            .unwrap_or_default();
        pending.insert(
            r.id.clone(),
            ds.iter().any(|d| d.state == DeliveryState::Pending),
        );
    }
    let policy = RetentionPolicy {
        after_ms,
        mode: RetentionMode::Delete,
        batch: 2,
        every: std::time::Duration::from_secs(60),
    };
    let cutoff = sim.clock.now_ms() - after_ms;
    let report = match Retention::new(sim.inner.clone(), sim.clock.clone(), policy)
        .pass()
        .await
    {
        Ok(r) => r,
        Err(e) => return sim.violation(format!("retention pass failed: {e}")),
    };
    if report.deleted.is_empty() {
        return;
    }
    sim.note(format!("retention deleted {:?}", report.deleted));
    for id in &report.deleted {
        lock(&sim.deleted).insert(id.clone());
        let Some(run) = before.get(id) else {
            sim.violation(format!("retention deleted {id}, which it was not shown"));
            continue;
        };
        let parent_active = run
            .parent_run_id
            .as_ref()
            .and_then(|p| before.get(p))
            .is_some_and(|p| !p.status.is_ended());
        let old = run.ended_at.is_some_and(|at| at < cutoff);
        let owed = pending.get(id).copied().unwrap_or(true);
        if !run.status.is_ended() || !old || !run.notified || owed || parent_active {
            sim.violation(format!(
                "retention deleted {id}: {} ended_at {:?} (cutoff {cutoff}), notified {}, \
                 pending delivery {owed}, parent active {parent_active}",
                run.status, run.ended_at, run.notified
            ));
        }
        let left = !sim
            .inner
            .events(id, 0, 1)
            .await
            .unwrap_or_default()
            .is_empty()
            || !sim
                .inner
                .iterations(id, 0, 1)
                .await
                .unwrap_or_default()
                .is_empty()
            || !sim
                .inner
                .docs(id, "", 1)
                .await
                .unwrap_or_default()
                .is_empty()
            || !sim
                .inner
                .scratchpad(id, 1)
                .await
                .unwrap_or_default()
                .is_empty();
        if left {
            sim.violation(format!("retention left rows of {id} behind"));
        }
    }
}
