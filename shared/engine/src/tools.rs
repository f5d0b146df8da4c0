//! Built-in tools and the registry that validates calls against each tool's JSON schema.
//!
//! Tools never write to the store: they stage changes in `Staging`, which the iteration
//! commits in its single transaction (or drops, if the worker crashes).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use longrun_domain::decide::ToolFailureKind;
use longrun_domain::planner::ToolCall;
use longrun_domain::record::{
    MAX_DOC_BYTES, MAX_SOURCE_CHARS, merge_sources, normalize_doc_path, normalize_tags,
};
use longrun_domain::report::DOC_SOURCE_PREFIX;
use longrun_domain::run::{
    Budgets, BudgetsInput, PlanStep, Run, StepStatus, apply_plan_updates, carve_child_budgets,
};
use longrun_domain::{Doc, DocMeta};
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use longrun_domain::DocHit;
use longrun_ports::{Store, Tool, ToolContext};

const LIST_LIMIT: usize = 100;

/// Everything an iteration changes, kept in memory until commit.
pub struct Staging {
    pub run_id: String,
    pub iteration: u32,
    pub now: i64,
    store: Arc<dyn Store>,
    inner: Mutex<StagingInner>,
}

#[derive(Default)]
struct StagingInner {
    /// New version of each doc written this iteration, and the committed one it replaces.
    docs: BTreeMap<String, (Doc, Option<Doc>)>,
    plan: Vec<PlanStep>,
    plan_advanced: bool,
    plan_changes: Vec<String>,
    questions: Vec<String>,
    /// The run being worked on, for tools that reason about it (`spawn_run`).
    parent: Option<Run>,
    spawned: Vec<ChildRequest>,
    wait_for_children: bool,
    /// What this iteration's tools read (URLs, `tool:NAME`), most recent first.
    sources: Vec<String>,
    /// What the scratchpad entries in the planner's view read.
    carried: Vec<String>,
}

/// A child run `spawn_run` asked for; the engine creates it once the commit listed it.
#[derive(Clone, Debug, PartialEq)]
pub struct ChildRequest {
    pub id: String,
    pub objective: String,
    pub budgets: Budgets,
    /// Fire-and-forget: not waited for, not ended with its parent.
    pub detached: bool,
}

/// What the iteration staged, ready for the commit.
pub struct Staged {
    pub docs: Vec<Doc>,
    pub created: Vec<String>,
    pub updated: Vec<String>,
    pub plan: Vec<PlanStep>,
    pub plan_advanced: bool,
    pub plan_changes: Vec<String>,
    pub questions: Vec<String>,
    pub spawned: Vec<ChildRequest>,
    pub wait_for_children: bool,
    /// What this iteration's tools read, for its scratchpad entry.
    pub sources: Vec<String>,
}

