//! The end of an iteration's work: evidence checked against the staged workspace, children
//! listed (created only once the commit landed), the verdict (pure, `longrun_domain::decide`),
//! and everything the commit writes (run update, iteration record, scratchpad entry, report
//! inputs) gathered in a `CommitPlan`.

use longrun_domain::change::CommitPlan;
use longrun_domain::criteria::CriterionVerdict;
use longrun_domain::decide::{
    BudgetExhausted, CallSeen, IterationFacts, Outcome, Progress, WorkspaceAfter,
};
use longrun_domain::evidence::{ClaimEvidence, DocFound, claim_of};
use longrun_domain::fingerprint;
use longrun_domain::planner::{StatusBlock, ToolCall};
use longrun_domain::record::normalize_doc_path;
use longrun_domain::record::{IterationMetrics, IterationRecord, PadEntry};
use longrun_domain::report::Narrative;
use longrun_domain::run::{ChildRun, LastIteration, Run};
use longrun_domain::{DocMeta, StopType, Verdict, decide, is_blank};
use serde_json::json;

use super::model::Iter;
use super::narrative::Ending;
use super::phases::Draft;
use super::{Engine, EngineError};
use crate::tools::{Staged, Staging};
use longrun_domain::clip;

/// The verdict on an iteration and the facts it rests on.
struct Judged {
    status: Option<StatusBlock>,
    remaining_work: Vec<String>,
    progress: Progress,
    evidence: Vec<String>,
    budget: Option<BudgetExhausted>,
    metrics: IterationMetrics,
    verdict: Verdict,
    /// The claim's criteria verdicts, for the record, the events and the report.
    criteria: Vec<CriterionVerdict>,
}

impl Engine {
    /// Judges the drafted iteration and gathers what its commit writes.
    pub(super) async fn conclude(
        &self, it: &Iter<'_>, staging: Staging, draft: Draft,
    ) -> Result<CommitPlan, EngineError> {
        let (evidence, mut claim) = evidence(it, &staging, &draft).await;
        if let Some(status) = draft.planner.as_ref().map(|p| &p.status)
            && status.exit_signal
            && !it.run.completion_criteria.is_empty()
            && !draft.cancel
        {
            // Boxed: the checks' futures would otherwise sit on every step's stack.
            claim.verdicts = Box::pin(self.verdicts(it, &staging, status, &claim)).await?;
        }
        let staged = staging.finish();
        // Only listed here: they are created after the commit (`FollowUp::start_children`), so
        // an attempt whose commit is refused leaves no child behind.
        let children: Vec<ChildRun> = staged
            .spawned
            .iter()
            .map(|req| ChildRun::new(&req.id, &req.objective, req.budgets.clone(), req.detached))
            .collect();
        let budget = it.budget_after(self.now());
        let mut judged = judge(it, &draft, &staged, &children, evidence, claim, budget);
        let workspace = if matches!(judged.verdict.outcome, Outcome::Continue) {
            vec![]
        } else {
            self.workspace_after(it.run, &staged).await?
        };
        let questions = match &judged.verdict.outcome {
            Outcome::Wait { questions } => questions.clone(),
            _ => vec![],
        };
        let ending = Ending {
            outcome: &judged.verdict.outcome,
            plan: &staged.plan,
            remaining_work: &judged.remaining_work,
            questions,
            summary: &summary(&judged, &draft),
            workspace: &workspace,
        };
        let narrative = self.narrative(it, &ending).await?;
        // The final call's spend belongs to this iteration's record too.
        judged.metrics = it.spent().iteration.clone();
        Ok(commit_plan(
            it,
            draft,
            staged,
            children,
            judged,
            (workspace, narrative),
            self.now(),
        ))
    }

    /// The whole workspace as it will be after this commit, for the report.
    async fn workspace_after(
        &self, run: &Run, staged: &Staged,
    ) -> Result<Vec<DocMeta>, EngineError> {
        let mut all = self.store().docs(&run.id, "", 10_000).await?;
        for d in &staged.docs {
            match all.iter_mut().find(|m| m.path == d.path) {
                Some(m) => *m = d.meta(),
                None => all.push(d.meta()),
            }
        }
        all.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(all)
    }
}

