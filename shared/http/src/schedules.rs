//! Scheduled runs: `POST/GET/DELETE /v1/schedules`, and starting the occurrences that are due
//! (the sweeper on AWS, a background task in `longrun serve`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use longrun_domain::schedule::next_occurrence;
use longrun_domain::{RunTemplate, Schedule};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::api::{User, created, idempotency_key, prepare_run};
use crate::error::{ApiError, ApiJson};
use longrun_service::idempotency::{once, request_fingerprint};
pub use longrun_service::schedules::start_due;
use longrun_service::{Platform, ServiceError};

pub const MAX_SCHEDULES: usize = 20;

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSchedule {
    /// Five-field cron expression, evaluated in UTC, e.g. `0 9 * * 1-5`.
    #[schemars(regex(pattern = longrun_domain::schedule::CRON_PATTERN))]
    pub cron: String,
    /// The run each occurrence starts (the body of `POST /v1/runs`).
    pub template: RunTemplate,
}

pub async fn post_schedule(
    State(p): State<Platform>, user: User, headers: HeaderMap,
    ApiJson(body): ApiJson<CreateSchedule>,
) -> Result<Response, ApiError> {
    let now = p.clock.now_ms();
    // Checked as sent (the document's pattern allows spaces around it), stored trimmed.
    let next_at = next_occurrence(&body.cron, now)?;
    // The template must be a run this server would accept, so it fails now, not at 3 a.m.
    prepare_run(&p, &user.0, body.template.clone(), "validation".into())?;
    let new_id = format!("sch_{}", uuid::Uuid::new_v4().simple());
    let view = match idempotency_key(&headers)? {
        Some(key) => {
            let fingerprint = request_fingerprint("schedules", &body)?;
            let create = |id| create_schedule(&p, &user.0, body, id, next_at, now);
            once(&p, &user.0, &key, fingerprint, new_id, create).await?
        }
        None => create_schedule(&p, &user.0, body, new_id, next_at, now).await?,
    };
    Ok(created("/v1/schedules", view))
}

/// Stores the schedule under `id`; one already there (an earlier attempt under the same
/// idempotency key) is the answer.
async fn create_schedule(
    p: &Platform, user: &str, body: CreateSchedule, id: String, next_at: i64, now: i64,
) -> Result<Value, ServiceError> {
    let mine = p.store.schedules(user).await?;
    if let Some(made) = mine.iter().find(|s| s.id == id) {
        return serde_json::to_value(made).map_err(ServiceError::internal);
    }
    if mine.len() >= MAX_SCHEDULES {
        return Err(ServiceError::LimitExceeded(format!(
            "at most {MAX_SCHEDULES} schedules per user"
        )));
    }
    let schedule = Schedule {
        id,
        user_id: user.to_string(),
        cron: body.cron.trim().to_string(),
        template: body.template,
        next_at,
        created_at: now,
        last_run_id: None,
    };
    p.store.put_schedule(&schedule).await?;
    serde_json::to_value(&schedule).map_err(ServiceError::internal)
}

pub async fn list_schedules(
    State(p): State<Platform>, user: User,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(
        json!({"schedules": p.store.schedules(&user.0).await?}),
    ))
}

pub async fn delete_schedule(
    State(p): State<Platform>, user: User, Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    if p.store.delete_schedule(&user.0, &id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!("schedule {id}")))
    }
}
