//! Scheduled runs: a cron expression (UTC) and the run to start at each occurrence.

use std::str::FromStr;

use chrono::{DateTime, Utc};
use croner::Cron;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::DomainError;
use crate::run::{BudgetsInput, PermissionMode, Thresholds};

/// A run to start: the body of `POST /v1/runs`, and what a schedule starts at each occurrence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunTemplate {
    /// What the run must achieve (not blank).
    #[schemars(length(min = 1), regex(pattern = r"\S"))]
    pub objective: String,
    #[serde(default)]
    pub budgets: BudgetsInput,
    #[serde(default)]
    pub thresholds: Option<Thresholds>,
    /// `provider:model`; one of the server's configured models.
    #[serde(default)]
    pub model: Option<String>,
    /// Several `provider:model`s to rotate over, round robin, failing over past degraded
    /// ones; the first is the run's model. Instead of `model`, or starting with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<String>,
    /// `autopilot` (default), `approve_plan` or `per_write`.
    #[serde(default)]
    pub permission_mode: Option<PermissionMode>,
    /// The tools the run may use, by name (built-in or registered); all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64), inner(length(min = 1), regex(pattern = r"\S")))]
    pub allowed_tools: Option<Vec<String>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Schedule {
    pub id: String,
    pub user_id: String,
    /// Five fields (minute hour day-of-month month day-of-week), evaluated in UTC.
    pub cron: String,
    pub template: RunTemplate,
    /// When the next run starts (ms since the epoch).
    pub next_at: i64,
    pub created_at: i64,
    /// The run the last occurrence started, if any.
    pub last_run_id: Option<String>,
}

fn parse(cron: &str) -> Result<Cron, DomainError> {
    let fields = cron.split_whitespace().count();
    if fields != 5 {
        return Err(DomainError::InvalidField {
            field: "cron",
            message: format!("must have 5 fields (minute hour day month weekday), got {fields}"),
        });
    }
    Cron::from_str(cron).map_err(|e| DomainError::InvalidField {
        field: "cron",
        message: format!("`{cron}` is not a cron expression: {e}"),
    })
}

/// The first occurrence strictly after `after_ms`, in ms since the epoch.
pub fn next_occurrence(cron: &str, after_ms: i64) -> Result<i64, DomainError> {
    let c = parse(cron)?;
    let after: DateTime<Utc> =
        DateTime::from_timestamp_millis(after_ms).ok_or_else(|| DomainError::InvalidField {
            field: "now",
            message: format!("{after_ms} is out of range"),
        })?;
    c.find_next_occurrence(&after, false)
        .map(|t| t.timestamp_millis())
        .map_err(|e| DomainError::InvalidField {
            field: "cron",
            message: format!("`{cron}` never fires: {e}"),
        })
}

/// The run id an occurrence starts: the same for every sweeper that sees it, so an
/// occurrence can start at most one run.
pub fn occurrence_run_id(schedule_id: &str, at_ms: i64) -> String {
    format!("run_{schedule_id}_{at_ms}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOV_22_2026_0400: i64 = 1_795_320_000_000;

    #[test]
    fn the_next_occurrence_is_strictly_after_the_given_time_in_utc() {
        let next = next_occurrence("0 9 * * *", NOV_22_2026_0400).unwrap();
        assert_eq!(next - NOV_22_2026_0400, 5 * 3_600_000);
        let after = next_occurrence("0 9 * * *", next).unwrap();
        assert_eq!(after - next, 24 * 3_600_000);
    }

    #[test]
    fn bad_expressions_name_the_field() {
        for bad in ["* * * *", "61 * * * *", "not cron at all x", "0 0 31 2 *"] {
            let err = next_occurrence(bad, NOV_22_2026_0400).unwrap_err();
            assert!(err.to_string().starts_with("cron "), "{bad}: {err}");
        }
    }
}
