//! The run: its budgets, thresholds, metrics and plan (its status machine is `status`).

use std::collections::BTreeMap;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::DomainError;
use crate::record::DocMeta;
use crate::report::Report;
pub use crate::status::{CurrentStatus, RunStatus};

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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Pending,
    InProgress,
    Done,
    Blocked,
}

impl StepStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Pending => "pending",
            StepStatus::InProgress => "in_progress",
            StepStatus::Done => "done",
            StepStatus::Blocked => "blocked",
        }
    }

    pub fn is_open(self) -> bool {
        matches!(self, StepStatus::Pending | StepStatus::InProgress)
    }
    fn rank(self) -> u8 {
        match self {
            StepStatus::Pending => 0,
            StepStatus::InProgress => 1,
            StepStatus::Blocked => 1,
            StepStatus::Done => 2,
        }
    }
}

/// How much the agent may do without asking.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PermissionMode {
    /// Plans and acts on its own.
    #[default]
    Autopilot,
    /// The first plan waits for the user's approval; then autopilot.
    ApprovePlan,
    /// Every write tool call waits for the user's approval.
    PerWrite,
}

/// A write the planner proposed under `per_write`, held until the user decides.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PendingCall {
    /// `c{iteration}.{k}`: what the user approves or rejects.
    pub id: String,
    pub name: String,
    pub args: serde_json::Value,
    #[serde(default)]
    pub decision: Option<Decision>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    Approved,
    Rejected { reason: String },
}

/// A child run as its parent sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChildRun {
    pub id: String,
    pub objective: String,
    pub status: RunStatus,
    /// Carved out of the parent's remainder when the child was spawned.
    pub budgets: Budgets,
    /// The child's report summary, once it ended.
    #[serde(default)]
    pub summary: Option<String>,
    #[serde(default)]
    pub tokens: u64,
    #[serde(default)]
    pub cost_usd: f64,
    /// Fire-and-forget (`spawn_run` with `detached`): the parent neither waits for it nor
    /// takes it down when it ends; it runs on its own budgets, still listed here (and counted
    /// against the parent's children and depth limits), and reports its end here.
    #[serde(default)]
    pub detached: bool,
}

impl ChildRun {
    /// A child as its parent's commit lists it: queued, nothing spent yet.
    pub fn new(id: &str, objective: &str, budgets: Budgets, detached: bool) -> ChildRun {
        ChildRun {
            id: id.to_string(),
            objective: objective.to_string(),
            status: RunStatus::Queued,
            budgets,
            summary: None,
            tokens: 0,
            cost_usd: 0.0,
            detached,
        }
    }

    /// A child its parent waits for and takes down with it: attached and not yet ended.
    pub fn is_attached_and_active(&self) -> bool {
        !self.detached && !self.status.is_ended()
    }
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

/// A user's mid-run edit (`PATCH /v1/runs/{id}`): a new objective, and plan steps to add or
/// change by id.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunPatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = crate::NO_CONTROLS))]
    pub objective: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 50))]
    pub plan: Vec<PlanStepEdit>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanStepEdit {
    #[schemars(length(min = 1, max = 64), regex(pattern = crate::NOT_BLANK))]
    pub id: String,
    #[schemars(length(max = 500), regex(pattern = crate::NO_CONTROLS))]
    pub title: String,
    pub status: StepStatus,
}

impl RunPatch {
    pub fn is_empty(&self) -> bool {
        self.objective.is_none() && self.plan.is_empty()
    }