impl Staging {
    pub fn new(
        store: Arc<dyn Store>, run_id: &str, iteration: u32, plan: Vec<PlanStep>, now: i64,
    ) -> Self {
        Staging {
            run_id: run_id.to_string(),
            iteration,
            now,
            store,
            inner: Mutex::new(StagingInner {
                plan,
                ..Default::default()
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, StagingInner> {
        // A poisoned lock only means a tool panicked mid-update; the data is still usable.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub async fn read_doc(&self, path: &str) -> Result<Option<Doc>, String> {
        if let Some((doc, _)) = self.lock().docs.get(path) {
            return Ok(Some(doc.clone()));
        }
        self.store
            .doc(&self.run_id, path)
            .await
            .map_err(|e| e.to_string())
    }

    pub async fn doc_exists(&self, path: &str) -> bool {
        matches!(self.read_doc(path).await, Ok(Some(_)))
    }

    pub async fn write_doc(
        &self, path: &str, title: Option<&str>, content: &str, tags: Option<Vec<String>>,
    ) -> Result<Value, String> {
        let staged_base = self.lock().docs.get(path).map(|(_, base)| base.clone());
        let base = match staged_base {
            Some(base) => base,
            None => self
                .store
                .doc(&self.run_id, path)
                .await
                .map_err(|e| e.to_string())?,
        };
        let title = title
            .map(str::to_string)
            .or_else(|| base.as_ref().map(|b| b.title.clone()))
            .unwrap_or_else(|| path.rsplit('/').next().unwrap_or(path).to_string());
        let tags =
            tags.unwrap_or_else(|| base.as_ref().map(|b| b.tags.clone()).unwrap_or_default());
        if let Some(b) = &base
            && b.content == content
            && b.title == title
            && b.tags == tags
        {
            self.lock().docs.remove(path);
            return Ok(json!({"path": path, "changed": false, "version": b.version}));
        }
        let sources = {
            let inner = self.lock();
            let cited = merge_sources(&inner.sources, &inner.carried);
            merge_sources(&cited, base.iter().flat_map(|b| &b.sources))
        };
        let doc = Doc {
            path: path.to_string(),
            title,
            content: content.to_string(),
            tags,
            created_iteration: base
                .as_ref()
                .map_or(self.iteration, |b| b.created_iteration),
            updated_iteration: self.iteration,
            version: base.as_ref().map_or(1, |b| b.version + 1),
            updated_at: self.now,
            sources,
        };
        let created = base.is_none();
        let version = doc.version;
        self.lock().docs.insert(path.to_string(), (doc, base));
        Ok(json!({"path": path, "created": created, "changed": true, "version": version}))
    }

    async fn list_docs(&self, prefix: &str) -> Result<Vec<DocMeta>, String> {
        let committed = self
            .store
            .docs(&self.run_id, prefix, LIST_LIMIT)
            .await
            .map_err(|e| e.to_string())?;
        let mut by_path: BTreeMap<String, DocMeta> =
            committed.into_iter().map(|d| (d.path.clone(), d)).collect();
        for (path, (doc, _)) in self.lock().docs.iter() {
            if path.starts_with(prefix) {
                by_path.insert(path.clone(), doc.meta());
            }
        }
        Ok(by_path.into_values().take(LIST_LIMIT).collect())
    }

    async fn search(&self, query: &str) -> Result<Vec<DocHit>, String> {
        let mut hits = self
            .store
            .search_docs(&self.run_id, query, 20)
            .await
            .map_err(|e| e.to_string())?;
        for (path, (doc, _)) in self.lock().docs.iter() {
            hits.retain(|h| &h.path != path);
            hits.extend(longrun_domain::doc_hit(
                path,
                &doc.title,
                &doc.content,
                query,
            ));
        }
        Ok(hits)
    }

    pub fn plan(&self) -> Vec<PlanStep> {
        self.lock().plan.clone()
    }

    pub fn update_plan(&self, updates: &[(String, String, StepStatus)]) {
        let mut inner = self.lock();
        let iteration = self.iteration;
        let before = inner.plan.clone();
        if apply_plan_updates(&mut inner.plan, updates, iteration) {
            inner.plan_advanced = true;
        }
        let changes: Vec<String> = inner
            .plan
            .iter()
            .filter(|s| !before.contains(s))
            .map(|s| format!("{} [{}] {:?}", s.id, s.title, s.status))
            .collect();
        inner.plan_changes.extend(changes);
    }

    /// An executor's updates of the plan steps its task was given, recorded like the
    /// planner's; returns why any were refused.
    pub fn executor_plan_updates(
        &self, task: &str, given: &[String], updates: &[longrun_domain::planner::StepNote],
    ) -> Vec<String> {
        let mut inner = self.lock();
        let edit = longrun_domain::run::apply_executor_updates(
            &mut inner.plan,
            given,
            updates,
            self.iteration,
        );
        inner.plan_advanced |= edit.advanced;
        let task: String = task.chars().take(80).collect();
        inner.plan_changes.extend(
            edit.changed
                .iter()
                .map(|s| format!("{} [{}] {:?} (executor `{task}`)", s.id, s.title, s.status)),
        );
        edit.refused
    }

    /// The plan steps of `ids`, as staged now (for an executor's prompt).
    pub fn plan_steps(&self, ids: &[String]) -> Vec<PlanStep> {
        let inner = self.lock();
        inner
            .plan
            .iter()
            .filter(|s| ids.contains(&s.id))
            .cloned()
            .collect()
    }

    /// Sources a tool just read: docs written from here on cite them.
    pub fn note_sources(&self, read: Vec<String>) {
        let read: Vec<String> = read
            .into_iter()
            .map(|s| s.chars().take(MAX_SOURCE_CHARS).collect())
            .collect();
        let mut inner = self.lock();
        let merged = merge_sources(&read, &inner.sources);
        inner.sources = merged;
    }

    /// Sources read by the iterations whose results the planner sees.
    pub fn carry_sources<'a>(&self, read: impl IntoIterator<Item = &'a String>) {
        let mut inner = self.lock();
        let merged = merge_sources(read, &inner.carried);
        inner.carried = merged;
    }

    fn ask(&self, questions: &[String]) {
        self.lock().questions.extend(questions.iter().cloned());
    }

    pub fn finish(self) -> Staged {
        let inner = self.inner.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut created = vec![];
        let mut updated = vec![];
        let mut docs = vec![];
        for (path, (doc, base)) in inner.docs {
            if base.is_some() {
                updated.push(path);
            } else {
                created.push(path);
            }
            docs.push(doc);
        }
        Staged {
            docs,
            created,
            updated,
            plan: inner.plan,
            plan_advanced: inner.plan_advanced,
            plan_changes: inner.plan_changes,
            questions: inner.questions,
            spawned: inner.spawned,
            wait_for_children: inner.wait_for_children,
            sources: inner.sources,
        }
    }

    /// Lets run-aware tools see the run (its budgets, depth, children).
    pub fn set_parent(&self, run: &Run) {
        self.lock().parent = Some(run.clone());
    }

    /// Adds what this iteration has spent so far to the run tools see, so a child's budget
    /// is carved from what is really left.
    pub fn note_spend(&self, tokens: u64, cost_usd: f64) {
        if let Some(p) = self.lock().parent.as_mut() {
            p.metrics.output_tokens += tokens;
            p.metrics.cost_usd += cost_usd;
        }
    }
}

impl ToolContext for Staging {
    fn run_id(&self) -> &str {
        &self.run_id
    }
    fn iteration(&self) -> u32 {
        self.iteration
    }
    fn staging(&self) -> &dyn std::any::Any {
        self
    }
}

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

struct DocWrite;

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

struct DocRead;

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

struct DocList;

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

struct DocSearch;

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

struct PlanUpdateTool;

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

struct AskUser;

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

struct WaitForChildren;

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

struct Entry {
    tool: Arc<dyn Tool>,
    schema: Value,
    validator: jsonschema::Validator,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// Result of one validated (or refused) tool call.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolOutcome {
    pub name: String,
    pub args: Value,
    pub result: Result<Value, String>,
    /// Refused before it ran: the tool does not exist (or may not be used here), or its
    /// arguments do not match its schema.
    pub refused: Option<ToolFailureKind>,
}

/// Cheap to clone: a run's iteration adds its owner's tools to a copy of the built-ins.
#[derive(Clone)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<Entry>>,
    /// The planner's tool descriptions, rendered once per registration instead of per call.
    block: String,
}

/// Tools an executor may use: reads and writes of the workspace, never questions or the plan.
pub const EXECUTOR_TOOLS: [&str; 4] = ["doc_write", "doc_read", "doc_list", "doc_search"];

/// Whether `name` is an MCP tool's (`server.tool`): no other tool name has a dot (built-ins and
/// registered tools are `[a-z][a-z0-9_]*`).
pub fn is_mcp_tool(name: &str) -> bool {
    name.contains('.')
}

impl ToolRegistry {
    pub fn builtin() -> Self {
        let mut reg = ToolRegistry {
            tools: BTreeMap::new(),
            block: String::new(),
        };
        let tools: [Arc<dyn Tool>; 8] = [
            Arc::new(DocWrite),
            Arc::new(DocRead),
            Arc::new(DocList),
            Arc::new(DocSearch),
            Arc::new(PlanUpdateTool),
            Arc::new(AskUser),
            Arc::new(SpawnRun {
                max_depth: MAX_CHILD_DEPTH,
            }),
            Arc::new(WaitForChildren),
        ];
        for t in tools {
            reg.register(t);
        }
        reg
    }

    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        // Built-in schemas come from our own types; one that does not compile is a bug.
        #[allow(clippy::expect_used)]
        self.try_register(tool).expect("tool schema compiles");
    }

    /// Adds a tool whose schema may be invalid (a user's); the error says why.
    pub fn try_register(&mut self, tool: Arc<dyn Tool>) -> Result<(), String> {
        let schema = tool.schema();
        let validator = jsonschema::validator_for(&schema)
            .map_err(|e| format!("tool `{}` has an invalid schema: {e}", tool.name()))?;
        self.tools.insert(
            tool.name().to_string(),
            Arc::new(Entry {
                tool,
                schema,
                validator,
            }),
        );
        self.block = crate::prompt::tools_block(&self.specs(None));
        Ok(())
    }

    /// This registry plus `extra`; an extra tool never replaces a built-in.
    pub fn with_extra(&self, extra: Vec<Arc<dyn Tool>>) -> ToolRegistry {
        let mut reg = self.clone();
        for tool in extra {
            if self.tools.contains_key(tool.name()) {
                continue;
            }
            if let Err(e) = reg.try_register(tool) {
                tracing::warn!(error = %e, "a user tool was left out");
            }
        }
        reg
    }

    /// This registry narrowed to `names` (a run's `allowed_tools`): the planner is offered, and
    /// may call, only these.
    pub fn only(&self, names: &[String]) -> ToolRegistry {
        let mut reg = self.clone();
        reg.tools.retain(|name, _| names.contains(name));
        reg.block = crate::prompt::tools_block(&reg.specs(None));
        reg
    }

    pub fn names(&self) -> Vec<&str> {
        self.tools.keys().map(String::as_str).collect()
    }

    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// Whether `name` is a write tool (unknown names are not: they fail validation anyway).
    pub fn writes(&self, name: &str) -> bool {
        self.tools.get(name).is_some_and(|e| e.tool.writes())
    }

    pub fn prompt_block(&self) -> &str {
        &self.block
    }

    pub fn specs(&self, only: Option<&[&str]>) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .filter(|(name, _)| only.is_none_or(|o| o.contains(&name.as_str())))
            .map(|(name, e)| ToolSpec {
                name: name.to_string(),
                description: e.tool.description().to_string(),
                parameters: e.schema.clone(),
            })
            .collect()
    }

