//! The outcome report (ARCHITECTURE.md, "Outcome"), in the shape the seed's report contract
//! names. `what_changed` comes from committed docs and the plan, never from the model's claims.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::criteria::CriterionVerdict;
use crate::evidence::{Reference, references};
use crate::record::DocMeta;
use crate::run::{ChildRun, ModelMetrics, PlanStep, Run, RunStatus, StepStatus, StoppingReason};

mod stored;

/// A source naming another document of the run: a doc written after reading `doc:PATH`
/// links to it.
pub const DOC_SOURCE_PREFIX: &str = "doc:";

/// What the run changed, from its committed workspace and plan. Each thing is listed once:
/// in `created`, or in `updated` once it was written again (a document) or moved past pending
/// (a plan step).
#[derive(Clone, Debug, Default, PartialEq, Serialize, JsonSchema)]
pub struct WhatChanged {
    pub created: Vec<Change>,
    pub updated: Vec<Change>,
    /// How the things the run changed relate: a document to the documents it was written
    /// from, and the documents and plan steps its completion evidence cites to the run.
    pub linked: Vec<Link>,
    /// The external sources (URLs, `tool:NAME`) of each created or updated doc that has any,
    /// by path.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sources: BTreeMap<String, Vec<String>>,
}

/// What a report's change or link names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntityType {
    /// A workspace document; its id is its path.
    Document,
    /// A step of the run's plan; its id is the step's.
    PlanStep,
    /// A run; its id is the run's.
    Run,
}

/// One thing the run created or updated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Change {
    #[serde(rename = "type")]
    pub kind: EntityType,
    pub id: String,
    pub title: String,
    /// The iteration that last wrote the document or touched the step (0: not known, in a
    /// report stored before it was kept).
    pub iteration: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Relationship {
    /// The document `from` was written after reading the document `to` (`doc:PATH` sources).
    DerivedFrom,
    /// The completion evidence cites `from` for the run `to`.
    Supports,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Link {
    pub from_type: EntityType,
    pub from_id: String,
    pub relationship: Relationship,
    pub to_type: EntityType,
    pub to_id: String,
}

/// Who wrote the narrative summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NarrativeSource {
    /// One final model call at the end of the run, priced and counted in its spend.
    Model,
    /// Built from the iteration records, without a model; `note` says why.
    #[default]
    Records,
}

/// The report's narrative: what was asked, what was done, what was found, what is left.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Narrative {
    pub text: String,
    pub source: NarrativeSource,
    /// Why no model wrote it (records only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Narrative {
    pub fn by_model(text: &str) -> Self {
        Narrative {
            text: text.trim().to_string(),
            source: NarrativeSource::Model,
            note: None,
        }
    }

    /// A deterministic narrative from the run, its workspace and the summaries of its
    /// iterations (oldest first), saying why no model wrote it.
    pub fn from_records(run: &Run, docs: &[DocMeta], summaries: &[String], note: &str) -> Self {
        let mut s = vec![format!("You asked: {}", sentence(&run.objective))];
        let reason = run
            .stopping_reason
            .as_ref()
            .map(|r| format!(": {}", r.detail))
            .unwrap_or_default();
        s.push(format!(
            "The run is {} after {} iteration(s){}.",
            run.status,
            run.iteration.max(1),
            reason.trim_end_matches('.')
        ));
        let done: Vec<&String> = summaries.iter().filter(|x| !x.trim().is_empty()).collect();
        if let Some(first) = done.first() {
            s.push(format!("It began: {}", sentence(first)));
        }
        if done.len() > 1
            && let Some(last) = done.last()
        {
            s.push(format!("Last, it reported: {}", sentence(last)));
        }
        match docs.len() {
            0 => s.push("It wrote no documents.".into()),
            n => {
                let names: Vec<&str> = docs.iter().take(8).map(|d| d.path.as_str()).collect();
                let more = if n > 8 { ", …" } else { "" };
                s.push(format!(
                    "It wrote {n} document(s): {}{more}.",
                    names.join(", ")
                ));
            }
        }
        let steps = &run.plan;
        if !steps.is_empty() {
            let done = steps
                .iter()
                .filter(|p| p.status == StepStatus::Done)
                .count();
            s.push(format!("{done} of {} plan step(s) are done.", steps.len()));
        }
        if run.remaining_work.is_empty() {
            s.push("No remaining work was reported.".into());
        } else {
            let left: Vec<&str> = run
                .remaining_work
                .iter()
                .take(5)
                .map(|w| w.as_str())
                .collect();
            s.push(format!("Left: {}.", left.join("; ").trim_end_matches('.')));
        }
        if !run.questions.is_empty() {
            s.push(format!("It asks: {}", run.questions.join(" ")));
        }
        s.push(format!(
            "This summary was built from the iteration records: {}",
            sentence(note)
        ));
        Narrative {
            text: s.join(" "),
            source: NarrativeSource::Records,
            note: Some(note.to_string()),
        }
    }
}

