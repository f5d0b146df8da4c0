//! Scheduled runs: `POST/GET/DELETE /v1/schedules`, and starting the occurrences that are due
//! (the sweeper on AWS, a background task in `longrun serve`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use longrun_domain::schedule::next_occurrence;
use longrun_domain::{RunTemplate, Schedule};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::api::{User, prepare_run};
use crate::error::{ApiError, ApiJson};
use longrun_service::Platform;
pub use longrun_service::schedules::start_due;

pub const MAX_SCHEDULES: usize = 20;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSchedule {
    /// Five-field cron expression, evaluated in UTC, e.g. `0 9 * * 1-5`.
    #[schemars(regex(pattern = longrun_domain::schedule::CRON_PATTERN))]
    pub cron: String,
    /// The run each occurrence starts (the body of `POST /v1/runs`).
    pub template: RunTemplate,
}

pub async fn post_schedule(
    State(p): State<Platform>, user: User, ApiJson(body): ApiJson<CreateSchedule>,
) -> Result<Response, ApiError> {
    let now = p.clock.now_ms();
    // Checked as sent (the document's pattern allows spaces around it), stored trimmed.
    let next_at = next_occurrence(&body.cron, now)?;
    // The template must be a run this server would accept, so it fails now, not at 3 a.m.
    prepare_run(&p, &user.0, body.template.clone(), "validation".into())?;
    if p.store.schedules(&user.0).await?.len() >= MAX_SCHEDULES {
        return Err(ApiError::TooManyRequests(format!(
            "at most {MAX_SCHEDULES} schedules per user"
        )));
    }
    let schedule = Schedule {
        id: format!("sch_{}", uuid::Uuid::new_v4().simple()),
        user_id: user.0,
        cron: body.cron.trim().to_string(),
        template: body.template,
        next_at,
        created_at: now,
        last_run_id: None,
    };
    p.store.put_schedule(&schedule).await?;
    let location = format!("/v1/schedules/{}", schedule.id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(schedule),
    )
        .into_response())
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
