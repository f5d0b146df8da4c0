//! Scheduled runs: `POST/GET/DELETE /v1/schedules`, and starting the occurrences that are due
//! (the sweeper on AWS, a background task in `longrun serve`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use longrun_domain::RunTemplate;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::api::{User, created, idempotency_key};
use crate::error::{ApiError, ApiJson};
use longrun_service::Platform;
pub use longrun_service::registrations::MAX_SCHEDULES;
use longrun_service::registrations::{self, NewSchedule};
pub use longrun_service::schedules::start_due;

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
    let key = idempotency_key(&headers)?;
    let new = NewSchedule {
        cron: body.cron,
        template: body.template,
    };
    let view = registrations::create_schedule(&p, &user.0, key.as_deref(), new).await?;
    Ok(created("/v1/schedules", view))
}

pub async fn list_schedules(
    State(p): State<Platform>, user: User,
) -> Result<Json<Value>, ApiError> {
    let schedules = registrations::schedules(&p, &user.0).await?;
    Ok(Json(json!({"schedules": schedules})))
}

pub async fn delete_schedule(
    State(p): State<Platform>, user: User, Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    registrations::delete_schedule(&p, &user.0, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
