//! The outcome report (ARCHITECTURE.md, "Outcome"). `what_changed` comes from committed docs, never from the
//! model's claims.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::record::DocMeta;
use crate::run::{ChildRun, ModelMetrics, Run, RunStatus, StoppingReason};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WhatChanged {
    pub created: Vec<String>,
    pub updated: Vec<String>,
    /// Docs the run cited as completion evidence.
    pub linked: Vec<String>,
    /// The sources of each created or updated doc that has any, by path.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sources: BTreeMap<String, Vec<String>>,
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
    pub summary: String,
    pub what_changed: WhatChanged,
    /// Every source the workspace cites, in the order first cited (by doc path).
    #[serde(default)]
    pub sources: Vec<SourceRef>,
    pub artifacts: Vec<ArtifactRef>,
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
    run: &Run, docs: &[DocMeta], summary: &str, evidence: &[String], now: i64,
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
        for src in &d.sources {
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
        .filter(|d| !d.sources.is_empty())
        .map(|d| (d.path.clone(), d.sources.clone()))
        .collect();
    let title: String = run.objective.chars().take(80).collect();
    let m = &run.metrics;
    Report {
        run_id: run.id.clone(),
        title,
        objective: run.objective.clone(),
        status: *run.status,
        summary: summary.to_string(),
        what_changed: WhatChanged {
            created,
            updated,
            linked,
            sources: by_doc,
        },
        sources,
        artifacts: docs
            .iter()
            .take(MAX_LISTED)
            .map(|d| ArtifactRef {
                path: d.path.clone(),
                title: d.title.clone(),
                version: d.version,
                bytes: d.bytes,
            })
            .collect(),
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
        }
    }

    #[test]
    fn what_changed_comes_from_committed_docs_not_from_claims() {
        let mut run = sample_run();
        run.transition_to(RunStatus::Completed, 10).unwrap();
        run.stopping_reason = Some(StoppingReason::new(StopType::Completed, "done"));
        let docs = [meta("a.md", 1), meta("b.md", 3)];
        let evidence = ["see b.md".to_string(), "ghost.md exists".to_string()];
        let r = build_report(&run, &docs, "ok", &evidence, 10);
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
        let r = build_report(&run, &[a, b, c], "ok", &[], 10);
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
}
