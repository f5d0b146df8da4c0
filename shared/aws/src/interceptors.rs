//! SDK interceptors: a call counter (the cost benchmark) and a throttling injector (fault
//! tests). Both see every request of every client they are attached to.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::config::interceptors::{
    BeforeDeserializationInterceptorContextMut, BeforeTransmitInterceptorContextMut,
    BeforeTransmitInterceptorContextRef,
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

/// Counts requests sent on the wire (retries included) by `service:Operation`.
#[derive(Clone, Debug, Default)]
pub struct CallCounter(Arc<Mutex<BTreeMap<String, u64>>>);

impl CallCounter {
    pub fn snapshot(&self) -> BTreeMap<String, u64> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn reset(&self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

impl Intercept for CallCounter {
    fn name(&self) -> &'static str {
        "CallCounter"
    }

    fn read_before_transmit(
        &self,
        ctx: &BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let op = operation_of(ctx);
        *self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(op)
            .or_default() += 1;
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
        &self,
        ctx: &mut BeforeTransmitInterceptorContextMut<'_>,
        _: &RuntimeComponents,
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
        &self,
        ctx: &mut BeforeDeserializationInterceptorContextMut<'_>,
        _: &RuntimeComponents,
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
