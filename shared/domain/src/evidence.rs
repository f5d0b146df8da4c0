//! The evidence a completion claim must carry (README, "How a run ends"). Pure: the engine
//! looks up what each reference names and this module judges the claim from those facts.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::criteria::{CheckKind, Criterion, CriterionVerdict, criterion_id};
use crate::planner::StatusBlock;
use crate::run::{PlanStep, StepStatus};

/// A reference an evidence item names: a workspace document by path, or a plan step by id
/// (written `plan:ID`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reference {
    Doc(String),
    Step(String),
}

impl std::fmt::Display for Reference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reference::Doc(p) => write!(f, "document `{p}`"),
            Reference::Step(id) => write!(f, "plan step `{id}`"),
        }
    }
}

/// The references in one evidence item: `plan:ID` (or `step:ID`) names a plan step; a word
/// with a `/` or a `.` in it names a document (`notes/a.md`, `report.md`).
pub fn references(item: &str) -> Vec<Reference> {
    let mut out = vec![];
    for word in item.split(|c: char| {
        c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | '"' | '\'' | '`' | '[' | ']')
    }) {
        let word = word.trim_matches(|c: char| matches!(c, '.' | ':' | '!' | '?'));
        let step = word
            .strip_prefix("plan:")
            .or_else(|| word.strip_prefix("step:"));
        let r = match step {
            Some(id) if !id.is_empty() => Reference::Step(id.to_string()),
            Some(_) => continue,
            None => {
                let path = word.trim_start_matches('/');
                if !looks_like_path(path) {
                    continue;
                }
                Reference::Doc(path.to_string())
            }
        };
        if !out.contains(&r) {
            out.push(r);
        }
    }
    out
}

/// `notes/a`, `report.md`; not a URL, a version (`v1.2`) or an abbreviation (`e.g`).
fn looks_like_path(word: &str) -> bool {
    if word.is_empty() || word.contains("://") {
        return false;
    }
    if word.contains('/') {
        return true;
    }
    match word.rsplit_once('.') {
        Some((stem, ext)) => {
            !stem.is_empty()
                && ext.len() >= 2
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && ext.starts_with(|c: char| c.is_ascii_alphabetic())
        }
        None => false,
    }
}

/// What the engine found for a document reference, as the workspace will be after the
/// iteration's commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DocFound {
    Missing,
    Present {
        /// Nothing but whitespace in it.
        blank: bool,
        /// The iteration that last wrote it (0: no iteration of this run did).
        updated_iteration: u32,
    },
}

/// One criterion mapped to its evidence in a completion claim (`criteria_evidence`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CriterionEvidence {
    /// The criterion: its id as the prompt lists it (`c1`, `c2`, …) or its exact text.
    pub criterion: String,
    /// Evidence items for it, as in `completion_evidence`: each names documents by path or
    /// plan steps as `plan:ID`.
    #[serde(default)]
    pub evidence: Vec<String>,
}

/// Why a completion claim's evidence was not accepted. Each says what to fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EvidenceProblem {
    /// No evidence item names any document or plan step.
    Empty,
    Missing(Reference),
    /// A document with nothing in it.
    EmptyDocument(String),
    /// A document no iteration of this run wrote.
    Stale(String),
    /// A plan step that is not done.
    StepNotDone(String),
    /// A criterion of the run that the claim maps to no accepted evidence.
    Unproven {
        id: String,
        criterion: String,
    },
    /// The claim maps evidence to a criterion the run does not have.
    UnknownCriterion(String),
    /// A check (or the grader) found the criterion not met.
    CheckFailed {
        id: String,
        criterion: String,
        reason: String,
    },
    /// A criterion the grader must judge and has not: the engine grades a claim only once
    /// nothing else is wrong with it.
    Ungraded {
        id: String,
        criterion: String,
    },
}