/// `text` clipped and ended with a full stop.
fn sentence(text: &str) -> String {
    let t = crate::clip(text.trim(), 400);
    if t.ends_with(['.', '!', '?', '…']) {
        t
    } else {
        format!("{t}.")
    }
}

/// The run's outputs: its documents, and its plans with their status.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Artifacts {
    pub documents: Vec<ArtifactRef>,
    /// The run's plan as it stands, when it has one (a run has one plan).
    pub plans: Vec<PlanArtifact>,
}

/// A plan the run worked to, its status read from its steps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanArtifact {
    /// `plan`: what completion evidence names its steps by (`plan:ID`).
    pub id: String,
    pub status: PlanStatus,
    pub steps: Vec<PlanStep>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    /// Every step is pending.
    NotStarted,
    InProgress,
    /// A step is blocked and not every step is done.
    Blocked,
    /// Every step is done.
    Completed,
}

impl PlanStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            PlanStatus::NotStarted => "not_started",
            PlanStatus::InProgress => "in_progress",
            PlanStatus::Blocked => "blocked",
            PlanStatus::Completed => "completed",
        }
    }
}

/// The id a run's one plan goes by.
pub const PLAN_ID: &str = "plan";

impl PlanArtifact {
    /// The run's plan, or nothing when it has no steps.
    pub fn of(steps: &[PlanStep]) -> Option<Self> {
        if steps.is_empty() {
            return None;
        }
        let any = |s: StepStatus| steps.iter().any(|p| p.status == s);
        let status = if steps.iter().all(|p| p.status == StepStatus::Done) {
            PlanStatus::Completed
        } else if any(StepStatus::Blocked) {
            PlanStatus::Blocked
        } else if any(StepStatus::Done) || any(StepStatus::InProgress) {
            PlanStatus::InProgress
        } else {
            PlanStatus::NotStarted
        };
        Some(PlanArtifact {
            id: PLAN_ID.to_string(),
            status,
            steps: steps.to_vec(),
        })
    }
}

/// A source the run's docs cite (a URL, or `tool:NAME`), and the docs that cite it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SourceRef {
    pub source: String,
    pub docs: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ArtifactRef {
    pub path: String,
    pub title: String,
    pub version: u32,
    pub bytes: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReportMetrics {
    pub iterations: u32,
    pub duration_ms: u64,
    pub running_ms: u64,
    /// Input and output tokens of every model call the run made.
    #[serde(alias = "tokens")]
    pub total_tokens: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(alias = "cost_usd")]
    pub total_cost_usd: f64,
    pub llm_calls: u64,
    pub unpriced_calls: u64,
    pub by_model: BTreeMap<String, ModelMetrics>,
}

