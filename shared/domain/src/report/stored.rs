//! Reading a report back: today's shape, and the shapes older versions stored (in runs, their
//! exports and archives), which stay readable. Writing is `Report`'s derived `Serialize`.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};

use super::{
    ArtifactRef, Artifacts, Change, EntityType, Link, Narrative, NarrativeSource, PlanArtifact,
    Relationship, Report, ReportMetrics, SourceRef, WhatChanged,
};
use crate::criteria::CriterionVerdict;
use crate::run::{ChildRun, PlanStep, RunStatus, StoppingReason};

/// A report as any version stored it. Before `headline`, `summary` was the one-line headline
/// and the narrative was `narrative.text`; before the narrative, there was the headline alone.
#[derive(Deserialize)]
struct Stored {
    run_id: String,
    title: String,
    objective: String,
    status: RunStatus,
    summary: String,
    #[serde(default)]
    headline: Option<String>,
    #[serde(default)]
    summary_source: NarrativeSource,
    #[serde(default)]
    summary_note: Option<String>,
    #[serde(default)]
    narrative: Option<Narrative>,
    what_changed: StoredChanges,
    #[serde(default)]
    criteria: Vec<CriterionVerdict>,
    #[serde(default)]
    sources: Vec<SourceRef>,
    artifacts: StoredArtifacts,
    metrics: ReportMetrics,
    stopping_reason: StoppingReason,
    #[serde(default)]
    questions: Vec<String>,
    #[serde(default)]
    children: Vec<ChildRun>,
    generated_at: i64,
}

/// `created`, `updated` and `linked` were paths before they were typed; the typed changes were
/// `entries`, and the links between documents `links`.
#[derive(Deserialize)]
struct StoredChanges {
    #[serde(default)]
    created: Vec<Typed<Change>>,
    #[serde(default)]
    updated: Vec<Typed<Change>>,
    #[serde(default)]
    linked: Vec<Typed<Link>>,
    #[serde(default)]
    sources: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    entries: Vec<Entry>,
    #[serde(default)]
    links: Vec<DocLink>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Typed<T> {
    Typed(T),
    Path(String),
}

#[derive(Deserialize)]
struct Entry {
    kind: EntityType,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    id: Option<String>,
    title: String,
    change: Action,
    iteration: u32,
}

#[derive(Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Action {
    Created,
    Updated,
}

#[derive(Deserialize)]
struct DocLink {
    from: String,
    to: String,
}

/// The documents alone, then `{documents, plan}` with the plan's steps, then `plans`.
#[derive(Deserialize)]
#[serde(untagged)]
enum StoredArtifacts {
    Split {
        documents: Vec<ArtifactRef>,
        #[serde(default)]
        plans: Vec<PlanArtifact>,
        #[serde(default)]
        plan: Vec<PlanStep>,
    },
    Documents(Vec<ArtifactRef>),
}

impl<'de> Deserialize<'de> for Report {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Stored::deserialize(d)?.into())
    }
}

impl From<Stored> for Report {
    fn from(s: Stored) -> Self {
        let (summary, headline, summary_source, summary_note) = match s.headline {
            Some(headline) => (s.summary, headline, s.summary_source, s.summary_note),
            None => match s.narrative {
                Some(n) if !n.text.trim().is_empty() => (n.text, s.summary, n.source, n.note),
                _ => (
                    s.summary.clone(),
                    s.summary,
                    NarrativeSource::Records,
                    Some("this report was written before reports had a narrative".into()),
                ),
            },
        };
        let artifacts = match s.artifacts {
            StoredArtifacts::Split {
                documents,
                plans,
                plan,
            } => Artifacts {
                documents,
                plans: match plans.is_empty() {
                    true => PlanArtifact::of(&plan).into_iter().collect(),
                    false => plans,
                },
            },
            StoredArtifacts::Documents(documents) => Artifacts {
                documents,
                plans: vec![],
            },
        };
        Report {
            what_changed: s.what_changed.read(&s.run_id),
            criteria: s.criteria,
            run_id: s.run_id,
            title: s.title,
            objective: s.objective,
            status: s.status,
            summary,
            summary_source,
            summary_note,
            headline,
            sources: s.sources,
            artifacts,
            metrics: s.metrics,
            stopping_reason: s.stopping_reason,
            questions: s.questions,
            children: s.children,
            generated_at: s.generated_at,
        }
    }
}

impl StoredChanges {
    fn read(self, run_id: &str) -> WhatChanged {
        let typed = |v: &[Typed<Change>]| v.iter().all(|c| matches!(c, Typed::Typed(_)));
        let (created, updated) = if typed(&self.created) && typed(&self.updated) {
            let keep = |v: Vec<Typed<Change>>| {
                v.into_iter()
                    .filter_map(|c| match c {
                        Typed::Typed(c) => Some(c),
                        Typed::Path(_) => None,
                    })
                    .collect()
            };
            (keep(self.created), keep(self.updated))
        } else if !self.entries.is_empty() {
            let (updated, created): (Vec<Entry>, Vec<Entry>) = self
                .entries
                .into_iter()
                .partition(|e| e.change == Action::Updated);
            let change = |e: Entry| Change {
                kind: e.kind,
                id: e.path.or(e.id).unwrap_or_default(),
                title: e.title,
                iteration: e.iteration,
            };
            (
                created.into_iter().map(change).collect(),
                updated.into_iter().map(change).collect(),
            )
        } else {
            // Paths alone: `created` listed every document, `updated` those written again.
            let paths = |v: Vec<Typed<Change>>| -> Vec<String> {
                v.into_iter()
                    .filter_map(|c| match c {
                        Typed::Path(p) => Some(p),
                        Typed::Typed(_) => None,
                    })
                    .collect()
            };
            let updated = paths(self.updated);
            let doc = |p: &String| Change {
                kind: EntityType::Document,
                id: p.clone(),
                title: p.clone(),
                iteration: 0,
            };
            let created = paths(self.created)
                .iter()
                .filter(|p| !updated.contains(p))
                .map(doc)
                .collect();
            (created, updated.iter().map(doc).collect())
        };
        let mut linked: Vec<Link> = self
            .links
            .into_iter()
            .map(|l| Link {
                from_type: EntityType::Document,
                from_id: l.from,
                relationship: Relationship::DerivedFrom,
                to_type: EntityType::Document,
                to_id: l.to,
            })
            .collect();
        linked.extend(self.linked.into_iter().map(|l| match l {
            Typed::Typed(l) => l,
            // A path was a document the completion evidence cited.
            Typed::Path(p) => Link {
                from_type: EntityType::Document,
                from_id: p,
                relationship: Relationship::Supports,
                to_type: EntityType::Run,
                to_id: run_id.to_string(),
            },
        }));
        WhatChanged {
            created,
            updated,
            linked,
            sources: self.sources,
        }
    }
}
