//! `longrun export` and `longrun import`: a run of a `serve` data directory as one JSON
//! document, and back with the same ids. They open the database themselves, so `serve` must
//! not be running on that directory (one process owns it; a second is refused at once).

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, bail};
use longrun_domain::RunExport;
use longrun_local::{SqliteDb, SqliteRunStore};
use longrun_ports::{RunArchive, StoreError};

fn open(data_dir: &Path) -> Result<SqliteRunStore> {
    let path = data_dir.join("longrun.sqlite3");
    if !path.exists() {
        bail!("no longrun database in {}", data_dir.display());
    }
    let db = SqliteDb::open(&path).with_context(|| {
        format!(
            "opening {} (is `longrun serve` running on it? stop it first)",
            path.display()
        )
    })?;
    Ok(SqliteRunStore::new(db))
}

/// Writes the run's document to `out`, or to stdout.
pub async fn export(data_dir: &Path, run_id: &str, out: Option<&Path>) -> Result<()> {
    let store = open(data_dir)?;
    let Some(doc) = store.export_run(run_id).await? else {
        bail!("run {run_id} not found in {}", data_dir.display());
    };
    let json = serde_json::to_vec_pretty(&doc)?;
    match out {
        Some(path) => longrun_service::files::create_private(path)
            .and_then(|mut f| f.write_all(&json))
            .with_context(|| format!("writing {}", path.display()))?,
        None => {
            crate::out::bytes(&json);
            crate::out::bytes(b"\n");
        }
    }
    Ok(())
}

/// Restores the run of the document in `file`; a run that exists is an error (nothing is
/// written), so importing twice never merges.
pub async fn import(data_dir: &Path, file: &Path) -> Result<String> {
    let text = std::fs::read(file).with_context(|| format!("reading {}", file.display()))?;
    let doc: RunExport = serde_json::from_slice(&text)
        .with_context(|| format!("{} is not an exported run", file.display()))?;
    longrun_service::files::private_dir(data_dir)?;
    let db = SqliteDb::open(&data_dir.join("longrun.sqlite3"))
        .context("opening the database (is `longrun serve` running on it? stop it first)")?;
    match SqliteRunStore::new(db).import_run(&doc).await {
        Ok(()) => Ok(doc.run.id),
        Err(StoreError::Rejected(r)) => bail!("{}: {r}", file.display()),
        Err(e) => Err(e.into()),
    }
}
