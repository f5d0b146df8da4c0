//! `DynamoDbRunStore`: the single-table model of DESIGN §4, laid out for write cost.
//!
//! Every write is optimistic: read the run item (strongly consistent) with its `ver`, compute
//! the change from it, and write it in ONE request conditioned on `ver`. A lost race re-reads
//! and recomputes; the LLM work that produced the change is never redone.
//!
//! Items of a run (`PK = RUN#{id}`), each billed per started KB, twice inside a transaction:
//! - `RUN`: the run and its *tail* (events not yet in a log item), deflated together. A change
//!   of the run alone (a claim, a model call's spend, most API actions) is one conditional put
//!   of this item, its events added to the tail: 1 WRU.
//! - `ITER#{n:06}`: iteration n's log item: its record, scratchpad entry and the events of its
//!   commit (the tail first), deflated together, with `first`/`last` seq.
//! - `ITER#{n:06}#{first:010}`: a batch of events appended by a transaction that commits no
//!   iteration (create, a counter release, a full tail), after iteration n. Log items' key
//!   order is therefore seq order, and the event log stays gapless: a log item's key is put
//!   with `attribute_not_exists`, so two writers can never both own a seq.
//! - `DOC#{path}`: workspace documents.
//!
//! Anything else (iteration, docs, counter) makes the write one `TransactWriteItems` of the
//! run item (tail emptied), the log item, the docs and the per-user counter.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::{
    AttributeValue as Av, KeysAndAttributes, Put, TransactWriteItem, Update,
};
use flate2::Compression;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use longrun_domain::change::ActiveDelta;
use longrun_domain::run::Run;
use longrun_domain::{
    Doc, DocMeta, Event, IterationRecord, PadEntry, Rejection, RunChange, Schedule,
};
use longrun_engine::ports::{
    ChangeFn, DocHit, McpServer, Notification, RunQuery, RunStore, StoreError, UserTool, Webhook,
    sequence_events,
};
use longrun_engine::tools::doc_hit;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::capacity::{IndexSpec, Projection};
use crate::{describe, error_code};

/// DynamoDB's limit on the items of one transaction.
pub const MAX_TRANSACTION_ITEMS: usize = 100;
/// Optimistic attempts before a write gives up with a (retryable) conflict.
const MAX_ATTEMPTS: u32 = 64;
/// In-app notifications expire (DynamoDB TTL) after this long.
const NOTIFICATION_TTL_S: i64 = 90 * 24 * 3600;
/// The sparse sweeper index holds only runs that may need the sweeper.
const SWEEP_PARTITION: &str = "SWEEP";
/// A run's place in the sweeper index is its last write rounded down to this: the index
/// entry moves once per bucket, not on every write.
const SWEEP_BUCKET_MS: i64 = 5 * 60 * 1000;
/// Schedules share the sparse index, in their own partition keyed by `next_at`.
const SCHEDULE_PARTITION: &str = "SCHED";
pub const GSI_USER_RUNS: &str = "GSI1";
pub const GSI_SWEEP: &str = "GSI2";

/// The table's global secondary indexes; `infra/` declares the same.
pub const INDEXES: [IndexSpec; 2] = [
    IndexSpec {
        name: GSI_USER_RUNS,
        pk: "GSI1PK",
        sk: "GSI1SK",
        // Listing filters on status (rarely changed); the runs are then fetched by key, so
        // the index is not rewritten by every write of a run.
        projection: Projection::Include(&["status"]),
    },
    IndexSpec {
        name: GSI_SWEEP,
        pk: "GSI2PK",
        sk: "GSI2SK",
        // Schedules are read whole from it; runs only by key.
        projection: Projection::Include(&["body"]),
    },
];

fn s(v: impl Into<String>) -> Av {
    Av::S(v.into())
}

fn n(v: impl ToString) -> Av {
    Av::N(v.to_string())
}

fn run_pk(run_id: &str) -> String {
    format!("RUN#{run_id}")
}

fn user_pk(user_id: &str) -> String {
    format!("USER#{user_id}")
}

fn iter_sk(n: u32) -> String {
    format!("ITER#{n:06}")
}

/// Past every log item's key.
const LOG_END: &str = "ITER#999999~";

fn sweep_bucket(ms: i64) -> i64 {
    ms.div_euclid(SWEEP_BUCKET_MS) * SWEEP_BUCKET_MS
}

/// Zero-padded so that string order is numeric order.
fn stamp(ms: i64) -> String {
    format!("{:015}", ms.max(0))
}

fn unavailable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(e.to_string())
}

fn to_json<T: Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(|e| StoreError::Corrupt(e.to_string()))
}

fn attr<'a>(item: &'a HashMap<String, Av>, name: &str) -> Result<&'a str, StoreError> {
    item.get(name)
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
        .ok_or_else(|| StoreError::Corrupt(format!("item lacks string attribute {name}")))
}

fn num(item: &HashMap<String, Av>, name: &str) -> Result<u64, StoreError> {
    item.get(name)
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| StoreError::Corrupt(format!("item lacks number attribute {name}")))
}

/// The run id of a run item (or its index entry), from its key.
fn run_id_of(item: &HashMap<String, Av>) -> Result<String, StoreError> {
    attr(item, "PK")?
        .strip_prefix("RUN#")
        .map(str::to_string)
        .ok_or_else(|| StoreError::Corrupt("an index entry that is not a run".into()))
}