/// The planner's completion evidence (or, for a claim that names none, what the platform
/// derives: a plan all done and the documents this run wrote), and the claim it makes with
/// every document it names looked up in the workspace as this commit will leave it.
async fn evidence(it: &Iter<'_>, staging: &Staging, draft: &Draft) -> (Vec<String>, ClaimEvidence) {
    let Some(status) = draft.planner.as_ref().map(|p| &p.status) else {
        return (vec![], ClaimEvidence::default());
    };
    // What the run wrote, for evidence derived for a claim that names none: only a claim needs it.
    let mut written = vec![];
    if status.exit_signal {
        written = staging.written();
        for d in it.run.recent_docs.iter() {
            if d.updated_iteration > 0 && d.bytes > 0 && !written.contains(&d.path) {
                written.push(d.path.clone());
            }
        }
    }
    let (items, mut claim) = claim_of(status, &staging.plan(), &written);
    if status.exit_signal {
        for path in claim.doc_paths() {
            let doc = match normalize_doc_path(&path) {
                Ok(p) => staging.read_doc(&p).await.ok().flatten(),
                Err(_) => None,
            };
            let found = doc.map_or(DocFound::Missing, |d| DocFound::Present {
                blank: is_blank(&d.content),
                updated_iteration: d.updated_iteration,
            });
            claim.docs.push((path, found));
        }
    }
    (items, claim)
}

/// The facts of the iteration, judged by the domain's `decide`.
fn judge(
    it: &Iter<'_>, draft: &Draft, staged: &Staged, children: &[ChildRun], evidence: Vec<String>,
    claim: ClaimEvidence, budget: Option<BudgetExhausted>,
) -> Judged {
    let run = it.run;
    let status = draft.planner.as_ref().map(|p| p.status.clone());
    let remaining_work = status
        .as_ref()
        .map(|s| s.remaining_work.clone())
        .unwrap_or_else(|| run.remaining_work.clone());
    let workspace = WorkspaceAfter::of(run, staged.docs_delta, &staged.plan);
    let progress = Progress {
        docs_changed: (staged.created.len() + staged.updated.len()) as u32,
        plan_advanced: staged.plan_advanced,
        remaining_shrank: status.is_some() && remaining_work.len() < run.remaining_work.len(),
        answers_consumed: draft.planner.is_some() && !run.pending_answers.is_empty(),
        revisited: workspace.seen_before(run),
    };
    let mut questions = staged.questions.clone();
    questions.extend(draft.approval_questions.iter().cloned());
    if let Some(s) = &status
        && s.needs_user_input
    {
        questions.extend(s.blocking_questions.iter().cloned());
        if questions.is_empty() {
            questions.push(format!(
                "The agent needs your input: {}",
                clip(&s.progress_summary, 500)
            ));
        }
    }
    // An agent run's iterations have no planner actions: each is one process by design.
    let planner = draft.planner.as_ref().filter(|_| run.agent.is_none());
    let action_fingerprint = planner.map(|p| {
        fingerprint::of_json(&json!({
            "tools": p.tool_calls.iter().map(|c| json!([c.name, c.args])).collect::<Vec<_>>(),
            "executors": p.executor_tasks.iter().map(|t| json!([t.title, t.instructions])).collect::<Vec<_>>(),
        }))
    });
    let metrics = it.spent().iteration.clone();
    let criteria = claim.verdicts.clone();
    let facts = IterationFacts {
        iteration: it.n,
        status: status.clone(),
        plan: staged.plan.clone(),
        progress: progress.clone(),
        action_fingerprint,
        calls: planner.map_or(vec![], |p| p.tool_calls.iter().map(call_seen).collect()),
        workspace: Some(workspace),
        error: draft.error.clone(),
        tool_failure: draft.tool_failure(),
        budget: budget.clone(),
        cancel_requested: draft.cancel,
        questions: (!questions.is_empty()).then_some(questions),
        claim,
        awaiting_approval: !draft.approval_questions.is_empty(),
        active_children: run.active_children() + children.iter().filter(|c| !c.detached).count(),
        wait_for_children: staged.wait_for_children,
    };
    let verdict = decide(run, &facts);
    Judged {
        status,
        remaining_work,
        progress,
        evidence,
        budget,
        metrics,
        verdict,
        criteria,
    }
}

/// A planner's call as the breakers see it; a forced replan refuses a call of the same
/// fingerprint (`phases::refuse_for_replan`).
pub(super) fn call_seen(c: &ToolCall) -> CallSeen {
    CallSeen {
        tool: c.name.clone(),
        fingerprint: fingerprint::of_json(&json!([c.name, c.args])),
    }
}

