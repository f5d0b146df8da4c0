//! SDK interceptors: a call counter (the cost benchmark) and a throttling injector (fault
//! tests). Both see every request of every client they are attached to.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::capacity::WriteModel;

use aws_sdk_dynamodb::config::interceptors::{
    BeforeDeserializationInterceptorContextMut, BeforeDeserializationInterceptorContextRef,
    BeforeTransmitInterceptorContextMut, BeforeTransmitInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_smithy_runtime_api::http::StatusCode;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::config_bag::{Storable, StoreReplace};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// `service:Operation` of a request, from the JSON protocols' `X-Amz-Target` header or the
/// query protocol's `Action=` form field (SNS).
fn operation_of(ctx: &BeforeTransmitInterceptorContextRef<'_>) -> String {
    let req = ctx.request();
    if let Some(target) = req.headers().get("x-amz-target") {
        let (svc, op) = target.split_once('.').unwrap_or(("unknown", target));
        let svc = if svc.starts_with("DynamoDB") {
            "dynamodb"
        } else if svc.starts_with("AmazonSQS") {
            "sqs"
        } else {
            svc
        };
        return format!("{svc}:{op}");
    }
    let action = req
        .body()
        .bytes()
        .and_then(|b| std::str::from_utf8(b).ok())
        .and_then(|form| {
            form.split('&')
                .find_map(|kv| kv.strip_prefix("Action="))
                .map(str::to_string)
        })
        .unwrap_or_else(|| "unknown".into());
    format!("sns:{action}")
}

/// What the counter saw: requests by `service:Operation` (retries included) and the DynamoDB
/// capacity units they consume at on-demand pricing, modelled from the wire (see
/// [`crate::capacity`]): table and index write units, and a strongly consistent read's 1 RRU
/// per started 4 KB returned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallTally {
    pub calls: BTreeMap<String, u64>,
    pub write_units: u64,
    pub read_units: u64,
    /// Items written inside `TransactWriteItems` calls.
    pub transact_items: u64,
}

#[derive(Debug)]
struct Counted {
    tally: CallTally,
    model: WriteModel,
}

impl Default for Counted {
    fn default() -> Self {
        Counted {
            tally: CallTally::default(),
            model: WriteModel::new(&crate::dynamodb::INDEXES),
        }
    }
}

/// Counts requests and estimates DynamoDB capacity units (the cost benchmark), for the
/// table as `provision` creates it.
#[derive(Clone, Debug, Default)]
pub struct CallCounter(Arc<Mutex<Counted>>);

#[derive(Clone, Debug)]
struct Operation(String);

impl Storable for Operation {
    type Storer = StoreReplace<Self>;
}

fn kb(bytes: usize, unit: usize) -> u64 {
    bytes.div_ceil(unit).max(1) as u64
}

impl CallCounter {
    fn lock(&self) -> std::sync::MutexGuard<'_, Counted> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn snapshot(&self) -> CallTally {
        self.lock().tally.clone()
    }

    /// Zeroes the counts; the items seen so far still price later writes.
    pub fn reset(&self) {
        self.lock().tally = CallTally::default();
    }
}

impl Intercept for CallCounter {
    fn name(&self) -> &'static str {
        "CallCounter"
    }

    fn read_before_transmit(
        &self, ctx: &BeforeTransmitInterceptorContextRef<'_>, _: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let op = operation_of(ctx);
        let body = ctx.request().body().bytes().unwrap_or_default();
        let mut c = self.lock();
        let wru = c.model.write_units(&op, body);
        let items = if op == "dynamodb:TransactWriteItems" {
            serde_json::from_slice::<serde_json::Value>(body)
                .ok()
                .and_then(|v| v["TransactItems"].as_array().map(|a| a.len() as u64))
                .unwrap_or(0)
        } else {
            0
        };
        let t = &mut c.tally;
        *t.calls.entry(op.clone()).or_default() += 1;
        t.write_units += wru;
        t.transact_items += items;
        cfg.interceptor_state().store_put(Operation(op));
        Ok(())
    }

    fn read_before_deserialization(
        &self, ctx: &BeforeDeserializationInterceptorContextRef<'_>, _: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let is_read = cfg
            .load::<Operation>()
            .is_some_and(|o| matches!(o.0.as_str(), "dynamodb:GetItem" | "dynamodb:Query"));
        if is_read {
            let len: usize = ctx
                .response()
                .headers()
                .get("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            self.lock().tally.read_units += kb(len, 4096);
        }
        Ok(())
    }
}

/// Throttles every `every`-th DynamoDB request the way DynamoDB does: the request is not
/// executed (it is swapped for a harmless `ListTables` on the wire) and the answer is a real
/// `ThrottlingException`, so the SDK's retry classification and the store's error mapping are
/// both exercised. `every = 0` disables it.
#[derive(Clone, Debug, Default)]
pub struct ThrottleInjector {
    every: Arc<AtomicU64>,
    seen: Arc<AtomicU64>,
    injected: Arc<AtomicU64>,
}

#[derive(Clone, Debug)]
struct Throttled(bool);

impl Storable for Throttled {
    type Storer = StoreReplace<Self>;
}

impl ThrottleInjector {
    pub fn new(every: u64) -> Self {
        let t = ThrottleInjector::default();
        t.every.store(every, Ordering::SeqCst);
        t
    }

    pub fn set_every(&self, every: u64) {
        self.every.store(every, Ordering::SeqCst);
    }

    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::SeqCst)
    }
}

impl Intercept for ThrottleInjector {
    fn name(&self) -> &'static str {
        "ThrottleInjector"
    }

    fn modify_before_signing(
        &self, ctx: &mut BeforeTransmitInterceptorContextMut<'_>, _: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let every = self.every.load(Ordering::SeqCst);
        let n = self.seen.fetch_add(1, Ordering::SeqCst) + 1;
        let throttle = every != 0 && n.is_multiple_of(every);
        if throttle {
            self.injected.fetch_add(1, Ordering::SeqCst);
            let req = ctx.request_mut();
            req.headers_mut()
                .insert("x-amz-target", "DynamoDB_20120810.ListTables");
            *req.body_mut() = SdkBody::from("{}");
            req.headers_mut().insert("content-length", "2");
        }
        cfg.interceptor_state().store_put(Throttled(throttle));
        Ok(())
    }

    fn modify_before_deserialization(
        &self, ctx: &mut BeforeDeserializationInterceptorContextMut<'_>, _: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if !cfg.load::<Throttled>().is_some_and(|t| t.0) {
            return Ok(());
        }
        let resp = ctx.response_mut();
        *resp.status_mut() = StatusCode::try_from(400u16)?;
        *resp.body_mut() = SdkBody::from(
            r#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate of requests exceeds the allowed throughput."}"#,
        );
        Ok(())
    }
}
