//! The run: its budgets, thresholds, metrics and plan (its status machine is `status`).

mod budgets;
mod plan;

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use self::budgets::{
    Budgets, BudgetsInput, DEFAULT_MAX_ITERATIONS, DEFAULT_MAX_RUNNING_MS, MAX_ITERATIONS_CEILING,
    Metrics, ModelMetrics, Spend, Thresholds, carve_child_budgets,
};
pub use self::plan::{
    ExecutorPlanEdit, MAX_PLAN_STEPS, MAX_STEP_NOTE_CHARS, PlanStep, PlanStepEdit, RunPatch,
    StepStatus, apply_executor_updates, apply_plan_updates,
};
use crate::criteria::{Criterion, Grade, Grading};
use crate::record::DocMeta;
use crate::report::Report;
pub use crate::status::{CurrentStatus, RunStatus};

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

/// Which of the caller's projects a run works in (the seed's `scope`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// No project in particular.
    Global,
    /// The one project `project_ids` names.
    Project,
    /// The projects `project_ids` names.
    MultiProject,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Global => "global",
            Scope::Project => "project",
            Scope::MultiProject => "multi_project",
        }
    }
}

/// At most this many projects in a run's scope, each id at most `MAX_PROJECT_ID` characters.
pub const MAX_PROJECTS: usize = 50;
pub const MAX_PROJECT_ID: usize = 128;

/// A run's scope and the projects it names, as checked at creation: `global` names none,
/// `project` one, `multi_project` one or more.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RunScope {
    pub scope: Scope,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub project_ids: Vec<String>,
}

impl RunScope {
    /// The scope a request gives (`scope`, `project_ids`), or which field is not acceptable.
    /// No scope and no projects is no scope.
    pub fn checked(
        scope: Option<Scope>, project_ids: Option<Vec<String>>,
    ) -> Result<Option<RunScope>, String> {
        let ids = project_ids.unwrap_or_default();
        let Some(scope) = scope else {
            if ids.is_empty() {
                return Ok(None);
            }
            return Err(
                "project_ids needs a scope: give scope `project` or `multi_project`".to_string(),
            );
        };
        for (i, id) in ids.iter().enumerate() {
            let n = id.chars().count();
            if crate::is_blank(id) || n > MAX_PROJECT_ID || crate::control_char(id).is_some() {
                return Err(format!(
                    "project_ids[{i}] must be 1 to {MAX_PROJECT_ID} characters, not blank, \
                     without control characters, got {n}"
                ));
            }
            if ids[..i].contains(id) {
                return Err(format!("project_ids[{i}] repeats `{id}`"));
            }
        }
        let fits = match scope {
            Scope::Global => ids.is_empty(),
            Scope::Project => ids.len() == 1,
            Scope::MultiProject => (1..=MAX_PROJECTS).contains(&ids.len()),
        };
        if !fits {
            let want = match scope {
                Scope::Global => "no project_ids".to_string(),
                Scope::Project => "exactly one project id in project_ids".to_string(),
                Scope::MultiProject => format!("1 to {MAX_PROJECTS} project ids in project_ids"),
            };
            return Err(format!(
                "scope `{}` takes {want}, got {}",
                scope.as_str(),
                ids.len()
            ));
        }
        Ok(Some(RunScope {
            scope,
            project_ids: ids,
        }))
    }
}

/// The breakers' memory: consecutive-iteration counters, and what the last iterations did and
/// left, all bounded.
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
    /// The tools the last iteration's planner called, sorted, each once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub last_tools: Vec<String>,
    /// Set after an iteration without progress that called the same tools as the one before:
    /// fingerprints of its calls, which the next iteration refuses, and whose planner must
    /// update the plan (a forced replan).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replan: Vec<String>,
    /// The workspace's documents as one hash (`progress::doc_part`, hex), brought up to date by
    /// each commit from what it wrote.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub docs_hash: String,
    /// The workspace states (documents and plan statuses) the last iterations left, newest
    /// last (at most `progress::STATES_KEPT`): a return to one is no progress.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub states: Vec<String>,
    /// The last iterations in a line each, newest last: the planner's recent history beside
    /// the scratchpad entries it is shown.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<String>,
}

impl Streaks {
    /// The counters started over (after `continue` or a follow-up question: the user's call to
    /// go on) and the forced replan lifted; what the run did and the states it was in are kept.
    pub fn started_over(&self) -> Streaks {
        Streaks {
            docs_hash: self.docs_hash.clone(),
            states: self.states.clone(),
            history: self.history.clone(),
            ..Streaks::default()
        }
    }
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
    /// Conditions the result must meet: plain text, which a completion claim must map (`c1`,
    /// `c2`, … in order) to accepted evidence and a grader judges, or checks the platform runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub completion_criteria: Vec<Criterion>,
    /// How the plain-text criteria are graded.
    #[serde(default, skip_serializing_if = "Grading::is_default")]
    pub grading: Grading,
    // The grader's verdicts on the iteration in flight, so a redelivery of it asks no grader
    // twice; cleared by its commit. Internal: not in the API document, and not served.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(skip)]
    pub grades: Vec<Grade>,
    /// What the run is about in the caller's world (`GET /v1/runs?context_type=&entity_id=`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<RunContext>,
    /// Which of the caller's projects the run works in; the planner's and executors' prompts
    /// name them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<RunScope>,
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
            grading: Grading::default(),
            grades: vec![],
            agent: None,
            context: None,
            scope: None,
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