fn from_attr<T: DeserializeOwned>(item: &HashMap<String, Av>, name: &str) -> Result<T, StoreError> {
    serde_json::from_str(attr(item, name)?).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// Why one transaction did not land.
enum WriteFailure {
    /// Someone else wrote the run since we read it: re-read and recompute.
    Raced,
    /// The release of an active slot found the counter at zero: write without it.
    CounterEmpty,
    Store(StoreError),
}

impl From<StoreError> for WriteFailure {
    fn from(e: StoreError) -> Self {
        WriteFailure::Store(e)
    }
}

pub struct DynamoDbRunStore {
    client: Client,
    table: String,
    /// The last version of each run this instance read or wrote. A write computed from it is
    /// still conditioned on `ver`, so a stale copy costs one failed write, never a wrong one;
    /// a fresh copy saves the read before every claim, spend and commit.
    cache: Mutex<HashMap<String, Stored>>,
}

/// A run item as stored: the run, its version, and its events not yet moved to an event
/// batch item (a write of the run alone carries its events in the run item: one item
/// written, outside a transaction; the next transaction moves them to a batch item).
#[derive(Clone)]
struct Stored {
    run: Run,
    ver: u64,
    tail: Vec<Event>,
}

/// The run item's one packed attribute: the run and its tail, deflated together (they share
/// most of their words), so a run written alone stays under one write unit's kilobyte.
#[derive(Serialize)]
struct RunBlobRef<'a> {
    run: &'a Run,
    #[serde(skip_serializing_if = "<[Event]>::is_empty")]
    tail: &'a [Event],
}

#[derive(serde::Deserialize)]
struct RunBlob {
    run: Run,
    #[serde(default)]
    tail: Vec<Event>,
}

/// A log item's packed attribute: an iteration's record, scratchpad entry and the events
/// its commit appended, deflated together (a commit's events repeat its summary).
#[derive(Serialize)]
struct LogItemRef<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    rec: Option<&'a IterationRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scratch: Option<&'a PadEntry>,
    #[serde(skip_serializing_if = "<[Event]>::is_empty")]
    evts: &'a [Event],
}

#[derive(serde::Deserialize)]
struct LogItem {
    #[serde(default)]
    rec: Option<IterationRecord>,
    #[serde(default)]
    scratch: Option<PadEntry>,
    #[serde(default)]
    evts: Vec<Event>,
}

/// Events a run item may carry before a write moves them to a batch item.
const TAIL_MAX: usize = 8;

/// Sweeper index entries looked at per sweep, at least.
const STALE_CANDIDATES: usize = 200;

/// Runs remembered per instance; a Lambda instance works on a handful at a time.
const CACHE_MAX: usize = 512;

/// Item kinds of one transaction, so a cancellation reason can be traced to its cause.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    Run,
    Counter,
    Event,
    Iteration,
    Other,
}

impl DynamoDbRunStore {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        DynamoDbRunStore {
            client,
            table: table.into(),
            cache: Mutex::default(),
        }
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<String, Stored>> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn remember(&self, stored: &Stored) {
        let mut c = self.cache();
        if c.len() >= CACHE_MAX && !c.contains_key(&stored.run.id) {
            c.clear();
        }
        c.insert(stored.run.id.clone(), stored.clone());
    }