    /// Checks the call against the tool's schema; the error names every violation.
    pub fn validate(&self, call: &ToolCall, allowed: Option<&[&str]>) -> Result<(), String> {
        self.check(call, allowed).map_err(|(_, e)| e)
    }

    /// `validate`, saying which way a refused call failed.
    fn check(
        &self, call: &ToolCall, allowed: Option<&[&str]>,
    ) -> Result<(), (ToolFailureKind, String)> {
        let unknown = |e: String| (ToolFailureKind::UnknownTool, e);
        let Some(entry) = self.tools.get(call.name.as_str()) else {
            let names: Vec<&str> = self
                .tools
                .keys()
                .map(String::as_str)
                .filter(|n| allowed.is_none_or(|a| a.contains(n)))
                .collect();
            return Err(unknown(format!(
                "unknown tool `{}`; available: {}",
                call.name,
                names.join(", ")
            )));
        };
        if let Some(allowed) = allowed
            && !allowed.contains(&call.name.as_str())
        {
            return Err(unknown(format!(
                "tool `{}` is not allowed here; allowed: {}",
                call.name,
                allowed.join(", ")
            )));
        }
        let errors: Vec<String> = entry
            .validator
            .iter_errors(&call.args)
            .take(5)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{at}: {e}")
                }
            })
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err((
                ToolFailureKind::InvalidArguments,
                format!(
                    "arguments for `{}` do not match its schema: {}",
                    call.name,
                    errors.join("; ")
                ),
            ))
        }
    }

    pub async fn invoke(
        &self, staging: &Staging, call: &ToolCall, allowed: Option<&[&str]>,
    ) -> ToolOutcome {
        let (result, refused) = match self.check(call, allowed) {
            Err((kind, e)) => (Err(e), Some(kind)),
            Ok(()) => (
                match self.tools.get(call.name.as_str()) {
                    Some(entry) => {
                        let result = entry
                            .tool
                            .call(staging, call.args.clone())
                            .await
                            // A tool's error text may quote its request or its server's
                            // answer: scrubbed before it reaches the records.
                            .map_err(longrun_ports::redact::scrubbed);
                        if let Ok(out) = &result {
                            staging.note_sources(entry.tool.sources(&call.args, out));
                        }
                        result
                    }
                    None => Err(format!("unknown tool `{}`", call.name)),
                },
                None,
            ),
        };
        ToolOutcome {
            name: call.name.clone(),
            args: call.args.clone(),
            result,
            refused,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: Value) -> ToolCall {
        ToolCall {
            name: name.into(),
            args,
        }
    }

    #[test]
    fn a_call_missing_a_required_argument_is_refused_with_the_reason() {
        let reg = ToolRegistry::builtin();
        let err = reg
            .validate(&call("doc_write", json!({"path": "a.md"})), None)
            .unwrap_err();
        assert!(err.contains("content"), "{err}");
    }

    #[test]
    fn unknown_arguments_and_wrong_types_are_refused() {
        let reg = ToolRegistry::builtin();
        assert!(
            reg.validate(&call("doc_read", json!({"path": "a", "x": 1})), None)
                .is_err()
        );
        assert!(
            reg.validate(&call("doc_read", json!({"path": 5})), None)
                .is_err()
        );
        assert!(
            reg.validate(&call("doc_read", json!({"path": "a"})), None)
                .is_ok()
        );
    }

    #[test]
    fn an_unknown_tool_lists_what_is_available() {
        let err = ToolRegistry::builtin()
            .validate(&call("shell", json!({})), None)
            .unwrap_err();
        assert!(err.contains("doc_write") && err.contains("shell"), "{err}");
    }

    #[test]
    fn executors_cannot_ask_the_user() {
        let reg = ToolRegistry::builtin();
        let err = reg
            .validate(
                &call("ask_user", json!({"questions": ["?"]})),
                Some(&EXECUTOR_TOOLS),
            )
            .unwrap_err();
        assert!(err.contains("not allowed"), "{err}");
    }

    #[test]
    fn plan_update_statuses_are_an_enum() {
        let reg = ToolRegistry::builtin();
        let bad = json!({"steps": [{"id": "s1", "title": "t", "status": "finished"}]});
        assert!(reg.validate(&call("plan_update", bad), None).is_err());
    }
}