    /// A later patch on top of one not yet applied: the newest objective, plan edits merged
    /// by step id.
    pub fn merge(mut self, later: RunPatch) -> RunPatch {
        if later.objective.is_some() {
            self.objective = later.objective;
        }
        for edit in later.plan {
            match self.plan.iter_mut().find(|e| e.id == edit.id) {
                Some(e) => *e = edit,
                None => self.plan.push(edit),
            }
        }
        self
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanStep {
    pub id: String,
    pub title: String,
    pub status: StepStatus,
    pub iteration_last_touched: u32,
    /// The last note an executor left on the step it worked on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

pub const MAX_PLAN_STEPS: usize = 50;

/// The thing in the caller's application a run is attached to: a kind and an id of the
/// caller's choosing (the seed's `context_type` and `entity_id`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunContext {
    /// A kind, e.g. `project` (1 to 64 characters).
    #[serde(rename = "type")]
    #[schemars(length(min = 1, max = 64), regex(pattern = r"\S"))]
    pub kind: String,
    /// The entity's id in the caller's system (1 to 256 characters).
    #[schemars(length(min = 1, max = 256), regex(pattern = r"\S"))]
    pub entity_id: String,
}

impl RunContext {
    /// The context as given, or which field is not acceptable.
    pub fn checked(self) -> Result<RunContext, String> {
        let field = |name: &str, v: &str, max: usize| {
            let n = v.chars().count();
            if v.trim().is_empty() || n > max {
                Err(format!(
                    "context.{name} must be 1 to {max} characters, not blank, got {n}"
                ))
            } else {
                Ok(())
            }
        };
        field("type", &self.kind, 64)?;
        field("entity_id", &self.entity_id, 256)?;
        Ok(self)
    }
}

/// Applies plan updates; returns whether any step advanced (new step, or status moved forward).
pub fn apply_plan_updates(
    plan: &mut Vec<PlanStep>, updates: &[(String, String, StepStatus)], iteration: u32,
) -> bool {
    let mut advanced = false;
    for (id, title, status) in updates {
        if let Some(step) = plan.iter_mut().find(|s| &s.id == id) {
            if status.rank() > step.status.rank() {
                advanced = true;
            }
            if step.status != *status || (!title.is_empty() && &step.title != title) {
                step.status = *status;
                if !title.is_empty() {
                    step.title = title.clone();
                }
                step.iteration_last_touched = iteration;
            }
        } else if plan.len() < MAX_PLAN_STEPS {
            plan.push(PlanStep {
                id: id.clone(),
                title: title.clone(),
                status: *status,
                iteration_last_touched: iteration,
                notes: None,
            });
            advanced = true;
        }
    }
    advanced
}

/// Characters of an executor's note kept on a plan step.
pub const MAX_STEP_NOTE_CHARS: usize = 1_000;

/// What an executor's plan updates did: the steps changed (as the plan lists them now) and
/// why the others were refused.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExecutorPlanEdit {
    pub changed: Vec<PlanStep>,
    pub refused: Vec<String>,
    pub advanced: bool,
}

/// An executor's updates of the plan steps its task was `given`: the status and note of those
/// steps only. A step not given to it, or not in the plan, is refused (an executor never adds
/// a step); a note is clipped to [`MAX_STEP_NOTE_CHARS`].
pub fn apply_executor_updates(
    plan: &mut [PlanStep], given: &[String], updates: &[crate::planner::StepNote], iteration: u32,
) -> ExecutorPlanEdit {
    let mut edit = ExecutorPlanEdit::default();
    for u in updates {
        if !given.contains(&u.id) {
            edit.refused
                .push(format!("step {} was not given to this task", u.id));
            continue;
        }
        let Some(step) = plan.iter_mut().find(|s| s.id == u.id) else {
            edit.refused
                .push(format!("step {} is not in the plan", u.id));
            continue;
        };
        let before = step.clone();
        if let Some(status) = u.status {
            edit.advanced |= status.rank() > step.status.rank();
            step.status = status;
        }
        if let Some(note) = u.note.as_deref().map(str::trim).filter(|n| !n.is_empty()) {
            step.notes = Some(note.chars().take(MAX_STEP_NOTE_CHARS).collect());
        }
        if *step != before {
            step.iteration_last_touched = iteration;
            edit.changed.push(step.clone());
        }
    }
    edit
}

/// Consecutive-iteration counters behind the breakers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Streaks {
    pub no_progress: u32,
    pub error: u32,
    pub last_error_fingerprint: Option<String>,
    pub repeat: u32,
    pub last_action_fingerprint: Option<String>,
    /// Consecutive iterations with a tool call refused before it ran (unknown tool, bad
    /// arguments) and not repaired.
    #[serde(default)]
    pub tool_failure: u32,
}