/// The report a run writes when it ends or waits (ARCHITECTURE.md, "Outcome"). Read through
/// `stored`, which also reads the shapes older versions stored.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct Report {
    pub run_id: String,
    /// A short title of the work with its outcome: `Complete: Tea field guide`.
    pub title: String,
    pub objective: String,
    pub status: RunStatus,
    /// Five to ten sentences on what was asked, done, found and left.
    pub summary: String,
    /// Who wrote `summary`.
    pub summary_source: NarrativeSource,
    /// Why no model wrote `summary` (records only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_note: Option<String>,
    /// The last iteration's one-line progress summary.
    pub headline: String,
    pub what_changed: WhatChanged,
    /// The verdict on each of the run's completion criteria at the completion claim the
    /// iteration that ended the run made: empty when it made none or the run has none.
    #[serde(default)]
    pub criteria: Vec<CriterionVerdict>,
    /// Every source the workspace cites, in the order first cited (by doc path).
    pub sources: Vec<SourceRef>,
    pub artifacts: Artifacts,
    pub metrics: ReportMetrics,
    pub stopping_reason: StoppingReason,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub questions: Vec<String>,
    /// Child runs and their outcomes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<ChildRun>,
    pub generated_at: i64,
}

const MAX_LISTED: usize = 200;
/// How long the work's part of a title may be.
const TITLE_WORK_CHARS: usize = 60;

/// The report of `run` as its workspace `docs` stand; `headline` is the last iteration's
/// summary line, `evidence` its completion evidence.
pub fn build_report(
    run: &Run, docs: &[DocMeta], headline: &str, evidence: &[String], narrative: Narrative,
    now: i64,
) -> Report {
    let mut sources: Vec<SourceRef> = vec![];
    for d in docs.iter().take(MAX_LISTED) {
        for src in d
            .sources
            .iter()
            .filter(|s| !s.starts_with(DOC_SOURCE_PREFIX))
        {
            match sources.iter().position(|s| &s.source == src) {
                Some(i) => sources[i].docs.push(d.path.clone()),
                None if sources.len() < MAX_LISTED => sources.push(SourceRef {
                    source: src.clone(),
                    docs: vec![d.path.clone()],
                }),
                None => {}
            }
        }
    }
    let by_doc = docs
        .iter()
        .take(MAX_LISTED)
        .filter_map(|d| {
            let external: Vec<String> = d
                .sources
                .iter()
                .filter(|s| !s.starts_with(DOC_SOURCE_PREFIX))
                .cloned()
                .collect();
            (!external.is_empty()).then(|| (d.path.clone(), external))
        })
        .collect();
    let cited = cited(evidence, docs, &run.plan);
    let (created, updated) = changes(docs, &run.plan);
    let mut linked = links(docs);
    linked.extend(cited.iter().map(|(kind, id)| Link {
        from_type: *kind,
        from_id: id.clone(),
        relationship: Relationship::Supports,
        to_type: EntityType::Run,
        to_id: run.id.clone(),
    }));
    linked.truncate(MAX_LISTED);
    let m = &run.metrics;
    Report {
        run_id: run.id.clone(),
        title: title(run, docs, &cited),
        objective: run.objective.clone(),
        status: *run.status,
        summary: narrative.text,
        summary_source: narrative.source,
        summary_note: narrative.note,
        headline: headline.to_string(),
        what_changed: WhatChanged {
            created,
            updated,
            linked,
            sources: by_doc,
        },
        criteria: vec![],
        sources,
        artifacts: Artifacts {
            documents: docs
                .iter()
                .take(MAX_LISTED)
                .map(|d| ArtifactRef {
                    path: d.path.clone(),
                    title: d.title.clone(),
                    version: d.version,
                    bytes: d.bytes,
                })
                .collect(),
            plans: PlanArtifact::of(&run.plan).into_iter().collect(),
        },
        metrics: ReportMetrics {
            iterations: m.iterations,
            duration_ms: (now - run.created_at).max(0) as u64,
            running_ms: m.running_ms,
            total_tokens: m.tokens(),
            input_tokens: m.input_tokens,
            output_tokens: m.output_tokens,
            total_cost_usd: m.cost_usd,
            llm_calls: m.llm_calls,
            unpriced_calls: m.unpriced_calls,
            by_model: m.by_model.clone(),
        },
        stopping_reason: run.stopping_reason.clone().unwrap_or_else(|| {
            StoppingReason::new(crate::run::StopType::Error, "no stopping reason recorded")
        }),
        questions: run.questions.clone(),
        children: run.children.clone(),
        generated_at: now,
    }
}

