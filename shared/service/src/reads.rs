//! What a user reads about their runs and their inbox. A run's records are read through the
//! `Run` that `runs::run_of` returned, so nothing here reads a run the caller does not own.

use longrun_domain::record::normalize_doc_path;
use longrun_domain::run::Run;
use longrun_domain::{
    Doc, DocHit, DocMeta, Event, IterationRecord, Notification, PadEntry, WebhookDelivery,
};
use longrun_ports::RunQuery;

use crate::error::ServiceError;
use crate::platform::Platform;

/// Most notifications `mark_read` looks at, and most ids it takes at once.
pub const INBOX: usize = 200;

/// A page of the caller's runs, and how many of theirs are active.
pub struct RunPage {
    pub runs: Vec<Run>,
    pub active: u32,
}

pub async fn list_runs(
    p: &Platform, user: &str, query: &RunQuery,
) -> Result<RunPage, ServiceError> {
    let runs = p.store.list_runs(user, query).await?;
    let active = p.store.active_runs(user).await?;
    Ok(RunPage { runs, active })
}

/// The run as committed now (a poll's second look); `None` once it is gone.
pub async fn refresh(p: &Platform, run: &Run) -> Result<Option<Run>, ServiceError> {
    Ok(p.store.get_committed_run(&run.id).await?)
}

pub async fn events(
    p: &Platform, run: &Run, after: u64, limit: usize,
) -> Result<Vec<Event>, ServiceError> {
    Ok(p.store.events(&run.id, after, limit).await?)
}

pub async fn iterations(
    p: &Platform, run: &Run, after: u32, limit: usize,
) -> Result<Vec<IterationRecord>, ServiceError> {
    Ok(p.store.iterations(&run.id, after, limit).await?)
}

/// Every document of the run (its listing entries), or those tagged `tag`.
pub async fn docs(
    p: &Platform, run: &Run, tag: Option<&str>,
) -> Result<Vec<DocMeta>, ServiceError> {
    let mut docs = p.store.docs(&run.id, "", 10_000).await?;
    // Tags are on every doc's listing entry: a filter over the listing needs no index.
    if let Some(tag) = tag.map(str::trim).filter(|t| !t.is_empty()) {
        docs.retain(|d| d.tags.iter().any(|t| t == tag));
    }
    Ok(docs)
}

/// One document; a path no document could be written at names no document.
pub async fn doc(p: &Platform, run: &Run, path: &str) -> Result<Doc, ServiceError> {
    let path =
        normalize_doc_path(path).map_err(|e| ServiceError::NotFound(format!("document: {e}")))?;
    p.store
        .doc(&run.id, &path)
        .await?
        .ok_or_else(|| ServiceError::NotFound(format!("document {path}")))
}

pub async fn search(
    p: &Platform, run: &Run, query: &str, limit: usize,
) -> Result<Vec<DocHit>, ServiceError> {
    Ok(p.store.search_docs(&run.id, query.trim(), limit).await?)
}

pub async fn scratchpad(
    p: &Platform, run: &Run, last: usize,
) -> Result<Vec<PadEntry>, ServiceError> {
    Ok(p.store.scratchpad(&run.id, last).await?)
}

/// The run's webhook deliveries, oldest first.
pub async fn deliveries(p: &Platform, run: &Run) -> Result<Vec<WebhookDelivery>, ServiceError> {
    Ok(p.store.deliveries(&run.user_id, &run.id).await?)
}

/// A page of the caller's notifications, newest first, strictly before `before`.
pub async fn notifications(
    p: &Platform, user: &str, before: Option<&(i64, String)>, limit: usize,
) -> Result<Vec<Notification>, ServiceError> {
    Ok(p.store.notifications_page(user, before, limit).await?)
}

/// Marks the caller's notifications with these ids read; returns how many were unread. Only
/// the caller's own inbox is looked at, so another user's id marks nothing.
pub async fn mark_read(p: &Platform, user: &str, ids: &[String]) -> Result<usize, ServiceError> {
    if ids.len() > INBOX {
        return Err(ServiceError::Invalid(format!(
            "ids: at most {INBOX} at once"
        )));
    }
    let mut updated = 0;
    for n in p.store.notifications(user, INBOX).await? {
        if !n.read && ids.contains(&n.id) {
            p.store.mark_notification_read(&n).await?;
            updated += 1;
        }
    }
    Ok(updated)
}
