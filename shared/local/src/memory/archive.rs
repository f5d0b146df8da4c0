//! Export, import and retention on the in-memory store: the same rules as SQLite's, checked
//! and applied under the one lock.

use longrun_domain::retention::{any_pending, verdict};
use longrun_domain::{EXPORT_FORMAT, RunExport};
use longrun_ports::{RunArchive, RunRetention};

use super::*;

/// The values of a run's entry of a per-run map, in key order.
fn values<K, T: Clone>(m: Option<&BTreeMap<K, T>>) -> Vec<T> {
    m.map(|m| m.values().cloned().collect()).unwrap_or_default()
}

fn export(state: &State, run_id: &str) -> Option<RunExport> {
    let run = state.runs.get(run_id)?.clone();
    Some(
        RunExport {
            format: EXPORT_FORMAT.into(),
            iterations: values(state.iterations.get(run_id)),
            events: state.events.get(run_id).cloned().unwrap_or_default(),
            docs: values(state.docs.get(run_id)),
            scratchpad: values(state.pads.get(run_id)),
            notifications: state
                .notifications
                .values()
                .filter(|n| n.run_id == run_id)
                .cloned()
                .collect(),
            deliveries: of_run_outbox(state, run_id),
            run,
        }
        .normalized(),
    )
}

fn of_run_outbox(state: &State, run_id: &str) -> Vec<WebhookDelivery> {
    state
        .outbox
        .values()
        .filter(|d| d.run_id == run_id)
        .cloned()
        .collect()
}

/// Whether the policy lets `run_id` go now.
fn may_delete(state: &State, run_id: &str, ended_before: i64) -> bool {
    let Some(run) = state.runs.get(run_id) else {
        return false;
    };
    let parent = run.parent_run_id.as_deref().and_then(|p| state.runs.get(p));
    let pending = any_pending(&of_run_outbox(state, run_id));
    verdict(run, ended_before, pending, parent).is_ok()
}

#[async_trait]
impl RunArchive for InMemoryRunStore {
    async fn export_run(&self, run_id: &str) -> StoreResult<Option<RunExport>> {
        Ok(export(&self.lock(), run_id))
    }

    async fn import_run(&self, x: &RunExport) -> StoreResult<()> {
        x.check().map_err(Rejection::Conflict)?;
        let mut state = self.lock();
        let id = x.run.id.clone();
        if state.runs.contains_key(&id) {
            return Err(Rejection::Conflict(format!("run {id} already exists")).into());
        }
        state.runs.insert(id.clone(), x.run.clone());
        state.events.insert(id.clone(), x.events.clone());
        let by_n = x.iterations.iter().map(|r| (r.n, r.clone())).collect();
        state.iterations.insert(id.clone(), by_n);
        let by_path = x.docs.iter().map(|d| (d.path.clone(), d.clone())).collect();
        state.docs.insert(id.clone(), by_path);
        let pads = x.scratchpad.iter().map(|p| (p.n, p.clone())).collect();
        state.pads.insert(id, pads);
        for n in &x.notifications {
            state.notifications.insert(n.id.clone(), n.clone());
        }
        for d in &x.deliveries {
            state.outbox.insert((d.id.clone(), d.hook), d.clone());
        }
        Ok(())
    }
}

#[async_trait]
impl RunRetention for InMemoryRunStore {
    async fn expired_runs(&self, ended_before: i64, limit: usize) -> StoreResult<Vec<String>> {
        let state = self.lock();
        let mut due: Vec<(i64, &String)> = state
            .runs
            .values()
            .filter(|r| may_delete(&state, &r.id, ended_before))
            .map(|r| (r.ended_at.unwrap_or_default(), &r.id))
            .collect();
        due.sort();
        Ok(due
            .into_iter()
            .take(limit)
            .map(|(_, id)| id.clone())
            .collect())
    }

    async fn delete_run(&self, run_id: &str, ended_before: i64) -> StoreResult<bool> {
        let mut state = self.lock();
        if !may_delete(&state, run_id, ended_before) {
            return Ok(false);
        }
        state.runs.remove(run_id);
        state.events.remove(run_id);
        state.iterations.remove(run_id);
        state.docs.remove(run_id);
        state.pads.remove(run_id);
        state.notifications.retain(|_, n| n.run_id != run_id);
        state.outbox.retain(|_, d| d.run_id != run_id);
        Ok(true)
    }
}
