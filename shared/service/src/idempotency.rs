//! Idempotent creates: a request sent again under the same `Idempotency-Key` gets the first
//! answer instead of making a second resource. The key's record fixes the new resource's id
//! before anything is created, so a retry after a lost response — or a concurrent twin — makes
//! the same resource, and the create's own "already exists" is the second fence.

use std::future::Future;

use longrun_domain::fingerprint;
use longrun_domain::run::Run;
use longrun_ports::{IDEMPOTENCY_WINDOW_MS, IdempotencyRecord};
use serde::Serialize;
use serde_json::Value;

use crate::error::ServiceError;
use crate::platform::Platform;
use crate::runs::{CreateRun, create_run_with_id};

/// A key is 1 to this many visible ASCII characters (a UUID is 36).
pub const MAX_KEY_LEN: usize = 255;

/// Checks a key as a client sent it.
pub fn check_key(key: &str) -> Result<(), ServiceError> {
    if key.is_empty() || key.len() > MAX_KEY_LEN || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ServiceError::Invalid(format!(
            "Idempotency-Key must be 1 to {MAX_KEY_LEN} visible ASCII characters (a UUID will do)"
        )));
    }
    Ok(())
}

/// What a key's request was: the route and its body as parsed, so a key reused for another
/// request (or another route) is told apart.
pub fn request_fingerprint(route: &str, body: &impl Serialize) -> Result<String, ServiceError> {
    let body = serde_json::to_value(body).map_err(ServiceError::internal)?;
    Ok(fingerprint::of_json(
        &serde_json::json!({"route": route, "body": body}),
    ))
}

/// Runs `create` at most once per `(user, key)` within the window and returns the first answer
/// it gave. `create` gets the resource id to use and must treat an existing resource of that
/// id as its own earlier success (a crash may have cut the first attempt after the write).
pub async fn once<F, Fut>(
    p: &Platform, user: &str, key: &str, fingerprint: String, new_id: String, create: F,
) -> Result<Value, ServiceError>
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = Result<Value, ServiceError>>,
{
    check_key(key)?;
    let now = p.clock.now_ms();
    let claim = IdempotencyRecord {
        user_id: user.to_string(),
        key: key.to_string(),
        fingerprint,
        resource_id: new_id,
        created_at: now,
        expires_at: now + IDEMPOTENCY_WINDOW_MS,
        response: None,
    };
    let held = p.store.claim_key(&claim).await?;
    if held.fingerprint != claim.fingerprint {
        return Err(ServiceError::Conflict(format!(
            "Idempotency-Key `{key}` was first sent with another request; send a new key for a new request"
        )));
    }
    if let Some(first) = held.response {
        return Ok(first);
    }
    let answer = create(held.resource_id.clone()).await?;
    Ok(p.store
        .finish_key(user, key, &held.resource_id, &answer)
        .await?)
}

/// `create_run` under an idempotency key; `view` makes the answer from the run.
pub async fn create_run_once(
    p: &Platform, user: &str, key: &str, req: CreateRun, view: impl Fn(&Run) -> Value,
) -> Result<Value, ServiceError> {
    let fingerprint = request_fingerprint("runs", &req)?;
    let new_id = format!("run_{}", uuid::Uuid::new_v4().simple());
    once(p, user, key, fingerprint, new_id, |id| async move {
        match create_run_with_id(p, user, req, id.clone()).await {
            Ok(run) => Ok(view(&run)),
            // Made by an earlier attempt under this key (the id is the key's alone).
            Err(e) => match p.store.get_run(&id).await? {
                Some(run) if run.user_id == user => Ok(view(&run)),
                _ => Err(e),
            },
        }
    })
    .await
}