    fn forget(&self, run_id: &str) {
        self.cache().remove(run_id);
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    async fn load(&self, run_id: &str) -> Result<Option<Stored>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("PK", s(run_pk(run_id)))
            .key("SK", s("RUN"))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| unavailable(describe(&e)))?;
        let Some(item) = out.item else {
            self.forget(run_id);
            return Ok(None);
        };
        let blob: RunBlob = unpack(&item, "run")?;
        let stored = Stored {
            run: blob.run,
            ver: num(&item, "ver")?,
            tail: blob.tail,
        };
        self.remember(&stored);
        Ok(Some(stored))
    }

    fn run_item(
        &self,
        run: &Run,
        ver: u64,
        tail: &[Event],
    ) -> Result<HashMap<String, Av>, StoreError> {
        let mut item = HashMap::from([
            ("PK".to_string(), s(run_pk(&run.id))),
            ("SK".to_string(), s("RUN")),
            ("ver".to_string(), n(ver)),
            ("run".to_string(), pack(&RunBlobRef { run, tail })?),
            ("status".to_string(), s(run.status.as_str())),
            ("GSI1PK".to_string(), s(user_pk(&run.user_id))),
            (
                "GSI1SK".to_string(),
                s(format!("{}#{}", stamp(run.created_at), run.id)),
            ),
        ]);
        // Sparse: only runs the sweeper may have to nudge (a next step or an outcome owed).
        if run.status.is_claimable() || !run.notified {
            item.insert("GSI2PK".into(), s(SWEEP_PARTITION));
            item.insert("GSI2SK".into(), s(stamp(sweep_bucket(run.updated_at))));
        }
        Ok(item)
    }

    /// The whole change in one write: a conditional put of the run item alone when nothing
    /// else changes (its events ride in its tail), else one transaction. `base` is `None` for
    /// a create.
    async fn write(
        &self,
        mut change: RunChange,
        base: Option<&Stored>,
        release_counter: bool,
    ) -> Result<Stored, WriteFailure> {
        let at = change.run.updated_at;
        let base_seq = base.map_or(0, |b| b.run.event_seq);
        let expected_ver = base.map(|b| b.ver);
        let mut events = base.map(|b| b.tail.clone()).unwrap_or_default();
        events.extend(sequence_events(&mut change, base_seq, at));
        let next_ver = expected_ver.map_or(1, |v| v + 1);
        let counter = self.counter_update(&change, release_counter);
        let alone = counter.is_none()
            && change.iteration.is_none()
            && change.pad.is_none()
            && change.docs.is_empty()
            && events.len() <= TAIL_MAX;
        if let (true, Some(ver)) = (alone, expected_ver) {
            return self.put_alone(change.run, ver, next_ver, events).await;
        }

        let mut run_put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(self.run_item(&change.run, next_ver, &[])?));
        run_put = match expected_ver {
            None => run_put.condition_expression("attribute_not_exists(PK)"),
            Some(v) => run_put
                .condition_expression("ver = :ver")
                .expression_attribute_values(":ver", n(v)),
        };
        let mut items: Vec<(Slot, TransactWriteItem)> = vec![(Slot::Run, put_item(run_put)?)];
        if let Some(upd) = counter {
            items.push((
                Slot::Counter,
                TransactWriteItem::builder()
                    .update(upd.build().map_err(unavailable)?)
                    .build(),
            ));
        }
        items.extend(self.log_item(&change, &events)?);
        items.extend(self.doc_items(&change)?);
        if items.len() > MAX_TRANSACTION_ITEMS {
            return Err(StoreError::Corrupt(format!(
                "a change of {} items exceeds DynamoDB's {MAX_TRANSACTION_ITEMS}-item transaction",
                items.len()
            ))
            .into());
        }

        let slots: Vec<Slot> = items.iter().map(|(k, _)| *k).collect();
        let result = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items.into_iter().map(|(_, i)| i).collect()))
            .send()
            .await;
        match result {
            Ok(_) => Ok(Stored {
                run: change.run,
                ver: next_ver,
                tail: vec![],
            }),
            Err(e) => Err(classify(&e, &slots, &change, expected_ver.is_none())),
        }
    }

    /// The per-user active-run counter's part of a change, if any.
    fn counter_update(
        &self,
        change: &RunChange,
        release_counter: bool,
    ) -> Option<aws_sdk_dynamodb::types::builders::UpdateBuilder> {
        let key = |b: aws_sdk_dynamodb::types::builders::UpdateBuilder| {
            b.table_name(&self.table)
                .key("PK", s(user_pk(&change.run.user_id)))
                .key("SK", s("ACTIVE"))
                .expression_attribute_names("#c", "count")
                .expression_attribute_values(":zero", n(0))
                .expression_attribute_values(":one", n(1))
        };
        match change.active {
            ActiveDelta::Acquire { limit } => Some(
                key(Update::builder())
                    .update_expression("SET #c = if_not_exists(#c, :zero) + :one")
                    .condition_expression("attribute_not_exists(#c) OR #c < :limit")
                    .expression_attribute_values(":limit", n(limit)),
            ),
            ActiveDelta::Release if release_counter => Some(
                key(Update::builder())
                    .update_expression("SET #c = #c - :one")
                    .condition_expression("#c > :zero"),
            ),
            ActiveDelta::Release | ActiveDelta::None => None,
        }
    }

    /// A write of the run alone: one conditional put, its events riding in its tail.
    async fn put_alone(
        &self,
        run: Run,
        ver: u64,
        next_ver: u64,
        events: Vec<Event>,
    ) -> Result<Stored, WriteFailure> {
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(self.run_item(&run, next_ver, &events)?))
            .condition_expression("ver = :ver")
            .expression_attribute_values(":ver", n(ver))
            .send()
            .await;
        match result {
            Ok(_) => Ok(Stored {
                run,
                ver: next_ver,
                tail: events,
            }),
            Err(e) if error_code(&e) == Some("ConditionalCheckFailedException") => {
                Err(WriteFailure::Raced)
            }
            Err(e) => Err(WriteFailure::Store(unavailable(describe(&e)))),
        }
    }

    /// The write's events (after the run item's tail) go into one log item: the iteration's
    /// own when it commits one, with its record and scratchpad entry, else a batch item that
    /// sorts after its run's last iteration. Either way the log items' key order is seq
    /// order. A put that finds its key taken lost a race.
    fn log_item(
        &self,
        change: &RunChange,
        events: &[Event],
    ) -> Result<Option<(Slot, TransactWriteItem)>, StoreError> {
        let run = &change.run;
        let committed = change
            .iteration
            .as_ref()
            .map(|r| r.n)
            .or(change.pad.as_ref().map(|p| p.n));
        let sk = match (committed, events.first()) {
            (Some(k), _) => iter_sk(k),
            (None, Some(first)) => format!("{}#{:010}", iter_sk(run.iteration), first.seq),
            (None, None) => return Ok(None),
        };
        let mut item = HashMap::from([
            ("PK".to_string(), s(run_pk(&run.id))),
            ("SK".to_string(), s(sk)),
            (
                "log".to_string(),
                pack(&LogItemRef {
                    rec: change.iteration.as_ref(),
                    scratch: change.pad.as_ref(),
                    evts: events,
                })?,
            ),
        ]);
        if let (Some(first), Some(last)) = (events.first(), events.last()) {
            item.insert("first".into(), n(first.seq));
            item.insert("last".into(), n(last.seq));
        }
        let p = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(PK)");
        let slot = if committed.is_some() {
            Slot::Iteration
        } else {
            Slot::Event
        };
        Ok(Some((slot, put_item(p)?)))
    }

    /// One put per doc path; a transaction takes one operation per item, so the last write
    /// of a path wins.
    fn doc_items(&self, change: &RunChange) -> Result<Vec<(Slot, TransactWriteItem)>, StoreError> {
        let pk = run_pk(&change.run.id);
        let mut docs: Vec<&Doc> = vec![];
        for d in change.docs.iter().rev() {
            if !docs.iter().any(|x| x.path == d.path) {
                docs.push(d);
            }
        }
        docs.into_iter()
            .map(|d| {
                let item = HashMap::from([
                    ("PK".to_string(), s(pk.clone())),
                    ("SK".to_string(), s(format!("DOC#{}", d.path))),
                    ("meta".to_string(), s(to_json(&d.meta())?)),
                    ("doc".to_string(), s(to_json(d)?)),
                ]);
                let p = Put::builder().table_name(&self.table).set_item(Some(item));
                Ok((Slot::Other, put_item(p)?))
            })
            .collect()
    }

    async fn apply(&self, run_id: &str, change: ChangeFn<'_>) -> Result<Run, StoreError> {
        let mut release_counter = true;
        let mut cached = self.cache().get(run_id).cloned();
        for attempt in 0..MAX_ATTEMPTS {
            let fresh = cached.is_none();
            let stored = match cached.take() {
                Some(c) => c,
                None => self.load(run_id).await?.ok_or(Rejection::NotFound)?,
            };
            let c = match change(&stored.run) {
                Ok(c) => c,
                // Only the current state may say no.
                Err(_) if !fresh => continue,
                Err(rejection) => return Err(rejection.into()),
            };
            match self.write(c, Some(&stored), release_counter).await {
                Ok(next) => {
                    self.remember(&next);
                    return Ok(next.run);
                }
                Err(WriteFailure::Store(e)) => {
                    self.forget(run_id);
                    return Err(e);
                }
                Err(WriteFailure::CounterEmpty) => {
                    release_counter = false;
                    cached = Some(stored);
                }
                Err(WriteFailure::Raced) => {
                    self.forget(run_id);
                    if fresh {
                        let ms = fastrand::u64(2..=20) << attempt.min(4);
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                    }
                }
            }
        }
        Err(StoreError::Conflict(format!(
            "run {run_id} kept changing under {MAX_ATTEMPTS} attempts"
        )))
    }

    /// The runs of `ids` that exist, in that order, read consistently in batches of 100.
    async fn runs_by_id(&self, ids: &[String]) -> Result<Vec<Run>, StoreError> {
        let mut found: HashMap<String, Run> = HashMap::with_capacity(ids.len());
        for chunk in ids.chunks(100) {
            let mut keys: Vec<HashMap<String, Av>> = chunk
                .iter()
                .map(|id| HashMap::from([("PK".into(), s(run_pk(id))), ("SK".into(), s("RUN"))]))
                .collect();
            for attempt in 0..MAX_ATTEMPTS {
                if keys.is_empty() {
                    break;
                }
                let ka = KeysAndAttributes::builder()
                    .set_keys(Some(std::mem::take(&mut keys)))
                    .consistent_read(true)
                    .build()
                    .map_err(unavailable)?;
                let out = self
                    .client
                    .batch_get_item()
                    .request_items(&self.table, ka)
                    .send()
                    .await
                    .map_err(|e| unavailable(describe(&e)))?;
                for item in out
                    .responses
                    .and_then(|mut r| r.remove(&self.table))
                    .unwrap_or_default()
                {
                    let run = unpack::<RunBlob>(&item, "run")?.run;
                    found.insert(run.id.clone(), run);
                }
                keys = out
                    .unprocessed_keys
                    .and_then(|mut u| u.remove(&self.table))
                    .map(|ka| ka.keys)
                    .unwrap_or_default();
                if !keys.is_empty() {
                    let ms = fastrand::u64(5..=50) << attempt.min(5);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                }
            }
            if !keys.is_empty() {
                return Err(StoreError::Unavailable(
                    "runs left unread after repeated batch retries".into(),
                ));
            }
        }
        Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
    }

    /// Visits a run's log items between `from` and `to` in key order (or reverse), `page` at
    /// a time (each read item is paid for), until `visit` says stop; `keys_only` fetches just
    /// the key and `first`.
    async fn scan_log(
        &self,
        run_id: &str,
        (from, to): (String, String),
        descending: bool,
        page: usize,
        keys_only: bool,
        mut visit: impl FnMut(&HashMap<String, Av>) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        let pk = run_pk(run_id);
        let mut start: Option<HashMap<String, Av>> = None;
        loop {
            let mut q = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("PK = :pk AND SK BETWEEN :from AND :to")
                .expression_attribute_values(":pk", s(pk.clone()))
                .expression_attribute_values(":from", s(from.clone()))
                .expression_attribute_values(":to", s(to.clone()))
                .consistent_read(true)
                .scan_index_forward(!descending)
                .limit(page.clamp(1, 100) as i32)
                .set_exclusive_start_key(start.take());
            if keys_only {
                q = q
                    .projection_expression("SK, #f")
                    .expression_attribute_names("#f", "first");
            }
            let page = q.send().await.map_err(|e| unavailable(describe(&e)))?;
            for item in page.items.unwrap_or_default() {
                if !visit(&item)? {
                    return Ok(());
                }
            }
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(()),
            }
        }
    }

    /// Up to `limit` of what `pick` takes from the log items from `from` on (or, descending,
    /// from the newest down), skipping items without it.
    async fn log_entries<T>(
        &self,
        run_id: &str,
        from: String,
        descending: bool,
        limit: usize,
        pick: impl Fn(LogItem) -> Option<T>,
    ) -> Result<Vec<T>, StoreError> {
        let mut out = vec![];
        if limit == 0 {
            return Ok(out);
        }
        self.scan_log(
            run_id,
            (from, LOG_END.into()),
            descending,
            limit,
            false,
            |item| {
                if let Some(x) = pick(unpack(item, "log")?) {
                    out.push(x);
                }
                Ok(out.len() < limit)
            },
        )
        .await?;
        Ok(out)
    }

    async fn query_pages(
        &self,
        build: impl Fn(
            aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
        ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder,
        limit: usize,
    ) -> Result<Vec<HashMap<String, Av>>, StoreError> {
        let mut out = vec![];
        let mut start: Option<HashMap<String, Av>> = None;
        loop {
            let page = build(self.client.query().table_name(&self.table))
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| unavailable(describe(&e)))?;
            out.extend(page.items.unwrap_or_default());
            if out.len() >= limit {
                out.truncate(limit);
                return Ok(out);
            }
            match page.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(out),
            }
        }
    }

    async fn with_prefix(
        &self,
        pk: String,
        prefix: String,
        projection: &str,
        limit: usize,
        descending: bool,
    ) -> Result<Vec<HashMap<String, Av>>, StoreError> {
        self.query_pages(
            |q| {
                q.key_condition_expression("PK = :pk AND begins_with(SK, :prefix)")
                    .expression_attribute_values(":pk", s(pk.clone()))
                    .expression_attribute_values(":prefix", s(prefix.clone()))
                    .projection_expression(projection)
                    .consistent_read(true)
                    .scan_index_forward(!descending)
                    .limit(limit.clamp(1, 1000) as i32)
            },
            limit,
        )
        .await
    }
}

