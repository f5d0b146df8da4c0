//! Scheduled runs: a cron expression (UTC) and the run to start at each occurrence.

use std::str::FromStr;
use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use croner::Cron;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::DomainError;
use crate::criteria::{Criterion, Grading};
use crate::run::{BudgetsInput, PermissionMode, RunContext, Scope, Thresholds};

/// A run to start: the body of `POST /v1/runs`, and what a schedule starts at each occurrence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunTemplate {
    /// What the run must achieve (not blank).
    #[schemars(length(min = 1), regex(pattern = crate::NOT_BLANK))]
    pub objective: String,
    /// Conditions the result must meet (at most 20). Plain text (1 to 500 characters): the
    /// planner's claim must map it to evidence (documents this run wrote that are not empty,
    /// or plan steps that are done), and a grader judges that evidence against it. Or a check
    /// the platform runs when completion is claimed: `{"check": "contains", "doc", "text"}`,
    /// `{"check": "matches", "doc", "pattern"}`, `{"check": "command", "run"}` (agent runs)
    /// or `{"check": "grader", "rubric"}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 20))]
    pub completion_criteria: Vec<Criterion>,
    /// Whether plain-text criteria are graded (default: yes) and by which model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grading: Option<Grading>,
    #[serde(default)]
    pub budgets: BudgetsInput,
    #[serde(default)]
    pub thresholds: Option<Thresholds>,
    /// `provider:model`; one of the server's configured models.
    #[serde(default)]
    pub model: Option<String>,
    /// Run a coding agent instead of the planner: each iteration is one process of this
    /// agent (`claude`, `codex`, `gemini`, `command`, or another backend the server
    /// configures) in the run's task folder, with the objective as its TASK.md. Only where
    /// the server can start processes (`longrun serve`); a Lambda deployment answers 422.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64), regex(pattern = r"^[A-Za-z0-9_.-]+$"))]
    pub agent: Option<String>,
    /// Several `provider:model`s to rotate over, round robin, failing over past degraded
    /// ones; the first is the run's model. Instead of `model`, or starting with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<String>,
    /// `autopilot` (default), `approve_plan` or `per_write`.
    #[serde(default)]
    pub permission_mode: Option<PermissionMode>,
    /// The tools the run may use, by name (built-in or registered); all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 64), inner(length(min = 1), regex(pattern = crate::NOT_BLANK)))]
    pub allowed_tools: Option<Vec<String>>,
    /// What the run is about in your application, to list its runs by
    /// (`GET /v1/runs?context_type=&entity_id=`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<RunContext>,
    /// Which of your projects the run works in: `global` (none in particular), `project` (the
    /// one `project_ids` names) or `multi_project` (those it names); its prompts name them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    /// The projects of `scope` (at most 50, each 1 to 128 characters, no repeats).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 50), inner(length(min = 1, max = 128), regex(pattern = crate::NOT_BLANK)))]
    pub project_ids: Option<Vec<String>>,
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

/// The cron grammar the API accepts, exactly: five fields, each `*` or `*/n`, or a list of
/// numbers in range and ranges `a-b` or `a-b/n` (wrapping past the field's end when `a > b`);
/// steps are 1 to 99.
/// The OpenAPI document states this same pattern, so a client can check before it sends.
pub const CRON_PATTERN: &str = concat!(
    r"^ *",
    r"(\*(/[1-9][0-9]?)?|[1-5]?[0-9](-[1-5]?[0-9](/[1-9][0-9]?)?)?(,[1-5]?[0-9](-[1-5]?[0-9](/[1-9][0-9]?)?)?)*) +",
    r"(\*(/[1-9][0-9]?)?|(2[0-3]|1?[0-9])(-(2[0-3]|1?[0-9])(/[1-9][0-9]?)?)?(,(2[0-3]|1?[0-9])(-(2[0-3]|1?[0-9])(/[1-9][0-9]?)?)?)*) +",
    r"(\*(/[1-9][0-9]?)?|(3[01]|[12][0-9]|[1-9])(-(3[01]|[12][0-9]|[1-9])(/[1-9][0-9]?)?)?(,(3[01]|[12][0-9]|[1-9])(-(3[01]|[12][0-9]|[1-9])(/[1-9][0-9]?)?)?)*) +",
    r"(\*(/[1-9][0-9]?)?|(1[0-2]|[1-9])(-(1[0-2]|[1-9])(/[1-9][0-9]?)?)?(,(1[0-2]|[1-9])(-(1[0-2]|[1-9])(/[1-9][0-9]?)?)?)*) +",
    r"(\*(/[1-9][0-9]?)?|[0-7](-[0-7](/[1-9][0-9]?)?)?(,[0-7](-[0-7](/[1-9][0-9]?)?)?)*)",
    r" *$",
);

