//! The retention policy an operator sets for `serve`: ended runs older than it are deleted (or
//! exported to a directory, then deleted) by a background pass, a run at a time, so the loop
//! and the API never wait behind it. Nothing is deleted without a policy. What may go is the
//! domain's rule (`longrun_domain::retention`), applied by the store atomically with the
//! delete; on AWS the same age is DynamoDB's TTL instead.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use longrun_domain::RunExport;
use longrun_ports::{Clock, RunArchive, RunRetention, StoreError};
use tokio::sync::watch;
use tracing::{info, warn};

use crate::ServiceError;

pub const DAY_MS: i64 = 24 * 3600 * 1000;

/// What happens to a run the policy names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RetentionMode {
    Delete,
    /// Written to `{dir}/{run_id}.json` (one `RunExport` document), then deleted.
    Export(PathBuf),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetentionPolicy {
    /// Runs ended longer ago than this may go.
    pub after_ms: i64,
    pub mode: RetentionMode,
    /// Runs looked at per store read.
    pub batch: usize,
    /// How often a pass runs.
    pub every: Duration,
}

impl RetentionPolicy {
    /// `days` after their end, deleted, or exported to `export_dir` first.
    pub fn days(days: u32, export_dir: Option<PathBuf>) -> Result<Self, ServiceError> {
        if days == 0 {
            return Err(ServiceError::Invalid(
                "retention days must be at least 1 (leave it unset to keep every run)".into(),
            ));
        }
        Ok(RetentionPolicy {
            after_ms: i64::from(days) * DAY_MS,
            mode: export_dir.map_or(RetentionMode::Delete, RetentionMode::Export),
            batch: 100,
            every: Duration::from_secs(600),
        })
    }
}

/// A store the pass can work on.
pub trait RetentionStore: RunArchive + RunRetention {}
impl<T: RunArchive + RunRetention + ?Sized> RetentionStore for T {}

/// What one pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RetentionReport {
    pub deleted: Vec<String>,
    pub exported: usize,
    /// Named by the scan but kept by the delete's own check (written meanwhile).
    pub kept: usize,
}

pub struct Retention {
    store: Arc<dyn RetentionStore>,
    clock: Arc<dyn Clock>,
    policy: RetentionPolicy,
}

impl Retention {
    pub fn new(
        store: Arc<dyn RetentionStore>, clock: Arc<dyn Clock>, policy: RetentionPolicy,
    ) -> Self {
        Retention {
            store,
            clock,
            policy,
        }
    }

    /// One pass: every run the policy names now, a batch at a time, each deleted by its own
    /// write. Stops when a batch deletes nothing, so runs kept by the delete's check (a race)
    /// cannot hold it in a loop.
    pub async fn pass(&self) -> Result<RetentionReport, ServiceError> {
        let ended_before = self.clock.now_ms() - self.policy.after_ms;
        let mut report = RetentionReport::default();
        loop {
            let ids = self
                .store
                .expired_runs(ended_before, self.policy.batch)
                .await?;
            let before = report.deleted.len();
            for id in &ids {
                self.one(id, ended_before, &mut report).await?;
                // Between runs, so a long pass leaves the loop's tasks their turns.
                tokio::task::yield_now().await;
            }
            if ids.len() < self.policy.batch || report.deleted.len() == before {
                return Ok(report);
            }
        }
    }

    async fn one(
        &self, id: &str, ended_before: i64, report: &mut RetentionReport,
    ) -> Result<(), ServiceError> {
        let file = match &self.policy.mode {
            RetentionMode::Delete => None,
            RetentionMode::Export(dir) => {
                let Some(doc) = self.store.export_run(id).await? else {
                    return Ok(());
                };
                Some(write_export(dir, &doc).await?)
            }
        };
        if self.store.delete_run(id, ended_before).await? {
            report.exported += usize::from(file.is_some());
            report.deleted.push(id.to_string());
        } else {
            report.kept += 1;
            // The run stays, so its snapshot would only go stale.
            if let Some(file) = file {
                let _ = tokio::task::spawn_blocking(move || std::fs::remove_file(file)).await;
            }
        }
        Ok(())
    }

    /// A pass every `policy.every` until `shutdown` turns true.
    pub async fn run(&self, mut shutdown: watch::Receiver<bool>) {
        loop {
            match self.pass().await {
                Ok(r) if !r.deleted.is_empty() => {
                    info!(
                        deleted = r.deleted.len(),
                        exported = r.exported,
                        "retention pass"
                    )
                }
                Ok(_) => {}
                Err(e) => warn!(error = %e, "retention pass failed; trying again next time"),
            }
            tokio::select! {
                _ = tokio::time::sleep(self.policy.every) => {}
                _ = shutdown.changed() => return,
            }
        }
    }
}

/// `{dir}/{run_id}.json`, written whole (to a temporary name, synced, then renamed) so a crash
/// never leaves half a document where a whole one is expected.
pub async fn write_export(dir: &Path, doc: &RunExport) -> Result<PathBuf, ServiceError> {
    let json = serde_json::to_vec_pretty(doc)
        .map_err(|e| ServiceError::internal(StoreError::Corrupt(e.to_string())))?;
    let dir = dir.to_path_buf();
    let name = format!("{}.json", doc.run.id);
    tokio::task::spawn_blocking(move || {
        use std::io::Write;
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(&name);
        let tmp = dir.join(format!(".{name}.tmp"));
        let mut f = crate::files::create_private(&tmp)?;
        f.write_all(&json)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)?;
        Ok::<_, std::io::Error>(path)
    })
    .await
    .map_err(ServiceError::internal)?
    .map_err(|e| ServiceError::Unavailable(format!("writing an exported run: {e}")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_of_zero_days_is_refused_and_a_directory_means_export() {
        let zero = RetentionPolicy::days(0, None);
        let export = RetentionPolicy::days(30, Some("/tmp/x".into())).unwrap();

        assert!(matches!(zero, Err(ServiceError::Invalid(m)) if m.contains("at least 1")));
        assert_eq!(export.after_ms, 30 * DAY_MS);
        assert_eq!(export.mode, RetentionMode::Export("/tmp/x".into()));
    }
}