/// Deflated JSON: the run and iteration items are rewritten on every write and billed per KB,
/// and their JSON compresses several-fold.
fn pack<T: Serialize>(v: &T) -> Result<Av, StoreError> {
    let json = serde_json::to_vec(v).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    let mut enc = DeflateEncoder::new(Vec::with_capacity(json.len() / 3), Compression::best());
    enc.write_all(&json)
        .and_then(|_| enc.finish())
        .map(|b| Av::B(Blob::new(b)))
        .map_err(|e| StoreError::Corrupt(e.to_string()))
}

fn unpack<T: DeserializeOwned>(item: &HashMap<String, Av>, name: &str) -> Result<T, StoreError> {
    let bytes = item
        .get(name)
        .and_then(|v| v.as_b().ok())
        .ok_or_else(|| StoreError::Corrupt(format!("item lacks binary attribute {name}")))?;
    let mut json = vec![];
    DeflateDecoder::new(bytes.as_ref())
        .read_to_end(&mut json)
        .map_err(|e| StoreError::Corrupt(format!("{name}: {e}")))?;
    serde_json::from_slice(&json).map_err(|e| StoreError::Corrupt(e.to_string()))
}

fn put_item(
    p: aws_sdk_dynamodb::types::builders::PutBuilder,
) -> Result<TransactWriteItem, StoreError> {
    Ok(TransactWriteItem::builder()
        .put(p.build().map_err(unavailable)?)
        .build())
}