impl std::fmt::Display for EvidenceProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EvidenceProblem::Empty => write!(
                f,
                "completion_evidence names no workspace document (by path) or plan step (as plan:ID)"
            ),
            EvidenceProblem::Missing(r) => {
                write!(f, "evidence {r} does not exist in this run")
            }
            EvidenceProblem::EmptyDocument(p) => {
                write!(f, "evidence document `{p}` is empty")
            }
            EvidenceProblem::Stale(p) => write!(
                f,
                "evidence document `{p}` was not written or updated by this run"
            ),
            EvidenceProblem::StepNotDone(id) => {
                write!(f, "evidence plan step `{id}` is not done")
            }
            EvidenceProblem::Unproven { id, criterion } => write!(
                f,
                "criterion {id} (\"{criterion}\") is not mapped to accepted evidence in criteria_evidence"
            ),
            EvidenceProblem::UnknownCriterion(c) => write!(
                f,
                "criteria_evidence names criterion \"{c}\", which this run does not have"
            ),
            EvidenceProblem::CheckFailed {
                id,
                criterion,
                reason,
            } => write!(
                f,
                "criterion {id} ({criterion}) is not met: {}",
                reason.trim_end_matches('.')
            ),
            EvidenceProblem::Ungraded { id, criterion } => write!(
                f,
                "criterion {id} (\"{criterion}\") could not be graded; claim again"
            ),
        }
    }
}

/// A completion claim's evidence with what each reference was found to be.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClaimEvidence {
    /// `completion_evidence` and every `criteria_evidence` item, resolved: each document
    /// reference with what the workspace holds at its path.
    pub docs: Vec<(String, DocFound)>,
    /// Criteria the claim maps, by the name it used, with the references it gave each.
    pub mapped: Vec<(String, Vec<Reference>)>,
    /// Every reference the claim names, in order.
    pub references: Vec<Reference>,
    /// The verdicts of the run's checked and graded criteria at this claim.
    pub verdicts: Vec<CriterionVerdict>,
}

impl ClaimEvidence {
    /// The claim's references, nothing looked up yet (`docs` is empty).
    pub fn of(completion_evidence: &[String], criteria_evidence: &[CriterionEvidence]) -> Self {
        let (references, mapped) = claim_references(completion_evidence, criteria_evidence);
        ClaimEvidence {
            docs: vec![],
            mapped,
            references,
            verdicts: vec![],
        }
    }

    /// The document paths the claim names, for the engine to look up.
    pub fn doc_paths(&self) -> Vec<String> {
        self.references
            .iter()
            .filter_map(|r| match r {
                Reference::Doc(p) => Some(p.clone()),
                Reference::Step(_) => None,
            })
            .collect()
    }
}

/// Every reference a claim names: `completion_evidence` first, then the mapped criteria's.
pub fn claim_references(
    completion_evidence: &[String], criteria_evidence: &[CriterionEvidence],
) -> (Vec<Reference>, Vec<(String, Vec<Reference>)>) {
    let mut all: Vec<Reference> = vec![];
    let mut push = |refs: &[Reference]| {
        for r in refs {
            if !all.contains(r) {
                all.push(r.clone());
            }
        }
    };
    for item in completion_evidence {
        push(&references(item));
    }
    let mut mapped = vec![];
    for m in criteria_evidence {
        let refs: Vec<Reference> = m.evidence.iter().flat_map(|e| references(e)).collect();
        push(&refs);
        mapped.push((m.criterion.clone(), refs));
    }
    (all, mapped)
}

/// The criterion a claim's name means: `c{n}` (1-based) or the criterion's text, ignoring
/// case and surrounding whitespace.
fn criterion_index(criteria: &[Criterion], name: &str) -> Option<usize> {
    let name = name.trim();
    if let Some(n) = name
        .strip_prefix(['c', 'C'])
        .and_then(|n| n.parse::<usize>().ok())
        && (1..=criteria.len()).contains(&n)
    {
        return Some(n - 1);
    }
    criteria.iter().position(|c| {
        c.text()
            .map_or_else(|| c.label(), str::to_string)
            .trim()
            .eq_ignore_ascii_case(name)
    })
}

