//! A run's limits and what it has spent: budgets, breaker thresholds, metrics, and the
//! budgets carved out for a child run.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Run;
use crate::DomainError;

pub const DEFAULT_MAX_ITERATIONS: u32 = 25;
pub const DEFAULT_MAX_RUNNING_MS: u64 = 60 * 60 * 1000;

/// Hard limits of a run. Waiting time never counts against `max_running_ms`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Budgets {
    #[serde(default = "default_max_iterations")]
    pub max_iterations: u32,
    #[serde(default = "default_max_running_ms")]
    pub max_running_ms: u64,
    #[serde(default)]
    pub max_tokens: Option<u64>,
    #[serde(default)]
    pub max_cost_usd: Option<f64>,
    /// Tool calls over the whole run (planner, repair and executor calls alike).
    #[serde(default)]
    pub max_tool_calls: Option<u64>,
}

fn default_max_iterations() -> u32 {
    DEFAULT_MAX_ITERATIONS
}
fn default_max_running_ms() -> u64 {
    DEFAULT_MAX_RUNNING_MS
}

impl Default for Budgets {
    fn default() -> Self {
        Budgets {
            max_iterations: DEFAULT_MAX_ITERATIONS,
            max_running_ms: DEFAULT_MAX_RUNNING_MS,
            max_tokens: None,
            max_cost_usd: None,
            max_tool_calls: None,
        }
    }
}

/// Budget values as a user may send them: every field optional, negatives rejected by validation
/// (not by the type) so the error can name the field and the value.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetsInput {
    #[schemars(range(min = 1, max = 10_000))]
    pub max_iterations: Option<i64>,
    /// Running time in ms (at most 30 days); waiting burns none.
    #[schemars(range(min = 1, max = 2_592_000_000_i64))]
    pub max_running_ms: Option<i64>,
    #[schemars(range(min = 1))]
    pub max_tokens: Option<i64>,
    /// Only with priced models.
    #[schemars(range(max = 1_000_000.0), extend("exclusiveMinimum" = 0))]
    pub max_cost_usd: Option<f64>,
    #[schemars(range(min = 1, max = 1_000_000))]
    pub max_tool_calls: Option<i64>,
}

pub const MAX_ITERATIONS_CEILING: i64 = 10_000;

impl BudgetsInput {
    /// Fills defaults and checks ranges. `base` supplies the values that are not given.
    pub fn resolve(&self, base: &Budgets) -> Result<Budgets, DomainError> {
        fn positive(field: &'static str, v: i64, max: i64) -> Result<u64, DomainError> {
            if v <= 0 || v > max {
                return Err(DomainError::InvalidField {
                    field,
                    message: format!("must be between 1 and {max}, got {v}"),
                });
            }
            Ok(v as u64)
        }
        let mut out = base.clone();
        if let Some(v) = self.max_iterations {
            out.max_iterations =
                positive("budgets.max_iterations", v, MAX_ITERATIONS_CEILING)? as u32;
        }
        if let Some(v) = self.max_running_ms {
            out.max_running_ms = positive("budgets.max_running_ms", v, 30 * 24 * 3_600_000)?;
        }
        if let Some(v) = self.max_tokens {
            out.max_tokens = Some(positive("budgets.max_tokens", v, i64::MAX)?);
        }
        if let Some(v) = self.max_cost_usd {
            if !v.is_finite() || v <= 0.0 || v > 1_000_000.0 {
                return Err(DomainError::InvalidField {
                    field: "budgets.max_cost_usd",
                    message: format!("must be a number > 0 and ≤ 1000000, got {v}"),
                });
            }
            out.max_cost_usd = Some(v);
        }
        if let Some(v) = self.max_tool_calls {
            out.max_tool_calls = Some(positive("budgets.max_tool_calls", v, 1_000_000)?);
        }
        Ok(out)
    }
}