/// Maps a failed transaction to what the caller should do, from the per-item cancellation
/// reasons (`ConditionalCheckFailed`, `TransactionConflict`, throttling).
fn classify(
    e: &SdkError<TransactWriteItemsError>,
    slots: &[Slot],
    change: &RunChange,
    creating: bool,
) -> WriteFailure {
    let Some(TransactWriteItemsError::TransactionCanceledException(tc)) = e.as_service_error()
    else {
        return WriteFailure::Store(unavailable(describe(e)));
    };
    let reasons = tc.cancellation_reasons();
    let mut raced = false;
    for (i, r) in reasons.iter().enumerate() {
        let code = r.code().unwrap_or("None");
        let slot = slots.get(i).copied().unwrap_or(Slot::Other);
        match (code, slot) {
            ("None", _) => {}
            ("ConditionalCheckFailed", Slot::Run) => {
                if creating {
                    return WriteFailure::Store(
                        Rejection::Conflict(format!("run {} already exists", change.run.id)).into(),
                    );
                }
                raced = true;
            }
            ("ConditionalCheckFailed", Slot::Counter) => {
                return match change.active {
                    ActiveDelta::Acquire { limit } => {
                        WriteFailure::Store(Rejection::LimitExceeded { limit }.into())
                    }
                    _ => WriteFailure::CounterEmpty,
                };
            }
            ("ConditionalCheckFailed", Slot::Iteration) => {
                return WriteFailure::Store(StoreError::Corrupt(format!(
                    "iteration {} is already stored",
                    change.iteration.as_ref().map_or(0, |r| r.n)
                )));
            }
            ("ConditionalCheckFailed", Slot::Event) | ("TransactionConflict", _) => raced = true,
            (other, _) => {
                return WriteFailure::Store(StoreError::Unavailable(format!(
                    "transaction canceled: {other}"
                )));
            }
        }
    }
    if raced || reasons.is_empty() {
        // moto and older endpoints may omit the reasons; a re-read sorts it out.
        WriteFailure::Raced
    } else {
        WriteFailure::Store(unavailable(describe(e)))
    }
}