impl Report {
    /// The report with the verdicts on the run's criteria at the claim that ended it.
    pub fn with_criteria(mut self, verdicts: &[CriterionVerdict]) -> Self {
        self.criteria = verdicts.to_vec();
        self
    }
}

/// `Complete: Tea field guide`: the outcome, then the work — the title of the first document
/// the completion evidence cites, when it was given one, else the objective's first clause.
fn title(run: &Run, docs: &[DocMeta], cited: &[(EntityType, String)]) -> String {
    let outcome = match *run.status {
        RunStatus::Completed => "Complete",
        RunStatus::Stopped => "Stopped",
        RunStatus::Failed => "Failed",
        RunStatus::Canceled => "Canceled",
        RunStatus::WaitingOnUser => "Needs your answer",
        RunStatus::WaitingOnChildren => "Waiting on child runs",
        RunStatus::Paused => "Paused",
        RunStatus::Queued | RunStatus::Running => "In progress",
    };
    // A document written without a title is titled by its file name, which names no work.
    let titled = |d: &&DocMeta| {
        let t = d.title.trim();
        !t.is_empty() && t != d.path.rsplit('/').next().unwrap_or(&d.path)
    };
    let work = cited
        .iter()
        .filter(|(kind, _)| *kind == EntityType::Document)
        .filter_map(|(_, path)| docs.iter().find(|d| &d.path == path))
        .find(titled)
        .map(|d| crate::outcome::title_case_cut(d.title.trim(), TITLE_WORK_CHARS))
        .unwrap_or_else(|| crate::outcome::objective_title(&run.objective));
    format!("{outcome}: {work}")
}

/// What the completion evidence cites that the run has: its documents and plan steps, once
/// each, in the order cited.
fn cited(evidence: &[String], docs: &[DocMeta], plan: &[PlanStep]) -> Vec<(EntityType, String)> {
    let mut out: Vec<(EntityType, String)> = vec![];
    for r in evidence.iter().flat_map(|e| references(e)) {
        let found = match r {
            Reference::Doc(p) if docs.iter().any(|d| d.path == p) => (EntityType::Document, p),
            Reference::Step(id) if plan.iter().any(|s| s.id == id) => (EntityType::PlanStep, id),
            _ => continue,
        };
        if !out.contains(&found) && out.len() < MAX_LISTED {
            out.push(found);
        }
    }
    out
}

/// Created and updated things: documents in path order, then plan steps in plan order.
fn changes(docs: &[DocMeta], plan: &[PlanStep]) -> (Vec<Change>, Vec<Change>) {
    let docs = docs.iter().take(MAX_LISTED).map(|d| {
        let c = Change {
            kind: EntityType::Document,
            id: d.path.clone(),
            title: d.title.clone(),
            iteration: d.updated_iteration,
        };
        (d.version > 1, c)
    });
    let steps = plan.iter().map(|p| {
        let c = Change {
            kind: EntityType::PlanStep,
            id: p.id.clone(),
            title: p.title.clone(),
            iteration: p.iteration_last_touched,
        };
        (p.status != StepStatus::Pending, c)
    });
    let (updated, created): (Vec<_>, Vec<_>) = docs.chain(steps).partition(|(u, _)| *u);
    let strip = |v: Vec<(bool, Change)>| v.into_iter().map(|(_, c)| c).collect();
    (strip(created), strip(updated))
}