/// A fenced claim on one iteration. Only the owner may commit iteration `iteration`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Lease {
    pub owner: String,
    pub iteration: u32,
    pub expires_at: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UserAnswer {
    pub text: String,
    pub at: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopType {
    Completed,
    WaitingOnUser,
    Budget,
    MaxIterations,
    NoProgress,
    RepeatedError,
    Canceled,
    Error,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StoppingReason {
    #[serde(rename = "type")]
    pub kind: StopType,
    pub detail: String,
}

impl StoppingReason {
    pub fn new(kind: StopType, detail: impl Into<String>) -> Self {
        StoppingReason {
            kind,
            detail: detail.into(),
        }
    }
}

/// What the planner is told about the previous iteration. Bounded so prompts stay flat.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LastIteration {
    pub iteration: u32,
    pub tool_results: Vec<ToolResultBrief>,
    pub executor_results: Vec<ExecutorBrief>,
    pub created_docs: Vec<String>,
    pub updated_docs: Vec<String>,
    pub progress_delta: bool,
    pub error: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolResultBrief {
    pub name: String,
    pub ok: bool,
    pub result: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repaired: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExecutorBrief {
    pub title: String,
    pub summary: String,
    pub tool_results: Vec<ToolResultBrief>,
}

/// Whether a list shared between copies of a run is empty (then it is left out of the JSON).
fn no_items<T>(items: &Arc<Vec<T>>) -> bool {
    items.is_empty()
}

// The two lists that every write of a run carries but few change (`recent_docs`,
// `spend_keys`) are shared between its copies (plain comments: the API document shows doc
// comments): a run is copied several times an iteration, each change computed on a copy, and
// copying these lists was most of a copy's cost.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Run {
    pub id: String,
    pub user_id: String,
    pub objective: String,
    // Changed only by `Run::transition_to` (a plain comment: the API document shows doc comments).
    pub status: CurrentStatus,
    /// Last committed iteration (0 before the first commit).
    pub iteration: u32,
    pub model: String,
    /// An agent run: its iterations are this coding agent's processes (`claude`, `codex`,
    /// `gemini`, `command`, or a backend the host configures) in the run's task folder,
    /// instead of planner calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Plain-language conditions the result must meet: a completion claim must map each one
    /// (`c1`, `c2`, … in order) to accepted evidence.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub completion_criteria: Vec<String>,
    /// What the run is about in the caller's world (`GET /v1/runs?context_type=&entity_id=`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<RunContext>,
    /// Models the run rotates over (round robin, failing over past degraded ones) when more
    /// than one was asked for; the first is `model`. Empty: `model` alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<String>,
    pub budgets: Budgets,
    pub thresholds: Thresholds,
    pub metrics: Metrics,
    pub plan: Vec<PlanStep>,
    pub streaks: Streaks,
    pub lease: Option<Lease>,
    pub cancel_requested: bool,
    /// Set by `pause` while an iteration is in flight: its commit pauses the run.
    #[serde(default)]
    pub pause_requested: bool,
    /// The user's edits, applied when the next iteration is claimed.
    #[serde(default)]
    pub pending_patch: Option<RunPatch>,
    #[serde(default)]
    pub permission_mode: PermissionMode,
    /// Under `approve_plan`: the user approved a plan.
    #[serde(default)]
    pub plan_approved: bool,
    /// Under `per_write`: writes waiting for (or carrying) the user's decision.
    #[serde(default)]
    pub pending_calls: Vec<PendingCall>,
    /// Runs this run spawned, with the budgets carved out for them.
    #[serde(default)]
    pub children: Vec<ChildRun>,
    /// The tools this run may use (built-in or registered); `None`: every tool. Children
    /// inherit it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<Vec<String>>,
    /// Keys of the last model calls whose spend was recorded: a spend write retried after it
    /// landed counts once.
    #[serde(default, skip_serializing_if = "no_items")]
    pub spend_keys: Arc<Vec<String>>,
    /// The docs written most recently, newest first (at most `RECENT_DOCS`): the planner's
    /// index of the workspace, kept on the run so it costs no read per iteration.
    #[serde(default, skip_serializing_if = "no_items")]
    pub recent_docs: Arc<Vec<DocMeta>>,
    /// Number of events appended so far; the next event gets `event_seq + 1`.
    pub event_seq: u64,
    pub parent_run_id: Option<String>,
    pub depth: u32,
    /// Answers from the user not yet shown to the planner.
    pub pending_answers: Vec<UserAnswer>,
    /// Messages the user posted to the run (`POST /v1/runs/{id}/messages`), not yet shown to a
    /// planner: the next iteration's prompt carries them, whatever the run's status.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_messages: Vec<UserAnswer>,
    /// The user's follow-up question to the run after it ended (`POST /v1/runs/{id}/follow-up`):
    /// every planner prompt from then on carries it, until another follow-up replaces it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follow_up_question: Option<String>,
    /// While `waiting_on_children`: when the wait times out (`child_wait_timeout_s` after it
    /// began) and the run goes on without the children still running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub children_wait_until: Option<i64>,
    /// Open questions while `waiting_on_user`.
    pub questions: Vec<String>,
    /// Guidance for the next planner prompt (failed exit-gate conditions, anti-repetition).
    pub hints: Vec<String>,
    pub remaining_work: Vec<String>,
    pub last_iteration: Option<LastIteration>,
    pub stopping_reason: Option<StoppingReason>,
    pub report: Option<Report>,
    pub notified: bool,
    pub created_at: i64,
    pub updated_at: i64,
    pub ended_at: Option<i64>,
}

/// How many recently written docs a run keeps for the planner's workspace index: enough to
/// orient the planner, few enough that the run row (rewritten on every write) stays small.
pub const RECENT_DOCS: usize = 25;
/// Titles in the index are clipped to this many characters.
const RECENT_TITLE_CHARS: usize = 80;

impl Run {
    /// A new run, queued, with nothing spent.
    pub fn new(
        id: &str, user_id: &str, objective: &str, model: &str, budgets: Budgets,
        thresholds: Thresholds, now: i64,
    ) -> Run {
        Run {
            id: id.to_string(),
            user_id: user_id.to_string(),
            objective: objective.to_string(),
            status: CurrentStatus::initial(),
            iteration: 0,
            model: model.to_string(),
            completion_criteria: vec![],
            agent: None,
            context: None,
            models: vec![],
            budgets,
            thresholds,
            metrics: Metrics::default(),
            plan: vec![],
            streaks: Streaks::default(),
            lease: None,
            cancel_requested: false,
            pause_requested: false,
            pending_patch: None,
            permission_mode: PermissionMode::Autopilot,
            plan_approved: false,
            pending_calls: vec![],
            children: vec![],
            spend_keys: Arc::default(),
            recent_docs: Arc::default(),
            allowed_tools: None,
            event_seq: 0,
            parent_run_id: None,
            depth: 0,
            pending_answers: vec![],
            pending_messages: vec![],
            follow_up_question: None,
            children_wait_until: None,
            questions: vec![],
            hints: vec![],
            remaining_work: vec![],
            last_iteration: None,
            stopping_reason: None,
            report: None,
            notified: false,
            created_at: now,
            updated_at: now,
            ended_at: None,
        }
    }

    /// Moves the docs just written to the front of `recent_docs`, keeping it bounded.
    pub fn note_docs(&mut self, written: impl IntoIterator<Item = DocMeta>) {
        let mut written = written.into_iter().peekable();
        if written.peek().is_none() {
            return;
        }
        // Shared with the copies of the run taken before this change; copied here, on write.
        let recent = Arc::make_mut(&mut self.recent_docs);
        for mut meta in written {
            if meta.title.chars().count() > RECENT_TITLE_CHARS {
                meta.title = meta.title.chars().take(RECENT_TITLE_CHARS).collect();
            }
            // The index is the planner's map of paths; sources stay with the doc.
            meta.sources.clear();
            recent.retain(|d| d.path != meta.path);
            recent.insert(0, meta);
        }
        recent.truncate(RECENT_DOCS);
    }

    /// Attached children not yet ended: those the run may wait for, and must see end before it
    /// completes. Detached children are left out: fire-and-forget.
    pub fn active_children(&self) -> usize {
        self.children
            .iter()
            .filter(|c| c.is_attached_and_active())
            .count()
    }

    /// What budgets are checked against: the run's own spend plus everything reserved for its
    /// children, so parent and children together never exceed the parent's budgets.
    pub fn budget_metrics(&self) -> Metrics {
        let mut m = self.metrics.clone();
        for c in &self.children {
            m.output_tokens += c.budgets.max_tokens.unwrap_or(0);
            m.cost_usd += c.budgets.max_cost_usd.unwrap_or(0.0);
        }
        m
    }

    pub fn lease_is_live(&self, now: i64) -> bool {
        self.lease.as_ref().is_some_and(|l| l.expires_at > now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_executor_updates_the_status_and_notes_of_the_steps_it_was_given_and_no_other() {
        // Arrange
        let step = |id: &str| PlanStep {
            id: id.into(),
            title: format!("step {id}"),
            status: StepStatus::Pending,
            iteration_last_touched: 1,
            notes: None,
        };
        let mut plan = vec![step("s1"), step("s2")];
        let note =
            |id: &str, status: Option<StepStatus>, note: Option<&str>| crate::planner::StepNote {
                id: id.into(),
                status,
                note: note.map(str::to_string),
            };
        let updates = [
            note(
                "s1",
                Some(StepStatus::Done),
                Some("  found three sources  "),
            ),
            note("s2", Some(StepStatus::Done), None),
            note("s9", None, Some("made up")),
        ];

        // Act
        let edit = apply_executor_updates(&mut plan, &["s1".into(), "s9".into()], &updates, 4);

        // Assert
        assert_eq!(plan[0].status, StepStatus::Done);
        assert_eq!(plan[0].notes.as_deref(), Some("found three sources"));
        assert_eq!(plan[0].iteration_last_touched, 4);
        assert_eq!(
            plan[1],
            step("s2"),
            "a step not given to the task is left alone"
        );
        assert_eq!(plan.len(), 2, "an executor never adds a step");
        assert!(edit.advanced);
        assert_eq!(edit.changed.len(), 1);
        assert_eq!(
            edit.refused,
            vec![
                "step s2 was not given to this task",
                "step s9 is not in the plan"
            ]
        );
    }

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

    #[test]
    fn plan_updates_report_advance_only_when_a_step_moves_forward() {
        let mut plan = vec![];
        let add = [("s1".to_string(), "a".to_string(), StepStatus::Pending)];
        assert!(apply_plan_updates(&mut plan, &add, 1));
        assert!(!apply_plan_updates(&mut plan, &add, 2));
        let done = [("s1".to_string(), String::new(), StepStatus::Done)];
        assert!(apply_plan_updates(&mut plan, &done, 3));
        assert_eq!(plan[0].iteration_last_touched, 3);
        assert_eq!(plan[0].title, "a");
    }
}
