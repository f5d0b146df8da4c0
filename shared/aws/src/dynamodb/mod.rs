//! `DynamoDbRunStore`: the single-table model (ARCHITECTURE.md, "Data model"), laid out for
//! write cost.
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
use longrun_domain::doc_hit;
use longrun_domain::run::Run;
use longrun_domain::{
    Doc, DocMeta, Event, IterationRecord, PadEntry, Rejection, RunChange, Schedule,
};
use longrun_domain::{DocHit, Notification, sequence_events};
use longrun_ports::{CatalogEntry, CatalogScope, Durability, StoreResult};
use longrun_ports::{
    CatalogKind, ChangeFn, Inbox, RunLog, RunQuery, ScheduleStore, StoreError, UserCatalog,
    Workspace,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::capacity::{IndexSpec, Projection};
use crate::{describe, error_code};

mod catalog;
mod idempotency;
mod outbox;
mod retention;
mod runs;
mod write;

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
/// Runs waiting on children share it too, keyed by their wait's deadline.
const WAIT_PARTITION: &str = "WAIT";
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

fn to_json<T: Serialize>(v: &T) -> StoreResult<String> {
    serde_json::to_string(v).map_err(|e| StoreError::Corrupt(e.to_string()))
}

fn attr<'a>(item: &'a HashMap<String, Av>, name: &str) -> StoreResult<&'a str> {
    item.get(name)
        .and_then(|v| v.as_s().ok())
        .map(String::as_str)
        .ok_or_else(|| StoreError::Corrupt(format!("item lacks string attribute {name}")))
}

fn num(item: &HashMap<String, Av>, name: &str) -> StoreResult<u64> {
    item.get(name)
        .and_then(|v| v.as_n().ok())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| StoreError::Corrupt(format!("item lacks number attribute {name}")))
}

/// The run id of a run item (or its index entry), from its key.
fn run_id_of(item: &HashMap<String, Av>) -> StoreResult<String> {
    attr(item, "PK")?
        .strip_prefix("RUN#")
        .map(str::to_string)
        .ok_or_else(|| StoreError::Corrupt("an index entry that is not a run".into()))
}

fn from_attr<T: DeserializeOwned>(item: &HashMap<String, Av>, name: &str) -> StoreResult<T> {
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
    /// The retention policy's age in seconds (`retention`); `None`: items of runs never expire.
    retention_s: Option<i64>,
    /// Seals catalog secrets before they are written (the key lives in Secrets Manager).
    sealer: longrun_ports::Sealer,
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

/// Deflated JSON: the run and iteration items are rewritten on every write and billed per KB,
/// and their JSON compresses several-fold.
fn pack<T: Serialize>(v: &T) -> StoreResult<Av> {
    let json = serde_json::to_vec(v).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    let mut enc = DeflateEncoder::new(Vec::with_capacity(json.len() / 3), Compression::best());
    enc.write_all(&json)
        .and_then(|_| enc.finish())
        .map(|b| Av::B(Blob::new(b)))
        .map_err(|e| StoreError::Corrupt(e.to_string()))
}

fn unpack<T: DeserializeOwned>(item: &HashMap<String, Av>, name: &str) -> StoreResult<T> {
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

fn put_item(p: aws_sdk_dynamodb::types::builders::PutBuilder) -> StoreResult<TransactWriteItem> {
    Ok(TransactWriteItem::builder()
        .put(p.build().map_err(unavailable)?)
        .build())
}

/// Maps a failed transaction to what the caller should do, from the per-item cancellation
/// reasons (`ConditionalCheckFailed`, `TransactionConflict`, throttling).
fn classify(
    e: &SdkError<TransactWriteItemsError>, slots: &[Slot], change: &RunChange, creating: bool,
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
