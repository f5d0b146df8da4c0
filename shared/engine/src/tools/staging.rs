//! The staging of a call's writes: everything an iteration changes, kept in memory until
//! the iteration's commit.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use longrun_domain::progress::doc_part;
use longrun_domain::record::{MAX_SOURCE_CHARS, merge_sources};
use longrun_domain::run::{Budgets, PlanStep, Run, StepStatus, apply_plan_updates};
use longrun_domain::{Doc, DocHit, DocMeta};
use longrun_ports::{Store, ToolContext};
use serde_json::{Value, json};

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
pub(super) struct StagingInner {
    /// New version of each doc written this iteration, and the committed one it replaces.
    docs: BTreeMap<String, (Doc, Option<Doc>)>,
    plan: Vec<PlanStep>,
    plan_advanced: bool,
    plan_changes: Vec<String>,
    questions: Vec<String>,
    /// The run being worked on, for tools that reason about it (`spawn_run`).
    pub(super) parent: Option<Run>,
    pub(super) spawned: Vec<ChildRequest>,
    pub(super) wait_for_children: bool,
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
    /// How the docs written change the workspace's docs' hash: the XOR of each one's part
    /// before and after (`progress::doc_part`).
    pub docs_delta: u64,
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

    pub(super) fn lock(&self) -> MutexGuard<'_, StagingInner> {
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

    pub(super) async fn list_docs(&self, prefix: &str) -> Result<Vec<DocMeta>, String> {
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

    pub(super) async fn search(&self, query: &str) -> Result<Vec<DocHit>, String> {
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

    /// The paths this iteration wrote so far.
    pub fn written(&self) -> Vec<String> {
        self.lock().docs.keys().cloned().collect()
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

    pub(super) fn ask(&self, questions: &[String]) {
        self.lock().questions.extend(questions.iter().cloned());
    }

    pub fn finish(self) -> Staged {
        let inner = self.inner.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut created = vec![];
        let mut updated = vec![];
        let mut docs = vec![];
        let mut docs_delta = 0;
        for (path, (doc, base)) in inner.docs {
            let part = |d: &Doc| doc_part(&d.path, &d.title, &d.content);
            docs_delta ^= part(&doc) ^ base.as_ref().map_or(0, part);
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
            docs_delta,
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
