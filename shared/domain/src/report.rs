//! The outcome report (ARCHITECTURE.md, "Outcome"). `what_changed` comes from committed docs, never from the
//! model's claims.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::record::DocMeta;
use crate::run::{ChildRun, ModelMetrics, PlanStep, Run, RunStatus, StepStatus, StoppingReason};

/// A source naming another document of the run: a doc written after reading `doc:PATH`
/// links to it.
pub const DOC_SOURCE_PREFIX: &str = "doc:";

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WhatChanged {
    pub created: Vec<String>,
    pub updated: Vec<String>,
    /// Docs the run cited as completion evidence.
    pub linked: Vec<String>,
    /// The external sources (URLs, `tool:NAME`) of each created or updated doc that has any,
    /// by path.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sources: BTreeMap<String, Vec<String>>,
    /// Every change, typed: each document with the iteration that last wrote it, and each
    /// plan step with the iteration that last touched it.
    #[serde(default)]
    pub entries: Vec<ChangeEntry>,
    /// Document-to-document links: `from` was written after reading `to`.
    #[serde(default)]
    pub links: Vec<DocLink>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Document,
    PlanStep,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChangeAction {
    Created,
    Updated,
}

/// One thing the run changed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChangeEntry {
    pub kind: ChangeKind,
    /// The document's path (documents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The step's id (plan steps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub title: String,
    /// `updated` when a document was written more than once, or a step moved past pending.
    pub change: ChangeAction,
    /// The iteration that last wrote the document or touched the step.
    pub iteration: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DocLink {
    pub from: String,
    pub to: String,
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

/// The run's outputs: its documents, and its plan as it stands.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Artifacts {
    pub documents: Vec<ArtifactRef>,
    pub plan: Vec<PlanStep>,
}

/// Reports stored before the split listed the documents alone.
fn artifacts_or_documents<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Artifacts, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Stored {
        Split(Artifacts),
        Documents(Vec<ArtifactRef>),
    }
    Ok(match Stored::deserialize(d)? {
        Stored::Split(a) => a,
        Stored::Documents(documents) => Artifacts {
            documents,
            plan: vec![],
        },
    })
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
    pub tokens: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    pub llm_calls: u64,
    pub unpriced_calls: u64,
    pub by_model: BTreeMap<String, ModelMetrics>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Report {
    pub run_id: String,
    pub title: String,
    pub objective: String,
    pub status: RunStatus,
    /// The last iteration's one-line progress summary.
    pub summary: String,
    /// Five to ten sentences on what was asked, done, found and left.
    #[serde(default)]
    pub narrative: Narrative,
    pub what_changed: WhatChanged,
    /// Every source the workspace cites, in the order first cited (by doc path).
    #[serde(default)]
    pub sources: Vec<SourceRef>,
    #[serde(deserialize_with = "artifacts_or_documents")]
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

pub fn build_report(
    run: &Run, docs: &[DocMeta], summary: &str, evidence: &[String], narrative: Narrative, now: i64,
) -> Report {
    let created: Vec<String> = docs
        .iter()
        .map(|d| d.path.clone())
        .take(MAX_LISTED)
        .collect();
    let updated: Vec<String> = docs
        .iter()
        .filter(|d| d.version > 1)
        .map(|d| d.path.clone())
        .take(MAX_LISTED)
        .collect();
    let linked: Vec<String> = evidence
        .iter()
        .filter_map(|e| docs.iter().find(|d| e.contains(&d.path)))
        .map(|d| d.path.clone())
        .take(MAX_LISTED)
        .collect();
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
    let title: String = run.objective.chars().take(80).collect();
    let m = &run.metrics;
    Report {
        run_id: run.id.clone(),
        title,
        objective: run.objective.clone(),
        status: *run.status,
        summary: summary.to_string(),
        narrative,
        what_changed: WhatChanged {
            created,
            updated,
            linked,
            sources: by_doc,
            entries: entries(docs, &run.plan),
            links: links(docs),
        },
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
            plan: run.plan.clone(),
        },
        metrics: ReportMetrics {
            iterations: m.iterations,
            duration_ms: (now - run.created_at).max(0) as u64,
            running_ms: m.running_ms,
            tokens: m.tokens(),
            input_tokens: m.input_tokens,
            output_tokens: m.output_tokens,
            cost_usd: m.cost_usd,
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

/// Typed changes: documents in path order, then plan steps in plan order.
fn entries(docs: &[DocMeta], plan: &[PlanStep]) -> Vec<ChangeEntry> {
    let change = |updated: bool| match updated {
        true => ChangeAction::Updated,
        false => ChangeAction::Created,
    };
    let docs = docs.iter().take(MAX_LISTED).map(|d| ChangeEntry {
        kind: ChangeKind::Document,
        path: Some(d.path.clone()),
        id: None,
        title: d.title.clone(),
        change: change(d.version > 1),
        iteration: d.updated_iteration,
    });
    let steps = plan.iter().map(|p| ChangeEntry {
        kind: ChangeKind::PlanStep,
        path: None,
        id: Some(p.id.clone()),
        title: p.title.clone(),
        change: change(p.status != StepStatus::Pending),
        iteration: p.iteration_last_touched,
    });
    docs.chain(steps).collect()
}

/// Links between the run's documents, from the `doc:PATH` sources they cite; a link to a
/// document no longer in the workspace, or to itself, is left out.
fn links(docs: &[DocMeta]) -> Vec<DocLink> {
    let mut out = vec![];
    for d in docs.iter().take(MAX_LISTED) {
        for to in d
            .sources
            .iter()
            .filter_map(|s| s.strip_prefix(DOC_SOURCE_PREFIX))
        {
            if to != d.path && docs.iter().any(|o| o.path == to) && out.len() < MAX_LISTED {
                out.push(DocLink {
                    from: d.path.clone(),
                    to: to.to_string(),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn what_changed_comes_from_committed_docs_not_from_claims() {
        let mut run = sample_run();
        run.transition_to(RunStatus::Completed, 10).unwrap();
        run.stopping_reason = Some(StoppingReason::new(StopType::Completed, "done"));
        let docs = [meta("a.md", 1), meta("b.md", 3)];
        let evidence = ["see b.md".to_string(), "ghost.md exists".to_string()];
        let r = build_report(&run, &docs, "ok", &evidence, Narrative::default(), 10);
        assert_eq!(r.what_changed.created, vec!["a.md", "b.md"]);
        assert_eq!(r.what_changed.updated, vec!["b.md"]);
        assert_eq!(r.what_changed.linked, vec!["b.md"]);
        assert_eq!(r.stopping_reason.kind, StopType::Completed);
    }

    #[test]
    fn the_report_lists_each_source_once_with_the_docs_that_cite_it() {
        let mut run = sample_run();
        run.transition_to(RunStatus::Completed, 10).unwrap();
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
    fn what_changed_types_each_document_and_plan_step_with_its_iteration() {
        let mut run = sample_run();
        run.plan = vec![
            PlanStep {
                id: "s1".into(),
                title: "Outline".into(),
                status: StepStatus::Done,
                iteration_last_touched: 2,
                notes: None,
            },
            PlanStep {
                id: "s2".into(),
                title: "Review".into(),
                status: StepStatus::Pending,
                iteration_last_touched: 1,
                notes: None,
            },
        ];
        let docs = [meta("a.md", 1), meta("b.md", 3)];
        let r = build_report(&run, &docs, "ok", &[], Narrative::default(), 10);
        let e = &r.what_changed.entries;
        assert_eq!(e.len(), 4);
        assert_eq!(
            (e[0].kind, e[0].path.as_deref(), e[0].change, e[0].iteration),
            (ChangeKind::Document, Some("a.md"), ChangeAction::Created, 1)
        );
        assert_eq!((e[1].change, e[1].iteration), (ChangeAction::Updated, 3));
        assert_eq!(
            (e[2].kind, e[2].id.as_deref(), e[2].change, e[2].iteration),
            (ChangeKind::PlanStep, Some("s1"), ChangeAction::Updated, 2)
        );
        assert_eq!(e[3].change, ChangeAction::Created);
        assert_eq!(r.artifacts.documents.len(), 2);
        assert_eq!(r.artifacts.plan, run.plan);
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
            r.what_changed.links,
            vec![DocLink {
                from: "guide.md".into(),
                to: "notes/green.md".into()
            }]
        );
        assert_eq!(r.sources.len(), 1, "doc: sources are links, not sources");
        assert_eq!(
            r.what_changed.sources["guide.md"],
            vec!["https://example.org"]
        );
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

    #[test]
    fn a_report_stored_before_the_split_reads_its_artifacts_as_documents() {
        let mut run = sample_run();
        run.transition_to(RunStatus::Completed, 10).unwrap();
        let r = build_report(
            &run,
            &[meta("a.md", 1)],
            "ok",
            &[],
            Narrative::default(),
            10,
        );
        let mut stored = serde_json::to_value(&r).unwrap();
        stored["artifacts"] = serde_json::to_value(&r.artifacts.documents).unwrap();
        stored.as_object_mut().unwrap().remove("narrative");
        let read: Report = serde_json::from_value(stored).unwrap();
        assert_eq!(read.artifacts.documents, r.artifacts.documents);
        assert!(read.artifacts.plan.is_empty());
    }
}