/// Breaker thresholds, configurable per run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Thresholds {
    /// Consecutive iterations without progress before `no_progress`.
    #[serde(default = "default_no_progress")]
    #[schemars(range(min = 1, max = 1000))]
    pub no_progress_limit: u32,
    /// Consecutive iterations failing with the same error fingerprint before `repeated_error`.
    #[serde(default = "default_repeated_error")]
    #[schemars(range(min = 1, max = 1000))]
    pub repeated_error_limit: u32,
    /// Consecutive repeats of the same action set without progress before `no_progress`:
    /// 1 (the default) stops on the second identical set in a row; with more, the repeats
    /// before the last each earn an anti-repetition hint.
    #[serde(default = "default_repeat")]
    #[schemars(range(min = 1, max = 1000))]
    pub repeated_action_limit: u32,
    /// Consecutive iterations whose tool calls named a tool that does not exist (or is not
    /// allowed) or gave arguments its schema refuses, with no call of that tool succeeding
    /// after repair, before `repeated_error`.
    #[serde(default = "default_tool_failure")]
    #[schemars(range(min = 1, max = 1000))]
    pub repeated_tool_failure_limit: u32,
    /// Seconds a run waits for its children (`wait_for_children`) before it goes on without
    /// them: the children still running are left running on their own, as if detached, and
    /// the next prompt names them.
    #[serde(default = "default_child_wait_timeout")]
    #[schemars(range(min = 1, max = 604800))]
    pub child_wait_timeout_s: u64,
}

/// An hour: children do whole runs of model calls, so the wait is long, but bounded.
fn default_child_wait_timeout() -> u64 {
    3_600
}

fn default_no_progress() -> u32 {
    3
}
fn default_repeated_error() -> u32 {
    5
}
fn default_repeat() -> u32 {
    1
}
fn default_tool_failure() -> u32 {
    3
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            no_progress_limit: default_no_progress(),
            repeated_error_limit: default_repeated_error(),
            repeated_action_limit: default_repeat(),
            repeated_tool_failure_limit: default_tool_failure(),
            child_wait_timeout_s: default_child_wait_timeout(),
        }
    }
}