/// One line on what the iteration did, for its record, the scratchpad and the report.
fn summary(j: &Judged, draft: &Draft) -> String {
    match (&j.status, &draft.error, &j.verdict.outcome) {
        (_, _, Outcome::Finish(r)) if r.kind == StopType::Canceled && j.status.is_none() => {
            "Canceled before the iteration's work.".to_string()
        }
        (Some(s), _, _) => clip(&s.progress_summary, 2_000),
        (None, Some(e), _) => clip(&e.message, 2_000),
        (None, None, _) => match &j.budget {
            Some(b) => format!("No work done: {}", b.detail),
            None => "No work done.".to_string(),
        },
    }
}

/// Everything the commit writes, from the draft, the staged changes and the verdict.
fn commit_plan(
    it: &Iter<'_>, draft: Draft, staged: Staged, children: Vec<ChildRun>, j: Judged,
    (workspace, narrative): (Vec<DocMeta>, Option<Narrative>), now: i64,
) -> CommitPlan {
    let run = it.run;
    let n = it.n;
    let running_ms = it.running_ms(now);
    // The planner was shown the messages of the run as claimed; later ones wait for the next.
    let messages_consumed = match draft.planner {
        Some(_) => run.pending_messages.len(),
        None => 0,
    };
    let summary = summary(&j, &draft);
    let last_iteration = LastIteration {
        iteration: n,
        tool_results: draft.tool_results.iter().take(12).cloned().collect(),
        executor_results: draft.executor_results.iter().take(6).cloned().collect(),
        created_docs: staged.created.iter().take(20).cloned().collect(),
        updated_docs: staged.updated.iter().take(20).cloned().collect(),
        progress_delta: j.progress.made(),
        error: draft.error.as_ref().map(|e| clip(&e.message, 500)),
    };
    let pad = scratchpad_entry(n, now, &summary, &draft, &staged, &j.remaining_work);
    let record = IterationRecord {
        run_id: run.id.clone(),
        n,
        outcome: j.verdict.outcome.status(),
        summary: summary.clone(),
        status_block: j.status,
        tool_results: draft.tool_results,
        executor_results: draft.executor_results,
        created_docs: staged.created.clone(),
        updated_docs: staged.updated.clone(),
        metrics: IterationMetrics {
            running_ms,
            ..j.metrics
        },
        error: draft.error,
        progress: j.progress.made(),
        hints: j.verdict.hints.clone(),
        criteria: j.criteria.clone(),
        stopping_reason: None,
        started_at: it.started_at,
        committed_at: now,
    };
    CommitPlan {
        n,
        owner: it.claim.owner.to_string(),
        verdict: j.verdict,
        plan: staged.plan,
        remaining_work: j.remaining_work,
        last_iteration,
        answers_consumed: j.progress.answers_consumed,
        messages_consumed,
        running_ms,
        record,
        docs: staged.docs,
        pad,
        summary,
        workspace,
        evidence: j.evidence,
        narrative,
        pending_calls: draft.pending_calls,
        children,
        seen_hints: run.hints.clone(),
        verdicts: j.criteria,
        now,
    }
}

/// The iteration's scratchpad entry: what it did, what came of it, what it changed.
fn scratchpad_entry(
    n: u32, now: i64, summary: &str, draft: &Draft, staged: &Staged, remaining_work: &[String],
) -> PadEntry {
    let mut results: Vec<String> = draft
        .tool_results
        .iter()
        .map(|r| {
            format!(
                "{} {}: {}",
                r.name,
                if r.ok { "ok" } else { "failed" },
                clip(&r.result, 200)
            )
        })
        .collect();
    results.extend(
        draft
            .executor_results
            .iter()
            .map(|e| format!("executor {}: {}", e.title, clip(&e.summary, 200))),
    );
    let mut artifacts: Vec<String> = staged
        .created
        .iter()
        .map(|p| format!("created {p}"))
        .collect();
    artifacts.extend(staged.updated.iter().map(|p| format!("updated {p}")));
    PadEntry {
        n,
        at: now,
        summary: summary.to_string(),
        actions: draft.actions.clone(),
        results,
        artifacts,
        plan_changes: staged.plan_changes.clone(),
        remaining_work: remaining_work.to_vec(),
        sources: staged.sources.clone(),
    }
}