/// What the claim cites for criterion `i`: the references it mapped to it, or, when it mapped
/// none, everything it cites (what a grader is shown).
pub fn cited_for(criteria: &[Criterion], claim: &ClaimEvidence, i: usize) -> Vec<Reference> {
    let mut refs: Vec<Reference> = vec![];
    for (name, mapped) in &claim.mapped {
        if criterion_index(criteria, name) == Some(i) {
            for r in mapped {
                if !refs.contains(r) {
                    refs.push(r.clone());
                }
            }
        }
    }
    if refs.is_empty() {
        refs = claim.references.clone();
    }
    refs
}

/// Judges a completion claim's evidence: accepted (empty) only when it names at least one
/// document or plan step, every one it names exists in this run, documents are not empty and
/// were written by one of this run's iterations (`1..=iteration`), plan steps are done, each
/// plain-text criterion is mapped to at least one such reference, and every checked criterion
/// (and, when `graded`, every plain-text one) has a passing verdict in `claim.verdicts`;
/// ungraded plain text needs the mapping instead.
pub fn judge_evidence(
    criteria: &[Criterion], graded: bool, claim: &ClaimEvidence, plan: &[PlanStep], iteration: u32,
) -> Vec<EvidenceProblem> {
    let mut problems = vec![];
    if claim.references.is_empty() {
        problems.push(EvidenceProblem::Empty);
    }
    let mut bad: Vec<&Reference> = vec![];
    for r in &claim.references {
        if let Some(p) = reference_problem(r, claim, plan, iteration) {
            problems.push(p);
            bad.push(r);
        }
    }
    let mut proven = vec![false; criteria.len()];
    for (name, refs) in &claim.mapped {
        match criterion_index(criteria, name) {
            Some(i) => {
                if refs.iter().any(|r| !bad.contains(&r)) {
                    proven[i] = true;
                }
            }
            None => problems.push(EvidenceProblem::UnknownCriterion(name.clone())),
        }
    }
    let mut ungraded = vec![];
    for (i, criterion) in criteria.iter().enumerate() {
        let id = criterion_id(i);
        if criterion.needs_mapping(graded) && !proven[i] {
            problems.push(EvidenceProblem::Unproven {
                id: id.clone(),
                criterion: criterion.label(),
            });
        }
        let kind = criterion.kind(graded);
        if kind == CheckKind::Mapped {
            continue;
        }
        match claim.verdicts.iter().find(|v| v.id == id) {
            Some(v) if v.passed => {}
            Some(v) => problems.push(EvidenceProblem::CheckFailed {
                id,
                criterion: criterion.label(),
                reason: v.reason.clone(),
            }),
            None if kind == CheckKind::Grader => ungraded.push(EvidenceProblem::Ungraded {
                id,
                criterion: criterion.label(),
            }),
            None => problems.push(EvidenceProblem::CheckFailed {
                id,
                criterion: criterion.label(),
                reason: "it was not checked".into(),
            }),
        }
    }
    // Ungraded only matters once nothing else is wrong: that is when the grader is asked.
    if problems.is_empty() {
        problems = ungraded;
    }
    problems
}

/// Whether the grader is what stands between this claim and acceptance: every problem is a
/// criterion not graded yet.
pub fn awaits_grading(problems: &[EvidenceProblem]) -> bool {
    !problems.is_empty()
        && problems
            .iter()
            .all(|p| matches!(p, EvidenceProblem::Ungraded { .. }))
}

/// The claim a status block makes: its own evidence, or, when it names none, what the
/// platform derives (`derived_evidence`). Returns the evidence items too.
pub fn claim_of(
    status: &StatusBlock, plan: &[PlanStep], written_docs: &[String],
) -> (Vec<String>, ClaimEvidence) {
    let items = status.completion_evidence.clone();
    let claim = ClaimEvidence::of(&items, &status.criteria_evidence);
    if !status.exit_signal || !claim.references.is_empty() {
        return (items, claim);
    }
    match derived_evidence(plan, written_docs) {
        Some(derived) => {
            let claim = ClaimEvidence::of(&derived, &status.criteria_evidence);
            (derived, claim)
        }
        None => (items, claim),
    }
}

