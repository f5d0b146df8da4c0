//! The built-in tools: the workspace's docs, the plan, questions to the user and child runs.

use async_trait::async_trait;
use longrun_domain::record::{MAX_DOC_BYTES, normalize_doc_path, normalize_tags};
use longrun_domain::report::DOC_SOURCE_PREFIX;
use longrun_domain::run::{Budgets, BudgetsInput, StepStatus, carve_child_budgets};
use longrun_ports::{Tool, ToolContext};
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::staging::{ChildRequest, Staging};

/// The staging behind a built-in tool's call; the engine always passes its own.
fn staging_of(ctx: &dyn ToolContext) -> Result<&Staging, String> {
    ctx.staging()
        .downcast_ref::<Staging>()
        .ok_or_else(|| "built-in tools run only inside the engine".to_string())
}

/// The name, description and argument schema every built-in tool declares alike.
macro_rules! tool_spec {
    ($name:literal, $description:expr, $args:ty) => {
        fn name(&self) -> &'static str {
            $name
        }
        fn description(&self) -> &'static str {
            $description
        }
        fn schema(&self) -> Value {
            schema_of::<$args>()
        }
    };
}

fn schema_of<T: JsonSchema>() -> Value {
    serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default()
}

fn args<T: DeserializeOwned>(v: Value) -> Result<T, String> {
    serde_json::from_value(v).map_err(|e| format!("invalid arguments: {e}"))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DocWriteArgs {
    /// Workspace path, e.g. `notes/findings.md`.
    path: String,
    content: String,
    title: Option<String>,
    /// Labels to find the document by (`GET …/workspace?tag=`); replace the document's tags
    /// when given, keep them when left out.
    tags: Option<Vec<String>>,
}

pub(super) struct DocWrite;

#[async_trait]
impl Tool for DocWrite {
    tool_spec!(
        "doc_write",
        "Create or replace a workspace document.",
        DocWriteArgs
    );
    fn writes(&self) -> bool {
        true
    }
    async fn call(&self, ctx: &dyn ToolContext, v: Value) -> Result<Value, String> {
        let st = staging_of(ctx)?;
        let a: DocWriteArgs = args(v)?;
        let path = normalize_doc_path(&a.path)?;
        if a.content.len() > MAX_DOC_BYTES {
            return Err(format!(
                "content is {} bytes; documents are limited to {MAX_DOC_BYTES} bytes, split it",
                a.content.len()
            ));
        }
        let tags = a.tags.as_deref().map(normalize_tags).transpose()?;
        st.write_doc(&path, a.title.as_deref(), &a.content, tags)
            .await
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DocReadArgs {
    path: String,
}

pub(super) struct DocRead;

#[async_trait]
impl Tool for DocRead {
    tool_spec!(
        "doc_read",
        "Read a workspace document by path.",
        DocReadArgs
    );
    async fn call(&self, ctx: &dyn ToolContext, v: Value) -> Result<Value, String> {
        let st = staging_of(ctx)?;
        let a: DocReadArgs = args(v)?;
        let path = normalize_doc_path(&a.path)?;
        match st.read_doc(&path).await? {
            Some(d) => Ok(
                json!({"path": d.path, "title": d.title, "content": d.content, "version": d.version}),
            ),
            None => Err(format!(
                "no document at `{path}`; use doc_list to see what exists"
            )),
        }
    }
    /// The doc read: docs written after it link to it (the report's `links`).
    fn sources(&self, _args: &Value, result: &Value) -> Vec<String> {
        match result["path"].as_str() {
            Some(path) => vec![format!("{DOC_SOURCE_PREFIX}{path}")],
            None => vec![],
        }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DocListArgs {
    prefix: Option<String>,
}

pub(super) struct DocList;

#[async_trait]
impl Tool for DocList {
    tool_spec!(
        "doc_list",
        "List workspace documents, optionally under a path prefix.",
        DocListArgs
    );
    async fn call(&self, ctx: &dyn ToolContext, v: Value) -> Result<Value, String> {
        let st = staging_of(ctx)?;
        let a: DocListArgs = args(v)?;
        let prefix = a.prefix.unwrap_or_default();
        let prefix = prefix.trim_start_matches('/');
        let docs = st.list_docs(prefix).await?;
        Ok(
            json!({"docs": docs.iter().map(|d| json!({"path": d.path, "title": d.title, "bytes": d.bytes})).collect::<Vec<_>>()}),
        )
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DocSearchArgs {
    query: String,
}

pub(super) struct DocSearch;

#[async_trait]
impl Tool for DocSearch {
    tool_spec!(
        "doc_search",
        "Search workspace documents' titles and content (case-insensitive substring).",
        DocSearchArgs
    );
    async fn call(&self, ctx: &dyn ToolContext, v: Value) -> Result<Value, String> {
        let st = staging_of(ctx)?;
        let a: DocSearchArgs = args(v)?;
        if a.query.trim().is_empty() {
            return Err("query must not be empty".into());
        }
        Ok(json!({"hits": st.search(a.query.trim()).await?}))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PlanStepArg {
    id: String,
    title: String,
    status: StepStatus,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PlanUpdateArgs {
    steps: Vec<PlanStepArg>,
}

pub(super) struct PlanUpdateTool;

#[async_trait]
impl Tool for PlanUpdateTool {
    tool_spec!(
        "plan_update",
        "Add plan steps or change their status (pending, in_progress, done, blocked).",
        PlanUpdateArgs
    );
    async fn call(&self, ctx: &dyn ToolContext, v: Value) -> Result<Value, String> {
        let st = staging_of(ctx)?;
        let a: PlanUpdateArgs = args(v)?;
        if a.steps.iter().any(|s| s.id.trim().is_empty()) {
            return Err("every step needs a non-empty id".into());
        }
        let updates: Vec<_> = a
            .steps
            .into_iter()
            .map(|s| (s.id, s.title, s.status))
            .collect();
        st.update_plan(&updates);
        Ok(json!({"steps": st.plan().len()}))
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AskUserArgs {
    questions: Vec<String>,
}

pub(super) struct AskUser;

#[async_trait]
impl Tool for AskUser {
    tool_spec!(
        "ask_user",
        "Ask the user questions; the run waits for the answer after this iteration.",
        AskUserArgs
    );
    async fn call(&self, ctx: &dyn ToolContext, v: Value) -> Result<Value, String> {
        let st = staging_of(ctx)?;
        let a: AskUserArgs = args(v)?;
        let questions: Vec<String> = a
            .questions
            .into_iter()
            .map(|q| q.trim().to_string())
            .filter(|q| !q.is_empty())
            .collect();
        if questions.is_empty() || questions.len() > 5 {
            return Err("ask between 1 and 5 non-empty questions".into());
        }
        st.ask(&questions);
        Ok(json!({"asked": questions.len()}))
    }
}

/// How deep a tree of runs may grow unless the deployment says otherwise.
pub const MAX_CHILD_DEPTH: u32 = 16;
/// Children one run may have in all.
pub const MAX_CHILDREN: usize = 20;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SpawnRunArgs {
    /// What the child run must achieve.
    objective: String,
    /// Limits for the child; capped at what this run has left.
    #[serde(default)]
    budgets: BudgetsInput,
    /// Fire-and-forget: this run neither waits for the child nor ends it when it ends itself;
    /// the child runs on its own budgets (still carved from this run's) and reports its end
    /// here.
    #[serde(default)]
    detached: bool,
}

/// `spawn_run`, allowing trees of runs up to `max_depth` deep.
pub struct SpawnRun {
    pub max_depth: u32,
}

#[async_trait]
impl Tool for SpawnRun {
    tool_spec!(
        "spawn_run",
        "Start a child run for a self-contained part of the objective. Its budgets come out of \
         this run's remaining budget. Use wait_for_children to sleep until children end; this \
         run cannot complete while a child is active. With detached: true the child is \
         fire-and-forget: not waited for, it outlives this run's end.",
        SpawnRunArgs
    );
    fn writes(&self) -> bool {
        true
    }
    async fn call(&self, ctx: &dyn ToolContext, v: Value) -> Result<Value, String> {
        let st = staging_of(ctx)?;
        let a: SpawnRunArgs = args(v)?;
        let objective = a.objective.trim().to_string();
        if objective.is_empty() || objective.len() > 16 * 1024 {
            return Err("objective must be 1 to 16384 bytes".into());
        }
        let mut inner = st.lock();
        let Some(parent) = inner.parent.clone() else {
            return Err("spawn_run is not available here".into());
        };
        if parent.depth + 1 > self.max_depth {
            return Err(format!(
                "runs may nest at most {} deep; do this part here",
                self.max_depth
            ));
        }
        if parent.children.len() + inner.spawned.len() >= MAX_CHILDREN {
            return Err(format!("a run may spawn at most {MAX_CHILDREN} children"));
        }
        let siblings: Vec<Budgets> = inner.spawned.iter().map(|c| c.budgets.clone()).collect();
        let budgets = carve_child_budgets(&parent, &siblings, &a.budgets, &Budgets::default())?;
        // Stable across a redelivered iteration, so the child is created once.
        let id =
            longrun_domain::change::child_id(&parent.id, st.iteration, inner.spawned.len() + 1);
        inner.spawned.push(ChildRequest {
            id: id.clone(),
            objective,
            budgets: budgets.clone(),
            detached: a.detached,
        });
        Ok(
            json!({"child_run_id": id, "budgets": budgets, "status": "starting", "detached": a.detached}),
        )
    }
}

pub(super) struct WaitForChildren;

#[async_trait]
impl Tool for WaitForChildren {
    fn name(&self) -> &'static str {
        "wait_for_children"
    }
    fn description(&self) -> &'static str {
        "After this iteration, sleep until a child run ends; its report summary wakes this run."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    }
    async fn call(&self, ctx: &dyn ToolContext, _v: Value) -> Result<Value, String> {
        let st = staging_of(ctx)?;
        let mut inner = st.lock();
        let active = inner
            .parent
            .as_ref()
            .map(|p| p.active_children())
            .unwrap_or(0)
            + inner.spawned.iter().filter(|c| !c.detached).count();
        if active == 0 {
            return Err("no attached child run is active; nothing to wait for (detached children are not waited for)".into());
        }
        inner.wait_for_children = true;
        Ok(json!({"waiting_for": active}))
    }
}
