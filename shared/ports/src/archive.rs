//! Retention and export: a run taken out of the store as one document and put back, and the
//! deletion of ended runs an operator's policy names. Apart from `RunLog`, which every write
//! path uses; only the retention pass, `longrun export` and `longrun import` need these.

use async_trait::async_trait;
use longrun_domain::RunExport;

use crate::store::StoreResult;

/// A run as one document, and back.
///
/// Contract: `export_run` reads the run and everything keyed by it (iterations, events, docs,
/// scratchpad, its inbox entries and webhook deliveries); `import_run` writes all of it back
/// with the same ids, atomically, and refuses with `Rejected(Conflict)` a run that exists
/// (nothing written), so importing a file twice is a clear error, never a merge.
#[async_trait]
pub trait RunArchive: Send + Sync {
    /// `None` when there is no such run.
    async fn export_run(&self, run_id: &str) -> StoreResult<Option<RunExport>>;
    async fn import_run(&self, export: &RunExport) -> StoreResult<()>;
}

/// Deleting ended runs, for a retention policy.
///
/// Contract: `delete_run` removes the run and everything keyed by it in one write, and only
/// when `longrun_domain::retention::verdict` lets it go at that moment (ended before
/// `ended_before`, notified, no pending webhook delivery, no parent that has not ended): the
/// check and the delete are atomic, so a run continued or written meanwhile stays.
/// `expired_runs` lists runs `delete_run` would remove, oldest first; a store may leave out
/// some (it may judge age by the run's last write, which is never before its end).
#[async_trait]
pub trait RunRetention: Send + Sync {
    async fn expired_runs(&self, ended_before: i64, limit: usize) -> StoreResult<Vec<String>>;
    /// True when the run was deleted; false when it stays (or was gone).
    async fn delete_run(&self, run_id: &str, ended_before: i64) -> StoreResult<bool>;
}