impl Thresholds {
    pub fn validate(&self) -> Result<(), DomainError> {
        for (field, v) in [
            ("thresholds.no_progress_limit", self.no_progress_limit),
            ("thresholds.repeated_error_limit", self.repeated_error_limit),
            (
                "thresholds.repeated_action_limit",
                self.repeated_action_limit,
            ),
            (
                "thresholds.repeated_tool_failure_limit",
                self.repeated_tool_failure_limit,
            ),
        ] {
            if v == 0 || v > 1000 {
                return Err(DomainError::InvalidField {
                    field,
                    message: format!("must be between 1 and 1000, got {v}"),
                });
            }
        }
        let wait = self.child_wait_timeout_s;
        if wait == 0 || wait > 604_800 {
            return Err(DomainError::InvalidField {
                field: "thresholds.child_wait_timeout_s",
                message: format!("must be between 1 and 604800 seconds, got {wait}"),
            });
        }
        Ok(())
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModelMetrics {
    pub calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Metrics {
    /// Committed iterations.
    pub iterations: u32,
    pub llm_calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_tokens: u64,
    pub cost_usd: f64,
    /// Calls whose model had no price: their cost is unknown, never counted as zero silently.
    pub unpriced_calls: u64,
    /// Time spent inside iterations (claim to commit), never waiting time.
    pub running_ms: u64,
    /// Workspace documents created by the run.
    pub docs: u32,
    pub by_model: BTreeMap<String, ModelMetrics>,
    /// Spent by finished child runs (not part of the fields above).
    #[serde(default)]
    pub children_tokens: u64,
    #[serde(default)]
    pub children_cost_usd: f64,
    /// Tool calls made (counted against `budgets.max_tool_calls`).
    #[serde(default)]
    pub tool_calls: u64,
}

impl Metrics {
    pub fn tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    pub fn add_spend(&mut self, spend: &Spend) {
        self.llm_calls += 1;
        self.input_tokens += spend.input_tokens;
        self.output_tokens += spend.output_tokens;
        self.cached_tokens += spend.cached_tokens;
        match spend.cost_usd {
            Some(c) => self.cost_usd += c,
            None => self.unpriced_calls += 1,
        }
        let m = self.by_model.entry(spend.model.clone()).or_default();
        m.calls += 1;
        m.input_tokens += spend.input_tokens;
        m.output_tokens += spend.output_tokens;
        m.cost_usd += spend.cost_usd.unwrap_or(0.0);
    }
}

/// The real spend of one LLM call, added to the run as soon as the call returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Spend {
    pub model: String,
    pub role: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_tokens: u64,
    pub cost_usd: Option<f64>,
    pub latency_ms: u64,
    /// How long the call waited for the model's capacity before it was made.
    #[serde(default)]
    pub queued_ms: u64,
}

/// Budgets for a child: what was asked, never more than the parent has left once its own
/// spend and every other child's budget (`siblings`, including ones spawned moments ago)
/// are taken off. A token or cost limit the parent has but the request leaves out gets half
/// of what is left, so one child cannot starve its siblings.
pub fn carve_child_budgets(
    parent: &Run, siblings: &[Budgets], requested: &BudgetsInput, defaults: &Budgets,
) -> Result<Budgets, String> {
    let mut b = requested.resolve(defaults).map_err(|e| e.to_string())?;
    let reserved = parent.children.iter().map(|c| &c.budgets).chain(siblings);
    let (mut tokens, mut cost) = (0u64, 0f64);
    for r in reserved {
        tokens += r.max_tokens.unwrap_or(0);
        cost += r.max_cost_usd.unwrap_or(0.0);
    }
    if let Some(max) = parent.budgets.max_tokens {
        let left = max.saturating_sub(parent.metrics.tokens() + tokens);
        if left == 0 {
            return Err("no token budget left for a child run".into());
        }
        b.max_tokens = Some(b.max_tokens.map_or(left.div_ceil(2), |t| t.min(left)));
    }
    if let Some(max) = parent.budgets.max_cost_usd {
        let left = max - parent.metrics.cost_usd - cost;
        if left <= 0.0 {
            return Err("no cost budget left for a child run".into());
        }
        b.max_cost_usd = Some(b.max_cost_usd.map_or(left / 2.0, |c| c.min(left)));
    }
    let running_left = parent
        .budgets
        .max_running_ms
        .saturating_sub(parent.metrics.running_ms);
    if running_left == 0 {
        return Err("no running time left for a child run".into());
    }
    b.max_running_ms = b.max_running_ms.min(running_left);
    b.max_iterations = b.max_iterations.min(parent.budgets.max_iterations);
    if let Some(max) = parent.budgets.max_tool_calls {
        // A child's calls come out of what the parent has left, as its tokens do.
        let left = max.saturating_sub(parent.metrics.tool_calls);
        if left == 0 {
            return Err("no tool-call budget left for a child run".into());
        }
        b.max_tool_calls = Some(b.max_tool_calls.map_or(left.div_ceil(2), |t| t.min(left)));
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_budgets_are_rejected_with_the_field_named() {
        let input = BudgetsInput {
            max_tokens: Some(-5),
            ..Default::default()
        };
        let err = input.resolve(&Budgets::default()).unwrap_err();
        assert!(err.to_string().contains("budgets.max_tokens"), "{err}");
        assert!(err.to_string().contains("-5"), "{err}");
    }

    #[test]
    fn missing_budgets_take_the_defaults() {
        let b = BudgetsInput::default()
            .resolve(&Budgets::default())
            .unwrap();
        assert_eq!(b.max_iterations, 25);
        assert_eq!(b.max_running_ms, 3_600_000);
        assert_eq!(b.max_tokens, None);
        assert_eq!(b.max_cost_usd, None);
    }
}