#[async_trait]
impl RunStore for DynamoDbRunStore {
    async fn create_run(&self, change: RunChange) -> Result<Run, StoreError> {
        match self.write(change, None, true).await {
            Ok(stored) => {
                self.remember(&stored);
                Ok(stored.run)
            }
            Err(WriteFailure::Store(e)) => Err(e),
            Err(WriteFailure::Raced) | Err(WriteFailure::CounterEmpty) => {
                Err(StoreError::Conflict("run creation raced".into()))
            }
        }
    }

    async fn get_run(&self, run_id: &str) -> Result<Option<Run>, StoreError> {
        Ok(self.load(run_id).await?.map(|stored| stored.run))
    }

    async fn list_runs(&self, user_id: &str, q: &RunQuery) -> Result<Vec<Run>, StoreError> {
        let pk = user_pk(user_id);
        let before = q
            .before
            .as_ref()
            .map(|(at, id)| format!("{}#{id}", stamp(*at)));
        let status = q.status.map(|st| st.as_str().to_string());
        let items = self
            .query_pages(
                |b| {
                    let mut b = b
                        .index_name(GSI_USER_RUNS)
                        .expression_attribute_values(":pk", s(pk.clone()))
                        .scan_index_forward(false)
                        .limit(q.limit.clamp(1, 1000) as i32);
                    b = match &before {
                        Some(c) => b
                            .key_condition_expression("GSI1PK = :pk AND GSI1SK < :before")
                            .expression_attribute_values(":before", s(c.clone())),
                        None => b.key_condition_expression("GSI1PK = :pk"),
                    };
                    if let Some(st) = &status {
                        b = b
                            .filter_expression("#st = :st")
                            .expression_attribute_names("#st", "status")
                            .expression_attribute_values(":st", s(st.clone()));
                    }
                    b
                },
                q.limit,
            )
            .await?;
        let ids = items.iter().map(run_id_of).collect::<Result<Vec<_>, _>>()?;
        self.runs_by_id(&ids).await
    }

    async fn update_run(&self, run_id: &str, change: ChangeFn<'_>) -> Result<Run, StoreError> {
        self.apply(run_id, change).await
    }