/// Links between the run's documents, from the `doc:PATH` sources they cite; a link to a
/// document no longer in the workspace, or to itself, is left out.
fn links(docs: &[DocMeta]) -> Vec<Link> {
    let mut out = vec![];
    for d in docs.iter().take(MAX_LISTED) {
        for to in d
            .sources
            .iter()
            .filter_map(|s| s.strip_prefix(DOC_SOURCE_PREFIX))
        {
            if to != d.path && docs.iter().any(|o| o.path == to) && out.len() < MAX_LISTED {
                out.push(Link {
                    from_type: EntityType::Document,
                    from_id: d.path.clone(),
                    relationship: Relationship::DerivedFrom,
                    to_type: EntityType::Document,
                    to_id: to.to_string(),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::run::StopType;
    use crate::testing::sample_run;

    fn meta(path: &str, version: u32) -> DocMeta {
        DocMeta {
            path: path.into(),
            title: path.into(),
            bytes: 3,
            created_iteration: 1,
            updated_iteration: version,
            version,
            sources: vec![],
            tags: vec![],
            updated_at: 0,
        }
    }

    fn step(id: &str, status: StepStatus, iteration: u32) -> PlanStep {
        PlanStep {
            id: id.into(),
            title: format!("Step {id}"),
            status,
            iteration_last_touched: iteration,
            notes: None,
        }
    }

    fn completed() -> Run {
        let mut run = sample_run();
        run.transition_to(RunStatus::Completed, 10).unwrap();
        run.stopping_reason = Some(StoppingReason::new(StopType::Completed, "done"));
        run
    }

    fn ids(changes: &[Change]) -> Vec<(EntityType, &str)> {
        changes.iter().map(|c| (c.kind, c.id.as_str())).collect()
    }

    #[test]
    fn what_changed_comes_from_committed_docs_not_from_claims() {
        // Arrange
        let run = completed();
        let docs = [meta("a.md", 1), meta("b.md", 3)];
        let evidence = ["see b.md".to_string(), "ghost.md exists".to_string()];
        // Act
        let r = build_report(&run, &docs, "ok", &evidence, Narrative::default(), 10);
        // Assert
        let c = &r.what_changed;
        assert_eq!(ids(&c.created), vec![(EntityType::Document, "a.md")]);
        assert_eq!(ids(&c.updated), vec![(EntityType::Document, "b.md")]);
        assert_eq!(
            c.linked,
            vec![Link {
                from_type: EntityType::Document,
                from_id: "b.md".into(),
                relationship: Relationship::Supports,
                to_type: EntityType::Run,
                to_id: "run-1".into(),
            }],
            "the claimed ghost.md is no change of the run"
        );
        assert_eq!(r.stopping_reason.kind, StopType::Completed);
    }

    #[test]
    fn the_report_lists_each_source_once_with_the_docs_that_cite_it() {
        let run = completed();
        let url = "https://example.org/tea".to_string();
        let mut a = meta("a.md", 1);
        a.sources = vec![url.clone(), "tool:price_lookup".into()];
        let mut b = meta("b.md", 2);
        b.sources = vec![url.clone()];
        let c = meta("c.md", 1);
        let r = build_report(&run, &[a, b, c], "ok", &[], Narrative::default(), 10);
        assert_eq!(
            r.sources,
            vec![
                SourceRef {
                    source: url.clone(),
                    docs: vec!["a.md".into(), "b.md".into()]
                },
                SourceRef {
                    source: "tool:price_lookup".into(),
                    docs: vec!["a.md".into()]
                },
            ]
        );
        assert_eq!(r.what_changed.sources["b.md"], vec![url]);
        assert!(!r.what_changed.sources.contains_key("c.md"));
    }

    #[test]
    fn each_document_and_plan_step_is_created_or_updated_once_with_its_iteration() {
        // Arrange
        let mut run = sample_run();
        run.plan = vec![
            step("s1", StepStatus::Done, 2),
            step("s2", StepStatus::Pending, 1),
        ];
        let docs = [meta("a.md", 1), meta("b.md", 3)];
        // Act
        let r = build_report(&run, &docs, "ok", &[], Narrative::default(), 10);
        // Assert
        let c = &r.what_changed;
        assert_eq!(
            ids(&c.created),
            vec![(EntityType::Document, "a.md"), (EntityType::PlanStep, "s2")]
        );
        assert_eq!(
            ids(&c.updated),
            vec![(EntityType::Document, "b.md"), (EntityType::PlanStep, "s1")]
        );
        let iterations = |v: &[Change]| v.iter().map(|c| c.iteration).collect::<Vec<_>>();
        assert_eq!(iterations(&c.created), vec![1, 1]);
        assert_eq!(iterations(&c.updated), vec![3, 2]);
        assert_eq!(c.updated[1].title, "Step s1");
    }

    #[test]
    fn documents_link_to_the_documents_they_were_written_from_and_not_to_missing_ones() {
        let run = sample_run();
        let mut guide = meta("guide.md", 1);
        guide.sources = vec![
            "doc:notes/green.md".into(),
            "doc:gone.md".into(),
            "doc:guide.md".into(),
            "https://example.org".into(),
        ];
        let docs = [guide, meta("notes/green.md", 1)];
        let r = build_report(&run, &docs, "ok", &[], Narrative::default(), 10);
        assert_eq!(
            r.what_changed.linked,
            vec![Link {
                from_type: EntityType::Document,
                from_id: "guide.md".into(),
                relationship: Relationship::DerivedFrom,
                to_type: EntityType::Document,
                to_id: "notes/green.md".into(),
            }]
        );
        assert_eq!(r.sources.len(), 1, "doc: sources are links, not sources");
        assert_eq!(
            r.what_changed.sources["guide.md"],
            vec!["https://example.org"]
        );
    }

    #[test]
    fn cited_plan_steps_support_the_run_and_unknown_ones_do_not() {
        let mut run = completed();
        run.plan = vec![step("s1", StepStatus::Done, 2)];
        let evidence = ["plan:s1 and plan:s9".to_string()];
        let r = build_report(&run, &[], "ok", &evidence, Narrative::default(), 10);
        let from: Vec<_> = r
            .what_changed
            .linked
            .iter()
            .map(|l| (l.from_type, l.from_id.as_str(), l.relationship))
            .collect();
        assert_eq!(
            from,
            vec![(EntityType::PlanStep, "s1", Relationship::Supports)]
        );
    }

    #[test]
    fn the_title_names_the_outcome_and_the_work_the_evidence_cites() {
        // Arrange
        let mut run = completed();
        run.objective = "Write a field guide to green, black and oolong tea.".into();
        let mut guide = meta("guide.md", 2);
        guide.title = "Tea field guide".into();
        let docs = [meta("notes.md", 1), guide];
        let evidence = ["notes.md lists the teas; guide.md covers all three".to_string()];
        // Act
        let r = build_report(&run, &docs, "ok", &evidence, Narrative::default(), 10);
        let untitled = build_report(&run, &docs[..1], "ok", &evidence, Narrative::default(), 10);
        // Assert
        assert_eq!(
            r.title, "Complete: Tea field guide",
            "notes.md has no title of its own"
        );
        assert_eq!(
            untitled.title,
            "Complete: Write a field guide to green, black and oolong tea"
        );
        assert_eq!(r.objective, run.objective);
    }

    #[test]
    fn a_stopped_run_without_evidence_is_titled_by_its_objective_and_its_outcome() {
        let mut run = sample_run();
        run.objective = "Compare three kettles: price, speed and noise".into();
        run.transition_to(RunStatus::Stopped, 10).unwrap();
        let r = build_report(
            &run,
            &[meta("k.md", 1)],
            "ok",
            &[],
            Narrative::default(),
            10,
        );
        assert_eq!(r.title, "Stopped: Compare three kettles");
    }

    #[test]
    fn the_plan_is_an_artifact_with_a_status_read_from_its_steps() {
        let status = |steps: &[PlanStep]| PlanArtifact::of(steps).map(|p| p.status);
        use StepStatus::*;
        assert_eq!(status(&[]), None);
        assert_eq!(
            status(&[step("a", Pending, 1), step("b", Pending, 1)]),
            Some(PlanStatus::NotStarted)
        );
        assert_eq!(
            status(&[step("a", Done, 1), step("b", Pending, 1)]),
            Some(PlanStatus::InProgress)
        );
        assert_eq!(
            status(&[step("a", Blocked, 1), step("b", InProgress, 1)]),
            Some(PlanStatus::Blocked)
        );
        assert_eq!(
            status(&[step("a", Done, 1), step("b", Done, 2)]),
            Some(PlanStatus::Completed)
        );
        let mut run = sample_run();
        run.plan = vec![step("a", Done, 1)];
        let r = build_report(&run, &[], "ok", &[], Narrative::default(), 10);
        assert_eq!(r.artifacts.plans.len(), 1);
        assert_eq!(r.artifacts.plans[0].id, "plan");
        assert_eq!(r.artifacts.plans[0].steps, run.plan);
    }

    #[test]
    fn the_report_is_served_in_the_contracts_names_and_reads_back_whole() {
        // Arrange
        let mut run = completed();
        run.plan = vec![step("s1", StepStatus::Done, 1)];
        run.metrics.input_tokens = 100;
        run.metrics.output_tokens = 20;
        run.metrics.cost_usd = 0.5;
        let n = Narrative::by_model("It wrote the guide. It checked it.");
        // Act
        let verdict = CriterionVerdict {
            id: "c1".into(),
            kind: crate::criteria::CheckKind::Grader,
            criterion: "covers three teas".into(),
            passed: true,
            reason: "green, black and oolong are each covered".into(),
            looked_at: vec!["a.md".into()],
        };
        let r = build_report(&run, &[meta("a.md", 1)], "Guide written.", &[], n, 10)
            .with_criteria(std::slice::from_ref(&verdict));
        let v = serde_json::to_value(&r).unwrap();
        // Assert
        assert_eq!(v["summary"], "It wrote the guide. It checked it.");
        assert_eq!(v["summary_source"], "model");
        assert_eq!(v["headline"], "Guide written.");
        assert_eq!(
            v["what_changed"]["created"][0],
            json!({"type": "document", "id": "a.md", "title": "a.md", "iteration": 1})
        );
        assert_eq!(v["artifacts"]["plans"][0]["status"], "completed");
        assert_eq!(v["metrics"]["total_tokens"], 120);
        assert_eq!(v["metrics"]["total_cost_usd"], 0.5);
        assert_eq!(v["stopping_reason"]["type"], "completed");
        assert_eq!(v["criteria"][0]["id"], "c1");
        assert_eq!(v["criteria"][0]["passed"], true);
        assert_eq!(serde_json::from_value::<Report>(v).unwrap(), r);
    }

    #[test]
    fn a_narrative_from_the_records_says_what_was_asked_done_left_and_why_no_model_wrote_it() {
        let mut run = sample_run();
        run.iteration = 3;
        run.remaining_work = vec!["review the guide".into()];
        run.transition_to(RunStatus::Stopped, 10).unwrap();
        run.stopping_reason = Some(StoppingReason::new(
            StopType::Budget,
            "max_tokens: used 10 of 10",
        ));
        let summaries = [
            "Wrote the outline.".to_string(),
            "Wrote the guide".to_string(),
        ];
        let n = Narrative::from_records(&run, &[meta("guide.md", 1)], &summaries, "budget gone");
        assert_eq!(n.source, NarrativeSource::Records);
        assert_eq!(n.note.as_deref(), Some("budget gone"));
        for part in [
            run.objective.as_str(),
            "stopped after 3 iteration(s): max_tokens",
            "Wrote the outline.",
            "Wrote the guide.",
            "guide.md",
            "Left: review the guide.",
            "budget gone.",
        ] {
            assert!(n.text.contains(part), "{part:?} missing from {:?}", n.text);
        }
        let sentences = n.text.matches(". ").count() + 1;
        assert!(
            (5..=10).contains(&sentences),
            "{sentences} sentences: {}",
            n.text
        );
    }

    /// The fields every stored version shares.
    fn stored(extra: serde_json::Value) -> serde_json::Value {
        let mut v = json!({
            "run_id": "run-1", "title": "write a report", "objective": "write a report",
            "status": "completed",
            "metrics": {"iterations": 2, "duration_ms": 5, "running_ms": 4, "tokens": 120,
                        "input_tokens": 100, "output_tokens": 20, "cost_usd": 0.5,
                        "llm_calls": 2, "unpriced_calls": 0, "by_model": {}},
            "stopping_reason": {"type": "completed", "detail": "done"},
            "generated_at": 10
        });
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        v
    }

    #[test]
    fn a_report_stored_with_a_narrative_and_typed_entries_reads_in_todays_shape() {
        // Arrange: the shape written before `headline`.
        let v = stored(json!({
            "summary": "Guide written.",
            "narrative": {"text": "It wrote the guide.", "source": "model"},
            "what_changed": {
                "created": ["a.md", "b.md"], "updated": ["b.md"], "linked": ["b.md"],
                "entries": [
                    {"kind": "document", "path": "a.md", "title": "A", "change": "created", "iteration": 1},
                    {"kind": "document", "path": "b.md", "title": "B", "change": "updated", "iteration": 2},
                    {"kind": "plan_step", "id": "s1", "title": "Outline", "change": "updated", "iteration": 2}
                ],
                "links": [{"from": "b.md", "to": "a.md"}]
            },
            "artifacts": {"documents": [], "plan": [
                {"id": "s1", "title": "Outline", "status": "done", "iteration_last_touched": 2}
            ]}
        }));
        // Act
        let r: Report = serde_json::from_value(v).unwrap();
        // Assert
        assert_eq!(
            (r.summary.as_str(), r.headline.as_str()),
            ("It wrote the guide.", "Guide written.")
        );
        assert_eq!(r.summary_source, NarrativeSource::Model);
        let c = &r.what_changed;
        assert_eq!(ids(&c.created), vec![(EntityType::Document, "a.md")]);
        assert_eq!(
            ids(&c.updated),
            vec![(EntityType::Document, "b.md"), (EntityType::PlanStep, "s1")]
        );
        assert_eq!(c.updated[1].title, "Outline");
        let rels: Vec<_> = c
            .linked
            .iter()
            .map(|l| (l.from_id.as_str(), l.relationship, l.to_id.as_str()))
            .collect();
        assert_eq!(
            rels,
            vec![
                ("b.md", Relationship::DerivedFrom, "a.md"),
                ("b.md", Relationship::Supports, "run-1")
            ]
        );
        assert_eq!(r.artifacts.plans[0].status, PlanStatus::Completed);
        assert_eq!(
            (r.metrics.total_tokens, r.metrics.total_cost_usd),
            (120, 0.5)
        );
    }

    #[test]
    fn a_report_stored_before_narratives_and_plans_reads_its_paths_and_documents() {
        // Arrange: the oldest shape, documents alone and changes as paths.
        let doc = json!({"path": "b.md", "title": "B", "version": 2, "bytes": 3});
        let v = stored(json!({
            "summary": "Guide written.",
            "what_changed": {"created": ["a.md", "b.md"], "updated": ["b.md"], "linked": []},
            "artifacts": [doc]
        }));
        // Act
        let r: Report = serde_json::from_value(v).unwrap();
        // Assert
        assert_eq!(
            (r.summary.as_str(), r.headline.as_str()),
            ("Guide written.", "Guide written.")
        );
        assert_eq!(r.summary_source, NarrativeSource::Records);
        assert!(
            r.summary_note.is_some(),
            "it says why no narrative is there"
        );
        assert_eq!(
            ids(&r.what_changed.created),
            vec![(EntityType::Document, "a.md")]
        );
        assert_eq!(
            ids(&r.what_changed.updated),
            vec![(EntityType::Document, "b.md")]
        );
        assert_eq!(r.artifacts.documents[0].path, "b.md");
        assert!(r.artifacts.plans.is_empty());
        assert!(r.criteria.is_empty(), "no verdicts were kept then");
    }
}