static CRON: LazyLock<regex::Regex> =
    LazyLock::new(|| regex::Regex::new(CRON_PATTERN).unwrap_or_else(|e| panic!("{e}")));

/// Per field: its lowest and highest value.
const FIELDS: [(u32, u32); 5] = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 6)];

fn parse(cron: &str) -> Result<Cron, DomainError> {
    // A pattern's `$` also matches before one final newline in most regex dialects.
    let cron = cron.strip_suffix('\n').unwrap_or(cron);
    if !CRON.is_match(cron) {
        return Err(DomainError::InvalidField {
            field: "cron",
            message: format!(
                "`{cron}` is not a cron expression: five fields (minute 0-59, hour 0-23, day 1-31, \
                 month 1-12, weekday 0-7) of `*`, numbers, ranges `a-b`, steps `/n` and lists"
            ),
        });
    }
    let canonical: Vec<String> = cron
        .split_whitespace()
        .zip(FIELDS)
        .map(|(field, bounds)| unwrap_ranges(field, bounds))
        .collect();
    Cron::from_str(&canonical.join(" ")).map_err(|e| DomainError::InvalidField {
        field: "cron",
        message: format!("`{cron}` is not a cron expression: {e}"),
    })
}

/// Rewrites a wrapping range (`22-2`, `5-1`) as the two ranges it covers, which croner
/// refuses as written; a weekday 7 is Sunday, 0.
fn unwrap_ranges(field: &str, (lo, hi): (u32, u32)) -> String {
    let items: Vec<String> = field
        .split(',')
        .map(|item| {
            let (range, step) = match item.split_once('/') {
                Some((r, s)) => (r, format!("/{s}")),
                None => (item, String::new()),
            };
            let Some((a, b)) = range.split_once('-') else {
                return item.to_string();
            };
            let num = |v: &str| v.parse::<u32>().map(|n| if n > hi { lo } else { n });
            match (num(a), num(b)) {
                (Ok(a), Ok(b)) if a > b => format!("{a}-{hi}{step},{lo}-{b}{step}"),
                (Ok(a), Ok(b)) => format!("{a}-{b}{step}"),
                _ => item.to_string(),
            }
        })
        .collect();
    items.join(",")
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
        for bad in [
            "* * * *",
            "61 * * * *",
            "not cron at all x",
            "0 0 31 2 *",
            "0 0 0 0 0",
            "*/0 * * * *",
            "5/15 * * * *",
            "0 9 * * MON",
            "0 9 * * * *",
            "* * * * *,*",
            "5/15 * * * *",
        ] {
            let err = next_occurrence(bad, NOV_22_2026_0400).unwrap_err();
            assert!(err.to_string().starts_with("cron "), "{bad}: {err}");
        }
    }

    #[test]
    fn a_range_that_wraps_past_the_end_of_its_field_covers_both_ends() {
        // 22-2 is 22:00, 23:00, 00:00, 01:00, 02:00.
        let first = next_occurrence("0 22-2 * * *", NOV_22_2026_0400).unwrap();
        assert_eq!(first - NOV_22_2026_0400, 18 * 3_600_000);
        let mut at = first;
        for _ in 0..4 {
            let next = next_occurrence("0 22-2 * * *", at).unwrap();
            assert_eq!(next - at, 3_600_000);
            at = next;
        }
        assert_eq!(
            next_occurrence("0 22-2 * * *", at).unwrap() - at,
            20 * 3_600_000
        );
    }

    #[test]
    fn everyday_expressions_are_accepted() {
        for good in [
            "0 9 * * 1-5",
            "*/15 * * * *",
            "0 0 1,15 * *",
            "30 6 * 1-12/3 7",
            " 0 0 * * 5-1 ",
        ] {
            assert!(next_occurrence(good, NOV_22_2026_0400).is_ok(), "{good}");
        }
    }
}