    async fn events(
        &self,
        run_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError> {
        if limit == 0 {
            return Ok(vec![]);
        }
        // The run item first: an event in its tail then is either still there or, moved
        // since, in a log item the scans below find.
        let Some(stored) = self.load(run_id).await? else {
            return Ok(vec![]);
        };
        // A reader at the head (a live view polling) is answered by the run item alone.
        if stored.run.event_seq <= after || stored.tail.first().is_some_and(|e| e.seq <= after + 1)
        {
            return Ok(stored
                .tail
                .into_iter()
                .filter(|e| e.seq > after)
                .take(limit)
                .collect());
        }
        // The log item holding `after + 1`: readers mostly follow the head, so it is looked
        // for from the newest item down, fetching keys only.
        let mut from = "ITER#".to_string();
        if after > 0 {
            let mut holder = None;
            self.scan_log(
                run_id,
                ("ITER#".into(), LOG_END.into()),
                true,
                2,
                true,
                |item| {
                    if !item.contains_key("first") {
                        return Ok(true);
                    }
                    if num(item, "first")? <= after + 1 {
                        holder = Some(attr(item, "SK")?.to_string());
                        return Ok(false);
                    }
                    Ok(true)
                },
            )
            .await?;
            if let Some(sk) = holder {
                from = sk;
            }
        }
        let mut out: Vec<Event> = vec![];
        self.scan_log(
            run_id,
            (from, LOG_END.into()),
            false,
            limit,
            false,
            |item| {
                if !item.contains_key("first") {
                    return Ok(true);
                }
                let log: LogItem = unpack(item, "log")?;
                for e in log.evts {
                    if e.seq > out.last().map_or(after, |l| l.seq) {
                        out.push(e);
                        if out.len() >= limit {
                            return Ok(false);
                        }
                    }
                }
                Ok(true)
            },
        )
        .await?;
        for e in stored.tail {
            if out.len() >= limit {
                break;
            }
            if e.seq > out.last().map_or(after, |l| l.seq) {
                out.push(e);
            }
        }
        Ok(out)
    }

    async fn iterations(
        &self,
        run_id: &str,
        after: u32,
        limit: usize,
    ) -> Result<Vec<IterationRecord>, StoreError> {
        self.log_entries(run_id, iter_sk(after + 1), false, limit, |log| log.rec)
            .await
    }

    async fn docs(
        &self,
        run_id: &str,
        prefix: &str,
        limit: usize,
    ) -> Result<Vec<DocMeta>, StoreError> {
        if limit == 0 {
            return Ok(vec![]);
        }
        let items = self
            .with_prefix(
                run_pk(run_id),
                format!("DOC#{prefix}"),
                "meta",
                limit,
                false,
            )
            .await?;
        items.iter().map(|i| from_attr(i, "meta")).collect()
    }

    async fn doc(&self, run_id: &str, path: &str) -> Result<Option<Doc>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("PK", s(run_pk(run_id)))
            .key("SK", s(format!("DOC#{path}")))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| unavailable(describe(&e)))?;
        out.item.map(|i| from_attr(&i, "doc")).transpose()
    }

    async fn search_docs(
        &self,
        run_id: &str,
        query: &str,
        limit: usize,
    ) -> Result<Vec<DocHit>, StoreError> {
        let items = self
            .with_prefix(run_pk(run_id), "DOC#".into(), "doc", usize::MAX, false)
            .await?;
        let mut hits = vec![];
        for i in &items {
            let d: Doc = from_attr(i, "doc")?;
            if let Some(h) = doc_hit(&d.path, &d.title, &d.content, query) {
                hits.push(h);
                if hits.len() >= limit {
                    break;
                }
            }
        }
        Ok(hits)
    }

    async fn scratchpad(&self, run_id: &str, last: usize) -> Result<Vec<PadEntry>, StoreError> {
        let mut out = self
            .log_entries(run_id, "ITER#".into(), true, last, |log| log.scratch)
            .await?;
        out.reverse();
        Ok(out)
    }

    async fn active_runs(&self, user_id: &str) -> Result<u32, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("PK", s(user_pk(user_id)))
            .key("SK", s("ACTIVE"))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| unavailable(describe(&e)))?;
        Ok(out.item.map(|i| num(&i, "count")).transpose()?.unwrap_or(0) as u32)
    }

    async fn put_notification(&self, note: &Notification) -> Result<bool, StoreError> {
        let pk = user_pk(&note.user_id);
        let expires = n(note.at / 1000 + NOTIFICATION_TTL_S);
        let marker = Put::builder()
            .table_name(&self.table)
            .item("PK", s(pk.clone()))
            .item("SK", s(format!("NOTIFID#{}", note.id)))
            .item("expires_at", expires.clone())
            .condition_expression("attribute_not_exists(PK)");
        let record = Put::builder()
            .table_name(&self.table)
            .item("PK", s(pk))
            .item("SK", s(format!("NOTIF#{}#{}", stamp(note.at), note.id)))
            .item("body", s(to_json(note)?))
            .item("expires_at", expires);
        let result = self
            .client
            .transact_write_items()
            .transact_items(put_item(marker)?)
            .transact_items(put_item(record)?)
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(e) => {
                let duplicate = matches!(
                    e.as_service_error(),
                    Some(TransactWriteItemsError::TransactionCanceledException(tc))
                        if tc.cancellation_reasons().first()
                            .and_then(|r| r.code()) == Some("ConditionalCheckFailed")
                );
                if duplicate || error_code(&e) == Some("ConditionalCheckFailedException") {
                    Ok(false)
                } else {
                    Err(unavailable(describe(&e)))
                }
            }
        }
    }

    async fn notifications(
        &self,
        user_id: &str,
        limit: usize,
    ) -> Result<Vec<Notification>, StoreError> {
        if limit == 0 {
            return Ok(vec![]);
        }
        let items = self
            .with_prefix(user_pk(user_id), "NOTIF#".into(), "body", limit, true)
            .await?;
        items.iter().map(|i| from_attr(i, "body")).collect()
    }

    async fn mark_notification_read(&self, note: &Notification) -> Result<(), StoreError> {
        let read = Notification {
            read: true,
            ..note.clone()
        };
        let result = self
            .client
            .update_item()
            .table_name(&self.table)
            .key("PK", s(user_pk(&note.user_id)))
            .key("SK", s(format!("NOTIF#{}#{}", stamp(note.at), note.id)))
            .update_expression("SET body = :b")
            .condition_expression("attribute_exists(PK)")
            .expression_attribute_values(":b", s(to_json(&read)?))
            .send()
            .await;
        match result {
            Ok(_) => Ok(()),
            Err(e) if error_code(&e) == Some("ConditionalCheckFailedException") => Ok(()),
            Err(e) => Err(unavailable(describe(&e))),
        }
    }

    async fn stale_runs(&self, updated_before: i64, limit: usize) -> Result<Vec<Run>, StoreError> {
        // Every bucket up to the one holding `updated_before`; the runs themselves say which
        // were really not written since.
        let upto = stamp(sweep_bucket(updated_before) + SWEEP_BUCKET_MS);
        let items = self
            .query_pages(
                |b| {
                    b.index_name(GSI_SWEEP)
                        .key_condition_expression("GSI2PK = :pk AND GSI2SK < :upto")
                        .expression_attribute_values(":pk", s(SWEEP_PARTITION))
                        .expression_attribute_values(":upto", s(upto.clone()))
                        .limit(STALE_CANDIDATES as i32)
                },
                STALE_CANDIDATES.max(limit),
            )
            .await?;
        let ids = items.iter().map(run_id_of).collect::<Result<Vec<_>, _>>()?;
        let mut runs: Vec<Run> = self
            .runs_by_id(&ids)
            .await?
            .into_iter()
            .filter(|r| r.updated_at < updated_before && (r.status.is_claimable() || !r.notified))
            .collect();
        runs.sort_by(|a, b| (a.updated_at, &a.id).cmp(&(b.updated_at, &b.id)));
        runs.truncate(limit);
        Ok(runs)
    }

    async fn put_tool(&self, user_id: &str, tool: &UserTool) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .item("PK", s(user_pk(user_id)))
            .item("SK", s(format!("TOOL#{}", tool.name)))
            .item("body", s(to_json(tool)?))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| unavailable(describe(&e)))
    }

    async fn tools(&self, user_id: &str) -> Result<Vec<UserTool>, StoreError> {
        let items = self
            .with_prefix(user_pk(user_id), "TOOL#".into(), "body", usize::MAX, false)
            .await?;
        items.iter().map(|i| from_attr(i, "body")).collect()
    }

    async fn delete_tool(&self, user_id: &str, name: &str) -> Result<bool, StoreError> {
        let out = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key("PK", s(user_pk(user_id)))
            .key("SK", s(format!("TOOL#{name}")))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllOld)
            .send()
            .await
            .map_err(|e| unavailable(describe(&e)))?;
        Ok(out.attributes.is_some_and(|a| !a.is_empty()))
    }

    async fn put_mcp_server(&self, user_id: &str, server: &McpServer) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .item("PK", s(user_pk(user_id)))
            .item("SK", s(format!("MCP#{}", server.name)))
            .item("body", s(to_json(server)?))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| unavailable(describe(&e)))
    }

    async fn mcp_servers(&self, user_id: &str) -> Result<Vec<McpServer>, StoreError> {
        let items = self
            .with_prefix(user_pk(user_id), "MCP#".into(), "body", usize::MAX, false)
            .await?;
        items.iter().map(|i| from_attr(i, "body")).collect()
    }

    async fn delete_mcp_server(&self, user_id: &str, name: &str) -> Result<bool, StoreError> {
        let out = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key("PK", s(user_pk(user_id)))
            .key("SK", s(format!("MCP#{name}")))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllOld)
            .send()
            .await
            .map_err(|e| unavailable(describe(&e)))?;
        Ok(out.attributes.is_some_and(|a| !a.is_empty()))
    }

    async fn put_webhooks(&self, user_id: &str, hooks: &[Webhook]) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .item("PK", s(user_pk(user_id)))
            .item("SK", s("WEBHOOKS"))
            .item("body", s(to_json(&hooks)?))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| unavailable(describe(&e)))
    }

    async fn webhooks(&self, user_id: &str) -> Result<Vec<Webhook>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key("PK", s(user_pk(user_id)))
            .key("SK", s("WEBHOOKS"))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| unavailable(describe(&e)))?;
        Ok(out
            .item
            .map(|i| from_attr(&i, "body"))
            .transpose()?
            .unwrap_or_default())
    }

    async fn put_schedule(&self, schedule: &Schedule) -> Result<(), StoreError> {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(schedule_item(schedule)?))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| unavailable(describe(&e)))
    }

    async fn schedules(&self, user_id: &str) -> Result<Vec<Schedule>, StoreError> {
        let items = self
            .with_prefix(user_pk(user_id), "SCHED#".into(), "body", usize::MAX, false)
            .await?;
        items.iter().map(|i| from_attr(i, "body")).collect()
    }

    async fn delete_schedule(&self, user_id: &str, id: &str) -> Result<bool, StoreError> {
        let out = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key("PK", s(user_pk(user_id)))
            .key("SK", s(format!("SCHED#{id}")))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllOld)
            .send()
            .await
            .map_err(|e| unavailable(describe(&e)))?;
        Ok(out.attributes.is_some_and(|a| !a.is_empty()))
    }

    async fn due_schedules(&self, now: i64, limit: usize) -> Result<Vec<Schedule>, StoreError> {
        // `#` sorts before every digit-free suffix, so `{now}#~` bounds all ids due at `now`.
        let upto = format!("{}#~", stamp(now));
        let items = self
            .query_pages(
                |b| {
                    b.index_name(GSI_SWEEP)
                        .key_condition_expression("GSI2PK = :pk AND GSI2SK <= :upto")
                        .expression_attribute_values(":pk", s(SCHEDULE_PARTITION))
                        .expression_attribute_values(":upto", s(upto.clone()))
                        .limit(limit.clamp(1, 1000) as i32)
                },
                limit,
            )
            .await?;
        items.iter().map(|i| from_attr(i, "body")).collect()
    }

    async fn advance_schedule(&self, next: &Schedule, from: i64) -> Result<bool, StoreError> {
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(schedule_item(next)?))
            .condition_expression("next_at = :from")
            .expression_attribute_values(":from", n(from))
            .send()
            .await;
        match result {
            Ok(_) => Ok(true),
            Err(e) if error_code(&e) == Some("ConditionalCheckFailedException") => Ok(false),
            Err(e) => Err(unavailable(describe(&e))),
        }
    }
}

fn schedule_item(sc: &Schedule) -> Result<HashMap<String, Av>, StoreError> {
    Ok(HashMap::from([
        ("PK".to_string(), s(user_pk(&sc.user_id))),
        ("SK".to_string(), s(format!("SCHED#{}", sc.id))),
        ("body".to_string(), s(to_json(sc)?)),
        ("next_at".to_string(), n(sc.next_at)),
        ("GSI2PK".to_string(), s(SCHEDULE_PARTITION)),
        (
            "GSI2SK".to_string(),
            s(format!("{}#{}", stamp(sc.next_at), sc.id)),
        ),
    ]))
}