/// Evidence the platform derives for a claim that names none (README, "How a run ends"): when
/// the run has a plan and every step of it is done, its steps and the documents this run
/// wrote are the evidence. `None`: nothing to derive, and the claim stands as made.
pub fn derived_evidence(plan: &[PlanStep], written_docs: &[String]) -> Option<Vec<String>> {
    if plan.is_empty() || plan.iter().any(|s| s.status != StepStatus::Done) {
        return None;
    }
    let mut items: Vec<String> = plan.iter().map(|s| format!("plan:{}", s.id)).collect();
    items.extend(written_docs.iter().take(20).cloned());
    Some(items)
}

fn reference_problem(
    r: &Reference, claim: &ClaimEvidence, plan: &[PlanStep], iteration: u32,
) -> Option<EvidenceProblem> {
    match r {
        Reference::Doc(path) => {
            let found = claim
                .docs
                .iter()
                .find(|(p, _)| p == path)
                .map(|(_, f)| f)
                .unwrap_or(&DocFound::Missing);
            match found {
                DocFound::Missing => Some(EvidenceProblem::Missing(r.clone())),
                DocFound::Present { blank: true, .. } => {
                    Some(EvidenceProblem::EmptyDocument(path.clone()))
                }
                DocFound::Present {
                    updated_iteration, ..
                } if *updated_iteration == 0 || *updated_iteration > iteration => {
                    Some(EvidenceProblem::Stale(path.clone()))
                }
                DocFound::Present { .. } => None,
            }
        }
        Reference::Step(id) => match plan.iter().find(|s| &s.id == id) {
            None => Some(EvidenceProblem::Missing(r.clone())),
            Some(s) if s.status != StepStatus::Done => {
                Some(EvidenceProblem::StepNotDone(id.clone()))
            }
            Some(_) => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(path: &str, blank: bool, updated_iteration: u32) -> (String, DocFound) {
        (
            path.to_string(),
            DocFound::Present {
                blank,
                updated_iteration,
            },
        )
    }

    fn claim(
        items: &[&str], mapped: &[(&str, &[&str])], docs: Vec<(String, DocFound)>,
    ) -> ClaimEvidence {
        let items: Vec<String> = items.iter().map(|s| s.to_string()).collect();
        let mapped: Vec<CriterionEvidence> = mapped
            .iter()
            .map(|(c, e)| CriterionEvidence {
                criterion: c.to_string(),
                evidence: e.iter().map(|s| s.to_string()).collect(),
            })
            .collect();
        let (references, mapped) = claim_references(&items, &mapped);
        ClaimEvidence {
            docs,
            mapped,
            references,
            verdicts: vec![],
        }
    }

    fn texts(criteria: &[&str]) -> Vec<Criterion> {
        criteria.iter().map(|c| Criterion::from(*c)).collect()
    }

    fn step(id: &str, status: StepStatus) -> PlanStep {
        PlanStep {
            id: id.into(),
            title: "t".into(),
            status,
            iteration_last_touched: 1,
            notes: None,
        }
    }

    #[test]
    fn references_are_found_inside_prose() {
        assert_eq!(
            references("Wrote `notes/summary.md` and report.md; plan:s2 is done."),
            vec![
                Reference::Doc("notes/summary.md".into()),
                Reference::Doc("report.md".into()),
                Reference::Step("s2".into())
            ]
        );
        assert!(references("all done").is_empty());
        assert!(references("see https://tea.org, e.g. v1.2").is_empty());
    }

    #[test]
    fn a_claim_naming_a_written_non_empty_doc_is_accepted() {
        let c = claim(
            &["guide.md covers it"],
            &[],
            vec![doc("guide.md", false, 3)],
        );

        assert_eq!(judge_evidence(&[], false, &c, &[], 3), vec![]);
    }

    #[test]
    fn empty_evidence_is_rejected_even_when_the_workspace_has_docs() {
        let c = claim(&[], &[], vec![doc("unrelated.md", false, 1)]);

        assert_eq!(
            judge_evidence(&[], false, &c, &[], 2),
            vec![EvidenceProblem::Empty]
        );
    }

    #[test]
    fn evidence_naming_nothing_checkable_is_rejected_as_empty() {
        let c = claim(&["plan_completed", "no_pending_tasks"], &[], vec![]);

        assert_eq!(
            judge_evidence(&[], false, &c, &[], 2),
            vec![EvidenceProblem::Empty]
        );
    }

    #[test]
    fn a_missing_doc_is_rejected_and_named() {
        let c = claim(
            &["final.md", "guide.md"],
            &[],
            vec![doc("guide.md", false, 1)],
        );

        let problems = judge_evidence(&[], false, &c, &[], 2);

        assert_eq!(
            problems,
            vec![EvidenceProblem::Missing(Reference::Doc("final.md".into()))]
        );
        assert!(
            problems[0]
                .to_string()
                .contains("`final.md` does not exist")
        );
    }

    #[test]
    fn an_empty_document_is_rejected() {
        let c = claim(&["guide.md"], &[], vec![doc("guide.md", true, 2)]);

        assert_eq!(
            judge_evidence(&[], false, &c, &[], 2),
            vec![EvidenceProblem::EmptyDocument("guide.md".into())]
        );
    }

    #[test]
    fn a_document_no_iteration_of_this_run_wrote_is_stale() {
        let c = claim(
            &["old.md", "future.md"],
            &[],
            vec![doc("old.md", false, 0), doc("future.md", false, 9)],
        );

        assert_eq!(
            judge_evidence(&[], false, &c, &[], 4),
            vec![
                EvidenceProblem::Stale("old.md".into()),
                EvidenceProblem::Stale("future.md".into())
            ]
        );
    }

    #[test]
    fn plan_steps_count_only_when_they_exist_and_are_done() {
        let plan = [
            step("s1", StepStatus::Done),
            step("s2", StepStatus::Blocked),
        ];

        assert_eq!(
            judge_evidence(&[], false, &claim(&["plan:s1"], &[], vec![]), &plan, 2),
            vec![]
        );
        assert_eq!(
            judge_evidence(
                &[],
                false,
                &claim(&["plan:s2", "plan:s9"], &[], vec![]),
                &plan,
                2
            ),
            vec![
                EvidenceProblem::StepNotDone("s2".into()),
                EvidenceProblem::Missing(Reference::Step("s9".into()))
            ]
        );
    }

    #[test]
    fn a_criterion_without_evidence_is_rejected_by_id_and_text() {
        let criteria = texts(&["covers three teas", "cites sources"]);
        let c = claim(
            &["guide.md"],
            &[("c1", &["guide.md"])],
            vec![doc("guide.md", false, 2)],
        );

        let problems = judge_evidence(&criteria, false, &c, &[], 2);

        assert_eq!(
            problems,
            vec![EvidenceProblem::Unproven {
                id: "c2".into(),
                criterion: "cites sources".into()
            }]
        );
        assert!(problems[0].to_string().contains("c2 (\"cites sources\")"));
    }

    #[test]
    fn a_criterion_mapped_only_to_bad_evidence_is_unproven() {
        let criteria = texts(&["covers three teas"]);
        let c = claim(&[], &[("c1", &["missing.md"])], vec![]);

        assert_eq!(
            judge_evidence(&criteria, false, &c, &[], 2),
            vec![
                EvidenceProblem::Missing(Reference::Doc("missing.md".into())),
                EvidenceProblem::Unproven {
                    id: "c1".into(),
                    criterion: "covers three teas".into()
                }
            ]
        );
    }

    #[test]
    fn every_criterion_mapped_to_accepted_evidence_is_accepted() {
        let criteria = texts(&["covers three teas", "Cites sources"]);
        let c = claim(
            &[],
            &[("c1", &["guide.md"]), (" cites sources ", &["plan:s1"])],
            vec![doc("guide.md", false, 2)],
        );

        assert_eq!(
            judge_evidence(&criteria, false, &c, &[step("s1", StepStatus::Done)], 2),
            vec![]
        );
    }

    #[test]
    fn evidence_for_a_criterion_the_run_lacks_is_rejected() {
        let c = claim(
            &["guide.md"],
            &[("c3", &["guide.md"])],
            vec![doc("guide.md", false, 2)],
        );

        assert_eq!(
            judge_evidence(&texts(&["one"]), false, &c, &[], 2),
            vec![
                EvidenceProblem::UnknownCriterion("c3".into()),
                EvidenceProblem::Unproven {
                    id: "c1".into(),
                    criterion: "one".into()
                }
            ]
        );
    }

    fn verdict(id: &str, passed: bool, reason: &str) -> CriterionVerdict {
        CriterionVerdict {
            id: id.into(),
            kind: CheckKind::Contains,
            criterion: "x".into(),
            passed,
            reason: reason.into(),
            looked_at: vec![],
        }
    }

    fn contains(doc: &str, text: &str) -> Criterion {
        Criterion::Check(crate::criteria::Check::Contains {
            doc: doc.into(),
            text: text.into(),
        })
    }

    #[test]
    fn a_claim_whose_document_lacks_the_criterions_text_fails() {
        let criteria = vec![contains("guide.md", "oolong")];
        let mut c = claim(&["guide.md"], &[], vec![doc("guide.md", false, 2)]);
        c.verdicts = vec![verdict(
            "c1",
            false,
            "`guide.md` does not hold the text \"oolong\"",
        )];

        let problems = judge_evidence(&criteria, false, &c, &[], 2);

        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].to_string().contains(
                "c1 (`guide.md` contains \"oolong\") is not met: `guide.md` does not hold"
            ),
            "{}",
            problems[0]
        );
    }

    #[test]
    fn a_check_needs_no_mapping_but_a_passing_verdict() {
        let criteria = vec![contains("guide.md", "oolong")];
        let mut c = claim(&["guide.md"], &[], vec![doc("guide.md", false, 2)]);

        let unchecked = judge_evidence(&criteria, false, &c, &[], 2);
        c.verdicts = vec![verdict("c1", true, "holds it")];
        let checked = judge_evidence(&criteria, false, &c, &[], 2);

        assert!(matches!(
            unchecked[..],
            [EvidenceProblem::CheckFailed { .. }]
        ));
        assert_eq!(checked, vec![]);
    }

    #[test]
    fn graded_text_waits_for_the_grader_only_when_nothing_else_is_wrong() {
        let criteria = texts(&["covers three teas"]);
        let good = claim(
            &[],
            &[("c1", &["guide.md"])],
            vec![doc("guide.md", false, 2)],
        );
        let bad = claim(&[], &[("c1", &["gone.md"])], vec![]);

        let waiting = judge_evidence(&criteria, true, &good, &[], 2);
        let broken = judge_evidence(&criteria, true, &bad, &[], 2);

        assert!(awaits_grading(&waiting));
        assert!(!awaits_grading(&broken));
        assert!(
            !broken
                .iter()
                .any(|p| matches!(p, EvidenceProblem::Ungraded { .. }))
        );
    }

    #[test]
    fn a_failing_grade_keeps_the_claim_out_with_the_graders_reason() {
        let criteria = texts(&["covers three teas"]);
        let mut c = claim(
            &[],
            &[("c1", &["guide.md"])],
            vec![doc("guide.md", false, 2)],
        );
        c.verdicts = vec![verdict("c1", false, "only two teas are described")];

        let problems = judge_evidence(&criteria, true, &c, &[], 2);

        assert_eq!(problems.len(), 1);
        assert!(
            problems[0]
                .to_string()
                .contains("only two teas are described")
        );
    }

    #[test]
    fn a_plan_all_done_is_evidence_the_platform_derives() {
        let done = [step("s1", StepStatus::Done), step("s2", StepStatus::Done)];
        let open = [
            step("s1", StepStatus::Done),
            step("s2", StepStatus::Pending),
        ];

        assert_eq!(
            derived_evidence(&done, &["guide.md".to_string()]),
            Some(vec!["plan:s1".into(), "plan:s2".into(), "guide.md".into()])
        );
        assert_eq!(derived_evidence(&open, &[]), None);
        assert_eq!(derived_evidence(&[], &["guide.md".to_string()]), None);
    }
}
